//! Every method of every contract trait goes through the layer, once, with its arguments; a
//! layer that answers instead runs nothing.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use super::{Around, Call, Layer, Layered};
use crate::door::BoxFuture;
use crate::parked::{ParkedEntry, ParkedStore};
use crate::transactional::TransactionalStore;
use crate::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
    InMemoryCheckpointStore, LeaseStore, Operation,
};

/// Records each call it runs around, as `name: operation group/subscription/partition`.
#[derive(Debug, Default, Clone)]
struct Recorder {
    name: &'static str,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn named(name: &'static str, calls: &Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            name,
            calls: Arc::clone(calls),
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Around for Recorder {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let line = format!(
            "{}: {} {:?}/{:?}/{:?}",
            self.name,
            call.operation(),
            call.group(),
            call.subscription(),
            call.partition()
        );
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
        request
    }
}

/// Answers every call with an error of its operation, without running it.
#[derive(Debug, Clone, Copy)]
struct Refuser;

impl Around for Refuser {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        drop(request);
        let error = Error::backend("refuser", call.operation(), false, "refused");
        Box::pin(async move { Err(error) })
    }
}

fn recorded(store: &Layered<InMemoryCheckpointStore, Recorder>) -> Vec<String> {
    store.around().take()
}

#[tokio::test]
async fn every_checkpoint_call_goes_through_the_layer_with_its_arguments() {
    let store = Layered::new(InMemoryCheckpointStore::new(), Recorder::default());
    store.save("g", "s", 1, 5).await.unwrap();
    store
        .save_all("g", &[Checkpoint::new("s", 2, 3)])
        .await
        .unwrap();
    assert_eq!(store.load("g", "s", 1).await.unwrap(), Some(5));
    assert_eq!(store.list("g").await.unwrap().len(), 2);
    let fingerprint = Fingerprint::from_bytes([1; 32]);
    assert_eq!(store.claim("g", "x", 0, fingerprint, 4).await.unwrap(), 4);
    store.advance("g", "x", 0, 4, 6).await.unwrap();
    assert_eq!(
        recorded(&store),
        [
            "?: save Some(\"g\")/Some(\"s\")/Some(1)",
            "?: save_all Some(\"g\")/None/None",
            "?: load Some(\"g\")/Some(\"s\")/Some(1)",
            "?: list Some(\"g\")/None/None",
            "?: claim Some(\"g\")/Some(\"x\")/Some(0)",
            "?: advance Some(\"g\")/Some(\"x\")/Some(0)",
        ]
        .map(|line| line.replacen('?', "", 1))
    );
}

#[tokio::test]
async fn every_admin_and_parked_call_goes_through_the_layer() {
    let store = Layered::new(InMemoryCheckpointStore::new(), Recorder::default());
    store.start_at("g", "s", &[(0, 3)]).await.unwrap();
    assert_eq!(store.groups().await.unwrap(), ["g"]);
    store.retire("g", "s").await.unwrap();
    assert_eq!(store.retired("g").await.unwrap(), ["s"]);
    store.purge("g", "s").await.unwrap();
    store
        .park("g", &ParkedEntry::new("p", 2, 9, "failed", 3))
        .await
        .unwrap();
    assert_eq!(store.parked("g").await.unwrap().len(), 1);
    assert!(store.retry_parked("g", "p", 2, 9).await.unwrap());
    assert!(store.unpark("g", "p", 2, 9).await.unwrap());
    let operations: Vec<String> = recorded(&store);
    assert_eq!(
        operations,
        [
            ": start_at Some(\"g\")/Some(\"s\")/None",
            ": groups None/None/None",
            ": retire Some(\"g\")/Some(\"s\")/None",
            ": retired Some(\"g\")/None/None",
            ": purge Some(\"g\")/Some(\"s\")/None",
            ": park Some(\"g\")/Some(\"p\")/Some(2)",
            ": parked Some(\"g\")/None/None",
            ": retry_parked Some(\"g\")/Some(\"p\")/Some(2)",
            ": unpark Some(\"g\")/Some(\"p\")/Some(2)",
        ]
    );
}

#[tokio::test]
async fn every_lease_call_goes_through_the_layer_with_its_partitions() {
    let store = Layered::new(InMemoryCheckpointStore::new(), Recorder::default());
    let lease = Duration::from_secs(5);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let partitions = Layered::new(store.inner(), Partitions(Arc::clone(&seen)));
    assert_eq!(
        partitions
            .acquire("g", "s", "w", &[0, 1], lease)
            .await
            .unwrap()
            .granted
            .len(),
        2
    );
    assert_eq!(store.renew("g", "s", "w", lease).await.unwrap().len(), 2);
    store.request_handover("g", "s", "v", &[0]).await.unwrap();
    assert_eq!(store.leases("g", "s").await.unwrap().leases.len(), 2);
    assert_eq!(
        partitions
            .release("g", "s", "w", &[0])
            .await
            .unwrap()
            .released,
        [0]
    );
    assert_eq!(store.leave("g", "s", "w").await.unwrap(), [1]);
    assert_eq!(
        recorded(&store),
        [
            ": renew Some(\"g\")/Some(\"s\")/None",
            ": request_handover Some(\"g\")/Some(\"s\")/None",
            ": leases Some(\"g\")/Some(\"s\")/None",
            ": leave Some(\"g\")/Some(\"s\")/None",
        ]
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (Operation::Acquire, vec![0, 1]),
            (Operation::Release, vec![0])
        ]
    );
}

/// Keeps each call's partitions, and reads a release's answer.
struct Partitions(Arc<Mutex<Seen>>);

type Seen = Vec<(Operation, Vec<u32>)>;

impl Around for Partitions {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        self.0
            .lock()
            .unwrap()
            .push((call.operation(), call.partitions().to_vec()));
        Box::pin(async move {
            let answer = request.await?;
            let any: &dyn std::any::Any = &answer;
            if let Some(released) = any.downcast_ref::<crate::Released>() {
                assert_eq!(released.released, [0]);
            }
            Ok(answer)
        })
    }
}

#[tokio::test]
async fn a_layer_that_answers_instead_runs_nothing() {
    let store = Layered::new(InMemoryCheckpointStore::new(), Refuser);
    let refused = store.save("g", "s", 0, 5).await.unwrap_err();
    assert!(
        matches!(
            refused,
            Error::Backend {
                operation: Operation::Save,
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        store
            .save_all("g", &[Checkpoint::new("s", 1, 1)])
            .await
            .is_err()
    );
    assert!(store.start_at("g", "t", &[(0, 1)]).await.is_err());
    assert!(
        store
            .park("g", &ParkedEntry::new("p", 0, 1, "e", 1))
            .await
            .is_err()
    );
    let lease = Duration::from_secs(5);
    assert!(store.acquire("g", "s", "w", &[0], lease).await.is_err());
    assert!(
        store
            .claim("g", "x", 0, Fingerprint::from_bytes([0; 32]), 1)
            .await
            .is_err()
    );
    let inner = store.inner();
    assert!(inner.list("g").await.unwrap().is_empty());
    assert!(inner.groups().await.unwrap().is_empty());
    assert!(inner.parked("g").await.unwrap().is_empty());
    assert!(inner.leases("g", "s").await.unwrap().leases.is_empty());
}

/// A store with transactions over the in-memory one: a transaction is the advances it will
/// make at its commit.
#[derive(Default)]
struct Transactions(InMemoryCheckpointStore);

#[async_trait]
impl CheckpointStore for Transactions {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.0.list(group).await
    }
    async fn load(&self, g: &str, s: &str, partition: u32) -> Result<Option<u64>, Error> {
        self.0.load(g, s, partition).await
    }
    async fn save(&self, g: &str, s: &str, partition: u32, at: u64) -> Result<(), Error> {
        self.0.save(g, s, partition, at).await
    }
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.0.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for Transactions {
    async fn claim(&self, g: &str, s: &str, p: u32, f: Fingerprint, at: u64) -> Result<u64, Error> {
        self.0.claim(g, s, p, f, at).await
    }
    async fn advance(&self, g: &str, s: &str, p: u32, from: u64, to: u64) -> Result<(), Error> {
        self.0.advance(g, s, p, from, to).await
    }
}

type Advances = Vec<(String, String, u32, u64, u64)>;

#[async_trait]
impl TransactionalStore for Transactions {
    type Transaction = Advances;

    async fn begin_transaction(&self) -> Result<Advances, Error> {
        Ok(Vec::new())
    }

    async fn advance_in_transaction(
        &self,
        transaction: &mut Advances,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        transaction.push((group.into(), subscription.into(), partition, from, to));
        Ok(())
    }

    async fn commit_transaction(&self, transaction: Advances) -> Result<(), Error> {
        for (group, subscription, partition, from, to) in transaction {
            self.0
                .advance(&group, &subscription, partition, from, to)
                .await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_transaction_goes_through_the_layer_begin_advance_and_commit() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let store = Recorder::named("tx", &calls).layer(Transactions::default());
    let fingerprint = Fingerprint::from_bytes([3; 32]);
    store.claim("g", "s", 0, fingerprint, 1).await.unwrap();
    let mut transaction = store.begin_transaction().await.unwrap();
    store
        .advance_in_transaction(&mut transaction, "g", "s", 0, 1, 2)
        .await
        .unwrap();
    assert_eq!(store.inner().load("g", "s", 0).await.unwrap(), Some(1));
    store.commit_transaction(transaction).await.unwrap();
    assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(2));
    let calls = store.around().take();
    let advance_in = "tx: advance Some(\"g\")/Some(\"s\")/Some(0)";
    assert_eq!(
        calls[1..4],
        [
            "tx: begin None/None/None",
            advance_in,
            "tx: commit None/None/None"
        ]
    );
    let refused = Layered::new(Transactions::default(), Refuser);
    assert!(refused.begin_transaction().await.is_err());
    assert!(refused.commit_transaction(Vec::new()).await.is_err());
}

#[tokio::test]
async fn layers_stack_the_outer_one_first_and_a_pair_is_one_layer() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (outer, inner) = (
        Recorder::named("outer", &calls),
        Recorder::named("inner", &calls),
    );
    let stacked = outer.layer(inner.layer(InMemoryCheckpointStore::new()));
    stacked.load("g", "s", 0).await.unwrap();
    let pair = Layered::new(InMemoryCheckpointStore::new(), (outer, inner));
    pair.load("g", "s", 0).await.unwrap();
    let calls = pair.around().0.take();
    let load = |name: &str| format!("{name}: load Some(\"g\")/Some(\"s\")/Some(0)");
    assert_eq!(
        calls,
        [load("outer"), load("inner"), load("outer"), load("inner")]
    );
}

/// Notes when it is dropped.
struct Dropped(&'static str, Arc<Mutex<Vec<&'static str>>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

impl Around for Dropped {}

#[tokio::test]
async fn the_store_is_dropped_before_its_layer_and_the_default_layer_changes_nothing() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let store = Layered::new(
        (
            InMemoryCheckpointStore::new(),
            Dropped("store", Arc::clone(&order)),
        ),
        Dropped("layer", Arc::clone(&order)),
    );
    let kept = Layered::new(&store.inner().0, store.around());
    kept.save("g", "s", 0, 1).await.unwrap();
    assert_eq!(kept.load("g", "s", 0).await.unwrap(), Some(1));
    drop(store);
    assert_eq!(*order.lock().unwrap(), ["store", "layer"]);
}
