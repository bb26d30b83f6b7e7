//! `checkpoint serve` on the fleet: its Prometheus metrics over a plain TCP connection, and its
//! page in Debian's headless Chromium (the DOM once the page's script ran, and a screenshot).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{Finished, all_partitions, expected, finish, signal};

/// The running `checkpoint serve`, SIGKILLed if dropped before [`Serve::stop`].
pub struct Serve {
    child: Option<Child>,
    address: String,
}

impl Serve {
    /// Starts `command` (a `checkpoint … serve GROUP --source LOG`) on a free port, sampling
    /// every second (a window of 10, as the live view's), and reads the address it prints.
    pub fn start(command: &mut Command) -> Self {
        let mut child = command
            .args(["--listen", "127.0.0.1:0", "--interval", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("checkpoint serve starts");
        let mut line = String::new();
        let stdout = child.stdout.as_mut().expect("piped");
        let _ = BufReader::new(stdout).read_line(&mut line);
        // `listening on http://127.0.0.1:PORT/ (page), …`
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| {
                panic!(
                    "serve's first line names its address: {line:?} (a checkpoint binary built \
                     before serve? cargo build -p checkpoint-store-cli)"
                )
            })
            .to_owned();
        Self {
            child: Some(child),
            address,
        }
    }

    /// The metrics, the page, its screenshot (in `dir`, and `$CHECKPOINT_SCREENSHOT_DIR`
    /// as serve.png when set); then SIGTERM, and serve exits 0.
    pub fn check(mut self, dir: &Path) {
        let metrics = get(&self.address, "/metrics");
        check_metrics(&metrics);
        let url = format!("http://{}/", self.address);
        let dom = chromium(&dir.join("profile-dom"), &url, &["--dump-dom"]);
        check_page(&dom);
        let png = dir.join("serve.png");
        let screenshot = format!("--screenshot={}", png.display());
        let size = "--window-size=1200,1640";
        chromium(&dir.join("profile-png"), &url, &[&screenshot, size]);
        let image = std::fs::read(&png).expect("the screenshot");
        assert!(image.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        if let Some(keep) = std::env::var_os("CHECKPOINT_SCREENSHOT_DIR") {
            let keep = PathBuf::from(keep);
            std::fs::copy(&png, keep.join("serve.png")).expect("the screenshot copied");
            println!("screenshot: {}", keep.join("serve.png").display());
        }
        let child = self.child.take().expect("running");
        signal(child.id(), "TERM");
        let Finished { status, stderr, .. } = finish(child, "serve");
        assert!(
            status.success(),
            "serve exits 0 on SIGTERM: {status} {stderr}"
        );
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP/1.1 GET's body, over a connection of its own.
fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("serve accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("the request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// `name{a="x",b="y"} value` → its labels and value.
fn sample(line: &str) -> Option<(BTreeMap<&str, &str>, &str)> {
    let (labels, value) = line.split_once("} ")?;
    let (_, labels) = labels.split_once('{')?;
    let labels = labels
        .split("\",")
        .filter_map(|pair| pair.split_once("=\""))
        .map(|(k, v)| (k, v.trim_end_matches('"')))
        .collect();
    Some((labels, value))
}

/// The verdict one-hot: for every partition of the fleet, one verdict at 1 (an expected one)
/// and the four others at 0; and each partition's lag.
fn check_metrics(metrics: &str) {
    let mut ones: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut zeros: BTreeMap<String, usize> = BTreeMap::new();
    let mut lags = 0;
    for line in metrics.lines() {
        let series = if line.starts_with("checkpoint_monitor_partition_verdict{") {
            "verdict"
        } else if line.starts_with("checkpoint_monitor_partition_lag{") {
            "lag"
        } else {
            continue;
        };
        let (labels, value) = sample(line).unwrap_or_else(|| panic!("a sample: {line}"));
        assert_eq!(labels.get("group"), Some(&super::GROUP), "{line}");
        let name = format!("{}/{}", labels["subscription"], labels["partition"]);
        match (series, value) {
            ("lag", _) => lags += 1,
            (_, "1") => ones
                .entry(name)
                .or_default()
                .push(labels["verdict"].to_owned()),
            (_, "0") => *zeros.entry(name).or_default() += 1,
            _ => panic!("a verdict sample is 1 or 0: {line}"),
        }
    }
    assert_eq!(
        lags,
        all_partitions().len(),
        "a lag per partition:\n{metrics}"
    );
    for (subscription, partition) in all_partitions() {
        let name = format!("{subscription}/{partition}");
        let one = ones.get(&name).cloned().unwrap_or_default();
        assert!(
            one.len() == 1 && expected(subscription, partition).contains(&one[0].as_str()),
            "{name}: verdicts at 1 {one:?}, expected one of {:?}\n{metrics}",
            expected(subscription, partition)
        );
        assert_eq!(zeros.get(&name), Some(&4), "{name}: the four others at 0");
    }
}

/// Runs Chromium headless on `url` with `args` (a fresh profile each): its standard output.
fn chromium(profile: &Path, url: &str, args: &[&str]) -> String {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.is_file(),
        "chromium is missing: this test runs serve's page in a headless browser (apt-get install chromium)"
    );
    let profile = format!("--user-data-dir={}", profile.display());
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
        ])
        .args(["--no-first-run", "--disable-background-networking"])
        .args([
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .args([profile.as_str(), "--virtual-time-budget=5000"])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let finished = finish(child, "chromium");
    assert!(finished.status.success(), "chromium: {}", finished.status);
    finished.stdout
}

/// The value of attribute `name` in the start tag `tag`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// The whole row of `subscription`/`partition`, from its start tag to its end tag.
fn row<'a>(dom: &'a str, subscription: &str, partition: u32) -> &'a str {
    let start = format!(
        "<tr class=\"partition\" data-subscription=\"{subscription}\" data-partition=\"{partition}\""
    );
    let at = dom
        .find(&start)
        .unwrap_or_else(|| panic!("no row {start}> in:\n{dom}"));
    let rest = &dom[at..];
    &rest[..rest.find("</tr>").unwrap_or(rest.len())]
}

/// The start tags of the DOM that begin with `start`.
fn tags<'a>(dom: &'a str, start: &str) -> Vec<&'a str> {
    dom.match_indices(start)
        .filter_map(|(at, _)| {
            let rest = &dom[at..];
            Some(&rest[..rest.find('>')? + 1])
        })
        .collect()
}

/// A row per partition with its expected verdict, and a lag plot per subscription.
fn check_page(dom: &str) {
    let mut rows = BTreeMap::new();
    for tag in tags(dom, "<tr class=\"partition\"") {
        let key = |name| attribute(tag, name).unwrap_or_default();
        let (subscription, partition) = (key("data-subscription"), key("data-partition"));
        let verdict = key("data-verdict");
        let partition: u32 = partition.parse().unwrap_or(u32::MAX);
        assert!(
            expected(subscription, partition).contains(&verdict),
            "{subscription}/{partition} is {verdict} on the page: {tag}"
        );
        rows.insert((subscription.to_owned(), partition), verdict.to_owned());
    }
    assert_eq!(
        rows.len(),
        all_partitions().len(),
        "a row per partition:\n{dom}"
    );
    // What the cells say of the stalled partition: its live owner, no catch-up in sight.
    let stalled = row(dom, "stuck", 2);
    assert!(
        stalled.contains("w-") && stalled.contains(">never</td>"),
        "stuck/2's cells: {stalled}"
    );
    assert!(
        stalled.contains("checkpoint 40 unchanged for "),
        "stuck/2's evidence: {stalled}"
    );
    let plots: Vec<&str> = tags(dom, "<svg class=\"lag-plot\"")
        .into_iter()
        .filter_map(|tag| attribute(tag, "data-subscription"))
        .collect();
    let mut plotted = plots.clone();
    plotted.sort_unstable();
    let mut wanted = super::SUBSCRIPTIONS.to_vec();
    wanted.sort_unstable();
    assert_eq!(plotted, wanted, "a lag plot per subscription:\n{dom}");
}
