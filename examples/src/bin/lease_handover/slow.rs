//! A store whose checkpoint writes are slow (`--write-delay-ms`): a worker process's store as
//! a loaded server would be for its committer, while its lease requests go at the server's
//! own pace. It shows that a slow final write or periodic write never costs a worker its
//! leases: the renew goes out on its own cadence.
//!
//! The slowness is a layer ([`checkpoint_core::layer`]): it says what it does around the
//! calls it slows, and the store passes every other call on unchanged.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_examples::ExampleStore;

/// Every call passed to the store unchanged, `save` and `save_all` after the [`Slow`] layer's
/// delay.
pub type SlowWrites = Layered<Arc<dyn ExampleStore>, Slow>;

/// `store`, its writes slowed by `delay` (none when it is zero).
pub fn slow_writes(store: Arc<dyn ExampleStore>, delay: Duration) -> SlowWrites {
    let slow = Slow {
        delay,
        slowed: AtomicU64::new(0),
    };
    Layered::new(store, slow)
}

/// The layer of [`SlowWrites`]: a delay before each checkpoint write.
pub struct Slow {
    delay: Duration,
    /// Writes slowed so far: the worker reports them at exit, so that a run shows the delay
    /// was applied.
    slowed: AtomicU64,
}

impl Slow {
    /// Writes slowed so far.
    pub fn slowed(&self) -> u64 {
        self.slowed.load(Ordering::Relaxed)
    }
}

impl Around for Slow {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let write = matches!(call, Call::Save { .. } | Call::SaveAll { .. });
        if !write || self.delay.is_zero() {
            return request;
        }
        Box::pin(async move {
            self.slowed.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(self.delay).await;
            request.await
        })
    }
}
