//! How a checkpoint is laid out in Redis: one hash per group under the key prefix, one field
//! per (subscription, partition), the value `<position>` or `<position>|<fingerprint>`; the
//! key prefix rule, the cluster hash tag, and reading stored values back through
//! [`checkpoint_core::stored`]. The keys of a subscription's leases and the reading of what
//! the lease scripts return are in `layout/lease.rs` ([`lease_keys`]), those of parked entries
//! in `layout/parked.rs` ([`parked_key`]).
//!
//! Everything here is pure string handling, tested without a server.

use checkpoint_core::error::{Argument, InvalidInput, InvalidReason};
use checkpoint_core::stored::position_from_decimal;
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Error, Fingerprint, UnexpectedValue};

use crate::MAX_KEY_PREFIX_BYTES;

mod lease;
mod parked;

pub(crate) use lease::{
    LeaseKeys, lease_keys, lease_millis, parse_epoch, parse_partition, parse_time_left,
};
pub(crate) use parked::{PARKED_VALUE, parked_field, parked_key, parked_value, parse_parked};

/// A field of a group's hash, in an [`UnexpectedValue`].
pub(crate) const FIELD: &str = "field";
/// The position part of a stored value (or a position a script returns).
pub(crate) const POSITION: &str = "position";
/// The fingerprint part of a stored value (or a fingerprint a script returns).
pub(crate) const FINGERPRINT: &str = "fingerprint";

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

/// The key of the set of `group`'s retired subscriptions (its tombstones), beside the group's
/// hash `group_key`: `<prefix>:{<escaped group>}:retired`, in the same cluster slot, so that
/// every script that writes a checkpoint can check it.
pub(crate) fn retired_key(group_key: &str) -> String {
    format!("{group_key}{RETIRED_SUFFIX}")
}

/// What follows a group's hash key in the key of its retired set.
const RETIRED_SUFFIX: &str = ":retired";

/// The `SCAN … MATCH` pattern of every key of a store under `prefix`: `<prefix>:{*`, the
/// prefix's glob characters escaped. It also matches keys of the caller's under the prefix;
/// [`group_of_key`] tells them apart.
pub(crate) fn scan_pattern(prefix: &str) -> String {
    let mut pattern = glob_escaped(prefix);
    pattern.push_str(":{*");
    pattern
}

/// `text` with the glob characters of `MATCH` and ACL key patterns escaped.
fn glob_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The group whose hash ([`group_key`]) or retired set ([`retired_key`]) `key` is, under
/// `prefix`; `None` for any other key (one of the caller's under the prefix).
///
/// Exact: the prefix holds no brace, so the group's tag starts at the first `{` after it and
/// ends at the next `}`; the tag is unescaped (`%25` → `%`, `%7D` → `}`) and accepted only if
/// escaping it again gives the same tag, the escape being injective.
pub(crate) fn group_of_key(prefix: &str, key: &[u8]) -> Option<String> {
    let key = std::str::from_utf8(key).ok()?;
    let rest = key.strip_prefix(prefix)?.strip_prefix(":{")?;
    let (tag, after) = rest.split_once('}')?;
    if !(after.is_empty() || after == RETIRED_SUFFIX) {
        return None;
    }
    let group = unescaped(tag)?;
    (validate_group(&group).is_ok() && hash_tag(&group)[1..] == rest[..tag.len() + 1])
        .then_some(group)
}

/// The group of a hash tag's text (without its braces): the inverse of the escape of
/// [`hash_tag`]; `None` for text that escape never writes.
fn unescaped(tag: &str) -> Option<String> {
    let mut group = String::with_capacity(tag.len());
    let mut rest = tag;
    while let Some(percent) = rest.find('%') {
        group.push_str(&rest[..percent]);
        let escape = rest.get(percent..percent + 3)?;
        group.push(match escape {
            "%25" => '%',
            "%7D" => '}',
            _ => return None,
        });
        rest = &rest[percent + 3..];
    }
    group.push_str(rest);
    Some(group)
}

/// The ACL key pattern that covers every key under `prefix`: `~<prefix>:*`, the prefix's glob
/// characters escaped.
pub(crate) fn key_pattern(prefix: &str) -> String {
    format!("~{}:*", glob_escaped(prefix))
}

/// The field of (subscription, partition): `<partition>:<subscription>`.
///
/// The partition is a decimal number without `:`, so the first `:` always ends it: the
/// encoding is prefix-free and injective whatever the subscription holds.
pub(crate) fn field(subscription: &str, partition: u32) -> String {
    FieldOf(subscription, partition).to_string()
}

/// The field of (subscription, partition) as [`field`] writes it, displayed where it is
/// written (into a request's buffer) instead of into a `String` of its own.
pub(crate) struct FieldOf<'a>(pub(crate) &'a str, pub(crate) u32);

impl std::fmt::Display for FieldOf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.1, self.0)
    }
}

/// The (subscription, partition) of a field; an [`UnexpectedValue`] for a field this store did
/// not write.
pub(crate) fn parse_field(field: &[u8]) -> Result<(String, u32), UnexpectedValue> {
    let not_a_field = || {
        UnexpectedValue::new(
            FIELD,
            format!("{}, not `<partition>:<subscription>`", shown(field)),
        )
    };
    let text = std::str::from_utf8(field).map_err(|_| not_a_field())?;
    let (partition, subscription) = text.split_once(':').ok_or_else(not_a_field)?;
    if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_field());
    }
    let partition = partition.parse().map_err(|_| not_a_field())?;
    Ok((subscription.to_owned(), partition))
}

/// A stored value: `<position>` or `<position>|<64 hex digits of the fingerprint>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoredValue {
    pub(crate) position: u64,
    pub(crate) fingerprint: Option<Fingerprint>,
}

/// Reads a stored value back; an [`UnexpectedValue`] when it is not one this store writes.
/// The position follows the range rules of every store ([`position_from_decimal`]): decimal
/// digits only, at most `i64::MAX`, parsed exactly.
pub(crate) fn parse_value(value: &[u8]) -> Result<StoredValue, UnexpectedValue> {
    let text = std::str::from_utf8(value)
        .map_err(|_| UnexpectedValue::new(POSITION, format!("{}, not UTF-8", shown(value))))?;
    let (position, fingerprint) = match text.split_once('|') {
        Some((position, fingerprint)) => (position, Some(parse_fingerprint(fingerprint)?)),
        None => (text, None),
    };
    Ok(StoredValue {
        position: parse_position(position)?,
        fingerprint,
    })
}

/// A position as stored or as a script returns it (see [`parse_value`]).
pub(crate) fn parse_position(text: &str) -> Result<u64, UnexpectedValue> {
    position_from_decimal(POSITION, text)
}

/// A fingerprint as stored or as a script returns it: 64 hex digits.
pub(crate) fn parse_fingerprint(text: &str) -> Result<Fingerprint, UnexpectedValue> {
    Fingerprint::from_hex(text).ok_or_else(|| {
        UnexpectedValue::new(
            FINGERPRINT,
            format!("{}, not 64 hex digits", shown(text.as_bytes())),
        )
    })
}

/// Bytes read back, for a person to read in an [`UnexpectedValue`]: at most 40 characters,
/// quoted and escaped.
pub(crate) fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut shown: String = text.chars().take(40).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
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
                Ok(((*subscription).to_owned(), *partition))
            );
        }
        fields.sort();
        fields.dedup();
        assert_eq!(fields.len(), keys.len());
        for foreign in [
            &b"x:a"[..],
            b"4294967296:a",
            b"+1:a",
            b"no colon",
            b"\xff:a",
        ] {
            let error = parse_field(foreign).expect_err("a foreign field");
            assert_eq!(error.field, FIELD);
        }
    }

    #[test]
    fn values_parse_with_and_without_fingerprint() {
        let max = i64::MAX.to_string();
        assert_eq!(
            parse_value(max.as_bytes()),
            Ok(StoredValue {
                position: i64::MAX as u64,
                fingerprint: None
            })
        );
        let fingerprint = Fingerprint::from_bytes([7; 32]);
        let with = format!("9007199254740993|{fingerprint}");
        assert_eq!(
            parse_value(with.as_bytes()),
            Ok(StoredValue {
                position: 9_007_199_254_740_993,
                fingerprint: Some(fingerprint)
            })
        );
        for (value, field) in [
            (&b"9223372036854775808"[..], POSITION),
            (b"-1", POSITION),
            (b"", POSITION),
            (b"\xff", POSITION),
            (b"1|zz", FINGERPRINT),
        ] {
            let error = parse_value(value).expect_err("a value no store writes");
            assert_eq!(error.field, field, "{value:?}");
        }
        let long = parse_value("x".repeat(1_000).as_bytes()).expect_err("not a position");
        assert!(long.found.len() < 100, "{}", long.found);
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

    #[test]
    fn groups_are_read_back_from_their_keys_exactly() {
        let prefix = "app:c*";
        for group in [
            "billing",
            "{a}",
            "}{",
            "a}b{c",
            "%7D",
            "%25",
            "}",
            "{",
            "a:b",
            "😀{}",
            "%",
            ":retired",
            "a}:retired",
            "x%7Dy",
        ] {
            let key = group_key(prefix, group);
            assert_eq!(group_of_key(prefix, key.as_bytes()).as_deref(), Some(group));
            let retired = retired_key(&key);
            assert_eq!(
                group_of_key(prefix, retired.as_bytes()).as_deref(),
                Some(group)
            );
        }
        for foreign in [
            "app:c*:{billing}:view",
            "app:c*:{billing}x",
            "app:c*:{%41}",
            "app:c*:{%2}",
            "app:c*:{}",
            "app:c*:billing",
            "app:c:{billing}",
            "other:{billing}",
            "app:c*:{billing",
        ] {
            assert_eq!(group_of_key(prefix, foreign.as_bytes()), None, "{foreign}");
        }
        assert_eq!(group_of_key(prefix, b"app:c*:{\xff}"), None);
        assert_eq!(scan_pattern("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\:{*");
        assert_eq!(
            retired_key("checkpoint:{billing}"),
            "checkpoint:{billing}:retired"
        );
    }

    #[test]
    fn lease_keys_share_the_groups_slot_and_never_collide() {
        let group_key = group_key("checkpoint", "a}b");
        let mut keys = Vec::new();
        for subscription in ["s", "leases:s", "owners:s", ":", "{x}"] {
            let lease = lease_keys(&group_key, subscription);
            for key in [&lease.leases, &lease.owners, &lease.held, &lease.retired] {
                assert_eq!(cluster_hashed_part(key), "a%7Db", "{key}");
                assert_eq!(
                    group_of_key("checkpoint", key.as_bytes()).is_some(),
                    key == &lease.retired
                );
            }
            keys.extend([lease.leases, lease.owners, lease.held]);
        }
        let count = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), count);
        assert_eq!(lease_keys("c:{g}", "s").held, "c:{g}:held:s");
    }

    #[test]
    fn the_parked_key_shares_the_groups_slot_and_is_no_group_key() {
        let group_key = group_key("checkpoint", "a}b");
        let parked = parked_key(&group_key);
        assert_eq!(cluster_hashed_part(&parked), "a%7Db");
        assert_eq!(group_of_key("checkpoint", parked.as_bytes()), None);
        for subscription in ["", "s", "parked"] {
            let lease = lease_keys(&group_key, subscription);
            for key in [&lease.leases, &lease.owners, &lease.held, &lease.retired] {
                assert_ne!(key, &parked);
            }
        }
    }

    #[test]
    fn key_patterns_escape_glob_characters() {
        assert_eq!(key_pattern("checkpoint"), "~checkpoint:*");
        assert_eq!(key_pattern("a*b?[c]\\"), "~a\\*b\\?\\[c\\]\\\\:*");
    }
}
