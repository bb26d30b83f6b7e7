//! The server under test: named by an environment variable, else started for the run, else a
//! failure that says which variable to set.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A variable's URL, or why there is none, once resolved.
type Resolved = OnceLock<Result<String, String>>;

/// The URL of the server the tests run against: the environment variable `var` when it is set
/// (and not blank), otherwise the URL `start` returns after starting a server for the run (a
/// testcontainers container, for example).
///
/// Resolved once per process and variable; every later call returns the same URL. Each test
/// runs in a tokio runtime of its own, which ends with the test, while a started server must
/// serve them all: `start` runs on a thread of its own, in a runtime that then keeps running
/// with the guard `start` returned (the container) until the process exits.
///
/// ```no_run
/// # fn example() -> String {
/// checkpoint_conformance::harness::server_url("DATABASE_URL", || async {
///     // Start a container here and return its URL and the container, which is kept alive.
///     let container = ();
///     Ok::<_, String>(("postgres://postgres@127.0.0.1:5432/postgres".to_owned(), container))
/// })
/// # }
/// ```
///
/// # Panics
///
/// When `var` is unset and `start` fails: the message names `var` and says why the server
/// could not be started, so a test never passes, or is skipped, for want of a server.
#[allow(clippy::panic)]
pub fn server_url<F, Fut, G, E>(var: &'static str, start: F) -> String
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(String, G), E>>,
    G: 'static,
    E: Display,
{
    static RESOLVED: Mutex<BTreeMap<&'static str, Arc<Resolved>>> = Mutex::new(BTreeMap::new());
    let once = Arc::clone(
        RESOLVED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(var)
            .or_default(),
    );
    let resolved = once.get_or_init(|| resolve(var, std::env::var(var).ok(), start));
    match resolved {
        Ok(url) => url.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// The variable's value when there is one, otherwise a server started with `start`.
fn resolve<F, Fut, G, E>(var: &str, value: Option<String>, start: F) -> Result<String, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(String, G), E>>,
    G: 'static,
    E: Display,
{
    match value {
        Some(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
        _ => start_and_keep(start).map_err(|reason| {
            format!(
                "no server for the tests: {var} is not set, and none could be started for the \
                 run ({reason}). Set {var} (scripts/test.sh shows a value for every backend), \
                 or make a Docker engine available to testcontainers."
            )
        }),
    }
}

/// Runs `start` on a thread of its own and keeps what it returned alive on that thread until
/// the process exits.
fn start_and_keep<F, Fut, G, E>(start: F) -> Result<String, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(String, G), E>>,
    G: 'static,
    E: Display,
{
    let (sender, receiver) = std::sync::mpsc::channel::<Result<String, String>>();
    std::thread::Builder::new()
        .name("test-server".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = sender.send(Err(format!("cannot build a runtime: {error}")));
                    return;
                }
            };
            runtime.block_on(async move {
                match start().await {
                    Ok((url, guard)) => {
                        let _ = sender.send(Ok(url));
                        // Keep the server (and this runtime) alive until the process exits.
                        std::future::pending::<()>().await;
                        drop(guard);
                    }
                    Err(error) => {
                        let _ = sender.send(Err(error.to_string()));
                    }
                }
            });
        })
        .map_err(|error| format!("cannot spawn a thread for the server: {error}"))?;
    receiver
        .recv()
        .map_err(|_| "the server's thread ended without an answer".to_owned())?
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    /// Sets its flag when dropped.
    struct Guard(Arc<AtomicBool>);

    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_variable_wins_and_nothing_is_started() {
        let url = resolve("SOME_URL", Some(" redis://set:1 ".to_owned()), || async {
            Err::<(String, ()), _>("must not be called")
        });
        assert_eq!(url.as_deref(), Ok("redis://set:1"));
    }

    #[test]
    fn without_the_variable_the_started_server_is_kept_alive() {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&dropped);
        for value in [None, Some("  ".to_owned())] {
            let flag = Arc::clone(&flag);
            let url = resolve("SOME_URL", value, move || async move {
                Ok::<_, String>(("redis://started:2".to_owned(), Guard(flag)))
            });
            assert_eq!(url.as_deref(), Ok("redis://started:2"));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !dropped.load(Ordering::SeqCst),
            "the started server was dropped"
        );
    }

    #[test]
    fn with_neither_the_failure_names_the_variable_and_the_reason() {
        let message = resolve("SOME_URL", None, || async {
            Err::<(String, ()), _>("no Docker engine")
        })
        .expect_err("neither a variable nor a server");
        assert!(
            message.contains("SOME_URL is not set") && message.contains("no Docker engine"),
            "{message}"
        );
    }

    #[test]
    fn the_server_is_started_once_per_variable() {
        static STARTS: AtomicU32 = AtomicU32::new(0);
        let var = "CHECKPOINT_CONFORMANCE_HARNESS_TEST_NEVER_SET";
        let urls: Vec<String> = (0..3)
            .map(|_| {
                server_url(var, || async {
                    let n = STARTS.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>((format!("redis://once:{n}"), ()))
                })
            })
            .collect();
        assert_eq!(urls, vec!["redis://once:0".to_owned(); 3]);
        assert_eq!(STARTS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failure_panics_with_the_message() {
        let var = "CHECKPOINT_CONFORMANCE_HARNESS_TEST_ALSO_NEVER_SET";
        let panic = std::panic::catch_unwind(|| {
            server_url(var, || async { Err::<(String, ()), _>("no Docker engine") })
        })
        .expect_err("a panic");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains(var), "{message}");
    }
}
