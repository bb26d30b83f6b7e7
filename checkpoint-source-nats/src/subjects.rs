//! Subjects of partitions and the NATS subject matching needed to check a stream's subjects.

use checkpoint_core::source::SourceError;

use crate::error::setup;

/// The subject of `partition` under `prefix`: `<prefix>.<partition>`.
pub(crate) fn partition_subject(prefix: &str, partition: u32) -> String {
    format!("{prefix}.{partition}")
}

/// Checks a subject prefix: one or more dot-separated tokens, none empty, no wildcard, no
/// whitespace (what NATS accepts as a literal subject).
pub(crate) fn check_prefix(prefix: &str) -> Result<(), SourceError> {
    let valid = !prefix.is_empty()
        && prefix.split('.').all(|token| {
            !token.is_empty()
                && token != "*"
                && token != ">"
                && !token
                    .chars()
                    .any(|c| c.is_whitespace() || c == '*' || c == '>')
        });
    if valid {
        Ok(())
    } else {
        Err(SourceError::InvalidInput {
            argument: "subject prefix",
            reason: format!(
                "{prefix:?} is not a literal NATS subject: dot-separated tokens, none empty, \
                 without `*`, `>` or whitespace"
            ),
        })
    }
}

/// Checks a stream name as the server does: not empty, no `.`, `*`, `>`, path separators or
/// whitespace.
pub(crate) fn check_stream_name(stream: &str) -> Result<(), SourceError> {
    let valid = !stream.is_empty()
        && !stream
            .chars()
            .any(|c| matches!(c, '.' | '*' | '>' | '/' | '\\') || c.is_whitespace());
    if valid {
        Ok(())
    } else {
        Err(SourceError::InvalidInput {
            argument: "stream",
            reason: format!(
                "{stream:?} is not a JetStream stream name: not empty, without `.`, `*`, `>`, \
                 `/`, `\\` or whitespace"
            ),
        })
    }
}

/// Whether the subject filter `pattern` (with `*` for one token and a final `>` for one or
/// more) matches the literal `subject`.
pub(crate) fn matches(pattern: &str, subject: &str) -> bool {
    let mut wanted = subject.split('.');
    for token in pattern.split('.') {
        match (token, wanted.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (literal, Some(given)) if literal == given => {}
            _ => return false,
        }
    }
    wanted.next().is_none()
}

/// Whether the stream subject `pattern` can hold a subject `<prefix>.<token>` with a token
/// the source does not read: a wildcard after the prefix, or a literal partition `>=
/// partitions`.
pub(crate) fn holds_foreign_partition(pattern: &str, prefix: &str, partitions: u32) -> bool {
    // A wildcard pattern matching "<prefix>.<partitions>" holds partitions beyond ours.
    if matches(pattern, &partition_subject(prefix, partitions)) {
        return true;
    }
    pattern
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|token| token.parse::<u64>().ok())
        .is_some_and(|partition| partition >= u64::from(partitions))
}

/// Checks that every partition's subject is captured by one of the stream's `subjects`.
pub(crate) fn check_covered(
    stream: &str,
    subjects: &[String],
    prefix: &str,
    partitions: u32,
) -> Result<(), SourceError> {
    let missing = (0..partitions)
        .map(|partition| partition_subject(prefix, partition))
        .find(|subject| !subjects.iter().any(|pattern| matches(pattern, subject)));
    match missing {
        None => Ok(()),
        Some(subject) => Err(setup(format!(
            "stream {stream:?} does not capture subject {subject:?} (its subjects: {subjects:?}): \
             add \"{prefix}.*\" to its subjects (`nats stream edit {stream} --subjects ...`), or \
             create the stream with NatsSource::create_stream"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_nats_does() {
        assert!(matches("orders.*", "orders.3"));
        assert!(matches("orders.>", "orders.3"));
        assert!(matches(">", "orders.3"));
        assert!(matches("orders.3", "orders.3"));
        assert!(!matches("orders.*", "orders.3.x"));
        assert!(!matches("orders.*", "orders"));
        assert!(!matches("orders.3", "orders.4"));
        assert!(!matches("orders.*.x", "orders.3"));
    }

    #[test]
    fn foreign_partitions_are_found() {
        assert!(holds_foreign_partition("orders.*", "orders", 8));
        assert!(holds_foreign_partition("orders.8", "orders", 8));
        assert!(!holds_foreign_partition("orders.7", "orders", 8));
        assert!(!holds_foreign_partition("other.*", "orders", 8));
    }

    #[test]
    fn names_are_checked() {
        assert!(check_prefix("app.orders").is_ok());
        assert!(check_prefix("app..orders").is_err());
        assert!(check_prefix("orders.*").is_err());
        assert!(check_stream_name("ORDERS").is_ok());
        assert!(check_stream_name("a.b").is_err());
        assert!(check_stream_name("").is_err());
    }
}
