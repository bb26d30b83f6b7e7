//! The reference store passes the whole kit.

use checkpoint_core::InMemoryCheckpointStore;

async fn store() -> InMemoryCheckpointStore {
    InMemoryCheckpointStore::new()
}

mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(super::store);
}

mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(super::store);
}

mod admin {
    checkpoint_conformance::admin_store_tests!(super::store);
}

mod parked {
    checkpoint_conformance::parked_store_tests!(super::store);
}

/// The form for a store without the exclusive mode compiles and runs the rest.
mod admin_without_exclusive {
    checkpoint_conformance::admin_store_tests!(super::store, without_exclusive);
}

/// One in-memory store for the whole binary, so that both clients of a lease case see it.
async fn shared_store() -> std::sync::Arc<InMemoryCheckpointStore> {
    static STORE: std::sync::OnceLock<std::sync::Arc<InMemoryCheckpointStore>> =
        std::sync::OnceLock::new();
    STORE.get_or_init(Default::default).clone()
}

mod leases {
    checkpoint_conformance::lease_store_tests!(super::shared_store);
}
