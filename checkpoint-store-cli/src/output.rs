//! What the commands print on standard output: tables for people, JSON for scripts.
//!
//! The JSON of `list` is one object, stable across versions (fields may be added, never
//! renamed or removed):
//!
//! ```json
//! {"checkpoints":[{"partition":0,"position":1200,"subscription":"invoices"}],
//!  "group":"billing",
//!  "retired":["invoices-v1"]}
//! ```
//!
//! `checkpoints` is sorted by subscription (by the bytes of its name), then partition;
//! `retired` is sorted. Positions are integers up to 2^63 - 1: read them with a parser that
//! keeps 64-bit integers exact. `groups --json` prints an array of names. `leases` is in
//! [`leases`], `parked` in [`parked`], `status` in [`status`]; their tables are drawn by
//! [`columns`], times written by [`time`].
//!
//! Every JSON output is one line, written by [`write_json`] from `Serialize` types whose
//! fields are declared in the order of their names: the order the command has printed them in
//! since its first version (it built a `serde_json::Value`, whose map sorts its keys), kept so
//! that a script comparing the text sees no change.

pub mod columns;
pub mod leases;
pub mod parked;
pub mod status;
pub mod time;

use std::io::Write;

use checkpoint_core::Checkpoint;
use serde::Serialize;

/// What `list` shows of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The group.
    pub group: String,
    /// Its live checkpoints, sorted by subscription, then partition.
    pub checkpoints: Vec<Checkpoint>,
    /// Its retired subscriptions, sorted.
    pub retired: Vec<String>,
}

impl Listing {
    /// A listing of `checkpoints` (in any order) and `retired` (sorted).
    pub fn new(group: &str, mut checkpoints: Vec<Checkpoint>, retired: Vec<String>) -> Self {
        sort(&mut checkpoints);
        Self {
            group: group.to_owned(),
            checkpoints,
            retired,
        }
    }

    /// The JSON object (see the module doc).
    pub fn to_json(&self) -> ListingJson<'_> {
        ListingJson {
            checkpoints: self
                .checkpoints
                .iter()
                .map(|checkpoint| CheckpointJson {
                    partition: checkpoint.partition,
                    position: checkpoint.position,
                    subscription: &checkpoint.subscription,
                })
                .collect(),
            group: &self.group,
            retired: &self.retired,
        }
    }

    /// The table, then a `retired: a, b` line when there are retired subscriptions.
    pub fn write_table(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write_checkpoints(out, &self.checkpoints)?;
        if !self.retired.is_empty() {
            let names: Vec<String> = self.retired.iter().map(|name| shown(name)).collect();
            writeln!(out, "retired: {}", names.join(", "))?;
        }
        Ok(())
    }
}

/// `list --json`: the object of the module doc (fields in the order of their names, as in
/// every JSON row of the command).
#[derive(Debug, Serialize)]
pub struct ListingJson<'a> {
    checkpoints: Vec<CheckpointJson<'a>>,
    group: &'a str,
    retired: &'a [String],
}

/// One checkpoint of [`ListingJson`].
#[derive(Debug, Serialize)]
struct CheckpointJson<'a> {
    partition: u32,
    position: u64,
    subscription: &'a str,
}

/// Writes `value` as one line of compact JSON: what every `--json` prints.
///
/// # Errors
///
/// Writing's error (serialization itself cannot fail: every row has string keys).
pub fn write_json(out: &mut dyn Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)
}

/// Sorts by subscription (bytes of the name), then partition.
pub fn sort(checkpoints: &mut [Checkpoint]) {
    checkpoints.sort_by(|a, b| {
        (a.subscription.as_bytes(), a.partition).cmp(&(b.subscription.as_bytes(), b.partition))
    });
}

/// A table of `checkpoints` with a header, columns aligned; nothing for none.
pub fn write_checkpoints(out: &mut dyn Write, checkpoints: &[Checkpoint]) -> std::io::Result<()> {
    if checkpoints.is_empty() {
        return Ok(());
    }
    let rows: Vec<(String, String, String)> = checkpoints
        .iter()
        .map(|c| {
            (
                shown(&c.subscription),
                c.partition.to_string(),
                c.position.to_string(),
            )
        })
        .collect();
    let header = ("SUBSCRIPTION", "PARTITION", "POSITION");
    let width = |column: fn(&(String, String, String)) -> &String, title: &str| {
        rows.iter()
            .map(|row| column(row).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let w0 = width(|row| &row.0, header.0);
    let w1 = width(|row| &row.1, header.1);
    let w2 = width(|row| &row.2, header.2);
    writeln!(
        out,
        "{:<w0$}  {:>w1$}  {:>w2$}",
        header.0, header.1, header.2
    )?;
    for (subscription, partition, position) in &rows {
        writeln!(
            out,
            "{subscription:<w0$}  {partition:>w1$}  {position:>w2$}"
        )?;
    }
    Ok(())
}

/// A name as a table or message shows it: as it is, or quoted with escapes when it has a
/// character that would break a line or a column (a control character, a space at an end, a
/// comma) or is empty.
pub fn shown(name: &str) -> String {
    let plain = !name.is_empty()
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && !name.chars().any(|c| c.is_control() || c == ',' || c == '"');
    if plain {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> Listing {
        Listing::new(
            "billing",
            vec![
                Checkpoint::new("invoices", 10, 5),
                Checkpoint::new("b", 0, 9_223_372_036_854_775_807),
                Checkpoint::new("invoices", 2, 1_200),
            ],
            vec!["old".into(), "older".into()],
        )
    }

    #[test]
    fn the_table_is_sorted_and_aligned_with_the_retired_line() {
        let mut out = Vec::new();
        listing().write_table(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SUBSCRIPTION  PARTITION             POSITION\n\
             b                     0  9223372036854775807\n\
             invoices              2                 1200\n\
             invoices             10                    5\n\
             retired: old, older\n"
        );
    }

    #[test]
    fn the_json_has_the_documented_shape() {
        let mut out = Vec::new();
        write_json(&mut out, &listing().to_json()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"checkpoints":[{"partition":0,"position":9223372036854775807,"subscription":"b"},{"partition":2,"position":1200,"subscription":"invoices"},{"partition":10,"position":5,"subscription":"invoices"}],"group":"billing","retired":["old","older"]}"#.to_owned()
                + "\n"
        );
    }

    #[test]
    fn odd_names_are_quoted() {
        assert_eq!(shown("invoices"), "invoices");
        assert_eq!(shown("a b"), "a b");
        assert_eq!(shown("a\nb"), "\"a\\nb\"");
        assert_eq!(shown("a,b"), "\"a,b\"");
        assert_eq!(shown(" a"), "\" a\"");
    }
}
