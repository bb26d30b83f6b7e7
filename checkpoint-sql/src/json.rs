//! Batches as one JSON text parameter, for the engines that have no arrays (SQLite expands it
//! with `json_each`, MySQL and MariaDB with `JSON_TABLE`): one statement and one parameter
//! whatever the size of the batch.

use checkpoint_core::Checkpoint;

/// The batch as one JSON array of `[subscription, partition, position]` triples. Every
/// position (`0..=i64::MAX`) and partition is a plain JSON integer, which both engines read
/// back exactly as a 64-bit integer.
pub fn batch_json(checkpoints: &[Checkpoint]) -> String {
    let mut json = String::with_capacity(2 + checkpoints.len() * 48);
    json.push('[');
    for (index, checkpoint) in checkpoints.iter().enumerate() {
        if index > 0 {
            json.push(',');
        }
        json.push('[');
        push_json_string(&mut json, &checkpoint.subscription);
        json.push(',');
        json.push_str(&checkpoint.partition.to_string());
        json.push(',');
        json.push_str(&checkpoint.position.to_string());
        json.push(']');
    }
    json.push(']');
    json
}

/// `start_at`'s positions as one JSON array of `[partition, position]` pairs.
pub fn positions_json(positions: &[(u32, u64)]) -> String {
    let pairs: Vec<String> = positions
        .iter()
        .map(|(partition, position)| format!("[{partition},{position}]"))
        .collect();
    format!("[{}]", pairs.join(","))
}

/// Partitions as one JSON array (`[0,1,2]`), the parameter of the lease statements that name
/// partitions.
pub fn partitions_json(partitions: &[u32]) -> String {
    let items: Vec<String> = partitions.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(","))
}

/// Appends `text` as a JSON string: quotes, backslashes and control characters escaped,
/// everything else (any Unicode) as it is, which JSON allows and both engines decode back
/// exactly.
fn push_json_string(json: &mut String, text: &str) {
    json.push('"');
    for character in text.chars() {
        match character {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            control if u32::from(control) < 0x20 => {
                json.push_str(&format!("\\u{:04x}", u32::from(control)));
            }
            other => json.push(other),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_json_escapes_what_json_requires() {
        let batch = [
            Checkpoint::new("plain", 0, 1),
            Checkpoint::new(
                "quote\" back\\slash\n\u{1}tab\t😀",
                u32::MAX,
                i64::MAX as u64,
            ),
        ];
        assert_eq!(
            batch_json(&batch),
            "[[\"plain\",0,1],[\"quote\\\" back\\\\slash\\u000a\\u0001tab\\u0009😀\",4294967295,9223372036854775807]]"
        );
        assert_eq!(batch_json(&[]), "[]");
        assert_eq!(
            positions_json(&[(0, 1), (u32::MAX, i64::MAX as u64)]),
            "[[0,1],[4294967295,9223372036854775807]]"
        );
        assert_eq!(partitions_json(&[]), "[]");
        assert_eq!(partitions_json(&[0, u32::MAX]), "[0,4294967295]");
    }
}
