//! `mysql://` and `mariadb://` against the server `MYSQL_URL` names: a test whose variable is not
//! set, or whose server does not answer, fails; it never passes without its server.

use checkpoint_connect::{ConnectError, Options, StoreUrl};
use checkpoint_core::{Checkpoint, Error};

/// A password no error may show.
const PASSWORD: &str = "pw-Never-Shown";

/// `MYSQL_URL`; panics naming it when it is not set.
fn mysql_url() -> String {
    match std::env::var("MYSQL_URL") {
        Ok(value) if !value.trim().is_empty() => value.trim().to_owned(),
        _ => panic!(
            "MYSQL_URL is not set: these tests open a store on a real MySQL or MariaDB server \
             (scripts/test.sh starts the machine's MariaDB and sets MYSQL_URL)"
        ),
    }
}

/// A fresh name of this test's own, valid as a group and as a MySQL table name.
fn fresh(prefix: &str) -> String {
    format!("{prefix}_{}_{}", std::process::id(), fastrand::u32(..))
}

#[tokio::test]
async fn a_mysql_url_opens_a_working_store() {
    let url = mysql_url();
    let store = checkpoint_connect::open(&url.parse().unwrap(), &Options::new().create(true))
        .await
        .unwrap_or_else(|error| panic!("MYSQL_URL must be reachable: {error}"));
    let group = fresh("connect");
    store
        .save_all(
            &group,
            &[Checkpoint::new("s", 0, 5), Checkpoint::new("s", 1, 9)],
        )
        .await
        .unwrap();
    store.save(&group, "s", 0, 3).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(5));
    assert_eq!(store.list(&group).await.unwrap().len(), 2);
    // The same database through `mariadb://` (sqlx reads both alike) and `connect`.
    let mariadb = url.replacen("mysql://", "mariadb://", 1);
    assert!(
        mariadb.starts_with("mariadb://"),
        "MYSQL_URL is a mysql:// URL: {url}"
    );
    let again = checkpoint_connect::connect(&mariadb).await.expect("opened");
    assert_eq!(again.load(&group, "s", 1).await.unwrap(), Some(9));
    again.retire(&group, "s").await.unwrap();
    again.purge(&group, "s").await.unwrap();
}

#[tokio::test]
async fn a_table_of_its_own_is_created_only_when_asked() {
    let url: StoreUrl = mysql_url().parse().unwrap();
    let table = fresh("connect_table");
    let options = Options::new().table(table.as_str());
    // Not created: the first request says the table is missing.
    let store = checkpoint_connect::open(&url, &options)
        .await
        .expect("opened");
    let error = store.load("g", "s", 0).await.expect_err("no table yet");
    assert!(matches!(error, Error::Backend { .. }), "{error:?}");
    let store = checkpoint_connect::open(&url, &options.clone().create(true))
        .await
        .expect("created");
    store.save("g", "s", 0, 7).await.unwrap();
    assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(7));
    let error = checkpoint_connect::open(&url, &Options::new().table("no-dashes"))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ConnectError::Store(Error::InvalidInput(_))),
        "{error:?}"
    );
    drop_tables(&mysql_url(), &table).await;
}

/// Drops the table `name` and the store's other tables beside it (`name_retired`, ...).
async fn drop_tables(url: &str, name: &str) {
    use sqlx::Row;

    let pool = sqlx::mysql::MySqlPool::connect(url)
        .await
        .expect("MYSQL_URL reachable");
    let tables = sqlx::query(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND (table_name = ? OR table_name LIKE ?)",
    )
    .bind(name)
    .bind(format!("{name}\\_%"))
    .fetch_all(&pool)
    .await
    .expect("the tables");
    for row in tables {
        let table: String = row.get(0);
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE `{table}`")))
            .execute(&pool)
            .await
            .expect("dropped");
    }
    pool.close().await;
}

#[tokio::test]
async fn a_refused_password_is_never_shown() {
    let url = mysql_url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    for with_password in [
        format!("{scheme}://root:{PASSWORD}@{host}"),
        format!("{scheme}://nobody_here:{PASSWORD}@{host}"),
        format!("mariadb://root:{PASSWORD}@{host}"),
    ] {
        let target: StoreUrl = with_password.parse().unwrap();
        assert!(!target.display().contains(PASSWORD), "{}", target.display());
        assert!(!format!("{target:?}").contains(PASSWORD));
        let error = checkpoint_connect::open(&target, &Options::new())
            .await
            .expect_err("the server refuses the password");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(
            matches!(error, ConnectError::Store(Error::Backend { .. })),
            "the server's refusal, not a timeout: {error:?}"
        );
        assert!(shown.contains("Access denied"), "{shown}");
    }
}

#[tokio::test]
async fn a_refused_connection_says_why_at_once() {
    let error = checkpoint_connect::connect(&format!("mysql://root:{PASSWORD}@127.0.0.1:1/db"))
        .await
        .expect_err("nothing listens on port 1");
    assert!(
        matches!(
            error,
            ConnectError::Store(Error::Backend {
                retryable: true,
                ..
            })
        ),
        "{error:?}"
    );
    assert!(
        !format!("{error} {error:?}").contains(PASSWORD),
        "{error:?}"
    );
}
