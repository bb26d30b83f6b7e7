//! Helpers for backends that implement [`save_all`](crate::CheckpointStore::save_all) natively.

use std::collections::HashMap;

use crate::Checkpoint;

/// Collapses a batch to one entry per (subscription, partition), keeping the highest position,
/// sorted by (subscription, partition).
///
/// A backend that writes a batch in one statement needs both properties: a single statement
/// may not touch one row twice (PostgreSQL's `ON CONFLICT` refuses it), and batches that lock
/// their rows in one global order cannot deadlock each other.
pub fn highest_per_key(checkpoints: &[Checkpoint]) -> Vec<Checkpoint> {
    let mut highest: HashMap<(&str, u32), u64> = HashMap::with_capacity(checkpoints.len());
    for checkpoint in checkpoints {
        let entry = highest
            .entry((checkpoint.subscription.as_str(), checkpoint.partition))
            .or_insert(checkpoint.position);
        *entry = (*entry).max(checkpoint.position);
    }
    let mut collapsed: Vec<Checkpoint> = highest
        .into_iter()
        .map(|((subscription, partition), position)| {
            Checkpoint::new(subscription, partition, position)
        })
        .collect();
    collapsed.sort_unstable_by(|a, b| {
        (a.subscription.as_str(), a.partition).cmp(&(b.subscription.as_str(), b.partition))
    });
    collapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_of_repeated_keys_in_key_order() {
        let batch = [
            Checkpoint::new("b", 1, 5),
            Checkpoint::new("a", 2, 7),
            Checkpoint::new("b", 1, 9),
            Checkpoint::new("b", 1, 3),
            Checkpoint::new("a", 1, 1),
        ];
        assert_eq!(
            highest_per_key(&batch),
            vec![
                Checkpoint::new("a", 1, 1),
                Checkpoint::new("a", 2, 7),
                Checkpoint::new("b", 1, 9),
            ]
        );
        assert!(highest_per_key(&[]).is_empty());
    }
}
