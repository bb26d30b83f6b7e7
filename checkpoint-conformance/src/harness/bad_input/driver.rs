//! The driver of one run: a model of what the valid calls stored, and the checks on every
//! reply (against the refusal each call must meet, see `refusal.rs`) and on the round trips.

use std::collections::BTreeMap;

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Checkpoint, Error, ExclusiveCheckpointStore, Fingerprint, InvalidReason};

use super::calls::{Call, MoreEntryPoints, Reply};
use super::refusal::{Refusal, refusal};
use crate::Failure;
use crate::failure::error_chain;
use crate::inputs::{Inputs, valid_name};
use crate::round_trips::CountingProxy;

/// The fingerprint of every claim the driver makes.
const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([4; 32]);

/// `tag` and `name`, cut from the front of `name` (at a character boundary) where both would
/// not fit in a valid name: a name as fresh as `tag`, and as long as `name` near the limit.
pub(super) fn fresh_within_limit(tag: &str, name: &str) -> String {
    let room = MAX_NAME_BYTES.saturating_sub(tag.len());
    let mut start = name.len().saturating_sub(room);
    while !name.is_char_boundary(start) {
        start += 1;
    }
    format!("{tag}{}", &name[start..])
}

/// A key of the model: group, subscription, partition.
type ModelKey = (String, String, u32);

pub(super) struct Driver<'a, 'm> {
    store: &'a dyn ExclusiveCheckpointStore,
    proxy: Option<&'a CountingProxy>,
    more: &'m mut dyn MoreEntryPoints,
    perform_valid: bool,
    /// What the valid calls stored.
    model: BTreeMap<ModelKey, u64>,
    /// Calls refused as they should be.
    pub(super) refused: u64,
    /// Valid calls performed and read back.
    pub(super) performed: u64,
}

/// Fails with a formatted message unless `condition` holds.
macro_rules! check {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(Failure::new(format!($($message)+)));
        }
    };
}

impl<'a, 'm> Driver<'a, 'm> {
    pub(super) fn new(
        store: &'a dyn ExclusiveCheckpointStore,
        proxy: Option<&'a CountingProxy>,
        more: &'m mut dyn MoreEntryPoints,
        perform_valid: bool,
    ) -> Self {
        Self {
            store,
            proxy,
            more,
            perform_valid,
            model: BTreeMap::new(),
            refused: 0,
            performed: 0,
        }
    }

    fn round_trips(&self) -> u64 {
        self.proxy.map(CountingProxy::round_trips).unwrap_or(0)
    }

    pub(super) async fn case(
        &mut self,
        base: &str,
        case: u32,
        inputs: &Inputs,
    ) -> Result<(), Failure> {
        // A fresh group per case (a store keeps what earlier runs saved), unless the generated
        // one is invalid (then kept as generated).
        let group = if valid_name(&inputs.group) {
            fresh_within_limit(&format!("{base}/{case}/"), &inputs.group)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_group_stays_valid_and_keeps_the_names_tail() {
        let tag = "ck-bad-input-0123456789abcdef/7/";
        assert_eq!(fresh_within_limit(tag, "orders"), format!("{tag}orders"));
        for name in [
            "n".repeat(MAX_NAME_BYTES),
            "é".repeat(MAX_NAME_BYTES / 2),
            format!("{}😀", "x".repeat(MAX_NAME_BYTES - 4)),
        ] {
            let group = fresh_within_limit(tag, &name);
            assert!(group.starts_with(tag), "{group}");
            assert!(name.ends_with(&group[tag.len()..]), "{group}");
            assert!(valid_name(&group), "{} bytes", group.len());
            assert!(group.len() > MAX_NAME_BYTES - 4, "{} bytes", group.len());
        }
    }
}
