//! The commands, each on any store of the operations API, writing to any output: the
//! binary runs them on the real store and standard output, the unit tests on the in-memory
//! store and a buffer.

mod check;
mod groups;
mod leases;
mod list;
mod parked;
mod parked_drop;
mod parked_key;
mod parked_retry;
mod purge;
mod retire;
mod sampling;
mod serve;
mod start;
mod status;
mod watch;

use std::io::Write;

use checkpoint_core::{CheckpointAdmin, Error};

pub use check::check;
pub use groups::groups;
pub use leases::leases;
pub use list::list;
pub use parked::parked;
pub use parked_drop::parked_drop;
pub use parked_retry::parked_retry;
pub use purge::purge;
pub use retire::retire;
pub use sampling::settings as sampling_settings;
pub use serve::{serve, stop_signal};
pub use start::{StartFrom, start};
pub use status::status;
pub use watch::watch;

use crate::confirm::Confirm;
use crate::connect::StoreApi;
use crate::error::CliError;

/// What every command works with.
pub struct Context<'a> {
    /// The store.
    pub store: &'a dyn StoreApi,
    /// Where the store is, without credentials, for questions.
    pub endpoint: &'a str,
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Whoever confirms a destructive command.
    pub confirm: &'a mut dyn Confirm,
}

/// A store error of the operation, as the command reports it.
pub(crate) fn failed(error: &Error) -> CliError {
    CliError::store(None, error)
}

/// `subscription "s" of group "g"` for messages.
fn subscription_of(group: &str, subscription: &str) -> String {
    format!(
        "subscription {} of group {}",
        quoted(subscription),
        quoted(group)
    )
}

/// Names sorted by their bytes, each once.
fn sorted_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    names.dedup();
    names
}

/// A name in a message: always quoted, escapes included.
fn quoted(name: &str) -> String {
    format!("{name:?}")
}

/// The live checkpoints of one subscription and whether it is retired.
async fn state_of(
    store: &dyn CheckpointAdmin,
    group: &str,
    subscription: &str,
) -> Result<(Vec<checkpoint_core::Checkpoint>, bool), CliError> {
    let mut live = store.list(group).await.map_err(|e| failed(&e))?;
    live.retain(|checkpoint| checkpoint.subscription == subscription);
    crate::output::sort(&mut live);
    let retired = store
        .retired(group)
        .await
        .map_err(|e| failed(&e))?
        .iter()
        .any(|name| name == subscription);
    Ok((live, retired))
}

/// `3 checkpoints (partitions 0 to 2)`.
fn count(checkpoints: usize) -> String {
    match checkpoints {
        1 => "1 checkpoint".to_owned(),
        n => format!("{n} checkpoints"),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory store, a scripted confirmation and a buffer, for the commands' tests.

    use checkpoint_core::InMemoryCheckpointStore;

    use super::Context;
    use crate::confirm::Confirm;
    use crate::error::CliError;

    /// Answers every question with `answer` and keeps the questions.
    pub struct Scripted {
        pub answer: bool,
        pub questions: Vec<String>,
    }

    impl Confirm for Scripted {
        fn confirm(&mut self, question: &str) -> Result<bool, CliError> {
            self.questions.push(question.to_owned());
            Ok(self.answer)
        }
    }

    /// Runs `command` on `store` with a confirmation answering `answer`: its result, what it
    /// printed, the questions asked.
    pub async fn run<F>(
        store: &InMemoryCheckpointStore,
        answer: bool,
        command: F,
    ) -> (Result<(), CliError>, String, Vec<String>)
    where
        F: for<'a> AsyncFnOnce(Context<'a>) -> Result<(), CliError>,
    {
        let mut out = Vec::new();
        let mut confirm = Scripted {
            answer,
            questions: Vec::new(),
        };
        let result = command(Context {
            store,
            endpoint: "memory",
            out: &mut out,
            confirm: &mut confirm,
        })
        .await;
        (result, String::from_utf8(out).unwrap(), confirm.questions)
    }
}
