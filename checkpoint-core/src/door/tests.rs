//! The front, on a door that records what reaches it: every operation is bounded once, under
//! its own `Operation`, and input the contract refuses never reaches the door.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::lease::{Acquired, HeldLease, LeaseTable, Released};
use crate::parked::ParkedEntry;
use crate::{
    Checkpoint, CheckpointAdmin, CheckpointStore, ExclusiveCheckpointStore, Fingerprint,
    LeaseStore, parked::ParkedStore,
};

/// A door that answers every request with a default reply and records, in order, the
/// operations its bound saw and the requests that reached it.
#[derive(Default)]
struct Recording {
    bound: Mutex<Vec<Operation>>,
    reached: Mutex<Vec<&'static str>>,
}

impl Recording {
    fn reached(&self, request: &'static str) {
        self.reached.lock().unwrap().push(request);
    }
}

crate::through_door!(Recording: checkpoints, exclusive, admin, leases, parked);

impl Door for Recording {
    const BACKEND: &'static str = "recording";

    fn place(&self) -> Option<&dyn fmt::Display> {
        None
    }

    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        self.bound.lock().unwrap().push(operation);
        request
    }
}

impl CheckpointDoor for Recording {
    async fn send_list(&self, _: Checked, _: &str) -> Result<Vec<Checkpoint>, Error> {
        self.reached("list");
        Ok(Vec::new())
    }
    async fn send_load(&self, _: Checked, _: &str, _: &str, _: u32) -> Result<Option<u64>, Error> {
        self.reached("load");
        Ok(None)
    }
    async fn send_save(&self, _: Checked, _: &str, _: &str, _: u32, _: u64) -> Result<(), Error> {
        self.reached("save");
        Ok(())
    }
    async fn send_save_all(&self, _: Checked, _: &str, _: &[Checkpoint]) -> Result<(), Error> {
        self.reached("save_all");
        Ok(())
    }
}

impl ExclusiveDoor for Recording {
    async fn send_claim(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: u32,
        _: Fingerprint,
        initial: u64,
    ) -> Result<u64, Error> {
        self.reached("claim");
        Ok(initial)
    }
    async fn send_advance(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: u32,
        _: u64,
        _: u64,
    ) -> Result<(), Error> {
        self.reached("advance");
        Ok(())
    }
}

impl AdminDoor for Recording {
    async fn send_groups(&self, _: Checked) -> Result<Vec<String>, Error> {
        self.reached("groups");
        Ok(Vec::new())
    }
    async fn send_start_at(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: &[(u32, u64)],
    ) -> Result<(), Error> {
        self.reached("start_at");
        Ok(())
    }
    async fn send_retire(&self, _: Checked, _: &str, _: &str) -> Result<(), Error> {
        self.reached("retire");
        Ok(())
    }
    async fn send_retired(&self, _: Checked, _: &str) -> Result<Vec<String>, Error> {
        self.reached("retired");
        Ok(Vec::new())
    }
    async fn send_purge(&self, _: Checked, _: &str, _: &str) -> Result<(), Error> {
        self.reached("purge");
        Ok(())
    }
}

impl LeaseDoor for Recording {
    async fn send_acquire(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: &str,
        _: &[u32],
        _: Duration,
    ) -> Result<Acquired, Error> {
        self.reached("acquire");
        Ok(Acquired::default())
    }
    async fn send_renew(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: &str,
        _: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.reached("renew");
        Ok(Vec::new())
    }
    async fn send_release(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: &str,
        _: &[u32],
    ) -> Result<Released, Error> {
        self.reached("release");
        Ok(Released::default())
    }
    async fn send_leave(&self, _: Checked, _: &str, _: &str, _: &str) -> Result<Vec<u32>, Error> {
        self.reached("leave");
        Ok(Vec::new())
    }
    async fn send_leases(&self, _: Checked, _: &str, _: &str) -> Result<LeaseTable, Error> {
        self.reached("leases");
        Ok(LeaseTable::default())
    }
    async fn send_request_handover(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: &str,
        _: &[u32],
    ) -> Result<(), Error> {
        self.reached("request_handover");
        Ok(())
    }
}

impl ParkedDoor for Recording {
    async fn send_park(&self, _: Checked, _: &str, _: &ParkedEntry) -> Result<(), Error> {
        self.reached("park");
        Ok(())
    }
    async fn send_parked(&self, _: Checked, _: &str) -> Result<Vec<ParkedEntry>, Error> {
        self.reached("parked");
        Ok(Vec::new())
    }
    async fn send_retry_parked(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: u32,
        _: u64,
    ) -> Result<bool, Error> {
        self.reached("retry_parked");
        Ok(true)
    }
    async fn send_unpark(
        &self,
        _: Checked,
        _: &str,
        _: &str,
        _: u32,
        _: u64,
    ) -> Result<bool, Error> {
        self.reached("unpark");
        Ok(true)
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn every_operation_is_bounded_once_under_its_own_name_and_reaches_its_request() {
    let recording = Recording::default();
    // The contract's methods, with the door traits in scope too (theirs are `send_*`).
    let store = &recording;
    let entry = ParkedEntry::new("s", 0, 1, "failed", 1);
    let batch = [Checkpoint::new("s", 0, 1)];
    run(async {
        store.list("g").await.unwrap();
        store.load("g", "s", 0).await.unwrap();
        store.save("g", "s", 0, 1).await.unwrap();
        store.save_all("g", &batch).await.unwrap();
        store
            .claim("g", "s", 0, Fingerprint::from_bytes([0; 32]), 1)
            .await
            .unwrap();
        store.advance("g", "s", 0, 1, 2).await.unwrap();
        store.groups().await.unwrap();
        store.start_at("g", "s", &[(0, 1)]).await.unwrap();
        store.retire("g", "s").await.unwrap();
        store.retired("g").await.unwrap();
        store.purge("g", "s").await.unwrap();
        store.acquire("g", "s", "o", &[0], SECOND).await.unwrap();
        store.renew("g", "s", "o", SECOND).await.unwrap();
        store.release("g", "s", "o", &[0]).await.unwrap();
        store.leave("g", "s", "o").await.unwrap();
        store.leases("g", "s").await.unwrap();
        store.request_handover("g", "s", "o", &[0]).await.unwrap();
        store.park("g", &entry).await.unwrap();
        store.parked("g").await.unwrap();
        store.retry_parked("g", "s", 0, 1).await.unwrap();
        store.unpark("g", "s", 0, 1).await.unwrap();
    });
    let reached = recording.reached.lock().unwrap().clone();
    let bound: Vec<String> = recording
        .bound
        .lock()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(reached.len(), 21, "{reached:?}");
    assert_eq!(bound, reached, "each request once under its own operation");
}

#[test]
fn input_the_contract_refuses_never_reaches_the_door() {
    let recording = Recording::default();
    // The contract's methods, with the door traits in scope too (theirs are `send_*`).
    let store = &recording;
    let too_far = crate::validation::MAX_POSITION + 1;
    let entry = ParkedEntry::new("s", 0, too_far, "failed", 1);
    run(async {
        assert!(store.list("").await.is_err());
        assert!(store.load("g", "", 0).await.is_err());
        assert!(store.save("g", "s", 0, too_far).await.is_err());
        let batch = [Checkpoint::new("s", 0, too_far)];
        assert!(store.save_all("g", &batch).await.is_err());
        assert!(store.advance("g", "s", 0, 2, 2).await.is_err());
        assert!(store.start_at("g", "s", &[]).await.is_err());
        assert!(
            store
                .acquire("g", "s", "o", &[0], Duration::ZERO)
                .await
                .is_err()
        );
        assert!(store.request_handover("g", "s", "", &[0]).await.is_err());
        assert!(store.park("g", &entry).await.is_err());
        // An empty batch is answered by the front, with no request.
        store.save_all("g", &[]).await.unwrap();
    });
    assert_eq!(*recording.reached.lock().unwrap(), Vec::<&str>::new());
    assert_eq!(*recording.bound.lock().unwrap(), Vec::<Operation>::new());
}

#[test]
fn the_caller_s_connection_family_checks_and_bounds_the_same_way() {
    let door = Recording::default();
    run(async {
        let key = ("g", "s", 0);
        front::load_in(&door, key, |_| async { Ok(Some(1)) })
            .await
            .unwrap();
        front::save_in(&door, key, 1, |_| async { Ok(()) })
            .await
            .unwrap();
        front::advance_in(&door, key, (1, 2), |_| async { Ok(()) })
            .await
            .unwrap();
        let refused = front::advance_in(&door, key, (2, 1), |_| async {
            panic!("a refused advance must not be sent")
        });
        assert!(refused.await.is_err());
    });
    let bound = door.bound.lock().unwrap().clone();
    assert_eq!(
        bound,
        [Operation::Load, Operation::Save, Operation::Advance]
    );
}
