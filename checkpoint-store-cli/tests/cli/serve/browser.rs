//! The page of `checkpoint serve` in a real headless Chromium (Debian's `chromium`; the test
//! fails, naming the package, when it is missing): its rows, cells and plots read from the DOM
//! Chromium dumps once the page's script ran, and a screenshot taken.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{PATIENCE, Server, checkpoints, sqlite_log};
use crate::support::{Backend, Fixture, TempDir};

/// Runs Chromium headless on `url` with `args`: its standard output. Fails when Chromium is
/// not installed, saying how to install it.
fn chromium(profile: &Path, url: &str, args: &[&str]) -> String {
    let found = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        found.is_ok_and(|status| status.success()),
        "chromium is not installed: this test runs the page in a real headless browser \
         (apt-get install chromium; scripts/test.sh installs it)"
    );
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", profile.display()),
            "--virtual-time-budget=5000",
        ])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().expect("stdout");
    // Read beside the wait: a page larger than the pipe's buffer would block Chromium.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > PATIENCE * 2 {
            let _ = child.kill();
            panic!("chromium did not finish in {:?}", PATIENCE * 2);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "chromium: {status}");
    reader.join().expect("the reader")
}

/// The value of attribute `name` in the start tag `tag`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// Every element of the DOM that starts with `start` (`<tr class="partition"`): its start tag,
/// and everything to its `end` (`</tr>`).
fn elements<'a>(dom: &'a str, start: &str, end: &str) -> Vec<(&'a str, &'a str)> {
    dom.match_indices(start)
        .filter_map(|(at, _)| {
            let rest = &dom[at..];
            let tag = &rest[..rest.find('>')? + 1];
            let body = &rest[..rest.find(end)? + end.len()];
            Some((tag, body))
        })
        .collect()
}

/// The text of the first `<td class="CLASS…">` in `row`.
fn cell<'a>(row: &'a str, class: &str) -> Option<&'a str> {
    let at = row.find(&format!("<td class=\"{class}"))?;
    let rest = &row[at..];
    let text = &rest[rest.find('>')? + 1..];
    Some(&text[..text.find("</td>")?])
}

/// A row per partition with its verdict, and the cells of the stalled and the stopped one.
fn assert_rows(dom: &str) {
    let rows: BTreeMap<(&str, &str), (&str, &str)> =
        elements(dom, "<tr class=\"partition\"", "</tr>")
            .into_iter()
            .map(|(tag, row)| {
                let key = |name| attribute(tag, name).unwrap_or_default();
                let place = (key("data-subscription"), key("data-partition"));
                (place, (key("data-verdict"), row))
            })
            .collect();
    let verdicts: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|(&(s, p), &(verdict, _))| (s, p, verdict))
        .collect();
    let expected = [
        ("a", "0", "stopped"),
        ("a", "1", "caught_up"),
        ("a", "3", "stalled"),
        ("b", "0", "caught_up"),
    ];
    assert_eq!(verdicts, expected, "{dom}");
    let stalled = rows[&("a", "3")].1;
    assert_eq!(cell(stalled, "owner"), Some("w1"), "{stalled}");
    assert_eq!(cell(stalled, "lag"), Some("1"), "{stalled}");
    let badge = cell(stalled, "verdict").unwrap_or_default();
    assert!(badge.contains(">stalled<"), "{stalled}");
    let stopped = rows[&("a", "0")].1;
    assert_eq!(cell(stopped, "owner"), Some("–"), "{stopped}");
    assert_eq!(cell(stopped, "lag"), Some("3"), "{stopped}");
}

/// A lag plot per subscription with a line per partition; the counts; no error shown.
fn assert_plots_and_header(dom: &str) {
    let plots = elements(dom, "<svg class=\"lag-plot\"", "</svg>");
    let lines: Vec<(&str, Vec<&str>)> = plots
        .iter()
        .map(|(tag, svg)| {
            let partitions = elements(svg, "<polyline", "</polyline>")
                .into_iter()
                .filter_map(|(line, _)| attribute(line, "data-partition"))
                .collect();
            let subscription = attribute(tag, "data-subscription").unwrap_or_default();
            (subscription, partitions)
        })
        .collect();
    let expected = [("a", vec!["0", "1", "3"]), ("b", vec!["0"])];
    assert_eq!(lines, expected, "{dom}");
    let counts = elements(dom, "<span class=\"count", "</span>");
    assert_eq!(counts.len(), 5, "{dom}");
    assert!(
        dom.contains("data-verdict=\"stalled\"><span class=\"dot\"></span><b>1</b>"),
        "{dom}"
    );
    assert!(
        dom.contains("<div id=\"error\" role=\"alert\" hidden=\"\">"),
        "{dom}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_a_headless_browser() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "events").await;
    let group = checkpoints(&fixture).await;
    let server = Server::start(&fixture, &group, &source, "0.2");
    server.fleet_after(3);
    let url = format!("http://{}/", server.address);

    let dom = chromium(&dir.0.join("profile-dom"), &url, &["--dump-dom"]);
    assert_rows(&dom);
    assert_plots_and_header(&dom);

    let png = dir.0.join("serve.png");
    let screenshot = format!("--screenshot={}", png.display());
    let profile = dir.0.join("profile-png");
    chromium(&profile, &url, &[&screenshot, "--window-size=1200,800"]);
    let image = std::fs::read(&png).expect("the screenshot");
    assert!(image.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(image.len() > 10_000, "{} bytes: a blank page?", image.len());
    assert_eq!(server.terminate(), Some(0));
}
