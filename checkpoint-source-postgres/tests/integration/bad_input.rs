//! Bad input and bad setup: refused with a typed error naming what to do, nothing read.

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_postgres::PostgresSource;
use sqlx::PgPool;

use crate::support::{pool, settle, unique_table};

fn setup_message(error: SourceError) -> String {
    match error {
        SourceError::Setup { backend, message } => {
            assert_eq!(backend, "postgres");
            message
        }
        other => panic!("expected a setup error, got {other:?}"),
    }
}

#[tokio::test]
async fn arguments_are_refused_before_any_io() {
    let _shared = crate::support::shared().await;
    // No such table: an argument error still comes first, so nothing was sent.
    let source = PostgresSource::new(pool(1).await, 4)
        .with_table(&unique_table("nothing"))
        .unwrap();
    assert!(matches!(
        source.read(4, 0, 10).await,
        Err(SourceError::PartitionOutOfRange {
            partition: 4,
            partitions: 4
        })
    ));
    assert!(matches!(
        source.read(0, 0, 0).await,
        Err(SourceError::InvalidInput {
            argument: "max",
            ..
        })
    ));
    assert!(matches!(
        source.read(0, i64::MAX as u64 + 1, 1).await,
        Err(SourceError::InvalidInput {
            argument: "from",
            ..
        })
    ));
    assert!(matches!(
        source.wait(9, 0).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert!(matches!(
        source.head(9).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert!(matches!(
        source.append(9, None, b"x").await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    for bad in ["", "drop table x;", "a.b.c", "évents", "x\"y"] {
        let refused = PostgresSource::new(pool(1).await, 1).with_table(bad);
        assert!(
            matches!(
                refused,
                Err(SourceError::InvalidInput {
                    argument: "table",
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    assert!(
        PostgresSource::new(pool(1).await, 1)
            .with_partition_column("p q")
            .is_err()
    );
    assert!(
        PostgresSource::new(pool(1).await, 1)
            .with_sequence_column("")
            .is_err()
    );
}

#[tokio::test]
async fn a_missing_table_is_a_setup_error_naming_migrate() {
    let _shared = crate::support::shared().await;
    let table = unique_table("missing");
    let source = PostgresSource::new(pool(1).await, 2)
        .with_table(&table)
        .unwrap();
    let message = setup_message(source.read(0, 0, 10).await.unwrap_err());
    assert!(
        message.contains(&table) && message.contains("migrate"),
        "{message}"
    );
    setup_message(source.head(0).await.unwrap_err());
    setup_message(source.wait(0, 0).await.unwrap_err());
    setup_message(source.append(0, None, b"x").await.unwrap_err());
    // Nothing was created by reading.
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(&table)
        .fetch_one(source.pool())
        .await
        .unwrap();
    assert!(!exists);
}

#[tokio::test]
async fn a_non_numeric_sequence_column_is_a_setup_error_naming_the_column() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("textseq");
    let create = format!(
        "CREATE TABLE \"{table}\" (seq text, tx xid8 NOT NULL DEFAULT pg_current_xact_id(), \
         partition int NOT NULL, key text, payload bytea NOT NULL, \
         appended_at timestamptz NOT NULL DEFAULT now())"
    );
    sqlx::query(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
        .unwrap();
    let source = PostgresSource::new(pool, 1).with_table(&table).unwrap();
    let message = setup_message(source.read(0, 0, 10).await.unwrap_err());
    assert!(
        message.contains("column seq") && message.contains("text"),
        "{message}"
    );
    let message = setup_message(source.migrate().await.unwrap_err());
    assert!(message.contains("column seq"), "{message}");
}

#[tokio::test]
async fn a_tx_column_without_the_writer_s_id_as_default_is_refused() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("nodefault");
    let create = format!(
        "CREATE TABLE \"{table}\" (seq bigserial, tx xid8 NOT NULL, partition int NOT NULL, \
         key text, payload bytea NOT NULL, appended_at timestamptz NOT NULL DEFAULT now())"
    );
    sqlx::query(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
        .unwrap();
    let source = PostgresSource::new(pool, 1).with_table(&table).unwrap();
    let message = setup_message(source.migrate().await.unwrap_err());
    assert!(message.contains("pg_current_xact_id()"), "{message}");
}

#[tokio::test]
async fn a_partition_count_above_the_stored_one_is_refused() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("count");
    let four = PostgresSource::new(pool.clone(), 4)
        .with_table(&table)
        .unwrap();
    four.migrate().await.unwrap();
    four.append(3, None, b"x").await.unwrap();
    let eight = PostgresSource::new(pool, 8).with_table(&table).unwrap();
    let message = setup_message(eight.read(0, 0, 10).await.unwrap_err());
    assert!(
        message.contains("4 partitions") && message.contains("grow_to"),
        "{message}"
    );
    let message = setup_message(eight.migrate().await.unwrap_err());
    assert!(message.contains("4 partitions"), "{message}");
    // The right count still reads.
    assert_eq!(settle(&four, 3, 1).await.len(), 1);
}

#[tokio::test]
async fn concurrent_migrations_of_one_table_all_succeed() {
    let _shared = crate::support::shared().await;
    let pool = pool(8).await;
    let table = unique_table("concurrent");
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let source = PostgresSource::new(pool.clone(), 3)
            .with_table(&table)
            .unwrap();
        tasks.push(tokio::spawn(async move { source.migrate().await }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
}

/// The crate doc's recipe for an existing table: the history keeps its order, before every
/// entry written after, and reads and appends work with `with_sequence_column`.
#[tokio::test]
async fn an_existing_table_altered_as_the_crate_doc_says_reads_its_history_first() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("existing");
    legacy_table(&pool, &table).await;
    let insert = format!(
        "INSERT INTO \"{table}\" (partition, payload) SELECT i % 2, int4send(i) FROM generate_series(1, 50) i"
    );
    sqlx::query(sqlx::AssertSqlSafe(insert))
        .execute(&pool)
        .await
        .unwrap();
    let source = legacy_source(&pool, &table);
    run_existing_table_statements(&pool, &source).await;
    source.migrate().await.unwrap();
    let new = source.append(1, None, b"new").await.unwrap();
    let all = settle(&source, 1, 26).await;
    assert_eq!(all.len(), 26);
    let history: Vec<i32> = all[..25]
        .iter()
        .map(|(_, payload)| i32::from_be_bytes(payload[..].try_into().unwrap()))
        .collect();
    assert_eq!(history, (1..=50).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    assert_eq!(all[25], (new, b"new".to_vec()));
}

/// `migrate` on an existing table without `tx` (its index needs that column) refuses with what
/// to do, the existing-table statements, instead of the server's "column does not exist", and
/// creates nothing; after those statements it succeeds.
#[tokio::test]
async fn migrate_on_an_existing_table_without_tx_names_the_existing_table_statements() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("notx");
    legacy_table(&pool, &table).await;
    let source = legacy_source(&pool, &table);
    let message = setup_message(source.migrate().await.unwrap_err());
    assert!(
        message.contains("no column tx") && message.contains("existing_table_statements"),
        "{message}"
    );
    let created: (bool, bool) =
        sqlx::query_as("SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL")
            .bind(format!("\"{table}_read\""))
            .bind(format!("\"{table}_source\""))
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(created, (false, false), "nothing created");
    assert_eq!(
        setup_message(source.read(0, 0, 1).await.unwrap_err()),
        message
    );
    run_existing_table_statements(&pool, &source).await;
    source.migrate().await.unwrap();
}

/// Rows restored from another cluster carry transaction ids this server has not handed out:
/// entries written from now on would sort before them, so the table is refused.
#[tokio::test]
async fn a_table_with_transaction_ids_from_another_cluster_is_refused() {
    let _shared = crate::support::shared().await;
    let pool = pool(2).await;
    let table = unique_table("restored");
    let source = PostgresSource::new(pool.clone(), 2)
        .with_table(&table)
        .unwrap();
    source.migrate().await.unwrap();
    let insert = format!(
        "INSERT INTO \"{table}\" (tx, partition, payload) \
         SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::int8 + 1000000)::text::xid8, 1, '\\x00'"
    );
    sqlx::query(sqlx::AssertSqlSafe(insert))
        .execute(&pool)
        .await
        .unwrap();
    let fresh = PostgresSource::new(pool, 2).with_table(&table).unwrap();
    let message = setup_message(fresh.read(0, 0, 10).await.unwrap_err());
    assert!(message.contains("another cluster"), "{message}");
}

/// An event table as an application had it before this source: a sequence column `id`, a
/// partition and a payload, no `tx`.
async fn legacy_table(pool: &PgPool, table: &str) {
    let create = format!(
        "CREATE TABLE \"{table}\" (id bigserial PRIMARY KEY, partition int NOT NULL, key text, \
         payload bytea NOT NULL)"
    );
    sqlx::query(sqlx::AssertSqlSafe(create))
        .execute(pool)
        .await
        .unwrap();
}

/// A source of 2 partitions over a [`legacy_table`] (its sequence column `id`).
fn legacy_source(pool: &PgPool, table: &str) -> PostgresSource {
    PostgresSource::new(pool.clone(), 2)
        .with_table(table)
        .unwrap()
        .with_sequence_column("id")
        .unwrap()
}

/// The crate doc's recipe: the existing-table statements, in one transaction.
async fn run_existing_table_statements(pool: &PgPool, source: &PostgresSource) {
    let mut transaction = pool.begin().await.unwrap();
    for statement in source.existing_table_statements() {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *transaction)
            .await
            .unwrap();
    }
    transaction.commit().await.unwrap();
}
