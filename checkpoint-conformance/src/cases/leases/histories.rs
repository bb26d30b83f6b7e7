//! Generated lease histories, checked for two holders at once.

use checkpoint_core::LeaseStore;
use proptest::strategy::{Strategy, ValueTree};

use crate::history::{
    HistoryConfig, check_lease_history, lease_plans, run_lease_plan, seeded_runner,
};
use crate::{CaseResult, Failure};

use super::fresh;

/// How many lease histories run: `CHECKPOINT_LEASE_HISTORIES` (default 8), each a few seconds
/// of real time; `CHECKPOINT_SEED` replays a failing run.
fn histories() -> u32 {
    std::env::var("CHECKPOINT_LEASE_HISTORIES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(8)
}

/// Two to four owners on two clients acquire, renew and release three partitions at once with
/// 300 ms leases and pauses that outlast them; in every history, no two owners believe they
/// hold a partition at the same time (each believes from the grant's reply to its local
/// deadline or its release), no epoch goes to two owners, and epochs increase with time.
pub async fn lease_histories<S: LeaseStore + ?Sized>(a: &S, b: &S) -> CaseResult {
    let seed = HistoryConfig::from_env().seed;
    let cases = histories();
    let mut runner = seeded_runner(cases, seed);
    for index in 0..cases {
        let plan = lease_plans()
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating a lease plan: {reason}")))?
            .current();
        let group = fresh("history");
        let events = run_lease_plan(a, b, &group, &plan).await?;
        check_lease_history(&events).map_err(|failure| {
            Failure::new(format!(
                "lease history {index} of {cases} (CHECKPOINT_SEED={seed} replays it) in group {group:?}: {failure}\nplan: {plan:?}"
            ))
        })?;
    }
    Ok(())
}
