//! The log as the source returns it once the writers are done: every entry of every
//! partition, with the id and poison mark its payload carries.

use std::collections::BTreeMap;

use checkpoint_core::source::Source;

use crate::{BoxError, PARTITIONS, payload};

/// Entries per read.
const PAGE: usize = 1_000;

/// An entry of the log, as read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged {
    pub partition: u32,
    pub position: u64,
    pub poison: bool,
}

/// Every entry of `source` by id. An undecodable payload, or an id twice, fails.
pub async fn read_all(source: &dyn Source) -> Result<BTreeMap<u64, Logged>, BoxError> {
    let mut entries = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let mut from = 0;
        loop {
            let page = source.read(partition, from, PAGE).await?;
            if page.entries.is_empty() {
                break;
            }
            for entry in &page.entries {
                let (id, poison) = payload::decode(&entry.payload)
                    .ok_or_else(|| format!("p{partition} {}: not our payload", entry.position))?;
                let logged = Logged {
                    partition,
                    position: entry.position,
                    poison,
                };
                if entries.insert(id, logged).is_some() {
                    return Err(format!("id {id} is in the log twice").into());
                }
            }
            from = page.next;
        }
    }
    Ok(entries)
}
