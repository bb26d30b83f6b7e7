//! The command line.

use clap::{Args, Parser, Subcommand};

/// See every group of a checkpoint store, start a subscription where another stands, retire
/// one for good and purge what it leaves, and see which worker holds which partition.
///
/// Exit codes: 0 done; 1 the store failed or could not be reached (or you declined); 2 a wrong
/// command line, URL or name, or a destructive command without --yes off a terminal; 3 refused
/// by what is stored (nothing there, a name that exists, is retired, or is not retired).
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
    /// The store: postgres://…, redis://… or rediss://…, several redis:// URLs (repeat --url or
    /// separate them with commas) for a Redis Cluster, dynamodb://TABLE (endpoint, region and
    /// credentials from the AWS environment), or sqlite:PATH.
    #[arg(
        long = "url",
        env = "CHECKPOINT_URL",
        hide_env_values = true,
        global = true,
        value_name = "URL"
    )]
    pub urls: Vec<String>,

    /// The table (PostgreSQL: `table` or `schema.table`; SQLite), when it is not `checkpoints`.
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

impl Command {
    /// Whether the command removes or hides something, so that it needs a confirmation.
    pub fn is_destructive(&self) -> bool {
        matches!(self, Command::Retire { .. } | Command::Purge { .. })
    }

    /// Whether `--yes` was given.
    pub fn confirmed(&self) -> bool {
        match self {
            Command::Retire { yes, .. } | Command::Purge { yes, .. } => *yes,
            _ => false,
        }
    }

    /// The command's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Groups { .. } => "groups",
            Command::List { .. } => "list",
            Command::Leases { .. } => "leases",
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
