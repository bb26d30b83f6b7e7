//! The bad-input driver: arbitrary arguments through every entry point of a store, counted on
//! the wire.
//!
//! Invalid arguments must be refused with
//! [`Error::InvalidInput`](checkpoint_core::Error::InvalidInput) naming the argument the
//! contract says (group, then subscription, then the first position above `i64::MAX`; a batch
//! names its first invalid entry; an advance's `to` must be ahead of its `from`) before any
//! request leaves the process. Valid ones must reach the server and read back exactly.
//! [`BadAdminInput`] does the same over the operations API (`start_at`, `retire`, `retired`,
//! `purge`).
//!
//! ```no_run
//! # async fn example(store: &dyn checkpoint_core::ExclusiveCheckpointStore) {
//! use checkpoint_conformance::harness::bad_input::BadInput;
//! use checkpoint_conformance::round_trips::CountingProxy;
//!
//! let proxy = CountingProxy::start("127.0.0.1:6379").await.expect("a proxy");
//! // ... connect `store` through proxy.local_addr() and warm it up, then:
//! let report = BadInput::new(store, &proxy)
//!     .run(&mut ())
//!     .await
//!     .unwrap_or_else(|failure| panic!("{failure}"));
//! assert!(report.refused > 0 && report.performed > 0);
//! # }
//! ```
mod admin;
mod calls;
mod driver;
mod leases;
mod refusal;

use std::fmt;

use checkpoint_core::ExclusiveCheckpointStore;
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};

pub use admin::BadAdminInput;
pub use calls::{Call, MoreEntryPoints, Reply};
use driver::Driver;
pub use leases::bad_lease_input;

use crate::Failure;
use crate::fresh_group;
use crate::history::{HistoryConfig, seeded_runner};
use crate::inputs::{Inputs, inputs, one_wrong};
use crate::round_trips::CountingProxy;

/// What the driver did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadInputReport {
    /// Generated cases.
    pub cases: u32,
    /// The generator's seed (`CHECKPOINT_SEED` replays it).
    pub seed: u64,
    /// Calls refused with the right argument and no request.
    pub refused: u64,
    /// Valid calls that reached the server and read back exactly.
    pub performed: u64,
}

impl fmt::Display for BadInputReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad input: {} cases (CHECKPOINT_SEED={}), {} calls refused with no request, {} \
             valid calls performed and read back",
            self.cases, self.seed, self.refused, self.performed
        )
    }
}

/// Runs generated arguments through every entry point of a store: the trait's, and the
/// backend's own through [`MoreEntryPoints`].
///
/// Each case calls `save`, `load`, `save_all`, `list`, then `claim` and `advance` on a
/// subscription of their own. A call that must be refused must leave the proxy's count where
/// it was; a valid call must cost at least one round trip (which shows the proxy counts) and
/// read back what a model of the store holds. Cases come from `CHECKPOINT_SEED` (random by
/// default); their number is `CHECKPOINT_HISTORIES`, kept within 64 to 256 unless
/// [`cases_between`](Self::cases_between) says otherwise.
pub struct BadInput<'a> {
    store: &'a dyn ExclusiveCheckpointStore,
    proxy: Option<&'a CountingProxy>,
    cases: u32,
    seed: u64,
    refusals_only: bool,
}

impl fmt::Debug for BadInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BadInput")
            .field("counted", &self.proxy.is_some())
            .field("cases", &self.cases)
            .field("seed", &self.seed)
            .field("refusals_only", &self.refusals_only)
            .finish()
    }
}

impl<'a> BadInput<'a> {
    /// The driver over `store`, whose requests all go through `proxy`. Warm the store up
    /// first (connections open, scripts loaded, statements prepared): a valid call may cost
    /// more than one round trip, but a refused one must cost none.
    pub fn new(store: &'a dyn ExclusiveCheckpointStore, proxy: &'a CountingProxy) -> Self {
        Self {
            proxy: Some(proxy),
            ..Self::uncounted(store)
        }
    }

    /// The driver over a store with no wire to count (an embedded database): the same calls
    /// and checks, without the round trips.
    pub fn uncounted(store: &'a dyn ExclusiveCheckpointStore) -> Self {
        let config = HistoryConfig::from_env();
        Self {
            store,
            proxy: None,
            cases: config.cases.clamp(64, 256),
            seed: config.seed,
            refusals_only: false,
        }
    }

    /// `CHECKPOINT_HISTORIES` cases, kept within `min..=max` (a slow emulator wants fewer).
    pub fn cases_between(mut self, min: u32, max: u32) -> Self {
        self.cases = HistoryConfig::from_env().cases.clamp(min, max);
        self
    }

    /// Cases with exactly one argument wrong ([`one_wrong`]), and no valid call made: for a
    /// store whose valid calls would disturb the count (a pool that pings a connection as it
    /// takes it back, in a task of its own), or to spend every case on refusals.
    pub fn refusals_only(mut self) -> Self {
        self.refusals_only = true;
        self
    }

    /// Runs every case; the failure names the case, the call and the seed to replay it.
    pub async fn run(self, more: &mut dyn MoreEntryPoints) -> Result<BadInputReport, Failure> {
        let strategy: BoxedStrategy<Inputs> = if self.refusals_only {
            one_wrong().boxed()
        } else {
            inputs().boxed()
        };
        let mut runner = seeded_runner(self.cases, self.seed);
        let base = fresh_group("bad-input");
        let mut driver = Driver::new(self.store, self.proxy, more, !self.refusals_only);
        for case in 0..self.cases {
            let inputs = strategy
                .new_tree(&mut runner)
                .map_err(|reason| Failure::new(format!("generating inputs: {reason}")))?
                .current();
            driver.case(&base, case, &inputs).await.map_err(|failure| {
                Failure::new(format!(
                    "{failure}\n  in case {case} (CHECKPOINT_SEED={}): {inputs:?}",
                    self.seed
                ))
            })?;
        }
        let report = BadInputReport {
            cases: self.cases,
            seed: self.seed,
            refused: driver.refused,
            performed: driver.performed,
        };
        eprintln!("{report}");
        if report.refused == 0 || (!self.refusals_only && report.performed == 0) {
            return Err(Failure::new(format!(
                "the generator should produce both kinds of input: {report}"
            )));
        }
        Ok(report)
    }
}
