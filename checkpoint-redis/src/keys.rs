//! The key layout: one hash per group, one field per (subscription, partition).
//!
//! Everything here is pure string handling, tested without a server.

use checkpoint_core::error::{Argument, InvalidInput, InvalidReason};
use checkpoint_core::{Error, Fingerprint};

/// The key prefix used unless [`with_key_prefix`](crate::RedisCheckpointStore::with_key_prefix)
/// sets another.
pub const DEFAULT_KEY_PREFIX: &str = "checkpoint";

/// The longest key prefix accepted, in bytes.
pub const MAX_KEY_PREFIX_BYTES: usize = 128;

/// Checks a key prefix: non-empty, at most [`MAX_KEY_PREFIX_BYTES`], no `{`, `}` or NUL.
///
/// A `{` or `}` in the prefix would change which part of the key Redis Cluster hashes, and
/// with it the guarantee that a group lives in one slot.
pub(crate) fn validate_prefix(prefix: &str) -> Result<(), Error> {
    let argument = Argument::Setting("key_prefix");
    if prefix.is_empty() {
        return Err(InvalidInput::new(argument, InvalidReason::Empty).into());
    }
    if prefix.len() > MAX_KEY_PREFIX_BYTES {
        return Err(InvalidInput::new(
            argument,
            InvalidReason::TooLong {
                len: prefix.len(),
                max: MAX_KEY_PREFIX_BYTES,
            },
        )
        .into());
    }
    if prefix.contains(['{', '}', '\0']) {
        return Err(InvalidInput::new(
            argument,
            InvalidReason::Malformed {
                expected: "a key prefix without `{`, `}` or NUL characters",
            },
        )
        .into());
    }
    Ok(())
}

/// The hash tag of `group`: `{` + the group with `%` and `}` percent-escaped + `}`.
///
/// Redis Cluster hashes the text between the first `{` and the next `}`. The prefix holds no
/// brace, so the first `{` is this one; the escaped group holds no `}`, so the next `}` is
/// this one's end. The tag is therefore exactly the escaped group, never empty, and
/// percent-escaping (including `%` itself) is injective, so different groups get different
/// keys.
pub(crate) fn hash_tag(group: &str) -> String {
    let mut tag = String::with_capacity(group.len() + 2);
    tag.push('{');
    for c in group.chars() {
        match c {
            '%' => tag.push_str("%25"),
            '}' => tag.push_str("%7D"),
            c => tag.push(c),
        }
    }
    tag.push('}');
    tag
}

/// The key of the hash holding every checkpoint of `group`: `<prefix>:{<escaped group>}`.
pub(crate) fn group_key(prefix: &str, group: &str) -> String {
    format!("{prefix}:{}", hash_tag(group))
}

/// The field of (subscription, partition): `<partition>:<subscription>`.
///
/// The partition is a decimal number without `:`, so the first `:` always ends it: the
/// encoding is prefix-free and injective whatever the subscription holds.
pub(crate) fn field(subscription: &str, partition: u32) -> String {
    format!("{partition}:{subscription}")
}

/// The (subscription, partition) of a field, or `None` for a field this store did not write.
pub(crate) fn parse_field(field: &[u8]) -> Option<(String, u32)> {
    let field = std::str::from_utf8(field).ok()?;
    let (partition, subscription) = field.split_once(':')?;
    if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((subscription.to_owned(), partition.parse().ok()?))
}

/// A stored value: `<position>` or `<position>|<64 hex digits of the fingerprint>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoredValue {
    pub(crate) position: u64,
    pub(crate) fingerprint: Option<Fingerprint>,
}

/// Parses a stored value, or `None` when it is not one this store writes.
pub(crate) fn parse_value(value: &[u8]) -> Option<StoredValue> {
    let value = std::str::from_utf8(value).ok()?;
    let (position, fingerprint) = match value.split_once('|') {
        Some((position, fingerprint)) => (position, Some(Fingerprint::from_hex(fingerprint)?)),
        None => (value, None),
    };
    Some(StoredValue {
        position: parse_position(position)?,
        fingerprint,
    })
}

/// A position as the scripts return it: decimal digits only, within `0..=i64::MAX`.
pub(crate) fn parse_position(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>()
        .ok()
        .filter(|p| *p <= checkpoint_core::validation::MAX_POSITION)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot-hashed part of a key, as Redis Cluster defines it.
    fn cluster_hashed_part(key: &str) -> &str {
        if let Some(open) = key.find('{')
            && let Some(len) = key[open + 1..].find('}')
            && len > 0
        {
            return &key[open + 1..open + 1 + len];
        }
        key
    }

    #[test]
    fn the_hash_tag_is_the_whole_escaped_group() {
        for group in [
            "billing", "{a}", "}{", "a}b{c", "%7D", "}", "{", "a:b", "😀{}",
        ] {
            let key = group_key("checkpoint", group);
            let tag = hash_tag(group);
            assert_eq!(cluster_hashed_part(&key), &tag[1..tag.len() - 1], "{group}");
            assert!(key.ends_with('}'));
        }
        assert_eq!(group_key("checkpoint", "billing"), "checkpoint:{billing}");
        assert_eq!(group_key("p", "a}b"), "p:{a%7Db}");
        assert_eq!(group_key("p", "%7D"), "p:{%257D}");
    }

    #[test]
    fn keys_are_injective_over_tricky_groups() {
        let groups = [
            "a", "a}", "a%7D", "a%", "a%25", "}", "%", "{", "{}", "a:b", "a", "%7d", "}}",
        ];
        let mut keys: Vec<String> = groups.iter().map(|g| group_key("c", g)).collect();
        keys.sort();
        keys.dedup();
        // "a" appears twice in the list on purpose.
        assert_eq!(keys.len(), groups.len() - 1);
    }

    #[test]
    fn fields_round_trip_and_never_collide() {
        let keys = [
            ("a:1", 2),
            ("a", 1),
            ("1:a", 2),
            ("", 0),
            (":", 4_294_967_295),
        ];
        let mut fields: Vec<String> = keys.iter().map(|(s, p)| field(s, *p)).collect();
        for ((subscription, partition), f) in keys.iter().zip(&fields) {
            assert_eq!(
                parse_field(f.as_bytes()),
                Some(((*subscription).to_owned(), *partition))
            );
        }
        fields.sort();
        fields.dedup();
        assert_eq!(fields.len(), keys.len());
        assert_eq!(parse_field(b"x:a"), None);
        assert_eq!(parse_field(b"4294967296:a"), None);
        assert_eq!(parse_field(b"+1:a"), None);
    }

    #[test]
    fn values_parse_with_and_without_fingerprint() {
        let max = i64::MAX.to_string();
        assert_eq!(
            parse_value(max.as_bytes()),
            Some(StoredValue {
                position: i64::MAX as u64,
                fingerprint: None
            })
        );
        let fingerprint = Fingerprint::from_bytes([7; 32]);
        let with = format!("9007199254740993|{fingerprint}");
        assert_eq!(
            parse_value(with.as_bytes()),
            Some(StoredValue {
                position: 9_007_199_254_740_993,
                fingerprint: Some(fingerprint)
            })
        );
        assert_eq!(parse_value(b"9223372036854775808"), None);
        assert_eq!(parse_value(b"-1"), None);
        assert_eq!(parse_value(b"1|zz"), None);
        assert_eq!(parse_value(b""), None);
    }

    #[test]
    fn prefixes_are_checked() {
        assert!(validate_prefix("checkpoint").is_ok());
        assert!(validate_prefix("app:checkpoints").is_ok());
        assert!(validate_prefix("").is_err());
        assert!(validate_prefix("a{b").is_err());
        assert!(validate_prefix("a}b").is_err());
        assert!(validate_prefix(&"p".repeat(MAX_KEY_PREFIX_BYTES)).is_ok());
        assert!(validate_prefix(&"p".repeat(MAX_KEY_PREFIX_BYTES + 1)).is_err());
    }
}
