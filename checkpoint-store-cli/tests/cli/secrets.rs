//! No credential is ever printed: not on success, not on refusal, not on a failed connection,
//! not in the help.

use checkpoint_core::Checkpoint;

use crate::support::{AWS_SECRET, Backend, Fixture, cli, fresh_group, required};

/// A password no output may hold.
const PASSWORD: &str = "pw-Never-Printed";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_password_is_never_printed() {
    // The local server trusts connections from 127.0.0.1, so the password is accepted and
    // unused: every command runs to its end with it in the URL.
    let fixture = Fixture::new(Backend::Postgres).await;
    let url = required("DATABASE_URL");
    let with_password = url.replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1);
    assert_ne!(
        url, with_password,
        "DATABASE_URL has the user postgres: {url}"
    );
    let group = fresh_group("cli-secret");
    fixture
        .store
        .save_all(&group, &[Checkpoint::new("s", 0, 1)])
        .await
        .unwrap();
    let g = group.as_str();
    let runs = [
        &["groups"][..],
        &["list", g],
        &["list", g, "--json"],
        &["list", "no-such-group"],
        &["start", g, "t", "--like", "s"],
        &["start", g, "t", "--like", "s"],
        &["retire", g, "s"],
        &["retire", g, "s", "--yes"],
        &["purge", g, "t", "--yes"],
        &["list", g, "--table", "no_such_table"],
    ];
    for args in runs {
        let mut all = vec!["--url", with_password.as_str()];
        all.extend_from_slice(args);
        let output = cli(&all, &[]);
        assert!(!output.printed(PASSWORD), "{args:?}: {output:#?}");
        assert!(output.code.is_some(), "{output:#?}");
    }
    // A password percent-encoded in the URL, on a failed connection.
    let output = cli(
        &[
            "groups",
            "--url",
            "postgres://u:pw%40Never%2FPrinted@127.0.0.1:1/db",
        ],
        &[],
    );
    output.error(1);
    assert!(
        !output.printed("pw%40Never") && !output.printed("pw@Never"),
        "{output:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mysql_password_is_never_printed() {
    // The local server's root has no password: one in the URL is refused (access denied),
    // and the error must not show it.
    let fixture = Fixture::new(Backend::Mysql).await;
    let url = required("MYSQL_URL");
    let with_password = url.replacen("://root@", &format!("://root:{PASSWORD}@"), 1);
    assert_ne!(url, with_password, "MYSQL_URL has the user root: {url}");
    let group = fresh_group("cli-secret");
    fixture
        .store
        .save_all(&group, &[Checkpoint::new("s", 0, 1)])
        .await
        .unwrap();
    let g = group.as_str();
    for args in [&["groups"][..], &["list", g], &["retire", g, "s", "--yes"]] {
        let mut all = vec!["--url", with_password.as_str()];
        all.extend_from_slice(args);
        let output = cli(&all, &[]);
        let line = output.error(1);
        assert!(line.contains("Access denied"), "{output:#?}");
        assert!(!output.printed(PASSWORD), "{args:?}: {output:#?}");
    }
    for scheme in ["mysql", "mariadb"] {
        let output = cli(
            &[
                "groups",
                "--url",
                &format!("{scheme}://u:pw%40Never%2FPrinted@127.0.0.1:1/db"),
            ],
            &[],
        );
        output.error(1);
        assert!(
            !output.printed("pw%40Never") && !output.printed("pw@Never"),
            "{output:#?}"
        );
    }
    // The store was not touched by the refused runs.
    assert_eq!(fixture.store.load(g, "s", 0).await.unwrap(), Some(1));
}

#[test]
fn a_redis_password_the_server_refuses_is_never_printed() {
    let url = required("REDIS_URL");
    let with_password = url.replacen("redis://", &format!("redis://:{PASSWORD}@"), 1);
    let output = cli(&["groups", "--url", &with_password], &[]);
    output.error(1);
    assert!(!output.printed(PASSWORD), "{output:#?}");
    let user = url.replacen("redis://", &format!("redis://someone:{PASSWORD}@"), 1);
    let output = cli(&["list", "g", "--url", &user], &[]);
    output.error(1);
    assert!(!output.printed(PASSWORD), "{output:#?}");
}

#[test]
fn the_help_never_shows_the_url_from_the_environment() {
    let env = [(
        "CHECKPOINT_URL".to_owned(),
        format!("postgres://app:{PASSWORD}@db/prod"),
    )];
    for args in [&["--help"][..], &["list", "--help"], &["list"]] {
        let output = cli(args, &env);
        assert!(!output.printed(PASSWORD), "{output:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_secret_key_is_never_printed() {
    let fixture = Fixture::new(Backend::DynamoDb).await;
    for args in [
        &["groups"][..],
        &["list", "nothing-here"],
        &["retire", "g", "s", "--yes"],
    ] {
        let output = fixture.cli(args);
        assert!(!output.printed(AWS_SECRET), "{output:#?}");
    }
}
