//! A store that does not exist yet, as a newcomer meets it first: the command says what is
//! missing and how to create it, and never creates anything itself.

use crate::support::{TempDir, cli, dynamodb_env, fresh_group, required};

/// A table name of this test's own, valid on PostgreSQL, MySQL and DynamoDB, that nothing
/// creates.
fn missing_table() -> String {
    fresh_group("missing").replace('-', "_")
}

#[test]
fn a_missing_sqlite_file_says_so_and_is_not_created() {
    let dir = TempDir::new();
    let path = dir.0.join("no-such.db");
    let url = format!("sqlite:{}", path.display());
    let output = cli(&["groups", "--url", &url], &[]);
    assert_eq!(
        output.error(1),
        format!(
            "error: cannot connect to {url}: the file does not exist, and the checkpoint command \
             never creates a store: check the path, or let the application create it \
             (SqliteCheckpointStore::open, then migrate)"
        )
    );
    assert_eq!(output.stdout, "", "{output:#?}");
    assert!(!path.exists(), "no database created by a typo");
}

#[test]
fn a_missing_postgres_table_says_how_to_create_it() {
    let url = required("DATABASE_URL");
    let table = missing_table();
    for command in [&["groups"][..], &["list", "g"]] {
        let mut args = command.to_vec();
        args.extend(["--url", &url, "--table", &table]);
        let output = cli(&args, &[]);
        let line = output.error(1);
        assert!(
            line.contains(&format!("relation \"{table}\" does not exist")),
            "{output:#?}"
        );
        assert!(
            line.contains(
                "the table does not exist, and the checkpoint command never creates one: create \
                 it with the application's store (PostgresCheckpointStore::migrate) or the DDL \
                 in the checkpoint-postgres crate doc, or give --table"
            ),
            "{output:#?}"
        );
    }
}

#[test]
fn a_missing_mysql_table_says_how_to_create_it() {
    let url = required("MYSQL_URL");
    let table = missing_table();
    // `list` reads the table; `groups` is a `CALL` of a procedure `migrate` creates, so it is
    // the procedure the server cannot find.
    let list = cli(&["list", "g", "--url", &url, "--table", &table], &[]);
    let line = list.error(1);
    assert!(
        line.contains(&format!("{table}' doesn't exist")),
        "{list:#?}"
    );
    assert!(
        line.contains(
            "the table does not exist, and the checkpoint command never creates one: create \
             it with the application's store (MysqlCheckpointStore::migrate) or the DDL in \
             the checkpoint-mysql crate doc, or give --table"
        ),
        "{list:#?}"
    );
    let groups = cli(&["groups", "--url", &url, "--table", &table], &[]);
    let line = groups.error(1);
    assert!(
        line.contains(&format!("{table}_groups_v1 does not exist")),
        "{groups:#?}"
    );
    assert!(
        line.contains(
            "the store's stored procedures for this table do not exist (nor, perhaps, the \
             table), and the checkpoint command never creates them: create them with the \
             application's store (MysqlCheckpointStore::migrate"
        ),
        "{groups:#?}"
    );
}

#[test]
fn a_missing_dynamodb_table_says_how_to_create_it() {
    let env = dynamodb_env(&required("DYNAMODB_ENDPOINT"));
    let url = format!("dynamodb://{}", missing_table());
    for command in [&["groups"][..], &["list", "g"]] {
        let mut args = command.to_vec();
        args.extend(["--url", &url]);
        let output = cli(&args, &env);
        assert!(
            output.error(1).contains(
                "the table the URL names (dynamodb://TABLE) does not exist in this region at \
                 this endpoint, and the checkpoint command never creates one: create it with \
                 the application's store (DynamoDbCheckpointStore::create_table)"
            ),
            "{output:#?}"
        );
    }
}
