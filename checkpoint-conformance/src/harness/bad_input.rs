//! The bad-input driver: arbitrary arguments through every entry point of a store, counted on
//! the wire.
//!
//! Invalid arguments must be refused with [`Error::InvalidInput`] naming the argument the
//! contract says (group, then subscription, then the first position above `i64::MAX`; a batch
//! names its first invalid entry; an advance's `to` must be ahead of its `from`) before any
//! request leaves the process. Valid ones must reach the server and read back exactly.
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

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{
    Argument, Checkpoint, Error, ExclusiveCheckpointStore, Fingerprint, InvalidReason,
};
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};

use crate::failure::error_chain;
use crate::history::{HistoryConfig, seeded_runner};
use crate::inputs::{Inputs, first_invalid, inputs, one_wrong, valid_name};
use crate::round_trips::CountingProxy;
use crate::{Failure, fresh_group};

/// The fingerprint of every claim the driver makes.
const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([4; 32]);

/// One call of the store's trait, with its arguments, as the driver makes it.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)] // the fields are the trait methods' arguments
pub enum Call<'a> {
    /// [`load`](checkpoint_core::CheckpointStore::load).
    Load {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
    },
    /// [`list`](checkpoint_core::CheckpointStore::list).
    List { group: &'a str },
    /// [`save`](checkpoint_core::CheckpointStore::save).
    Save {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    },
    /// [`save_all`](checkpoint_core::CheckpointStore::save_all).
    SaveAll {
        group: &'a str,
        checkpoints: &'a [Checkpoint],
    },
    /// [`claim`](ExclusiveCheckpointStore::claim).
    Claim {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    },
    /// [`advance`](ExclusiveCheckpointStore::advance).
    Advance {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        from: u64,
        to: u64,
    },
}

/// What a call returned when it succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A save, batch or advance was done.
    Done,
    /// A load returned this.
    Loaded(Option<u64>),
    /// A list returned these.
    Listed(Vec<Checkpoint>),
    /// A claim returned this position.
    Claimed(u64),
}

impl Call<'_> {
    /// The trait method's name.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Load { .. } => "load",
            Call::List { .. } => "list",
            Call::Save { .. } => "save",
            Call::SaveAll { .. } => "save_all",
            Call::Claim { .. } => "claim",
            Call::Advance { .. } => "advance",
        }
    }

    /// Makes this call through the trait.
    pub async fn on(self, store: &dyn ExclusiveCheckpointStore) -> Result<Reply, Error> {
        match self {
            Call::Load {
                group,
                subscription,
                partition,
            } => store
                .load(group, subscription, partition)
                .await
                .map(Reply::Loaded),
            Call::List { group } => store.list(group).await.map(Reply::Listed),
            Call::Save {
                group,
                subscription,
                partition,
                position,
            } => store
                .save(group, subscription, partition, position)
                .await
                .map(|()| Reply::Done),
            Call::SaveAll { group, checkpoints } => store
                .save_all(group, checkpoints)
                .await
                .map(|()| Reply::Done),
            Call::Claim {
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            } => store
                .claim(
                    group,
                    subscription,
                    partition,
                    fingerprint,
                    initial_position,
                )
                .await
                .map(Reply::Claimed),
            Call::Advance {
                group,
                subscription,
                partition,
                from,
                to,
            } => store
                .advance(group, subscription, partition, from, to)
                .await
                .map(|()| Reply::Done),
        }
    }
}

/// A backend's own entry points beside the trait's, held to the same rules as the trait call
/// they match. `()` is a backend with none.
#[async_trait(?Send)]
pub trait MoreEntryPoints {
    /// The backend's entry point that does what `call` does and sends a request (the `*_in`
    /// family on a caller's connection, an advance that also writes), named, with what it
    /// returned; `None` when there is none for this call.
    ///
    /// It is called after the trait's call, with the same arguments when they must be refused
    /// or are valid. After a valid advance moved the checkpoint to `to`, it is called with an
    /// advance one step further, from `to` to `to + 1`.
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        let _ = call;
        None
    }

    /// The backend's entry points that check the same arguments as `call` but send nothing
    /// (a key built, a request prepared for the caller's own transaction), each named: every
    /// one must accept exactly what `call` accepts, refuse the rest naming the same argument,
    /// and never reach the server.
    fn build(&mut self, call: Call<'_>) -> Vec<(&'static str, Result<(), Error>)> {
        let _ = call;
        Vec::new()
    }
}

impl MoreEntryPoints for () {}

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
        let mut driver = Driver {
            store: self.store,
            proxy: self.proxy,
            more,
            perform_valid: !self.refusals_only,
            model: BTreeMap::new(),
            refused: 0,
            performed: 0,
        };
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
        if report.refused == 0 || (driver.perform_valid && report.performed == 0) {
            return Err(Failure::new(format!(
                "the generator should produce both kinds of input: {report}"
            )));
        }
        Ok(report)
    }
}

/// How a call must be refused.
#[derive(Debug, Clone, Copy)]
struct Refusal {
    argument: Argument,
    /// The index of the first invalid entry, for a batch refused for an entry.
    batch_index: Option<usize>,
    /// Refused because `to` is not ahead of `from`.
    not_ahead: bool,
}

impl Refusal {
    fn of(argument: Option<Argument>) -> Option<Refusal> {
        argument.map(|argument| Refusal {
            argument,
            batch_index: None,
            not_ahead: false,
        })
    }
}

/// The refusal the contract asks of `call`, or `None` when it is valid.
fn refusal(call: &Call<'_>) -> Option<Refusal> {
    match *call {
        Call::Load {
            group,
            subscription,
            ..
        } => Refusal::of(first_invalid(group, Some(subscription), &[])),
        Call::List { group } => Refusal::of(first_invalid(group, None, &[])),
        Call::Save {
            group,
            subscription,
            position,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::Position, position)],
        )),
        Call::SaveAll { group, checkpoints } => {
            if !valid_name(group) {
                return Refusal::of(Some(Argument::Group));
            }
            checkpoints.iter().enumerate().find_map(|(index, c)| {
                first_invalid(
                    group,
                    Some(&c.subscription),
                    &[(Argument::Position, c.position)],
                )
                .map(|argument| Refusal {
                    argument,
                    batch_index: Some(index),
                    not_ahead: false,
                })
            })
        }
        Call::Claim {
            group,
            subscription,
            initial_position,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::InitialPosition, initial_position)],
        )),
        Call::Advance {
            group,
            subscription,
            from,
            to,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::From, from), (Argument::To, to)],
        ))
        .or((to <= from).then_some(Refusal {
            argument: Argument::To,
            batch_index: None,
            not_ahead: true,
        })),
    }
}

/// A key of the model: group, subscription, partition.
type ModelKey = (String, String, u32);

struct Driver<'a, 'm> {
    store: &'a dyn ExclusiveCheckpointStore,
    proxy: Option<&'a CountingProxy>,
    more: &'m mut dyn MoreEntryPoints,
    perform_valid: bool,
    /// What the valid calls stored.
    model: BTreeMap<ModelKey, u64>,
    refused: u64,
    performed: u64,
}

/// Fails with a formatted message unless `condition` holds.
macro_rules! check {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(Failure::new(format!($($message)+)));
        }
    };
}

impl Driver<'_, '_> {
    fn round_trips(&self) -> u64 {
        self.proxy.map(CountingProxy::round_trips).unwrap_or(0)
    }

    async fn case(&mut self, base: &str, case: u32, inputs: &Inputs) -> Result<(), Failure> {
        // A fresh group per case, unless the generated one is invalid or too long to prefix
        // (then kept as generated).
        let unique = format!("{base}/{case}/{}", inputs.group);
        let group = if valid_name(&inputs.group) && unique.len() <= MAX_NAME_BYTES {
            unique
        } else {
            inputs.group.clone()
        };
        let (g, s, p) = (
            group.as_str(),
            inputs.subscription.as_str(),
            inputs.partition,
        );
        let position = inputs.position;

        self.call(Call::Save {
            group: g,
            subscription: s,
            partition: p,
            position,
        })
        .await?;
        self.call(Call::Load {
            group: g,
            subscription: s,
            partition: p,
        })
        .await?;
        // A batch is refused whole, naming its first invalid entry.
        let batch: Vec<Checkpoint> = inputs
            .batch
            .iter()
            .map(|(s, p, position)| Checkpoint::new(s.clone(), *p, *position))
            .collect();
        self.call(Call::SaveAll {
            group: g,
            checkpoints: &batch,
        })
        .await?;
        self.call(Call::List { group: g }).await?;

        // The exclusive entry points, on a subscription of their own.
        let exclusive = format!("excl/{s}");
        let e = if valid_name(s) && exclusive.len() <= MAX_NAME_BYTES {
            exclusive.as_str()
        } else {
            s
        };
        let claimed = match self
            .call(Call::Claim {
                group: g,
                subscription: e,
                partition: p,
                fingerprint: FINGERPRINT,
                initial_position: position,
            })
            .await?
        {
            Some(Reply::Claimed(at)) => Some(at),
            _ => None,
        };
        // From the claimed position when there is one, so that a valid advance can succeed.
        let (from, to) = match claimed {
            Some(at) if at < MAX_POSITION => (at, at + 1),
            _ => (inputs.from, inputs.to),
        };
        self.advance(g, e, p, from, to).await
    }

    /// Makes `call` through the trait and the backend's own entry points, and checks each.
    async fn call(&mut self, call: Call<'_>) -> Result<Option<Reply>, Failure> {
        let refusal = refusal(&call);
        self.build(call, refusal)?;
        if refusal.is_none() && !self.perform_valid {
            return Ok(None);
        }
        let before = self.round_trips();
        let result = call.on(self.store).await;
        let trips = self.round_trips() - before;
        let reply = self.judge(call.name(), refusal, result, trips)?;
        if let Some(reply) = &reply {
            self.apply(&call, reply)?;
        }
        let before = self.round_trips();
        if let Some((name, result)) = self.more.send(call).await {
            let trips = self.round_trips() - before;
            if let Some(reply) = self.judge(name, refusal, result, trips)? {
                self.apply(&call, &reply)?;
            }
        }
        Ok(reply)
    }

    /// An advance: refused like any call, or performed and then moved a step further by the
    /// backend's own advance.
    async fn advance(
        &mut self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Failure> {
        let call = Call::Advance {
            group,
            subscription,
            partition,
            from,
            to,
        };
        let refusal = refusal(&call);
        if refusal.is_some() {
            self.call(call).await?;
            return Ok(());
        }
        self.build(call, refusal)?;
        if !self.perform_valid {
            return Ok(());
        }
        let key = (group.to_owned(), subscription.to_owned(), partition);
        let stored = self.model.get(&key).copied();
        // Valid: it moves when the checkpoint is at `from`, and is refused as moved
        // otherwise; either way the server was asked.
        let before = self.round_trips();
        let result = call.on(self.store).await;
        check!(
            self.proxy.is_none() || self.round_trips() > before,
            "a valid advance made no request"
        );
        self.performed += 1;
        match result {
            Ok(_) => {
                check!(
                    stored == Some(from),
                    "advance from {from} moved a checkpoint that was at {stored:?}"
                );
                self.model.insert(key.clone(), to);
                self.expect_at(&key, to, "advance").await?;
                // The backend's own advance, one step further.
                if to < MAX_POSITION {
                    let next = Call::Advance {
                        group,
                        subscription,
                        partition,
                        from: to,
                        to: to + 1,
                    };
                    let before = self.round_trips();
                    if let Some((name, result)) = self.more.send(next).await {
                        let trips = self.round_trips() - before;
                        self.judge(name, None, result, trips)?;
                        self.model.insert(key.clone(), to + 1);
                        self.expect_at(&key, to + 1, name).await?;
                    }
                }
            }
            Err(Error::Moved { .. }) => check!(
                stored != Some(from),
                "advance from the stored position {from} was refused as moved"
            ),
            Err(error) => {
                return Err(Failure::new(format!(
                    "advance of valid input failed: {}",
                    error_chain(&error)
                )));
            }
        }
        Ok(())
    }

    /// Checks that `key` loads as `position` after `what`.
    async fn expect_at(
        &mut self,
        key: &ModelKey,
        position: u64,
        what: &str,
    ) -> Result<(), Failure> {
        let loaded = self
            .store
            .load(&key.0, &key.1, key.2)
            .await
            .map_err(|error| Failure::new(format!("load after {what}: {}", error_chain(&error))))?;
        check!(
            loaded == Some(position),
            "load after {what} returned {loaded:?}, not {position}"
        );
        Ok(())
    }

    /// The backend's entry points that send nothing: the same rules, and never a request.
    fn build(&mut self, call: Call<'_>, refusal: Option<Refusal>) -> Result<(), Failure> {
        let before = self.round_trips();
        let built = self.more.build(call);
        for (name, result) in &built {
            match (refusal, result) {
                (Some(refusal), Err(Error::InvalidInput(invalid))) => {
                    check!(
                        invalid.argument == refusal.argument,
                        "{name} refused its {} instead of its {}",
                        invalid.argument,
                        refusal.argument
                    );
                    self.refused += 1;
                }
                (None, Ok(())) => {}
                (refusal, other) => {
                    return Err(Failure::new(format!(
                        "{name} (refusal expected: {:?}) gave {other:?}",
                        refusal.map(|r| r.argument)
                    )));
                }
            }
        }
        check!(
            self.round_trips() == before,
            "{:?} made a request, though they only build",
            built.iter().map(|(name, _)| *name).collect::<Vec<_>>()
        );
        Ok(())
    }

    /// Checks one call's result against its expected refusal; the reply of a valid call.
    fn judge(
        &mut self,
        name: &str,
        refusal: Option<Refusal>,
        result: Result<Reply, Error>,
        trips: u64,
    ) -> Result<Option<Reply>, Failure> {
        match (refusal, result) {
            (Some(refusal), Err(Error::InvalidInput(invalid))) => {
                check!(
                    invalid.argument == refusal.argument,
                    "{name} refused its {} instead of its {}",
                    invalid.argument,
                    refusal.argument
                );
                if let Some(index) = refusal.batch_index {
                    check!(
                        invalid.batch_index == Some(index),
                        "{name} named batch entry {:?}, not the first invalid one, {index}",
                        invalid.batch_index
                    );
                }
                if refusal.not_ahead {
                    check!(
                        matches!(invalid.reason, InvalidReason::NotAhead { .. }),
                        "{name} refused a `to` not ahead of `from` for another reason: {invalid}"
                    );
                }
                check!(trips == 0, "{name} sent a request for invalid input");
                self.refused += 1;
                Ok(None)
            }
            (Some(refusal), other) => Err(Failure::new(format!(
                "{name} should be refused for its {}, got {other:?}",
                refusal.argument
            ))),
            (None, Ok(reply)) => {
                check!(
                    self.proxy.is_none() || trips >= 1,
                    "{name} of valid input made no request"
                );
                self.performed += 1;
                Ok(Some(reply))
            }
            (None, Err(error)) => Err(Failure::new(format!(
                "{name} of valid input failed: {}",
                error_chain(&error)
            ))),
        }
    }

    /// Updates the model with a valid call's effect, or checks its reply against the model.
    fn apply(&mut self, call: &Call<'_>, reply: &Reply) -> Result<(), Failure> {
        let key = |group: &str, subscription: &str, partition: u32| {
            (group.to_owned(), subscription.to_owned(), partition)
        };
        match (*call, reply) {
            (
                Call::Save {
                    group,
                    subscription,
                    partition,
                    position,
                },
                Reply::Done,
            ) => self.save(key(group, subscription, partition), position),
            (Call::SaveAll { group, checkpoints }, Reply::Done) => {
                for c in checkpoints {
                    self.save(key(group, &c.subscription, c.partition), c.position);
                }
            }
            (
                Call::Load {
                    group,
                    subscription,
                    partition,
                },
                Reply::Loaded(loaded),
            ) => {
                let want = self
                    .model
                    .get(&key(group, subscription, partition))
                    .copied();
                check!(*loaded == want, "load returned {loaded:?}, not {want:?}");
            }
            (Call::List { group }, Reply::Listed(listed)) => {
                let mut listed: Vec<(&str, u32, u64)> = listed
                    .iter()
                    .map(|c| (c.subscription.as_str(), c.partition, c.position))
                    .collect();
                listed.sort();
                let want: Vec<(&str, u32, u64)> = self
                    .model
                    .iter()
                    .filter(|((g, _, _), _)| g == group)
                    .map(|((_, s, p), position)| (s.as_str(), *p, *position))
                    .collect();
                check!(listed == want, "list returned {listed:?}, not {want:?}");
            }
            (
                Call::Claim {
                    group,
                    subscription,
                    partition,
                    initial_position,
                    ..
                },
                Reply::Claimed(at),
            ) => {
                // A first claim creates the checkpoint at its initial position; a claim of an
                // existing one returns where it is.
                let key = key(group, subscription, partition);
                let want = *self.model.entry(key).or_insert(initial_position);
                check!(*at == want, "claim returned {at}, not {want}");
            }
            (call, reply) => {
                return Err(Failure::new(format!(
                    "{} returned {reply:?}, which is not its kind of reply",
                    call.name()
                )));
            }
        }
        Ok(())
    }

    fn save(&mut self, key: ModelKey, position: u64) {
        let stored = self.model.entry(key).or_insert(position);
        *stored = (*stored).max(position);
    }
}
