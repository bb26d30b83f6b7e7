//! What the latency, failover and handover rows' entries carry: their partition (an entry
//! does not say which partition it was read from) and the time their writer sent them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An entry's payload: `partition` and now, as little-endian integers (4 + 8 bytes).
pub(super) fn stamped(partition: u32) -> Vec<u8> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
        });
    let mut payload = Vec::with_capacity(12);
    payload.extend_from_slice(&partition.to_le_bytes());
    payload.extend_from_slice(&nanos.to_le_bytes());
    payload
}

/// The partition and send time of a [`stamped`] payload; `None` for any other payload.
pub(super) fn read(payload: &[u8]) -> Option<(u32, SystemTime)> {
    let partition = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?);
    let nanos = u64::from_le_bytes(payload.get(4..12)?.try_into().ok()?);
    Some((partition, UNIX_EPOCH + Duration::from_nanos(nanos)))
}

/// How long ago a [`stamped`] payload was sent (zero for a clock that went back).
pub(super) fn age(sent: SystemTime) -> Duration {
    SystemTime::now().duration_since(sent).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_payload_reads_back() {
        let before = SystemTime::now();
        let payload = stamped(7);
        let (partition, sent) = read(&payload).unwrap();
        assert_eq!(partition, 7);
        assert!(sent >= before - Duration::from_micros(1));
        assert!(read(b"short").is_none());
    }
}
