//! What `parked` prints: a table, or one JSON object.
//!
//! The JSON is stable across versions (fields may be added, never renamed or removed):
//!
//! ```json
//! {"group":"billing",
//!  "parked":[{"attempts":5,"error":"no such customer","parked_at":"2026-12-03T19:25:26.042Z",
//!             "parked_at_ms":1796325926042,"partition":3,"position":41,
//!             "retry_requested":false,"subscription":"invoices"}]}
//! ```
//!
//! `parked` is sorted by subscription (by the bytes of its name), partition and position.
//! `parked_at` is the time the subscription parked the entry, by its process's clock, in UTC
//! (RFC 3339, to the millisecond), and the same instant in milliseconds since the Unix epoch;
//! `error` is the handler's whole last error. The table shows only the error's first line,
//! cut to [`ERROR_CHARS`] characters.

use std::io::Write;

use checkpoint_core::parked::ParkedEntry;
use serde::Serialize;

use super::columns::write_columns;
use super::shown;
use super::time::rfc3339_millis;

/// The most characters of an error the table shows.
pub const ERROR_CHARS: usize = 100;

/// What `parked` shows of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedListing {
    /// The group.
    pub group: String,
    /// Its parked entries, sorted by subscription, partition and position.
    pub entries: Vec<ParkedEntry>,
}

impl ParkedListing {
    /// A listing of `entries` (in any order).
    pub fn new(group: &str, mut entries: Vec<ParkedEntry>) -> Self {
        entries.sort_by(|a, b| {
            (a.subscription.as_bytes(), a.partition, a.position).cmp(&(
                b.subscription.as_bytes(),
                b.partition,
                b.position,
            ))
        });
        Self {
            group: group.to_owned(),
            entries,
        }
    }

    /// The JSON object (see the module doc).
    pub fn to_json(&self) -> ParkedListingJson<'_> {
        let parked = self
            .entries
            .iter()
            .map(|entry| ParkedJson {
                attempts: entry.attempts,
                error: &entry.error,
                parked_at: rfc3339_millis(entry.parked_at),
                parked_at_ms: entry.parked_at_millis(),
                partition: entry.partition,
                position: entry.position,
                retry_requested: entry.retry_requested,
                subscription: &entry.subscription,
            })
            .collect();
        ParkedListingJson {
            group: &self.group,
            parked,
        }
    }

    /// The table, one entry per line; nothing for none.
    pub fn write_table(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .entries
            .iter()
            .map(|entry| {
                vec![
                    shown(&entry.subscription),
                    entry.partition.to_string(),
                    entry.position.to_string(),
                    entry.attempts.to_string(),
                    rfc3339_millis(entry.parked_at),
                    yes_no(entry.retry_requested).to_owned(),
                    error_summary(&entry.error),
                ]
            })
            .collect();
        write_columns(out, &COLUMNS, &rows)
    }
}

/// `parked --json`: the object of the module doc. Fields in the order of their names, as in
/// every JSON row of the command (see [`super::write_json`]).
#[derive(Debug, Serialize)]
pub struct ParkedListingJson<'a> {
    group: &'a str,
    parked: Vec<ParkedJson<'a>>,
}

/// One parked entry of [`ParkedListingJson`].
#[derive(Debug, Serialize)]
struct ParkedJson<'a> {
    attempts: u32,
    error: &'a str,
    parked_at: String,
    parked_at_ms: i64,
    partition: u32,
    position: u64,
    retry_requested: bool,
    subscription: &'a str,
}

/// The columns: title, and whether the values are aligned right.
const COLUMNS: [(&str, bool); 7] = [
    ("SUBSCRIPTION", false),
    ("PARTITION", true),
    ("POSITION", true),
    ("ATTEMPTS", true),
    ("PARKED AT", false),
    ("RETRY REQUESTED", false),
    ("ERROR", false),
];

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// An error's first line, at most [`ERROR_CHARS`] characters, ending in `…` when anything was
/// left out; control characters escaped, so that an error text cannot break the table or
/// drive the terminal; `-` for an empty error.
pub fn error_summary(error: &str) -> String {
    let first = error.split(['\n', '\r']).next().unwrap_or_default();
    let cut = first.chars().count() > ERROR_CHARS || first.len() < error.len();
    // Room for the `…` when something is left out.
    let keep = if cut { ERROR_CHARS - 1 } else { ERROR_CHARS };
    let mut summary = String::new();
    for c in first.chars().take(keep) {
        if c.is_control() {
            summary.extend(c.escape_default());
        } else {
            summary.push(c);
        }
    }
    if cut {
        summary.push('…');
    }
    if summary.is_empty() {
        summary.push('-');
    }
    summary
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;

    fn entry(subscription: &str, partition: u32, position: u64, error: &str) -> ParkedEntry {
        let mut entry = ParkedEntry::new(subscription, partition, position, error, 5);
        entry.parked_at = UNIX_EPOCH + Duration::from_millis(1_796_325_926_042);
        entry
    }

    fn listing() -> ParkedListing {
        let mut retried = entry("invoices", 3, 41, "no such customer\nat line 2");
        retried.retry_requested = true;
        retried.attempts = 12;
        ParkedListing::new(
            "billing",
            vec![
                retried,
                entry("invoices", 3, 7, "timeout"),
                entry("b", 10, 9_223_372_036_854_775_807, ""),
            ],
        )
    }

    #[test]
    fn the_table_is_sorted_and_aligned() {
        let mut out = Vec::new();
        listing().write_table(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SUBSCRIPTION  PARTITION             POSITION  ATTEMPTS  PARKED AT                 RETRY REQUESTED  ERROR\n\
             b                    10  9223372036854775807         5  2026-12-03T19:25:26.042Z  no               -\n\
             invoices              3                    7         5  2026-12-03T19:25:26.042Z  no               timeout\n\
             invoices              3                   41        12  2026-12-03T19:25:26.042Z  yes              no such customer…\n"
        );
    }

    #[test]
    fn the_json_has_the_documented_shape_and_whole_errors() {
        let value = serde_json::to_value(listing().to_json()).unwrap();
        assert_eq!(value["group"], "billing");
        assert_eq!(
            value["parked"][2],
            json!({"subscription": "invoices", "partition": 3, "position": 41, "attempts": 12,
                   "parked_at": "2026-12-03T19:25:26.042Z", "parked_at_ms": 1_796_325_926_042_i64,
                   "retry_requested": true, "error": "no such customer\nat line 2"})
        );
        assert_eq!(
            value["parked"][0]["position"],
            9_223_372_036_854_775_807_u64
        );
    }

    #[test]
    fn the_json_text_is_one_line_with_fields_in_name_order() {
        // The exact text, not only the value: the fields in the order of their names, as the
        // command has printed them since its first version.
        assert_eq!(
            serde_json::to_string(&listing().to_json()).unwrap(),
            concat!(
                r#"{"group":"billing","parked":["#,
                r#"{"attempts":5,"error":"","parked_at":"2026-12-03T19:25:26.042Z","parked_at_ms":1796325926042,"partition":10,"position":9223372036854775807,"retry_requested":false,"subscription":"b"},"#,
                r#"{"attempts":5,"error":"timeout","parked_at":"2026-12-03T19:25:26.042Z","parked_at_ms":1796325926042,"partition":3,"position":7,"retry_requested":false,"subscription":"invoices"},"#,
                r#"{"attempts":12,"error":"no such customer\nat line 2","parked_at":"2026-12-03T19:25:26.042Z","parked_at_ms":1796325926042,"partition":3,"position":41,"retry_requested":true,"subscription":"invoices"}]}"#,
            )
        );
    }

    #[test]
    fn an_error_is_cut_to_its_first_line_and_escaped() {
        assert_eq!(error_summary("short"), "short");
        let exact = "x".repeat(ERROR_CHARS);
        assert_eq!(error_summary(&exact), exact);
        let long = "é".repeat(ERROR_CHARS + 1);
        let summary = error_summary(&long);
        assert_eq!(summary.chars().count(), ERROR_CHARS);
        assert!(summary.ends_with("é…"), "{summary}");
        assert_eq!(error_summary("a\r\nb"), "a…");
        assert_eq!(error_summary("\nsecond"), "…");
        assert_eq!(error_summary("bell\u{7}\u{1b}[2J"), "bell\\u{7}\\u{1b}[2J");
        assert_eq!(error_summary(""), "-");
    }
}
