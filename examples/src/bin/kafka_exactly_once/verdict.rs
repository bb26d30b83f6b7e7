//! The verdict: the read model against the topic as the source reads it back, and the topic
//! against what the producer was acknowledged.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::producer::Produced;
use crate::record::Row;

/// What the run did and what the comparison found, as `key=value` pairs in a fixed order.
#[derive(Debug, Default)]
pub struct Verdict {
    pub figures: Vec<(&'static str, String)>,
    /// Every mismatch, in words.
    pub problems: Vec<String>,
}

/// The comparison's inputs.
pub struct Outcome<'a> {
    pub produced: &'a Produced,
    pub topic: &'a BTreeMap<(u32, u64), String>,
    pub rows: &'a [Row],
    /// Per partition: the stored checkpoint, and where the partition ends.
    pub checkpoints: &'a [(Option<u64>, u64)],
}

impl Verdict {
    /// Compares: the topic holds exactly what was produced; the read model a row per record
    /// of the topic, applied once (`n = 1`) with its payload, and nothing else; every
    /// checkpoint at its partition's end.
    pub fn new(outcome: &Outcome<'_>) -> Self {
        let Outcome {
            produced,
            topic,
            rows,
            checkpoints,
        } = outcome;
        let mut verdict = Self::default();
        let topic_differs = produced
            .iter()
            .filter(|(at, payload)| topic.get(at) != Some(payload))
            .count()
            + topic.keys().filter(|at| !produced.contains_key(at)).count();
        let by_position: BTreeMap<(u32, u64), &Row> = rows
            .iter()
            .map(|row| ((row.partition, row.offset), row))
            .collect();
        let duplicates = rows.iter().filter(|row| row.n != 1).count();
        let missing = topic
            .keys()
            .filter(|at| !by_position.contains_key(at))
            .count();
        let extra = rows
            .iter()
            .filter(|row| !topic.contains_key(&(row.partition, row.offset)))
            .count();
        let wrong_payload = rows
            .iter()
            .filter(|row| {
                topic
                    .get(&(row.partition, row.offset))
                    .is_some_and(|payload| *payload != row.payload)
            })
            .count();
        let at_end = checkpoints
            .iter()
            .filter(|(stored, end)| stored.unwrap_or(0) == *end)
            .count();
        verdict.add("produced", produced.len());
        verdict.add("topic", topic.len());
        verdict.add("rows", rows.len());
        for (name, count, what) in [
            (
                "duplicates",
                duplicates,
                "records applied more than once (n > 1)",
            ),
            ("missing", missing, "records of the topic without a row"),
            ("extra", extra, "rows of no record of the topic"),
            (
                "wrong_payload",
                wrong_payload,
                "rows whose payload is not their record's",
            ),
            (
                "checkpoints_off",
                checkpoints.len() - at_end,
                "checkpoints not at their partition's end",
            ),
            (
                "topic_differs",
                topic_differs,
                "records the topic holds otherwise than produced",
            ),
        ] {
            if count > 0 {
                verdict.problems.push(format!("{count} {what}"));
            }
            verdict.figures.push((name, count.to_string()));
        }
        verdict.add("checkpoints_at_end", at_end);
        verdict.add("partitions", checkpoints.len());
        if produced.is_empty() {
            verdict.problems.push("nothing was produced".into());
        }
        verdict
    }

    /// Adds a figure of the run.
    pub fn add(&mut self, name: &'static str, value: impl ToString) {
        self.figures.push((name, value.to_string()));
    }

    /// The one-line summary: the figures, then `OK` or what went wrong.
    pub fn line(&self) -> String {
        let mut line = String::from("kafka_exactly_once:");
        for (name, value) in &self.figures {
            let _ = write!(line, " {name}={value}");
        }
        if self.problems.is_empty() {
            line.push_str(" OK");
        } else {
            let _ = write!(line, " FAILED: {}", self.problems.join("; "));
        }
        line
    }

    /// The figures as `key=value` lines, and `ok=1` or `ok=0`.
    pub fn lines(&self) -> String {
        let mut text = String::new();
        for (name, value) in &self.figures {
            let _ = writeln!(text, "{name}={value}");
        }
        let _ = writeln!(text, "ok={}", u8::from(self.problems.is_empty()));
        text
    }
}
