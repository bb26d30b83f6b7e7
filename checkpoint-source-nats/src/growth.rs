//! Partitions that grow: a stream given more partitions (its recorded count raised, the
//! subjects it lacks added) by [`NatsSource::grow_to`], found by readers with
//! [`discover_partitions`](checkpoint_core::source::Source::discover_partitions).

use async_nats::jetstream::stream;
use checkpoint_core::source::SourceError;

use crate::error::{backend, setup, within};
use crate::setup::{PARTITIONS_MARKER, recorded_partitions};
use crate::source::NatsSource;
use crate::subjects::{check_covered, matches, partition_subject};

impl NatsSource {
    /// Grows the stream to `partitions` partitions, if it has fewer: adds the subjects
    /// `<prefix>.<p>` its subjects do not capture yet (none for a stream made by
    /// [`create_stream`](Self::create_stream), whose `<prefix>.*` captures every partition)
    /// and records the new count in its description (`checkpoint-partitions=N`), in one
    /// stream update; returns the count the stream records now. Existing partitions keep
    /// every message at its sequence (a message belongs to its subject, whatever the count);
    /// a new partition is read from its start. This source knows the new count at once;
    /// other readers at their next
    /// [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) (a
    /// subscription asks every discovery interval). A count at or below the recorded one
    /// changes nothing.
    ///
    /// An operator's step: run it from one process at a time. A stream update replaces the
    /// whole configuration, so two growths racing could leave the smaller count recorded;
    /// readers then refuse the lowered count with [`SourceError::Setup`] and keep theirs, and
    /// the next `grow_to` repairs it. A writer routing keys by `hash(key) mod count` sends a
    /// key's later messages to another partition once the count grew: no message moves, but
    /// the order of one key across the two partitions is the writer's concern.
    ///
    /// # Errors
    ///
    /// [`SourceError::Setup`] when the stream's description records no count (write one
    /// first: the count the source was opened with) or one that is not a number;
    /// [`SourceError::Backend`] or [`SourceError::Timeout`] when the server fails.
    pub async fn grow_to(&self, partitions: u32) -> Result<u32, SourceError> {
        within("grow", self.config.timeout, async {
            let info = self
                .stream
                .get_info()
                .await
                .map_err(|e| backend("grow", true, e))?;
            let recorded = self.recorded(&info.config)?;
            if recorded >= partitions {
                self.raise_partitions(recorded);
                return Ok(recorded);
            }
            let grown = self.grown_config(info.config, recorded, partitions);
            self.context
                .update_stream(grown)
                .await
                .map_err(|e| backend("grow", true, e))?;
            self.raise_partitions(partitions);
            Ok(partitions)
        })
        .await
    }

    /// What `discover_partitions` does: one stream info request, the recorded count checked
    /// (never below the count known, its subjects captured) and taken.
    pub(crate) async fn refresh_partitions(&self) -> Result<u32, SourceError> {
        within("discover", self.config.timeout, async {
            let info = self
                .stream
                .get_info()
                .await
                .map_err(|e| backend("discover", true, e))?;
            let known = self.partitions_now();
            let found = &info.config;
            let recorded = match recorded_partitions(found.description.as_deref()) {
                // No count recorded: the stream has the count the source was given.
                None => return Ok(known),
                Some(_) => self.recorded(found)?,
            };
            if recorded < known {
                return Err(setup(format!(
                    "stream {:?} now records {recorded} partitions, after {known}: a partition \
                     count never decreases (partitions {recorded}..{known} may hold messages); \
                     write `{PARTITIONS_MARKER}{known}` back in its description",
                    self.config.stream
                )));
            }
            check_covered(
                &self.config.stream,
                &found.subjects,
                &self.config.subject_prefix,
                recorded,
            )?;
            self.raise_partitions(recorded);
            Ok(recorded)
        })
        .await
    }

    /// The count `found`'s description records, refused when absent or not a number.
    fn recorded(&self, found: &stream::Config) -> Result<u32, SourceError> {
        match recorded_partitions(found.description.as_deref()) {
            Some(Ok(recorded)) => Ok(recorded),
            Some(Err(value)) => Err(setup(format!(
                "stream {:?} has {PARTITIONS_MARKER}{value:?} in its description, which is not \
                 a partition count",
                self.config.stream
            ))),
            None => Err(setup(format!(
                "stream {:?} records no partition count in its description: add \
                 `{PARTITIONS_MARKER}{}` there before growing it",
                self.config.stream,
                self.partitions_now()
            ))),
        }
    }

    /// `found` with the subjects of partitions `recorded..partitions` it lacks and the new
    /// count in its description.
    fn grown_config(
        &self,
        mut found: stream::Config,
        recorded: u32,
        partitions: u32,
    ) -> stream::Config {
        let prefix = &self.config.subject_prefix;
        for partition in recorded..partitions {
            let subject = partition_subject(prefix, partition);
            if !found
                .subjects
                .iter()
                .any(|pattern| matches(pattern, &subject))
            {
                found.subjects.push(subject);
            }
        }
        let description = found.description.take().unwrap_or_default();
        found.description = Some(with_count(&description, partitions));
        found
    }
}

/// `description` with the digits after its first [`PARTITIONS_MARKER`] replaced by `count`
/// (the marker is there: `recorded` found it).
fn with_count(description: &str, count: u32) -> String {
    let Some(at) = description.find(PARTITIONS_MARKER) else {
        return format!("{description}, {PARTITIONS_MARKER}{count}");
    };
    let digits_at = at + PARTITIONS_MARKER.len();
    let rest = &description[digits_at..];
    let after = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    format!("{}{count}{}", &description[..digits_at], &rest[after..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_count_is_replaced_in_place() {
        assert_eq!(
            with_count("log: subjects x.<p>, checkpoint-partitions=8", 12),
            "log: subjects x.<p>, checkpoint-partitions=12"
        );
        assert_eq!(
            with_count("checkpoint-partitions=3; kept", 4),
            "checkpoint-partitions=4; kept"
        );
        assert_eq!(recorded_partitions(Some(&with_count("a", 2))), Some(Ok(2)));
    }
}
