//! Opening stores from URLs: nothing is created unless asked, settings are applied; with the
//! `mysql` feature, a `mysql://` and a `mariadb://` URL open a working store on the server
//! `MYSQL_URL` names (`scripts/test.sh` sets it), and a password the server refuses is never
//! shown.

use checkpoint_connect::{ConnectError, Options, StoreUrl};
use checkpoint_core::Error;

fn fresh_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "checkpoint-connect-{name}-{}-{}.db",
        std::process::id(),
        fastrand::u64(..)
    ))
}

#[tokio::test]
async fn a_missing_file_is_not_created_unless_asked() {
    let path = fresh_path("missing");
    let url: StoreUrl = format!("sqlite:{}", path.display()).parse().unwrap();
    let error = checkpoint_connect::open(&url, &Options::new())
        .await
        .expect_err("a missing file without `create` is an error");
    assert!(
        matches!(error, ConnectError::Store(Error::Backend { .. })),
        "{error:?}"
    );
    assert!(!path.exists(), "no file may be created");
}

#[tokio::test]
async fn create_makes_the_file_and_the_tables_and_a_second_open_finds_them() {
    let path = fresh_path("create");
    let url: StoreUrl = format!("sqlite://{}", path.display()).parse().unwrap();
    let options = Options::new().table("app_checkpoints");
    let store = checkpoint_connect::open(&url, &options.clone().create(true))
        .await
        .expect("created");
    store.save("g", "s", 3, 7).await.unwrap();
    drop(store);
    let again = checkpoint_connect::open(&url, &options)
        .await
        .expect("opened");
    assert_eq!(again.load("g", "s", 3).await.unwrap(), Some(7));
    drop(again);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test]
async fn an_invalid_table_name_is_the_store_s_invalid_input() {
    let path = fresh_path("table");
    let url: StoreUrl = format!("sqlite:{}", path.display()).parse().unwrap();
    let error = checkpoint_connect::open(&url, &Options::new().table("no-dashes").create(true))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ConnectError::Store(Error::InvalidInput(_))),
        "{error:?}"
    );
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn connect_parses_and_opens_in_one_call() {
    let error = checkpoint_connect::connect("oracle://root:hunter2@h/db")
        .await
        .expect_err("no such scheme");
    assert!(matches!(error, ConnectError::Url(_)), "{error:?}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[cfg(feature = "mysql")]
mod mysql;
