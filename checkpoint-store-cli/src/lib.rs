//! The `checkpoint` command: operating the checkpoints of any store of the workspace.
//!
//! ```text
//! checkpoint groups                                   every group, one per line
//! checkpoint list GROUP [--subscription S] [--json]   its checkpoints and retired subscriptions
//! checkpoint leases GROUP [-s S] [--json]             who holds which partition, live workers
//! checkpoint start GROUP NEW --like OLD [--at P]      a new subscription where OLD stands (or at P)
//! checkpoint start GROUP NEW --at P --partitions 0..16
//! checkpoint start GROUP NEW --at 0=100 --at 1=250
//! checkpoint retire GROUP S [--yes] [--force]         S is gone for good, even from zombies
//! checkpoint purge GROUP S [--yes]                    S's name can be used again
//! ```
//!
//! The store is one URL (`--url` or `CHECKPOINT_URL`), see [`target`]; the output, tables and
//! JSON, is in [`output`]; the exit codes are [`error::Exit`]: 0 done, 1 failure, 2 usage, 3
//! refused by what is stored. Every error is one line on standard error starting with
//! `error: `, and nothing printed ever holds a password ([`redact`]). `retire` and `purge` ask
//! first on a terminal and need `--yes` anywhere else ([`confirm`]).
//!
//! This library is the command's implementation, public so that its tests (and other tools)
//! can open a store from a URL exactly as the command does: [`connect::connect`].
//!
//! The package is `checkpoint-store-cli` because `checkpoint-cli` is another program's name on
//! the crates registry; the command it installs is `checkpoint`
//! (`cargo install --path checkpoint-store-cli`).

pub mod args;
pub mod aws;
pub mod commands;
pub mod confirm;
pub mod connect;
pub mod error;
pub mod output;
pub mod redact;
pub mod target;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::commands::{Context, StartFrom};
use crate::connect::Settings;
use crate::error::CliError;
use crate::target::Target;

/// The command: parses the command line, runs, prints, and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return clap_error(&error),
    };
    let secrets: Vec<String> = cli
        .store
        .urls
        .iter()
        .flat_map(|value| {
            // Also each piece of a comma-separated list of cluster nodes.
            std::iter::once(value.as_str())
                .chain(value.split(','))
                .flat_map(redact::secrets_of)
        })
        .collect();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Nothing more can be reported if standard error is gone.
            let _ = writeln!(std::io::stderr(), "{}", error.line(&secrets));
            error.exit().into()
        }
    }
}

/// Runs a parsed command line.
///
/// # Errors
///
/// Whatever stopped the command, with its exit code.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let target = Target::parse(&cli.store.urls)?;
    let settings = settings(&cli)?;
    let command = &cli.command;
    // Refused before connecting: nobody could confirm.
    let mut confirm = confirm::for_command(
        command.name(),
        command.is_destructive(),
        command.confirmed(),
        confirm::stdin_is_terminal(),
    )?;
    let start_from = match command {
        Command::Start(start) => Some(StartFrom::from_args(
            start.like.as_deref(),
            &start.at,
            start.partitions.as_deref(),
        )?),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::failure(format!("cannot start the runtime: {error}")))?;
    runtime.block_on(async {
        let store = connect::connect(&target, &settings).await?;
        let endpoint = target.display();
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let context = Context {
            store: store.as_ref(),
            endpoint: &endpoint,
            out: &mut out,
            confirm: confirm.as_mut(),
        };
        match command {
            Command::Groups { json } => commands::groups(context, *json).await,
            Command::List {
                group,
                subscription,
                json,
            } => commands::list(context, group, subscription.as_deref(), *json).await,
            Command::Leases {
                group,
                subscription,
                json,
            } => commands::leases(context, group, subscription.as_deref(), *json).await,
            Command::Start(start) => match &start_from {
                Some(from) => {
                    commands::start(context, &start.group, &start.subscription, from).await
                }
                None => Ok(()),
            },
            Command::Retire {
                group,
                subscription,
                force,
                ..
            } => commands::retire(context, group, subscription, *force).await,
            Command::Purge {
                group,
                subscription,
                ..
            } => commands::purge(context, group, subscription).await,
        }
    })?;
    std::io::stdout().flush()?;
    Ok(())
}

fn settings(cli: &Cli) -> Result<Settings, CliError> {
    let seconds = cli.store.timeout;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err(CliError::usage(
            "--timeout takes a number of seconds above 0, at most 86400",
        ));
    }
    Ok(Settings {
        table: cli.store.table.clone(),
        key_prefix: cli.store.key_prefix.clone(),
        timeout: Duration::from_secs_f64(seconds),
    })
}

/// Prints a command-line error as clap does for help and version, and as one `error:` line
/// with exit code 2 for anything else.
fn clap_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            error::Exit::Usage.into()
        } else {
            ExitCode::SUCCESS
        };
    }
    let rendered = error.to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let line = CliError::usage(format!("{message} (see checkpoint --help)")).line(&[]);
    let _ = writeln!(std::io::stderr(), "{line}");
    error::Exit::Usage.into()
}
