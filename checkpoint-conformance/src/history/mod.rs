//! Concurrent histories: generated with proptest, run against a store, and checked against a
//! linearizable max-register.
//!
//! A history is several owners calling the store at the same time over a small key space, some
//! of them zombies that deliver old, lower positions late ([`generator`]). Every call records
//! when it started and when it returned on one logical clock ([`runner`]); [`HistoryChecker`]
//! then checks the whole history against the model of a max-register, the sequential
//! specification of a checkpoint ([`checker`]).

pub mod checker;
pub mod generator;
pub mod leases;
pub mod retire;
pub mod runner;

pub use checker::{Event, History, HistoryChecker, Outcome};
pub(crate) use generator::seeded_runner;
pub use generator::{Call, Key, OwnerPlan, Plan, plans};
pub use leases::{
    LeaseEvent, LeaseOutcome, LeasePlan, LeaseStep, check_lease_history, lease_plans,
    run_lease_plan,
};
pub use retire::{RetirePlan, retire_plans, run_retire_histories, run_retire_plan};
pub use runner::{HistoryConfig, run_histories, run_histories_with_faults};
