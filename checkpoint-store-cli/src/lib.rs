//! The `checkpoint` command: operating the checkpoints of any store of the workspace.
//!
//! ```text
//! checkpoint groups                                   every group, one per line
//! checkpoint list GROUP [--subscription S] [--json]   its checkpoints and retired subscriptions
//! checkpoint leases GROUP [-s S] [--json]             who holds which partition, live workers
//! checkpoint status GROUP [-s S] [--json]             per partition: checkpoint, owner, parked
//! checkpoint status GROUP --source URL                and the log's head and lag (see [`source`])
//! checkpoint status GROUP --source URL --watch        live, with rates and verdicts ([`monitor`])
//! checkpoint check GROUP --source URL                 exit 4 and one line per partition to look at
//! checkpoint serve GROUP --source URL [--listen A]    a live page, /api/fleet and /metrics
//! checkpoint parked GROUP [-s S] [--json]             the entries its subscriptions parked
//! checkpoint parked retry GROUP S PARTITION POSITION  have that entry retried
//! checkpoint parked drop GROUP S PARTITION POSITION [--yes]   remove its record
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
//! `error: `, and nothing printed ever holds a password ([`redact`]). `retire`, `purge` and
//! `parked drop` ask first on a terminal and need `--yes` anywhere else ([`confirm`]).
//!
//! This library is the command's implementation, public so that its tests can open a store
//! exactly as the command does ([`connect::connect`], with the command's messages). Another
//! program that takes a store URL uses `checkpoint-connect`, which the command opens its
//! stores through.
//!
//! The package is `checkpoint-store-cli` because `checkpoint-cli` is another program's name on
//! the crates registry; the command it installs is `checkpoint`
//! (`cargo install --path checkpoint-store-cli`).

pub mod args;
pub mod commands;
pub mod confirm;
pub mod connect;
pub mod error;
pub mod monitor;
pub mod output;
pub mod serve;
pub mod source;
pub mod target;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

pub use checkpoint_connect::redact;
use clap::Parser;

use crate::args::{CheckArgs, Cli, Command, ParkedAction, ParkedArgs, ServeArgs, StatusArgs};
use crate::commands::{Context, StartFrom};
use crate::connect::Settings;
use crate::error::CliError;
use crate::source::SourceSpec;
use crate::target::Target;

/// The command: parses the command line, runs, prints, and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return clap_error(&error),
    };
    let mut secrets: Vec<String> = cli
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
    if let Some(url) = cli.command.source_url() {
        // Also of a URL that does not parse as a source; the user name only where it may be
        // a token (NATS): elsewhere it is a name, and scrubbing it would mangle messages.
        secrets.extend(match url.trim_start().starts_with("nats://") {
            true => redact::secrets_with_token(url),
            false => redact::secrets_of(url),
        });
    }
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
        // Checked before any request, as the store's URL is.
        let source = source_spec(command, settings.timeout)?;
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
        dispatch(context, command, start_from.as_ref(), source.as_ref()).await
    })?;
    std::io::stdout().flush()?;
    Ok(())
}

/// Runs `command` on the connected store (its arguments checked before connecting).
async fn dispatch(
    context: Context<'_>,
    command: &Command,
    start_from: Option<&StartFrom>,
    source: Option<&SourceSpec>,
) -> Result<(), CliError> {
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
        Command::Parked(parked) => run_parked(context, parked).await,
        Command::Status(status) => run_status(context, status, source).await,
        Command::Check(check) => match source {
            Some(source) => commands::check(context, check, source).await,
            None => Ok(()),
        },
        Command::Serve(serve) => match source {
            Some(source) => commands::serve(context, serve, source).await,
            None => Ok(()),
        },
        Command::Start(start) => match start_from {
            Some(from) => commands::start(context, &start.group, &start.subscription, from).await,
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
}

/// `checkpoint status`, once or `--watch`.
async fn run_status(
    context: Context<'_>,
    status: &StatusArgs,
    source: Option<&SourceSpec>,
) -> Result<(), CliError> {
    let StatusArgs {
        group,
        subscription,
        json,
        watch,
        sampling,
        ..
    } = status;
    let subscription = subscription.as_deref();
    match source {
        Some(source) if *watch => {
            let terminal = std::io::stdout().is_terminal().then_some(terminal_height);
            let terminal = terminal.as_ref().map(|height| height as &dyn Fn() -> usize);
            commands::watch(context, group, subscription, source, *sampling, terminal).await
        }
        _ => commands::status(context, group, subscription, *json, source).await,
    }
}

/// The terminal's height in lines (24 when it cannot be read).
fn terminal_height() -> usize {
    terminal_size::terminal_size().map_or(24, |(_, height)| usize::from(height.0))
}

/// `checkpoint parked`: the listing, `retry` or `drop`.
async fn run_parked(context: Context<'_>, parked: &ParkedArgs) -> Result<(), CliError> {
    match &parked.action {
        Some(ParkedAction::Retry(key)) => {
            commands::parked_retry(
                context,
                &key.group,
                &key.subscription,
                key.partition,
                key.position,
            )
            .await
        }
        Some(ParkedAction::Drop { key, .. }) => {
            commands::parked_drop(
                context,
                &key.group,
                &key.subscription,
                key.partition,
                key.position,
            )
            .await
        }
        None => match &parked.group {
            Some(group) => {
                commands::parked(context, group, parked.subscription.as_deref(), parked.json).await
            }
            // clap requires the group when there is no action.
            None => Err(CliError::usage(
                "parked needs a group: checkpoint parked GROUP (see checkpoint parked --help)",
            )),
        },
    }
}

/// The log of `status --source`, `check` and `serve`, checked; `None` without one. Inside the
/// runtime.
fn source_spec(command: &Command, timeout: Duration) -> Result<Option<SourceSpec>, CliError> {
    let (url, table, stream) = match command {
        Command::Status(status) => match &status.source {
            Some(url) => (url, &status.source_table, &status.source_stream),
            None => return Ok(None),
        },
        Command::Check(CheckArgs { source, .. }) | Command::Serve(ServeArgs { source, .. }) => {
            (&source.source, &source.source_table, &source.source_stream)
        }
        _ => return Ok(None),
    };
    SourceSpec::new(url, table.as_deref(), stream.as_deref(), timeout).map(Some)
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
