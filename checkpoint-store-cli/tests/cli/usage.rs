//! The command line itself and bad URLs: one line, the right exit code, fast.

use std::net::TcpListener;
use std::time::Duration;

use crate::support::{TempDir, cli, dynamodb_env};

#[test]
fn help_and_version_succeed() {
    let help = cli(&["--help"], &[]);
    assert!(help.ok().contains("Usage: checkpoint"), "{help:#?}");
    for command in [
        "groups", "list", "leases", "status", "parked", "start", "retire", "purge",
    ] {
        let help = cli(&[command, "--help"], &[]);
        assert!(help.ok().contains(command), "{help:#?}");
    }
    for action in ["retry", "drop"] {
        let help = cli(&["parked", action, "--help"], &[]);
        assert!(help.ok().contains("PARTITION"), "{help:#?}");
    }
    assert!(cli(&["--version"], &[]).ok().starts_with("checkpoint "));
}

#[test]
fn a_wrong_command_line_is_one_line_and_exit_code_2() {
    for args in [
        &["lst"][..],
        &["list"],
        &["list", "g", "--bogus"],
        &["leases"],
        &["leases", "g", "--subscription"],
        &["leases", "g", "--bogus", "--url", "sqlite:x.db"],
        &["status"],
        &["parked"],
        &["parked", "retry", "g", "s", "0"],
        &["parked", "drop", "g", "s", "x", "1", "--url", "sqlite:x.db"],
        &["start", "g", "new", "--at", "x", "--url", "sqlite:x.db"],
        &["groups", "--url", "sqlite:x.db", "--timeout", "0"],
    ] {
        let output = cli(args, &[]);
        output.error(2);
        assert_eq!(output.stdout, "", "{output:#?}");
    }
    assert!(cli(&["lst"], &[]).error(2).contains("list"), "a suggestion");
}

#[test]
fn no_url_and_unknown_schemes_are_usage_errors() {
    assert!(cli(&["groups"], &[]).error(2).contains("--url"));
    let output = cli(&["groups", "--url", "oracle://root:hunter2@db/prod"], &[]);
    assert!(
        output.error(2).contains("unsupported store URL oracle://"),
        "{output:#?}"
    );
    assert!(!output.printed("hunter2"));
    let output = cli(
        &["groups", "--url", "postgres://u:hunter2@db:port/prod"],
        &[],
    );
    assert!(
        output.error(2).contains("malformed postgres:// URL"),
        "{output:#?}"
    );
    assert!(!output.printed("hunter2"));
    let output = cli(&["groups", "--url", "mysql://u:hunter2@db:port/prod"], &[]);
    assert!(
        output.error(2).contains("malformed mysql:// URL"),
        "{output:#?}"
    );
    assert!(!output.printed("hunter2"));
    cli(
        &["groups", "--url", "mysql://h/db", "--key-prefix", "p"],
        &[],
    )
    .error(2);
    let output = cli(
        &["groups", "--url", "redis://a:1", "--url", "sqlite:x.db"],
        &[],
    );
    assert!(output.error(2).contains("Redis Cluster"), "{output:#?}");
    cli(&["groups", "--url", "redis://a:1", "--table", "t"], &[]).error(2);
    cli(&["groups", "--url", "dynamodb://a/b"], &[]).error(2);
}

#[test]
fn the_url_comes_from_the_environment_too() {
    let dir = TempDir::new();
    let url = format!("sqlite:{}", dir.0.join("missing.db").display());
    let output = cli(&["groups"], &[("CHECKPOINT_URL".into(), url.clone())]);
    assert!(
        output
            .error(1)
            .starts_with(&format!("error: cannot connect to {url}: "))
    );
    assert!(
        !dir.0.join("missing.db").exists(),
        "no database created by a typo"
    );
}

#[test]
fn an_unreachable_server_fails_fast_in_one_line() {
    // Nothing listens on port 1: refused at once.
    for url in [
        "postgres://app:hunter2@127.0.0.1:1/db",
        "mysql://app:hunter2@127.0.0.1:1/db",
        "mariadb://app:hunter2@127.0.0.1:1/db",
        "redis://:hunter2@127.0.0.1:1",
        "redis://:hunter2@127.0.0.1:1,redis://:hunter2@127.0.0.1:2",
    ] {
        let output = cli(&["groups", "--url", url], &[]);
        let line = output.error(1);
        assert!(line.starts_with("error: cannot connect to "), "{output:#?}");
        assert!(!output.printed("hunter2"), "{output:#?}");
        assert!(output.elapsed < Duration::from_secs(8), "{output:#?}");
    }
    let output = cli(
        &[
            "list",
            "g",
            "--url",
            "dynamodb://checkpoints",
            "--timeout",
            "2",
        ],
        &dynamodb_env("http://127.0.0.1:1"),
    );
    output.error(1);
    assert!(!output.printed(crate::support::AWS_SECRET), "{output:#?}");
    assert!(output.elapsed < Duration::from_secs(8), "{output:#?}");
}

#[test]
fn a_server_that_never_answers_is_given_up_after_the_timeout() {
    // Accepts connections and never says anything.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        format!("postgres://app:hunter2@127.0.0.1:{port}/db"),
        format!("mysql://app:hunter2@127.0.0.1:{port}/db"),
        format!("redis://:hunter2@127.0.0.1:{port}"),
    ] {
        let output = cli(&["groups", "--url", &url, "--timeout", "1"], &[]);
        let line = output.error(1);
        assert!(line.starts_with("error: cannot connect to "), "{output:#?}");
        assert!(!output.printed("hunter2"), "{output:#?}");
        assert!(output.elapsed < Duration::from_secs(6), "{output:#?}");
    }
    drop(listener);
}

#[test]
fn dynamodb_without_a_region_says_so() {
    let env: Vec<(String, String)> = dynamodb_env("http://127.0.0.1:1")
        .into_iter()
        .filter(|(name, _)| name != "AWS_REGION")
        .collect();
    let output = cli(&["groups", "--url", "dynamodb://checkpoints"], &env);
    assert!(output.error(2).contains("AWS_REGION"), "{output:#?}");
}
