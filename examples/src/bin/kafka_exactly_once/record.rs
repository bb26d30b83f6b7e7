//! A record as the producer writes it and as the handlers and the verdict see it: its key is
//! its partition (a batch's entries do not carry their partition), its payload names it.

use checkpoint_core::source::Entry;

use crate::BoxError;

/// The payload of the producer's `seq`th record of `partition`: unique within a run, and
/// unlike any other run's.
pub fn payload(run: &str, partition: u32, seq: u64) -> String {
    format!("{run} p{partition} #{seq}")
}

/// What a handler writes for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub partition: i64,
    pub offset: i64,
    pub payload: String,
}

impl Record {
    /// The entry's partition (its key), offset and payload, as the read model's columns. An
    /// entry of no producer of ours fails the batch.
    pub fn of(entry: &Entry) -> Result<Self, BoxError> {
        let partition = entry
            .key
            .as_deref()
            .and_then(|key| key.parse().ok())
            .ok_or_else(|| format!("the record at {} has no partition key", entry.position))?;
        Ok(Self {
            partition,
            offset: i64::try_from(entry.position)?,
            payload: String::from_utf8(entry.payload.clone())?,
        })
    }
}

/// A row of the read model, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub partition: u32,
    pub offset: u64,
    pub payload: String,
    /// How many times the record was applied: 1, or a duplicate.
    pub n: i64,
}

impl Row {
    /// A row from its columns.
    pub fn from_columns(
        (partition, offset, payload, n): (i64, i64, String, i64),
    ) -> Result<Self, BoxError> {
        Ok(Self {
            partition: u32::try_from(partition)?,
            offset: u64::try_from(offset)?,
            payload,
            n,
        })
    }
}
