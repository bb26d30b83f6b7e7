//! The command line.

mod monitor;

use clap::{Args, Parser, Subcommand};
pub use monitor::{CheckArgs, SamplingArgs, ServeArgs, SourceArgs};

/// See every group of a checkpoint store, start a subscription where another stands, retire
/// one for good and purge what it leaves, see which worker holds which partition and where
/// each partition stands, and list, retry or drop the entries a subscription parked.
///
/// Exit codes: 0 done; 1 the store failed or could not be reached (or you declined); 2 a wrong
/// command line, URL or name, or a destructive command without --yes off a terminal; 3 refused
/// by what is stored (nothing there, a name that exists, is retired, or is not retired); 4
/// (check) a partition needs attention.
#[derive(Debug, Parser)]
#[command(name = "checkpoint", version)]
pub struct Cli {
    /// Where the store is and how to reach it.
    #[command(flatten)]
    pub store: StoreArgs,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The store: its URL and settings.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store: postgres://…, mysql://… (or mariadb://…), redis://… or rediss://…, several
    /// redis:// URLs (repeat --url or separate them with commas) for a Redis Cluster,
    /// dynamodb://TABLE (endpoint, region and credentials from the AWS environment), or
    /// sqlite:PATH.
    #[arg(
        long = "url",
        env = "CHECKPOINT_URL",
        hide_env_values = true,
        global = true,
        value_name = "URL"
    )]
    pub urls: Vec<String>,

    /// The table (PostgreSQL: `table` or `schema.table`; MySQL; SQLite), when it is not
    /// `checkpoints`.
    #[arg(long, global = true, value_name = "NAME")]
    pub table: Option<String>,

    /// The key prefix (Redis), when it is not `checkpoint`.
    #[arg(long, global = true, value_name = "PREFIX")]
    pub key_prefix: Option<String>,

    /// Seconds to wait for the connection and for each request before giving up.
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 5.0)]
    pub timeout: f64,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every group that has checkpoints or retired subscriptions, one per line.
    Groups {
        /// A JSON array of names instead.
        #[arg(long)]
        json: bool,
    },
    /// The checkpoints of a group, sorted by subscription and partition, and its retired
    /// subscriptions. Exits with 3 when there is no checkpoint to show.
    List {
        /// The group.
        group: String,
        /// Only this subscription.
        #[arg(long, short)]
        subscription: Option<String>,
        /// One JSON object instead: group, checkpoints (subscription, partition, position each),
        /// retired (names).
        #[arg(long)]
        json: bool,
    },
    /// The live leases of a group's subscriptions (partition, owner, epoch, time left, handover
    /// requested by) and their live workers. Without --subscription, it reads the leases of
    /// every subscription that has checkpoints or is retired: one whose workers have saved no
    /// checkpoint yet shows only with --subscription. Exits with 3 when there is no live lease
    /// or worker to show.
    Leases {
        /// The group.
        group: String,
        /// Only this subscription (any name, checkpoints or not).
        #[arg(long, short)]
        subscription: Option<String>,
        /// One JSON object instead: group, subscriptions (subscription, leases, owners each);
        /// times left in milliseconds, null where the store has no clock (DynamoDB).
        #[arg(long)]
        json: bool,
    },
    /// The entries a group's subscriptions parked (their handler failed on every retry): one
    /// per line, or one JSON object; `parked retry` asks for one to be retried, `parked drop`
    /// removes one. Exits with 3 when there is none to show.
    Parked(ParkedArgs),
    /// Where each partition of a group's subscriptions stands: its checkpoint, the worker that
    /// holds it and the lease's epoch, and how many of its entries are parked; with --source,
    /// the log's head and the lag. Exits with 3 when there is nothing to show.
    Status(StatusArgs),
    /// Samples a group a few times (--samples, --interval) and judges each partition's lag:
    /// caught up, keeping up, falling behind, stalled or stopped. Prints one line per
    /// partition that needs attention (falling behind, stalled, stopped) and exits with 4 when
    /// there is one, 0 when none: for cron and monitoring systems. Read-only.
    Check(CheckArgs),
    /// Serves a live page of a group (partitions, owners, verdicts, lag over time per
    /// subscription), its report as JSON at /api/fleet and Prometheus metrics at /metrics, from
    /// the store and the log alone. One refresh every --interval whoever looks. Read-only.
    Serve(ServeArgs),
    /// Creates a new subscription at chosen positions; refuses a name that has checkpoints or
    /// is retired. A replay is a new subscription: start it, switch the consumers, retire the
    /// old one.
    Start(StartArgs),
    /// Retires a subscription: its checkpoints disappear, and every later save under its name
    /// is ignored, until it is purged. Asks first (or --yes).
    Retire {
        /// The group.
        group: String,
        /// The subscription to retire.
        subscription: String,
        /// Do it without asking (needed where standard input is not a terminal).
        #[arg(long, short)]
        yes: bool,
        /// Retire the name even though it has no checkpoint (to stop a process that has not
        /// saved yet).
        #[arg(long)]
        force: bool,
    },
    /// Removes what a retired subscription leaves, so that its name can be used again. Only
    /// once no process can still run under it. Asks first (or --yes).
    Purge {
        /// The group.
        group: String,
        /// The retired subscription.
        subscription: String,
        /// Do it without asking (needed where standard input is not a terminal).
        #[arg(long, short)]
        yes: bool,
    },
}

/// `checkpoint start`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The group.
    pub group: String,
    /// The new subscription.
    pub subscription: String,
    /// Copy the partitions and positions of this subscription.
    #[arg(long, value_name = "OLD")]
    pub like: Option<String>,
    /// POSITION for every partition (of --like, or of --partitions), or PARTITION=POSITION for
    /// one partition (repeat it; with --like, it replaces or adds that partition).
    #[arg(long = "at", value_name = "POSITION|PARTITION=POSITION")]
    pub at: Vec<String>,
    /// The partitions for --at POSITION when there is no --like: `0..16` (16 partitions, 0 to
    /// 15), `0..=15`, or a list `0,3,7`.
    #[arg(long, value_name = "RANGE|LIST")]
    pub partitions: Option<String>,
}

/// `checkpoint status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The group.
    pub group: String,
    /// Only this subscription (any name, checkpoints or not).
    #[arg(long, short)]
    pub subscription: Option<String>,
    /// One JSON object instead: group, partitions (subscription, partition, position, owner,
    /// epoch, parked each, and head and lag with --source; null where there is no checkpoint,
    /// no live lease, no head or no lag).
    #[arg(long)]
    pub json: bool,
    /// The log the subscriptions read, to show each partition's head (the position of its
    /// last entry) and lag (head + 1 - checkpoint; 0 when caught up; `-` without a checkpoint
    /// or when the log has no entry there): sqlite:PATH, postgres://…, nats://… (a build
    /// with the source-nats feature) or kafka://HOST:PORT/TOPIC (source-kafka). The partition
    /// count is the log's own (stored by the SQLite and PostgreSQL sources,
    /// checkpoint-partitions=N in a NATS stream's description, a Kafka topic's), else one more
    /// than the highest partition among the shown checkpoints. PostgreSQL's and NATS's
    /// positions are sparse: there, lag counts positions, an upper bound of the entries behind.
    #[arg(long, value_name = "URL")]
    pub source: Option<String>,
    /// The event table of a sqlite: or postgres:// source (PostgreSQL: `table` or
    /// `schema.table`), when it is not `events`.
    #[arg(long, value_name = "NAME", requires = "source")]
    pub source_table: Option<String>,
    /// The JetStream stream of a nats:// source (needed there); its partitions are the
    /// subjects `<stream>.<partition>`.
    #[arg(long, value_name = "NAME", requires = "source")]
    pub source_stream: Option<String>,
    /// Refresh in place every --interval (plain lines, one block per refresh, when standard
    /// output is not a terminal), with each partition's handling rate, time to catch up, owner
    /// changes and verdict, what needs attention first. Needs --source. Ctrl-C stops it.
    #[arg(long, requires = "source", conflicts_with = "json")]
    pub watch: bool,
    /// With --watch: how often to sample, and how many samples a verdict is judged from.
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// `checkpoint parked`: the listing, or one of its actions.
///
/// A group named `retry` or `drop` is listed with `checkpoint parked -- retry`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ParkedArgs {
    /// What to do with one parked entry; without it, the group's parked entries are listed.
    #[command(subcommand)]
    pub action: Option<ParkedAction>,
    /// The group.
    #[arg(required = true)]
    pub group: Option<String>,
    /// Only this subscription's entries.
    #[arg(long, short)]
    pub subscription: Option<String>,
    /// One JSON object instead: group, parked (subscription, partition, position, attempts,
    /// parked_at as RFC 3339 UTC and parked_at_ms, retry_requested, the whole error each).
    #[arg(long)]
    pub json: bool,
}

/// `checkpoint parked retry` and `checkpoint parked drop`.
#[derive(Debug, Subcommand)]
pub enum ParkedAction {
    /// Asks for a parked entry to be retried: the subscription that holds its partition reads
    /// it again and runs its handler (on success the record goes). Exits with 3 when nothing
    /// is parked there.
    Retry(ParkedKey),
    /// Removes a parked entry's record, once you have dealt with the entry by hand: it is not
    /// retried any more. Asks first (or --yes). Exits with 3 when nothing is parked there.
    Drop {
        /// The parked entry.
        #[command(flatten)]
        key: ParkedKey,
        /// Do it without asking (needed where standard input is not a terminal).
        #[arg(long, short)]
        yes: bool,
    },
}

/// The key of one parked entry.
#[derive(Debug, Args)]
pub struct ParkedKey {
    /// The group.
    pub group: String,
    /// The subscription that parked the entry.
    pub subscription: String,
    /// The entry's partition.
    pub partition: u32,
    /// The entry's position in its partition.
    pub position: u64,
}

impl Command {
    /// Whether the command removes or hides something, so that it needs a confirmation.
    pub fn is_destructive(&self) -> bool {
        matches!(
            self,
            Command::Retire { .. }
                | Command::Purge { .. }
                | Command::Parked(ParkedArgs {
                    action: Some(ParkedAction::Drop { .. }),
                    ..
                })
        )
    }

    /// Whether `--yes` was given.
    pub fn confirmed(&self) -> bool {
        match self {
            Command::Retire { yes, .. } | Command::Purge { yes, .. } => *yes,
            Command::Parked(ParkedArgs {
                action: Some(ParkedAction::Drop { yes, .. }),
                ..
            }) => *yes,
            _ => false,
        }
    }

    /// The log's URL the command was given, if any (its secrets are kept out of messages).
    pub fn source_url(&self) -> Option<&str> {
        match self {
            Command::Status(status) => status.source.as_deref(),
            Command::Check(CheckArgs { source, .. }) | Command::Serve(ServeArgs { source, .. }) => {
                Some(&source.source)
            }
            _ => None,
        }
    }

    /// The command's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Groups { .. } => "groups",
            Command::List { .. } => "list",
            Command::Leases { .. } => "leases",
            Command::Parked(parked) => match parked.action {
                None => "parked",
                Some(ParkedAction::Retry(_)) => "parked retry",
                Some(ParkedAction::Drop { .. }) => "parked drop",
            },
            Command::Status(_) => "status",
            Command::Check(_) => "check",
            Command::Serve(_) => "serve",
            Command::Start(_) => "start",
            Command::Retire { .. } => "retire",
            Command::Purge { .. } => "purge",
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn store_options_go_before_or_after_the_command() {
        let cli = Cli::try_parse_from(["checkpoint", "list", "g", "--url", "sqlite:a.db"]).unwrap();
        assert_eq!(cli.store.urls, vec!["sqlite:a.db".to_owned()]);
        let cli = Cli::try_parse_from([
            "checkpoint",
            "--url",
            "redis://a",
            "--url",
            "redis://b",
            "groups",
        ])
        .unwrap();
        assert_eq!(cli.store.urls.len(), 2);
    }

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("checkpoint").chain(args.iter().copied()))
            .map(|cli| cli.command)
    }

    #[test]
    fn parked_lists_a_group_or_acts_on_one_entry() {
        let Command::Parked(listing) = parse(&["parked", "g", "-s", "s", "--json"]).unwrap() else {
            panic!("not parked");
        };
        assert!(listing.action.is_none() && listing.json);
        assert_eq!(
            (listing.group.as_deref(), listing.subscription.as_deref()),
            (Some("g"), Some("s"))
        );

        let retry = parse(&["parked", "retry", "g", "s", "3", "41"]).unwrap();
        let Command::Parked(ParkedArgs {
            action: Some(ParkedAction::Retry(key)),
            group: None,
            ..
        }) = &retry
        else {
            panic!("not a retry: {retry:?}");
        };
        assert_eq!(
            (
                key.group.as_str(),
                key.subscription.as_str(),
                key.partition,
                key.position
            ),
            ("g", "s", 3, 41)
        );
        assert!(!retry.is_destructive());
        assert_eq!(retry.name(), "parked retry");

        let drop = parse(&["parked", "drop", "g", "s", "3", "41"]).unwrap();
        assert!(drop.is_destructive() && !drop.confirmed());
        assert_eq!(drop.name(), "parked drop");
        assert!(
            parse(&["parked", "drop", "g", "s", "3", "41", "--yes"])
                .unwrap()
                .confirmed()
        );

        // A group named like an action, after `--`.
        let Command::Parked(listing) = parse(&["parked", "--", "retry"]).unwrap() else {
            panic!("not parked");
        };
        assert_eq!(listing.group.as_deref(), Some("retry"));
        assert!(listing.action.is_none());
    }

    #[test]
    fn parked_needs_a_group_and_numbers() {
        for args in [
            &["parked"][..],
            &["parked", "retry", "g", "s", "3"],
            &["parked", "retry", "g", "s", "-1", "41"],
            &["parked", "drop", "g", "s", "3", "x"],
            &["parked", "g", "retry"],
            &["parked", "retry", "g", "s", "3", "41", "--json"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn status_takes_a_group() {
        let status = parse(&["status", "g", "--subscription", "s", "--json"]).unwrap();
        let Command::Status(status) = status else {
            panic!("not status");
        };
        assert_eq!(
            (
                status.group.as_str(),
                status.subscription.as_deref(),
                status.json
            ),
            ("g", Some("s"), true)
        );
        assert_eq!(status.source, None);
        assert!(parse(&["status"]).is_err());
    }

    #[test]
    fn status_takes_a_source_and_its_settings_only_with_it() {
        let status = parse(&[
            "status",
            "g",
            "--source",
            "sqlite:log.db",
            "--source-table",
            "orders",
        ])
        .unwrap();
        let Command::Status(status) = status else {
            panic!("not status");
        };
        assert_eq!(status.source.as_deref(), Some("sqlite:log.db"));
        assert_eq!(status.source_table.as_deref(), Some("orders"));
        assert!(parse(&["status", "g", "--source-table", "orders"]).is_err());
        assert!(parse(&["status", "g", "--source-stream", "ORDERS"]).is_err());
    }

    #[test]
    fn the_help_never_shows_the_url_from_the_environment() {
        let help = Cli::command()
            .mut_arg("urls", |arg| arg.env("CHECKPOINT_CLI_TEST_NO_SUCH_VAR"))
            .render_long_help()
            .to_string();
        assert!(help.contains("CHECKPOINT_CLI_TEST_NO_SUCH_VAR"), "{help}");
        assert!(
            Cli::command()
                .get_arguments()
                .find(|arg| arg.get_id() == "urls")
                .is_some_and(|arg| arg.is_hide_env_values_set())
        );
    }
}
