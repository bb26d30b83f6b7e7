//! Requests under the store's timeout: one, every page of a read, one per partition.
//!
//! The timeout bounds each request (the SDK's retries of it included), never a whole call of
//! many requests, so that a large batch, group or subscription never fails for its size alone.
//! Every bound goes through [`checkpoint_core::timeout::within`], the wrapper every backend
//! shares.

use std::future::Future;

use checkpoint_core::timeout::within;
use checkpoint_core::{Error, Operation};
use futures_util::{StreamExt, TryStreamExt, stream};

use crate::requests::{Page, StartKey};
use crate::{BACKEND, DynamoDbCheckpointStore};

impl DynamoDbCheckpointStore {
    /// Runs `request` within the store's timeout, if it has one.
    pub(crate) async fn within<T>(
        &self,
        operation: Operation,
        request: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        within(BACKEND, operation, self.timeout(), request).await
    }

    /// Every page of a paged read, each page within the store's timeout: `page(start)` reads
    /// the page that begins at `start`.
    pub(crate) async fn every_page<T, F, Fut>(
        &self,
        operation: Operation,
        mut page: F,
    ) -> Result<(Vec<T>, u32), Error>
    where
        F: FnMut(Option<StartKey>) -> Fut,
        Fut: Future<Output = Result<Page<T>, Error>>,
    {
        let mut items = Vec::new();
        let mut start = None;
        let mut pages = 0_u32;
        loop {
            let read = self.within(operation, page(start.take())).await?;
            pages += 1;
            items.extend(read.items);
            match read.next {
                Some(next) => start = Some(next),
                None => return Ok((items, pages)),
            }
        }
    }

    /// Runs `request(partition)` for every partition, at most `max_concurrency` in flight, each
    /// within the store's timeout; the first error fails the whole.
    pub(crate) async fn for_each_partition<F, Fut>(
        &self,
        operation: Operation,
        partitions: Vec<u32>,
        request: F,
    ) -> Result<(), Error>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = Result<(), Error>>,
    {
        stream::iter(partitions)
            .map(|partition| self.within(operation, request(partition)))
            .buffer_unordered(self.max_concurrency())
            .try_collect::<Vec<()>>()
            .await
            .map(drop)
    }

    /// Runs `request(item)` for every item, at most `max_concurrency` in flight, each within
    /// the store's timeout; their answers in the order they arrive. The first error fails the
    /// whole.
    pub(crate) async fn each<I, T, F, Fut>(
        &self,
        operation: Operation,
        items: Vec<I>,
        request: F,
    ) -> Result<Vec<T>, Error>
    where
        F: Fn(I) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        stream::iter(items)
            .map(|item| self.within(operation, request(item)))
            .buffer_unordered(self.max_concurrency())
            .try_collect()
            .await
    }
}
