//! Least privilege in the SQL family: a user granted only what the engine's crate doc
//! states runs what it says.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
    LeaseStore, Operation,
};
use checkpoint_sql::{Engine, SqlStore};

use super::SqlServer;
use crate::{error_chain, fresh_group};

/// The privileges a user of a least-privilege case gets, on a table and its companions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grants {
    /// The operator's, as the crate doc states them: the operations API and what a worker
    /// needs.
    Operator,
    /// The run-time user's, as the crate doc states them: what a subscription and a worker
    /// need, nothing of the operations API.
    Runtime,
    /// SELECT and INSERT on the store's table and SELECT on its tombstones: no UPDATE.
    WithoutUpdate,
}

/// What an engine's tests give the least-privilege cases: users of their own, with the
/// privileges the engine's crate doc states, on tables of their own.
pub trait LeastPrivilege<E: Engine>: SqlServer<E> {
    /// Whether `migrate` runs under [`Grants::Runtime`] once the tables exist (PostgreSQL);
    /// if not, it is refused for good (MySQL checks `CREATE` even then).
    const RUNTIME_USER_MIGRATES: bool;

    /// A name for a table or a user no other test uses, starting with `prefix`.
    fn unique_ident(&self, prefix: &str) -> String;

    /// Creates `user` with `password` and exactly `grants` on `table` and its companion
    /// tables.
    fn create_user(
        &self,
        user: &str,
        password: &str,
        table: &str,
        grants: Grants,
    ) -> impl Future<Output = ()> + Send;

    /// A store connected as `user` with `password`, on `table`.
    fn connect_as(
        &self,
        user: &str,
        password: &str,
        table: &str,
    ) -> impl Future<Output = Result<SqlStore<E>, Error>> + Send;

    /// A part of the server's message when it refuses [`Grants::Runtime`]'s `retire` on
    /// `table` (PostgreSQL: `permission denied for table <table>`).
    fn retire_refusal(&self, table: &str) -> String;

    /// A part of the server's message when it refuses [`Grants::WithoutUpdate`]'s save on
    /// `table`, found in the error's source (MySQL: `UPDATE command denied`).
    fn save_refusal(&self, table: &str) -> String;

    /// A URL of the server under test with a password in it, whose user may save on the
    /// default table, and that password.
    fn url_with_password(&self) -> impl Future<Output = (String, String)> + Send;

    /// A part of the server's message refusing [`url_with_password`](Self::url_with_password)
    /// with another password; `None` where the server does not check passwords (PostgreSQL's
    /// test server trusts local connections).
    fn wrong_password_refusal(&self) -> Option<&'static str>;

    /// Drops `users` and every table of `table` (the store's and its companions).
    fn drop_users_and_tables(&self, users: &[&str], table: &str)
    -> impl Future<Output = ()> + Send;
}

/// The operator's privileges, as the crate doc states them, run every operation of
/// `CheckpointAdmin`: save, a lease acquired, start_at, retire, retired, groups, purge (which
/// ends the retired subscription's leases) and list, on a table migrated by its owner.
///
/// # Panics
///
/// When a call fails or returns what it should not, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn the_operator_privileges_run_every_admin_operation<E: Engine>(
    server: &impl LeastPrivilege<E>,
) {
    let table = server.unique_ident("cp_oper");
    let user = server.unique_ident("op");
    let owner = server.store().await.with_table(&table).unwrap();
    owner.migrate().await.unwrap();
    server
        .create_user(&user, "operator-pw", &table, Grants::Operator)
        .await;
    let outcome = async {
        let store = server.connect_as(&user, "operator-pw", &table).await?;
        let group = fresh_group("operator");
        store.save(&group, "old", 0, 10).await?;
        store
            .acquire(&group, "old", "w", &[0], Duration::from_secs(5))
            .await?;
        store.start_at(&group, "new", &[(0, 5), (1, 0)]).await?;
        store.retire(&group, "old").await?;
        assert_eq!(store.retired(&group).await?, ["old"]);
        assert_eq!(store.groups().await?, std::slice::from_ref(&group));
        store.purge(&group, "old").await?;
        assert!(store.leases(&group, "old").await?.leases.is_empty());
        assert_eq!(store.list(&group).await?.len(), 2);
        store.pool().close().await;
        Ok::<_, Error>(())
    }
    .await;
    owner.pool().close().await;
    server.drop_users_and_tables(&[&user], &table).await;
    outcome.unwrap_or_else(|error| panic!("{}", error_chain(&error)));
}

/// A user with only the run-time privileges does everything a subscription and a worker do
/// (`migrate` included once the tables exist, where [`LeastPrivilege::RUNTIME_USER_MIGRATES`]);
/// the operations API is refused for good (not retryable), and a user without UPDATE cannot
/// save, refused for good too.
///
/// # Panics
///
/// When a call fails or returns what it should not, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn the_runtime_privileges_are_all_a_subscription_needs<E: Engine, S>(server: &S)
where
    S: LeastPrivilege<E>,
{
    let table = server.unique_ident("cp_priv");
    let (user, limited) = (server.unique_ident("rt"), server.unique_ident("ro"));
    let owner = server.store().await.with_table(&table).unwrap();
    owner.migrate().await.unwrap();
    server
        .create_user(&user, "runtime-pw", &table, Grants::Runtime)
        .await;
    server
        .create_user(&limited, "readonly-pw", &table, Grants::WithoutUpdate)
        .await;
    let outcome = as_runtime_then_limited_user(server, &table, &user, &limited).await;
    owner.pool().close().await;
    server
        .drop_users_and_tables(&[&user, &limited], &table)
        .await;
    match outcome {
        Ok(Err(error @ Error::Backend { .. })) => {
            assert!(!error.is_retryable(), "{error:?}");
            let source = std::error::Error::source(&error).unwrap().to_string();
            let expected = server.save_refusal(&table);
            assert!(source.contains(&expected), "{expected:?} not in {source}");
        }
        Ok(other) => panic!("expected the user without UPDATE to be refused, got {other:?}"),
        Err(error) => panic!("{}", error_chain(&error)),
    }
}

/// As `user` (the run-time privileges) on `table`: `migrate`, the operations API refused for
/// good, then every call of a subscription and a worker; then as `limited` (no UPDATE): what
/// its save answered.
#[allow(clippy::unwrap_used)]
async fn as_runtime_then_limited_user<E: Engine, S: LeastPrivilege<E>>(
    server: &S,
    table: &str,
    user: &str,
    limited: &str,
) -> Result<Result<(), Error>, Error> {
    let store = server.connect_as(user, "runtime-pw", table).await?;
    let migrated = store.migrate().await;
    if S::RUNTIME_USER_MIGRATES {
        migrated?;
    } else {
        let error = migrated.unwrap_err();
        assert!(!error.is_retryable(), "migrate: {error:?}");
    }
    let group = fresh_group("privileges");
    let error = store.retire(&group, "s").await.unwrap_err();
    assert!(!error.is_retryable(), "{error:?}");
    let chain = error_chain(&error);
    assert!(chain.contains("denied"), "{chain}");
    let expected = server.retire_refusal(table);
    assert!(chain.contains(&expected), "{expected:?} not in {chain}");
    every_runtime_call(&store, &group).await?;
    store.pool().close().await;
    let limited_store = server.connect_as(limited, "readonly-pw", table).await?;
    let saved = limited_store.save(&group, "s", 0, 9).await;
    limited_store.pool().close().await;
    Ok(saved)
}

/// Every checkpoint and lease operation a subscription and a worker make, on `group`.
async fn every_runtime_call<E: Engine>(store: &SqlStore<E>, group: &str) -> Result<(), Error> {
    store.save(group, "s", 0, 1).await?;
    store.save(group, "s", 0, 2).await?;
    store
        .save_all(
            group,
            &[Checkpoint::new("s", 0, 3), Checkpoint::new("t", 0, 1)],
        )
        .await?;
    assert_eq!(store.load(group, "s", 0).await?, Some(3));
    assert_eq!(store.list(group).await?.len(), 2);
    let fingerprint = Fingerprint::from_bytes([2; 32]);
    assert_eq!(store.claim(group, "x", 0, fingerprint, 5).await?, 5);
    store.advance(group, "x", 0, 5, 6).await?;
    assert!(matches!(
        store.advance(group, "x", 0, 5, 7).await,
        Err(Error::Moved {
            expected: 5,
            current: Some(6)
        })
    ));
    let lease = Duration::from_secs(5);
    let acquired = store.acquire(group, "s", "w", &[0, 1], lease).await?;
    assert_eq!(acquired.granted.len(), 2);
    assert_eq!(store.renew(group, "s", "w", lease).await?.len(), 2);
    store.request_handover(group, "s", "v", &[0]).await?;
    assert_eq!(store.release(group, "s", "w", &[0]).await?.released, [0]);
    assert_eq!(store.leases(group, "s").await?.leases.len(), 1);
    assert_eq!(store.leave(group, "s", "w").await?, [1]);
    Ok(())
}

/// Panics when `shown` (a way a store or its error can be printed) shows `secret`.
#[allow(clippy::panic)]
fn assert_hidden(what: &str, shown: &str, secret: &str) {
    assert!(
        !shown.contains(secret),
        "{what} shows the password: {shown}"
    );
}

/// A store connected with a password in its URL: its Debug output, its pool's and its errors
/// (from the server, a missing table; a wrong password, refused for good where the server
/// checks it; a malformed URL, a connect error) never show it.
///
/// # Panics
///
/// When a call fails or shows the password, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn a_connected_store_never_shows_its_password<E: Engine>(
    server: &impl LeastPrivilege<E>,
) {
    let (url, secret) = server.url_with_password().await;
    let store = SqlStore::<E>::connect(&url)
        .await
        .unwrap_or_else(|error| panic!("{}", error_chain(&error)));
    let group = fresh_group("debug");
    store.save(&group, "s", 0, 1).await.unwrap();
    let shown = format!("{store:?} {store:#?}");
    assert_hidden("the store's Debug", &shown, &secret);
    let pool = store.pool();
    assert_hidden("the pool's Debug", &format!("{pool:?} {pool:#?}"), &secret);
    // An error from the server (a missing table) and its whole chain.
    let missing = store.clone().with_table(&server.unique_ident("missing"));
    let error = missing.unwrap().load(&group, "s", 0).await.unwrap_err();
    let shown = format!("{error} {error:?} {}", error_chain(&error));
    assert_hidden("a backend error", &shown, &secret);
    store.pool().close().await;
    if let Some(refusal) = server.wrong_password_refusal() {
        let wrong = url.replace(&secret, "wrong-Pw-77");
        let error = SqlStore::<E>::connect(&wrong).await.unwrap_err();
        assert!(
            matches!(
                error,
                Error::Backend {
                    operation: Operation::Connect,
                    retryable: false,
                    ..
                }
            ),
            "a wrong password: {error:?}"
        );
        let chain = format!("{} {error:?}", error_chain(&error));
        assert!(chain.contains(refusal), "{chain}");
        assert_hidden("a wrong password's error", &chain, "wrong-Pw-77");
    }
    // A malformed URL with a password: the error must not echo the URL.
    let scheme = url.split("://").next().unwrap();
    let malformed = format!("{scheme}://app:{secret}@127.0.0.1:notaport/db");
    let error = SqlStore::<E>::connect(&malformed).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Connect,
                ..
            }
        ),
        "{error:?}"
    );
    let shown = format!("{error} {error:?} {}", error_chain(&error));
    assert_hidden("a URL error", &shown, &secret);
}
