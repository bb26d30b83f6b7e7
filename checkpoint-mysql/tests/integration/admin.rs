//! The operations API on MySQL and MariaDB: what only this backend can get wrong. A retire
//! racing zombies' saves on pools of their own (the tombstone check is a locking read of the
//! same statement), start_at racing saves and other start_ats (InnoDB's gap locks make them
//! deadlock; the store runs the victim again), every group of a large table sorted by bytes,
//! the `*_in` family on a retired subscription, and table names at their limit. (Every clause
//! of the contract runs through the conformance kit in `kit::admin`; the privileges are in
//! `security`.)

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::sql_family::admin as family;
use checkpoint_conformance::sql_family::retire_race::{self, OwnTables, RetireRace};
use checkpoint_core::parked::{ParkedEntry, ParkedStore};
use checkpoint_core::{
    Argument, Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore,
    Fingerprint, InvalidReason, LeaseStore,
};
use checkpoint_mysql::{MysqlCheckpointStore, MysqlEngine};

use crate::support;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x3c; 32]);

/// The suffixes of the tables a store on `table` creates, `""` for `table` itself.
const TABLE_SUFFIXES: [&str; 5] = ["", "_retired", "_leases", "_lease_owners", "_parked"];

/// A store with a pool of its own (as another process would have) on `table`.
async fn store_on(table: &str) -> MysqlCheckpointStore {
    MysqlCheckpointStore::connect_with(support::connect_options())
        .await
        .unwrap()
        .with_table(table)
        .unwrap()
}

/// A migrated store on a table of its own (dropped by [`drop_tables`]).
async fn store_on_own_table(prefix: &str) -> MysqlCheckpointStore {
    let store = store_on(&support::unique_ident(prefix)).await;
    store.migrate().await.unwrap();
    store
}

/// The suffixes of the procedures a store on `table` creates.
const PROCEDURE_SUFFIXES: [&str; 7] = [
    "_acquire_v1",
    "_renew_v1",
    "_release_v1",
    "_leave_v1",
    "_handover_v1",
    "_leases_v1",
    "_groups_v1",
];

/// Closes the store's pool and drops every table and procedure of it.
async fn drop_tables(store: MysqlCheckpointStore) {
    store.pool().close().await;
    let mut statements: Vec<String> = TABLE_SUFFIXES
        .iter()
        .map(|suffix| format!("DROP TABLE `{}{suffix}`", store.table()))
        .collect();
    statements.extend(
        PROCEDURE_SUFFIXES
            .iter()
            .map(|suffix| format!("DROP PROCEDURE `{}{suffix}`", store.table())),
    );
    support::admin_sql(&statements).await;
}

/// InnoDB's count of deadlocks since the server started (all clients: the tests running
/// beside this one count too).
async fn innodb_deadlocks() -> u64 {
    let mut admin = support::admin_connection().await;
    let (_, value): (String, String) = sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    value.parse().unwrap()
}

/// Eight zombies on pools of their own (as other processes would be) save, batch, claim and
/// save in their own transactions (which may be a deadlock's victim), on existing and new
/// partitions, while the subscription is retired, 15 rounds; from the moment `retire` returns
/// nothing of it is ever visible (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing() {
    let race = RetireRace {
        rounds: 15,
        workers: 8,
        own_pools: true,
        settle_ms: (10, 5),
        after_retire: Duration::from_millis(50),
        deadlock_victims: true,
    };
    retire_race::a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing(
        &support::Server,
        race,
    )
    .await;
}

/// Tables of the test's own for the kit's retire race: the zombies have pools of their own,
/// so the test's store keeps the default pool.
impl OwnTables<MysqlEngine> for support::Server {
    async fn store_on_own_table(&self, prefix: &str, _connections: u32) -> MysqlCheckpointStore {
        store_on_own_table(prefix).await
    }

    async fn store_on(&self, table: &str) -> MysqlCheckpointStore {
        store_on(table).await
    }

    async fn deadlocks(&self) -> Option<u64> {
        Some(innodb_deadlocks().await)
    }

    async fn drop_tables(&self, store: MysqlCheckpointStore) {
        drop_tables(store).await;
    }
}

/// start_at racing saves under the same name: it creates every partition or none, and never
/// moves a checkpoint that a save created (the save's row makes it refuse whole; the kit's
/// SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn start_at_racing_saves_is_all_or_nothing_and_moves_nothing() {
    family::start_at_racing_saves_is_all_or_nothing_and_moves_nothing(&support::Server).await;
}

/// Concurrent start_ats of one new name over disjoint partitions: each reads that the name is
/// free (its locking reads lock the same empty gap), then inserts, and InnoDB finds them
/// waiting for each other's gap locks: a deadlock, whose victims the store runs again, and
/// then they see the winner's checkpoints. Exactly one succeeds, every other gets `Exists`
/// naming the subscription, and the subscription holds exactly the winner's checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_start_ats_of_one_name_let_exactly_one_through() {
    const ROUNDS: u32 = 20;
    const RACERS: u32 = 4;
    let store = support::store().await;
    let group = fresh_group("start-ats");
    let deadlocks_before = innodb_deadlocks().await;
    let mut times = Vec::new();
    let started_all = Instant::now();
    for round in 0..ROUNDS {
        let name = format!("replay-{round}");
        let asked: Vec<Vec<(u32, u64)>> = (0..RACERS)
            .map(|racer| {
                (0..3)
                    .map(|i| (racer * 3 + i, 1_000 * u64::from(racer + 1) + u64::from(i)))
                    .collect()
            })
            .collect();
        let started = Instant::now();
        let racers: Vec<_> = asked
            .iter()
            .cloned()
            .map(|positions| {
                let (store, group, name) = (store.clone(), group.clone(), name.clone());
                tokio::spawn(async move {
                    let outcome = store.start_at(&group, &name, &positions).await;
                    (outcome, Instant::now())
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for racer in racers {
            outcomes.push(racer.await.unwrap());
        }
        let slowest = outcomes
            .iter()
            .map(|(_, ended)| ended.duration_since(started))
            .max()
            .unwrap();
        times.push(slowest);
        let winners: Vec<usize> = (0..outcomes.len())
            .filter(|&racer| outcomes[racer].0.is_ok())
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        for (racer, (outcome, _)) in outcomes.iter().enumerate() {
            match outcome {
                Ok(()) => {}
                Err(Error::Exists {
                    group: refused_group,
                    subscription,
                }) => {
                    assert_eq!(refused_group, &group, "round {round}, racer {racer}");
                    assert_eq!(subscription, &name, "round {round}, racer {racer}");
                }
                Err(other) => panic!("round {round}, racer {racer}: {other:?}"),
            }
        }
        let want: BTreeMap<u32, u64> = asked[winners[0]].iter().copied().collect();
        let stored: BTreeMap<u32, u64> = store
            .list(&group)
            .await
            .unwrap()
            .into_iter()
            .filter(|c| c.subscription == name)
            .map(|c| (c.partition, c.position))
            .collect();
        assert_eq!(stored, want, "round {round}");
    }
    let deadlocks = innodb_deadlocks().await - deadlocks_before;
    times.sort();
    eprintln!(
        "{ROUNDS} rounds of {RACERS} concurrent start_ats of one name: exactly one through each \
         round; a round (until its last caller returned) took median {:?}, max {:?}; {:?} in \
         all; InnoDB counted {deadlocks} deadlocks meanwhile (server-wide)",
        times[times.len() / 2],
        times[times.len() - 1],
        started_all.elapsed()
    );
}

/// Every group, however many, sorted by bytes (not by any collation): 2,000 groups, some of
/// them only retired, with names that a collation would reorder or merge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_returns_every_group_sorted_by_bytes() {
    let store = store_on_own_table("cp_groups").await;
    let mut expected: Vec<String> = (0..2_000).map(|i| format!("g-{i:05}")).collect();
    expected.extend(
        [
            "B", "a", "Z", "é", "e", "_x", "a b", "😀", "ab", "A", "a ", "e\u{301}", "ß", "ss",
        ]
        .map(str::to_owned),
    );
    let mut connection = store.pool().acquire().await.unwrap();
    for (index, group) in expected.iter().enumerate() {
        let batch: Vec<Checkpoint> = (0..3).map(|p| Checkpoint::new("s", p, 1)).collect();
        store
            .save_all_in(&mut connection, group, &batch)
            .await
            .unwrap();
        if index % 10 == 0 {
            store.retire(group, "s").await.unwrap(); // only a tombstone is left
        }
    }
    drop(connection);
    expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(store.groups().await.unwrap(), expected);
    drop_tables(store).await;
}

/// The `*_in` family on a retired subscription, in the caller's transaction (the kit's SQL
/// family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_family_obeys_the_tombstone() {
    family::the_in_family_obeys_the_tombstone(&support::Server).await;
}

/// start_at is all-or-nothing: a subscription that exists or is retired gets nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_at_refuses_whole() {
    let store = support::store().await;
    let group = fresh_group("start-whole");
    store.save(&group, "s", 3, 7).await.unwrap();
    let refused = store.start_at(&group, "s", &[(0, 1), (3, 100)]).await;
    assert!(matches!(refused, Err(Error::Exists { .. })), "{refused:?}");
    assert_eq!(
        store.list(&group).await.unwrap(),
        [Checkpoint::new("s", 3, 7)]
    );
    store.retire(&group, "s").await.unwrap();
    let refused = store.start_at(&group, "s", &[(0, 1)]).await;
    assert!(matches!(refused, Err(Error::Retired { .. })), "{refused:?}");
    assert!(store.list(&group).await.unwrap().is_empty());
    store.purge(&group, "s").await.unwrap();
    store
        .start_at(&group, "s", &[(u32::MAX, i64::MAX as u64), (0, 0)])
        .await
        .unwrap();
    let mut listed = store.list(&group).await.unwrap();
    listed.sort();
    assert_eq!(
        listed,
        [
            Checkpoint::new("s", 0, 0),
            Checkpoint::new("s", u32::MAX, i64::MAX as u64)
        ]
    );
}

/// A table name of 48 bytes, the longest accepted, works end to end: every operation of every
/// trait, on each of the five tables and through the seven procedures named after it (the
/// longest name the store makes from it, the lease table's index `<name>_leases_by_owner`, is
/// MySQL's limit of 64). One byte more is refused with `InvalidInput` before anything is sent,
/// as is anything that is not a plain identifier. `DROP PROCEDURE` (without `IF EXISTS`) at
/// the end fails the test if a procedure is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_names_at_the_limit_work_end_to_end_and_longer_ones_are_refused() {
    let base = support::unique_ident("cp48");
    assert!(base.len() < 47, "{base}");
    let table = format!("{base}_{}", "x".repeat(48 - base.len() - 1));
    assert_eq!(table.len(), 48);

    assert_bad_table_names_are_refused(&table).await;

    let store = support::store().await.with_table(&table).unwrap();
    assert_eq!(store.table(), table);
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    let outcome = exercise_every_operation(&store).await;

    // The five tables and the 64-byte index exist under exactly those names.
    let (tables, want, index) = tables_and_lease_index_named_after(&table).await;
    drop_tables(store).await;
    outcome.unwrap_or_else(|error| panic!("{}", checkpoint_conformance::error_chain(&error)));
    assert_eq!(tables, want);
    assert_eq!(index, [format!("{table}_leases_by_owner")]);
    assert_eq!(index[0].len(), 64);
}

/// `schema_sql` is a script for the `mysql` client: split as that client splits a file (at
/// `;`, and at `$$` between `DELIMITER $$` and `DELIMITER ;`, the procedures' bodies holding
/// `;`), it is the five tables and the seven procedures, which create what `migrate` does: a
/// store on them, never migrated, runs every operation of every trait, and each procedure is
/// there to drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_sql_run_as_the_mysql_client_runs_it_creates_what_migrate_does() {
    let table = support::unique_ident("cp_ddl");
    let store = store_on(&table).await;
    let statements = client_statements(&store.schema_sql());
    assert_eq!(
        statements.len(),
        TABLE_SUFFIXES.len() + PROCEDURE_SUFFIXES.len(),
        "{statements:#?}"
    );
    support::admin_sql(&statements).await;
    let outcome = exercise_every_operation(&store).await;
    let (tables, want, _) = tables_and_lease_index_named_after(&table).await;
    drop_tables(store).await;
    outcome.unwrap_or_else(|error| panic!("{}", checkpoint_conformance::error_chain(&error)));
    assert_eq!(tables, want);
}

/// `script` split into statements as the `mysql` client splits a file: at its delimiter, `;`
/// until a `DELIMITER` line names another; the delimiter itself is not sent.
fn client_statements(script: &str) -> Vec<String> {
    let (mut delimiter, mut current, mut statements) = (";".to_owned(), String::new(), vec![]);
    for line in script.lines() {
        if let Some(next) = line.trim().strip_prefix("DELIMITER ") {
            assert!(
                current.trim().is_empty(),
                "unterminated before DELIMITER: {current}"
            );
            delimiter = next.trim().to_owned();
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if let Some(statement) = current.trim_end().strip_suffix(delimiter.as_str()) {
            statements.push(statement.trim().to_owned());
            current.clear();
        }
    }
    assert!(
        current.trim().is_empty(),
        "unterminated at the end: {current}"
    );
    assert_eq!(
        delimiter, ";",
        "the script leaves the client's delimiter changed"
    );
    statements
}

/// One byte more than the 48-byte `table`, and names that are not plain identifiers, are refused
/// with `InvalidInput` on the `table` setting.
async fn assert_bad_table_names_are_refused(table: &str) {
    for name in [format!("{table}y"), "a`b".to_owned(), "1abc".to_owned()] {
        match support::store().await.with_table(&name).map(drop) {
            Err(Error::InvalidInput(invalid)) => {
                assert_eq!(invalid.argument, Argument::Setting("table"), "{name:?}");
                assert!(
                    matches!(invalid.reason, InvalidReason::Malformed { .. }),
                    "{name:?}: {invalid:?}"
                );
            }
            other => panic!("{name:?} was not refused: {other:?}"),
        }
    }
}

/// Every operation of every trait on `store`, on a group of its own.
async fn exercise_every_operation(store: &MysqlCheckpointStore) -> Result<(), Error> {
    let group = fresh_group("long-table");
    exercise_checkpoints(store, &group).await?;
    exercise_leases_parked_and_operations(store, &group).await
}

/// The checkpoint operations, plain and `*_in` a transaction.
async fn exercise_checkpoints(store: &MysqlCheckpointStore, group: &str) -> Result<(), Error> {
    let group = group.to_owned();
    store.save(&group, "s", 0, 5).await?;
    store
        .save_all(
            &group,
            &[Checkpoint::new("s", 1, 6), Checkpoint::new("t", 0, 1)],
        )
        .await?;
    assert_eq!(store.load(&group, "s", 1).await?, Some(6));
    assert_eq!(store.list(&group).await?.len(), 3);
    assert_eq!(store.claim(&group, "x", 0, FINGERPRINT, 2).await?, 2);
    store.advance(&group, "x", 0, 2, 3).await?;
    let mut transaction = store.pool().begin().await.map_err(|error| {
        Error::backend("mysql", checkpoint_core::Operation::Advance, true, error)
    })?;
    store
        .advance_in(&mut transaction, &group, "x", 0, 3, 4)
        .await?;
    store.save_in(&mut transaction, &group, "s", 0, 9).await?;
    assert_eq!(store.list_in(&mut transaction, &group).await?.len(), 4);
    transaction.commit().await.map_err(|error| {
        Error::backend("mysql", checkpoint_core::Operation::Commit, true, error)
    })?;
    assert_eq!(store.load(&group, "x", 0).await?, Some(4));
    Ok(())
}

/// Leases and heartbeats, parked entries and the operations API.
async fn exercise_leases_parked_and_operations(
    store: &MysqlCheckpointStore,
    group: &str,
) -> Result<(), Error> {
    let group = group.to_owned();
    // Leases and heartbeats.
    let lease = Duration::from_secs(5);
    let acquired = store.acquire(&group, "s", "w", &[0, 1], lease).await?;
    assert_eq!(acquired.granted.len(), 2);
    assert_eq!(store.renew(&group, "s", "w", lease).await?.len(), 2);
    assert_eq!(store.leases(&group, "s").await?.owners.len(), 1);
    assert_eq!(store.leave(&group, "s", "w").await?, [0, 1]);
    // Parked entries.
    let entry = ParkedEntry::new("s", 0, 7, "boom", 3);
    store.park(&group, &entry).await?;
    assert_eq!(store.parked(&group).await?.len(), 1);
    assert!(store.retry_parked(&group, "s", 0, 7).await?);
    assert!(store.unpark(&group, "s", 0, 7).await?);
    // The operations API.
    store.start_at(&group, "new", &[(0, 10)]).await?;
    store.retire(&group, "t").await?;
    assert_eq!(store.retired(&group).await?, ["t"]);
    assert_eq!(store.groups().await?, std::slice::from_ref(&group));
    store.purge(&group, "t").await?;
    assert!(store.retired(&group).await?.is_empty());
    assert_eq!(store.list(&group).await?.len(), 4);
    Ok(())
}

/// The tables whose names start with `table` and the ones a store on it should have (both
/// sorted), and the secondary indexes of its lease table, read on an admin connection.
async fn tables_and_lease_index_named_after(
    table: &str,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut admin = support::admin_connection().await;
    let mut tables: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE CONCAT(?, '%')",
    )
    .bind(table)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    tables.sort();
    let mut want: Vec<String> = TABLE_SUFFIXES
        .iter()
        .map(|suffix| format!("{table}{suffix}"))
        .collect();
    want.sort();
    let index: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT CAST(INDEX_NAME AS CHAR) FROM information_schema.STATISTICS \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'",
    )
    .bind(format!("{table}_leases"))
    .fetch_all(&mut admin)
    .await
    .unwrap();
    drop(admin);
    (tables, want, index)
}
