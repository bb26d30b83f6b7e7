//! Fresh random groups, so cases never see each other's checkpoints.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A group name no other case or run uses: `ck-<label>-<16 random hex digits>`.
///
/// Every case works in groups of its own, so all cases can run in parallel against one shared
/// server, and what a run leaves behind never disturbs another.
pub fn fresh_group(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default(),
    );
    hasher.write_u32(std::process::id());
    format!("ck-{label}-{:016x}", hasher.finish())
}
