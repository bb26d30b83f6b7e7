//! Table names and migrations. (The privileges the store needs at run time are in
//! `security`.)

use checkpoint_conformance::fresh_group;
use checkpoint_core::{
    Argument, Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
    InvalidReason,
};
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::AssertSqlSafe;

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_attempts_are_refused_before_any_io() {
    let store = support::store().await;
    for name in [
        "checkpoints; DROP TABLE checkpoints",
        "checkpoints\"; DROP TABLE checkpoints; --",
        "\"checkpoints\"",
        "public.checkpoints.extra",
        "check points",
        "checkpoints--",
        "checkpoints/**/",
        "1checkpoints",
        "",
        "schema.",
        "ch€ckpoints",
        &"t".repeat(64),
    ] {
        let error = store.clone().with_table(name).unwrap_err();
        match &error {
            Error::InvalidInput(invalid) => {
                assert_eq!(invalid.argument, Argument::Setting("table"), "{name:?}");
                assert!(
                    matches!(invalid.reason, InvalidReason::Malformed { .. }),
                    "{name:?}: {error}"
                );
            }
            other => panic!("{name:?} was not refused as invalid input: {other:?}"),
        }
    }
    // The default table is still there and works.
    let group = fresh_group("injection");
    store.save(&group, "s", 0, 1).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_qualified_mixed_case_table_works_after_migrate() {
    let schema = support::unique_ident("Cp_Schema");
    let table = support::unique_ident("Cp_Table");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.{table}"))
        .unwrap();
    assert_eq!(store.table(), format!("{schema}.{table}"));
    store.migrate().await.unwrap();
    store.migrate().await.unwrap(); // idempotent

    let group = fresh_group("qualified");
    store
        .save_all(
            &group,
            &[Checkpoint::new("a", 1, 3), Checkpoint::new("a", 2, 4)],
        )
        .await
        .unwrap();
    store.save(&group, "a", 1, 5).await.unwrap();
    let mut listed = store.list(&group).await.unwrap();
    listed.sort();
    assert_eq!(
        listed,
        vec![Checkpoint::new("a", 1, 5), Checkpoint::new("a", 2, 4)]
    );
    let claimed = store
        .claim(&group, "a", 2, Fingerprint::from_bytes([1; 32]), 0)
        .await
        .unwrap();
    assert_eq!(claimed, 4);
    store.advance(&group, "a", 2, 4, 9).await.unwrap();

    // The rows are in that table, under that exact (case-preserved) schema and name, and not
    // in the default table.
    let mut connection = support::admin_connection().await;
    let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM \"{schema}\".\"{table}\" WHERE group_name = $1"
    )))
    .bind(&group)
    .fetch_one(&mut connection)
    .await
    .unwrap();
    assert_eq!(count, 2);
    let default = support::store().await;
    assert!(default.list(&group).await.unwrap().is_empty());

    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_sql_is_what_migrate_creates() {
    let store = support::store()
        .await
        .with_table("app.checkpoints")
        .unwrap();
    let ddl = store.schema_sql();
    assert!(
        ddl.starts_with("CREATE SCHEMA IF NOT EXISTS \"app\";\n"),
        "{ddl}"
    );
    assert!(
        ddl.contains("CREATE TABLE IF NOT EXISTS \"app\".\"checkpoints\" ("),
        "{ddl}"
    );
    assert!(
        ddl.contains("PRIMARY KEY (group_name, subscription, partition_id)"),
        "{ddl}"
    );

    // Applied by hand (as a team with its own migration tool would), it gives a table the
    // store works with, and migrate() then creates nothing.
    let schema = support::unique_ident("ddl_schema");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.checkpoints"))
        .unwrap();
    support::admin_sql(store.schema_sql()).await;
    store.migrate().await.unwrap();
    let group = fresh_group("ddl");
    store.save(&group, "s", 7, 70).await.unwrap();
    assert_eq!(store.load(&group, "s", 7).await.unwrap(), Some(70));
    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_processes_can_migrate_a_new_table_at_once() {
    let schema = support::unique_ident("race_schema");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.checkpoints"))
        .unwrap();
    // Separate pools, as separate processes would have.
    let mut starts = Vec::new();
    for _ in 0..12 {
        let store = PostgresCheckpointStore::connect_with(support::connect_options())
            .await
            .unwrap()
            .with_table(&store.table())
            .unwrap();
        starts.push(tokio::spawn(async move { store.migrate().await }));
    }
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let group = fresh_group("race");
    store.save(&group, "s", 0, 1).await.unwrap();
    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}

/// A deployment made before the leases (the checkpoint table and its tombstone table only)
/// gets the lease tables from its next `migrate`, its checkpoints untouched; and leases work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_lease_tables_to_an_older_deployment() {
    use checkpoint_core::LeaseStore;
    use std::time::Duration;

    let schema = support::unique_ident("old_schema");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.checkpoints"))
        .unwrap();
    store.migrate().await.unwrap();
    // What the previous version created: no lease tables.
    support::admin_sql(format!(
        "DROP TABLE \"{schema}\".checkpoints_leases, \"{schema}\".checkpoints_owners"
    ))
    .await;
    let group = fresh_group("old-deployment");
    store.save(&group, "s", 0, 42).await.unwrap();
    assert!(
        store
            .acquire(&group, "s", "w", &[0], Duration::from_secs(5))
            .await
            .is_err(),
        "the lease tables are missing"
    );

    store.migrate().await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(42));
    let acquired = store
        .acquire(&group, "s", "w", &[0], Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(acquired.granted.len(), 1);
    assert_eq!(acquired.granted[0].epoch, 1);
    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}

/// A deployment made before the parked entries (every other table there) gets their table
/// from its next `migrate`, its checkpoints and leases untouched; and parking works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_parked_table_to_an_older_deployment() {
    use checkpoint_core::LeaseStore;
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};
    use std::time::Duration;

    let schema = support::unique_ident("unparked_schema");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.checkpoints"))
        .unwrap();
    store.migrate().await.unwrap();
    // What the previous version created: no parked entries' table.
    support::admin_sql(format!("DROP TABLE \"{schema}\".checkpoints_parked")).await;
    let group = fresh_group("unparked-deployment");
    store.save(&group, "s", 0, 42).await.unwrap();
    let duration = Duration::from_secs(30);
    store
        .acquire(&group, "s", "w", &[0], duration)
        .await
        .unwrap();
    let entry = ParkedEntry::new("s", 0, 41, "boom", 2);
    assert!(
        store.park(&group, &entry).await.is_err(),
        "the parked entries' table is missing"
    );

    store.migrate().await.unwrap();
    store.migrate().await.unwrap(); // idempotent
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(42));
    let renewed = store.renew(&group, "s", "w", duration).await.unwrap();
    assert_eq!((renewed.len(), renewed[0].epoch), (1, 1));
    store.park(&group, &entry).await.unwrap();
    assert_eq!(store.parked(&group).await.unwrap(), [entry]);
    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}

/// A deployment whose lease tables have the first, unreleased layout (an expiry per lease, no
/// generations, no index by owner) is upgraded by `migrate`, twice without harm: a lease live
/// at that moment stays held by its owner under its epoch, an expired one is free, and every
/// lease operation works afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_upgrades_lease_tables_of_the_first_layout() {
    use checkpoint_core::LeaseStore;
    use std::time::Duration;

    let schema = support::unique_ident("first_layout");
    let store = support::store()
        .await
        .with_table(&format!("{schema}.checkpoints"))
        .unwrap();
    store.migrate().await.unwrap();
    let group = fresh_group("first-layout");
    // The lease tables as the first layout created them, with a live lease of "a" (epoch 3),
    // an expired one of "b" (epoch 5), and their heartbeats.
    support::admin_sql(format!(
        "DROP TABLE \"{schema}\".checkpoints_leases, \"{schema}\".checkpoints_owners; \
         CREATE TABLE \"{schema}\".checkpoints_leases ( \
             group_name TEXT COLLATE \"C\" NOT NULL, \
             subscription TEXT COLLATE \"C\" NOT NULL, \
             partition_id BIGINT NOT NULL CHECK (partition_id BETWEEN 0 AND 4294967295), \
             owner TEXT COLLATE \"C\" NULL, \
             epoch BIGINT NOT NULL CHECK (epoch >= 1), \
             expires_at TIMESTAMPTZ NOT NULL, \
             handover_requested_by TEXT COLLATE \"C\" NULL, \
             PRIMARY KEY (group_name, subscription, partition_id)); \
         CREATE TABLE \"{schema}\".checkpoints_owners ( \
             group_name TEXT COLLATE \"C\" NOT NULL, \
             subscription TEXT COLLATE \"C\" NOT NULL, \
             owner TEXT COLLATE \"C\" NOT NULL, \
             expires_at TIMESTAMPTZ NOT NULL, \
             PRIMARY KEY (group_name, subscription, owner)); \
         INSERT INTO \"{schema}\".checkpoints_owners VALUES \
             ('{group}', 's', 'a', now() + interval '1 minute'), \
             ('{group}', 's', 'b', now() - interval '1 second'); \
         INSERT INTO \"{schema}\".checkpoints_leases VALUES \
             ('{group}', 's', 0, 'a', 3, now() + interval '1 minute', NULL), \
             ('{group}', 's', 1, 'b', 5, now() - interval '1 second', NULL);"
    ))
    .await;

    store.migrate().await.unwrap();
    store.migrate().await.unwrap(); // idempotent
    let duration = Duration::from_secs(5);
    let table = store.leases(&group, "s").await.unwrap();
    assert_eq!(table.leases.len(), 1, "{table:?}");
    assert_eq!(
        (table.leases[0].partition, table.leases[0].owner.as_str()),
        (0, "a")
    );
    assert_eq!(table.leases[0].epoch, 3);
    let renewed = store.renew(&group, "s", "a", duration).await.unwrap();
    assert_eq!((renewed.len(), renewed[0].epoch), (1, 3));
    assert!(store.renew(&group, "s", "b", duration).await.is_err());
    let acquired = store
        .acquire(&group, "s", "c", &[0, 1, 2], duration)
        .await
        .unwrap();
    assert_eq!(acquired.refused, vec![0]);
    let epochs: Vec<(u32, u64)> = acquired
        .granted
        .iter()
        .map(|lease| (lease.partition, lease.epoch))
        .collect();
    assert_eq!(epochs, vec![(1, 6), (2, 1)]);
    let released = store.release(&group, "s", "a", &[0]).await.unwrap();
    assert_eq!(released.released, vec![0]);
    assert_eq!(store.leave(&group, "s", "c").await.unwrap(), vec![1, 2]);
    assert!(store.leases(&group, "s").await.unwrap().leases.is_empty());
    support::admin_sql(format!("DROP SCHEMA \"{schema}\" CASCADE")).await;
}
