//! A client that counts what its `Query` and `Scan` requests read on the server (their
//! `ScannedCount`: the items evaluated, which DynamoDB bills, before any filter) and how many
//! `Scan` requests it sent: `groups` must read the groups' markers, never every checkpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::scan::ScanOutput;

/// The interceptor: add it to a client's configuration with `.interceptor(counter.clone())`.
#[derive(Debug, Clone, Default)]
pub struct ItemsRead {
    items: Arc<AtomicU64>,
    scans: Arc<AtomicU64>,
}

impl ItemsRead {
    /// Items read by `Query` and `Scan` requests since the start or the last reset.
    pub fn items(&self) -> u64 {
        self.items.load(Ordering::SeqCst)
    }

    /// `Scan` requests answered since the start or the last reset.
    pub fn scans(&self) -> u64 {
        self.scans.load(Ordering::SeqCst)
    }

    /// Both counts back to zero.
    pub fn reset(&self) {
        self.items.store(0, Ordering::SeqCst);
        self.scans.store(0, Ordering::SeqCst);
    }
}

impl Intercept for ItemsRead {
    fn name(&self) -> &'static str {
        "ItemsRead"
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(Ok(output)) = context.inner().output_or_error() {
            let scanned = if let Some(query) = output.downcast_ref::<QueryOutput>() {
                query.scanned_count()
            } else if let Some(scan) = output.downcast_ref::<ScanOutput>() {
                self.scans.fetch_add(1, Ordering::SeqCst);
                scan.scanned_count()
            } else {
                0
            };
            self.items
                .fetch_add(u64::try_from(scanned).unwrap_or(0), Ordering::SeqCst);
        }
        Ok(())
    }
}
