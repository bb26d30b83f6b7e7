//! The subscription metrics example (`subscription_metrics`, feature `metrics`) scraped over
//! plain HTTP while it runs, its figures checked, and the Grafana dashboard
//! (`docs/dashboards/checkpoint-subscriptions.json`) checked against the scrape: every metric
//! name its queries use is on it, and every figure of the subscription and the worker has a
//! panel. A dashboard that charts a name nobody exports shows "No data" and nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use checkpoint::subscription::metrics as subscription_metrics;
use checkpoint::worker::metrics as worker_metrics;
use serde_json::Value;

/// How long the example runs: the figures it needs show within 2-3 s on a quiet machine.
const RUN_SECONDS: u64 = 10;
/// The example's two subscriptions (see its doc): one parks poison entries, one stops on them.
const PARKING: &str = "invoices";
const STOPPING: &str = "audit";
/// Its log's partitions, and the one with the poison entries.
const PARTITIONS: u32 = 4;
const POISON_PARTITION: &str = "3";
/// The dashboard, from this package's folder.
const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/dashboards/checkpoint-subscriptions.json"
);

/// One sample of a scrape: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Every sample of a Prometheus text scrape (comments and blank lines left out).
fn parse_scrape(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        // Our label values have no commas or quotes to escape: a plain split is enough.
        let labels = labels
            .split(',')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').expect("a label is key=\"value\"");
                (key.to_owned(), value.trim_matches('"').to_owned())
            })
            .collect();
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value: value.parse().expect("a sample's value is a number"),
        });
    }
    samples
}

/// The samples named `name` of `subscription`.
fn series<'a>(
    samples: &'a [Sample],
    name: &'a str,
    subscription: &'a str,
) -> impl Iterator<Item = &'a Sample> + 'a {
    samples.iter().filter(move |sample| {
        sample.name == name
            && sample.labels.get("subscription").map(String::as_str) == Some(subscription)
    })
}

/// The sum of the samples named `name` of `subscription` (`None`: no such sample).
fn total(samples: &[Sample], name: &str, subscription: &str) -> Option<f64> {
    series(samples, name, subscription)
        .map(|sample| sample.value)
        .reduce(|a, b| a + b)
}

/// `GET /metrics` over a plain TCP connection. HTTP/1.0: the body is everything up to the
/// server's close, never chunked.
fn get_metrics(address: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {response:?}")))?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("not a 200: {head}")));
    }
    Ok(body.to_owned())
}

/// What the run must have shown before the checks: both subscriptions handling, a parked
/// entry, the stopped partition, the lag of every partition, the leases. Empty when all is
/// there.
fn missing(samples: &[Sample]) -> Vec<String> {
    let mut missing = Vec::new();
    for subscription in [PARKING, STOPPING] {
        if total(samples, subscription_metrics::HANDLED_TOTAL, subscription).unwrap_or(0.0) <= 0.0 {
            missing.push(format!("{subscription}: nothing handled"));
        }
        for gauge in [
            subscription_metrics::LAG_POSITIONS,
            subscription_metrics::LAG_SECONDS,
        ] {
            let partitions: BTreeSet<&str> = series(samples, gauge, subscription)
                .filter_map(|sample| sample.labels.get("partition").map(String::as_str))
                .collect();
            if partitions.len() != PARTITIONS as usize {
                missing.push(format!("{subscription}: {gauge} of {partitions:?}"));
            }
        }
        if total(samples, worker_metrics::PARTITIONS_HELD, subscription) != Some(4.0) {
            missing.push(format!("{subscription}: not every partition held"));
        }
    }
    if total(samples, subscription_metrics::PARKED_TOTAL, PARKING).unwrap_or(0.0) < 1.0 {
        missing.push(format!("{PARKING}: nothing parked"));
    }
    let stopped = series(samples, subscription_metrics::STOPPED_ON_POISON, STOPPING)
        .any(|s| s.labels.get("partition").map(String::as_str) == Some(POISON_PARTITION));
    if !stopped || total(samples, subscription_metrics::STOPPED_ON_POISON, STOPPING) != Some(1.0) {
        missing.push(format!(
            "{STOPPING}: partition {POISON_PARTITION} not stopped"
        ));
    }
    missing
}

/// A free port on the loopback: bound, read and released (the example binds it again at
/// once; another process taking it in between would fail the run, not pass it).
fn free_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
}

/// Runs the example, scrapes it until [`missing`] finds nothing (or it exits), waits for its
/// graceful end and returns the last scrape.
fn run_and_scrape() -> String {
    let address = free_address();
    let child = Command::new(env!("CARGO_BIN_EXE_subscription_metrics"))
        .args(["--listen", &address.to_string()])
        .args(["--seconds", &RUN_SECONDS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the subscription_metrics example runs");
    let deadline = Instant::now() + Duration::from_secs(RUN_SECONDS);
    let mut last = String::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        // Refused until the exporter listens: the example is still starting.
        let Ok(text) = get_metrics(address) else {
            continue;
        };
        last = text;
        if missing(&parse_scrape(&last)).is_empty() {
            break;
        }
    }
    let output = child.wait_with_output().expect("the example's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "the example failed ({}): {stderr}",
        output.status
    );
    last
}

/// The figures are plausible: each subscription's and each worker's, by the example's story.
fn check_figures(samples: &[Sample]) {
    let missing = missing(samples);
    assert!(missing.is_empty(), "not on the scrape: {missing:?}");
    let figure = |name: &str, subscription: &str| total(samples, name, subscription);
    // Every figure the crates name is on the scrape, counters under their own names
    // (`_total` already: the exporter adds nothing).
    let names: BTreeSet<&str> = samples.iter().map(|s| s.name.as_str()).collect();
    for name in [
        subscription_metrics::LAG_POSITIONS,
        subscription_metrics::LAG_SECONDS,
        subscription_metrics::IN_FLIGHT,
        subscription_metrics::STOPPED_ON_POISON,
        subscription_metrics::HANDLED_TOTAL,
        subscription_metrics::RETRIES_TOTAL,
        subscription_metrics::PARKED_TOTAL,
        subscription_metrics::SOURCE_ERRORS_TOTAL,
        worker_metrics::PARTITIONS_HELD,
        worker_metrics::LIVE_WORKERS,
        worker_metrics::UNOWNED_PARTITIONS,
        worker_metrics::LONGEST_UNOWNED_SECONDS,
        worker_metrics::ACQUIRED_TOTAL,
        worker_metrics::HANDOVERS_IN_TOTAL,
        worker_metrics::HANDOVERS_OUT_TOTAL,
        worker_metrics::LOSSES_TOTAL,
        worker_metrics::RENEW_FAILURES_TOTAL,
        worker_metrics::STORE_REQUESTS_TOTAL,
    ] {
        assert!(
            names.contains(name),
            "{name} is not on the scrape: {names:?}"
        );
    }
    // Three runs per poison entry: two retries before it is parked.
    let parked = figure(subscription_metrics::PARKED_TOTAL, PARKING).unwrap_or(0.0);
    let retries = figure(subscription_metrics::RETRIES_TOTAL, PARKING).unwrap_or(0.0);
    assert!(
        retries >= 2.0 * parked,
        "{retries} retries, {parked} parked"
    );
    assert_eq!(
        figure(subscription_metrics::PARKED_TOTAL, STOPPING),
        Some(0.0)
    );
    assert_eq!(
        figure(subscription_metrics::STOPPED_ON_POISON, PARKING),
        Some(0.0)
    );
    for subscription in [PARKING, STOPPING] {
        for gauge in [
            subscription_metrics::LAG_POSITIONS,
            subscription_metrics::LAG_SECONDS,
        ] {
            for sample in series(samples, gauge, subscription) {
                assert!(sample.value >= 0.0, "{sample:?}");
            }
        }
        // One process, alone: every lease acquired once and kept.
        assert_eq!(
            figure(worker_metrics::LIVE_WORKERS, subscription),
            Some(1.0)
        );
        assert_eq!(
            figure(worker_metrics::UNOWNED_PARTITIONS, subscription),
            Some(0.0)
        );
        assert_eq!(
            figure(worker_metrics::LOSSES_TOTAL, subscription),
            Some(0.0)
        );
        let acquired = figure(worker_metrics::ACQUIRED_TOTAL, subscription);
        assert_eq!(acquired, Some(f64::from(PARTITIONS)), "{subscription}");
    }
}

/// The metric names in a PromQL expression: ours all start with `checkpoint_`.
fn metric_names(expression: &str) -> BTreeSet<String> {
    expression
        .match_indices("checkpoint_")
        .map(|(at, _)| {
            expression[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// The data source every panel and variable uses: the one Grafana asks for on import.
fn check_datasource(json: &Value, what: &str) {
    assert_eq!(
        json["datasource"]["uid"], "${DS_PROMETHEUS}",
        "{what}: the imported data source"
    );
}

/// The dashboard's `__inputs` and template variables; returns the names their queries use.
fn check_inputs_and_variables(dashboard: &Value) -> BTreeSet<String> {
    let inputs = dashboard["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs.iter().any(|input| input["name"] == "DS_PROMETHEUS"
            && input["type"] == "datasource"
            && input["pluginId"] == "prometheus"),
        "a Prometheus data source asked for on import: {inputs:?}"
    );
    let schema = dashboard["schemaVersion"].as_u64().expect("schemaVersion");
    assert!(schema >= 36, "a schema of Grafana 9 or later: {schema}");
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("templating");
    let mut names = BTreeSet::new();
    for wanted in ["group", "subscription"] {
        let variable = variables
            .iter()
            .find(|v| v["name"] == wanted)
            .unwrap_or_else(|| panic!("a template variable {wanted}"));
        check_datasource(variable, wanted);
        let query = variable["query"]["query"]
            .as_str()
            .expect("a variable's query");
        assert!(
            query.starts_with("label_values(") && query.contains(&format!(", {wanted})")),
            "{wanted}: {query}"
        );
        names.extend(metric_names(query));
    }
    names
}

/// The dashboard is valid JSON with its inputs and variables, every panel's queries use
/// names on the scrape, and every subscription and worker figure has a panel.
fn check_dashboard(samples: &[Sample]) {
    let text = std::fs::read_to_string(DASHBOARD).expect("the dashboard's file");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is valid JSON");
    let mut used = check_inputs_and_variables(&dashboard);
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        let title = panel["title"].as_str().expect("a panel's title");
        check_datasource(panel, title);
        let targets = panel["targets"].as_array().expect("a panel's targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for target in targets {
            let expression = target["expr"].as_str().expect("a target's expr");
            let names = metric_names(expression);
            assert!(!names.is_empty(), "{title}: no metric in {expression}");
            used.extend(names);
        }
    }
    let scraped: BTreeSet<String> = samples.iter().map(|s| s.name.clone()).collect();
    let unknown: Vec<&String> = used.difference(&scraped).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard uses names not on the scrape: {unknown:?}"
    );
    let uncharted: Vec<&String> = scraped
        .iter()
        .filter(|name| {
            name.starts_with("checkpoint_subscription_") || name.starts_with("checkpoint_worker_")
        })
        .filter(|name| !used.contains(*name))
        .collect();
    assert!(
        uncharted.is_empty(),
        "figures without a panel: {uncharted:?}"
    );
}

#[test]
fn subscription_metrics_scraped_and_charted() {
    let scrape = run_and_scrape();
    let samples = parse_scrape(&scrape);
    check_figures(&samples);
    check_dashboard(&samples);
}
