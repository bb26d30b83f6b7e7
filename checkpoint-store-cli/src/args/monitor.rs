//! The arguments of the commands that watch a group over time: `check` and `serve` (and
//! `status --watch`, in [`super::StatusArgs`]).

use clap::Args;

/// The log the subscriptions read, needed to judge lag.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// The log the subscriptions read (as `status --source`): sqlite:PATH, postgres://…,
    /// nats://… (a build with the source-nats feature) or kafka://HOST:PORT/TOPIC
    /// (source-kafka).
    #[arg(long, value_name = "URL")]
    pub source: String,
    /// The event table of a sqlite: or postgres:// source, when it is not `events`.
    #[arg(long, value_name = "NAME")]
    pub source_table: Option<String>,
    /// The JetStream stream of a nats:// source (needed there).
    #[arg(long, value_name = "NAME")]
    pub source_stream: Option<String>,
}

/// `checkpoint check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The group.
    pub group: String,
    /// Only this subscription.
    #[arg(long, short)]
    pub subscription: Option<String>,
    /// The log.
    #[command(flatten)]
    pub source: SourceArgs,
    /// How many samples to judge from (at least 2 to see whether a checkpoint moves).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub samples: usize,
    /// Seconds between samples.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub interval: f64,
    /// One JSON object instead: the report of every partition (as `serve`'s /api/fleet).
    #[arg(long)]
    pub json: bool,
}

/// `checkpoint serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The group.
    pub group: String,
    /// Only this subscription.
    #[arg(long, short)]
    pub subscription: Option<String>,
    /// The log.
    #[command(flatten)]
    pub source: SourceArgs,
    /// The address to listen on: the page at /, the report at /api/fleet, Prometheus metrics
    /// at /metrics. Port 0 takes a free port (the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9460")]
    pub listen: String,
    /// How often to sample.
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// How often to sample and how many samples a verdict is judged from.
#[derive(Debug, Clone, Copy, Args)]
pub struct SamplingArgs {
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub interval: f64,
    /// How many samples each partition's verdict is judged from.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub window: usize,
}
