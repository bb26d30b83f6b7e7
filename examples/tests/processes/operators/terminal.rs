//! `checkpoint status --watch` in a real terminal: a tmux session of 80 columns and 40 rows
//! on a server of the test's own (`tmux -L`), so that other sessions are never touched.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A full window of the view's default 10 samples, 1 s apart, and a little more.
const WINDOW: Duration = Duration::from_secs(12);
const SESSION: &str = "view";
/// The view's verdict column, as it writes each verdict.
const LABELS: [&str; 5] = ["stopped", "stalled", "behind", "caught up", "keeping up"];

/// The view running in tmux; the tmux server is killed when dropped, whatever happened.
pub struct View {
    socket: String,
    started: Instant,
    dir: std::path::PathBuf,
}

impl View {
    /// Starts `command` (a `checkpoint … status GROUP --source LOG`) with `--watch --interval
    /// 1` in a detached session. The pane stays after its program exits, to read its status.
    pub fn start(command: &Command, dir: &Path) -> Self {
        let mut words = vec![quote(&command.get_program().to_string_lossy())];
        words.extend(command.get_args().map(|a| quote(&a.to_string_lossy())));
        // `exec`: Ctrl-C then reaches the command alone, not a shell that would die of it.
        let shell = format!("exec {} --watch --interval 1", words.join(" "));
        let view = Self {
            socket: format!("checkpoint-operators-{}", std::process::id()),
            started: Instant::now(),
            dir: dir.to_owned(),
        };
        let size = ["-x", "80", "-y", "40"];
        let new = ["new-session", "-d", "-s", SESSION];
        let remain = [
            ";",
            "set-option",
            "-w",
            "-t",
            SESSION,
            "remain-on-exit",
            "on",
        ];
        let output = view.tmux(&[&new[..], &size, &[&shell], &remain].concat());
        assert!(output.status.success(), "tmux new-session: {output:?}");
        view
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("tmux runs ({error}): apt-get install tmux"))
    }

    /// After a full window: the screen as the view drew it, then Ctrl-C ends the program.
    pub fn check(self) {
        std::thread::sleep(WINDOW.saturating_sub(self.started.elapsed()));
        let capture = self.tmux(&["capture-pane", "-p", "-J", "-t", SESSION]);
        let screen = String::from_utf8_lossy(&capture.stdout).into_owned();
        println!("── checkpoint status --watch in tmux (80x40)\n{screen}");
        let _ = std::fs::write(self.dir.join("view.txt"), &screen);
        if let Some(keep) = std::env::var_os("CHECKPOINT_SCREENSHOT_DIR") {
            let _ = std::fs::write(Path::new(&keep).join("view.txt"), &screen);
        }
        check_screen(&screen);
        let pid = self.show("#{pane_pid}");
        let sent = self.tmux(&["send-keys", "-t", SESSION, "C-c"]);
        assert!(sent.status.success(), "tmux send-keys: {sent:?}");
        let until = Instant::now() + Duration::from_secs(5);
        let mut pane = String::new();
        while Instant::now() < until {
            pane = self.show("#{pane_dead} #{pane_dead_status}");
            // tmux 3.3a sometimes leaves its pane's process a zombie, unreaped, and then
            // knows no status: the kernel still has it.
            let status = match pane.split_once(' ') {
                Some(("1", "")) | None => zombie_status(&pid),
                Some(("1", status)) => status.parse().ok(),
                Some(_) => None,
            };
            if let Some(status) = status {
                assert_eq!(status, 0, "Ctrl-C ends the view with exit 0");
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("Ctrl-C ends the view: pane dead and its status {pane:?} after 5 s");
    }

    /// A format of the pane, as `display-message` expands it.
    fn show(&self, format: &str) -> String {
        let shown = self.tmux(&["display-message", "-p", "-t", SESSION, format]);
        String::from_utf8_lossy(&shown.stdout).trim().to_owned()
    }
}

/// The exit code of process `pid` if it is a zombie: its stat's state and last field (the
/// status as waitpid reports it; Linux 3.5 and later).
fn zombie_status(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = fields.split_whitespace().collect();
    if fields.first() != Some(&"Z") {
        return None;
    }
    let status: i32 = fields.last()?.parse().ok()?;
    // Exited normally: the code in the second byte; killed by a signal: 128 + the signal.
    Some(match status & 0x7f {
        0 => status >> 8,
        signal => 128 + signal,
    })
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// `word` in single quotes for `sh`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The rows of a view (before its first blank line): `subscription/partition` → the verdict
/// as the view writes it.
pub fn rows(view: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for line in view.lines().take_while(|line| !line.trim().is_empty()) {
        let Some(label) = LABELS.iter().find(|l| line.starts_with(&format!("{l} "))) else {
            continue;
        };
        if let Some(name) = line[label.len()..].split_whitespace().next() {
            rows.insert(name.to_owned(), (*label).to_owned());
        }
    }
    rows
}

/// The screen: 80 columns at most (wrapped lines joined by the capture), the header with the
/// counts, the titles, a row per partition with its verdict, and the evidence of the first 5
/// partitions that need attention (the 4 stopped, then the stalled one).
fn check_screen(screen: &str) {
    for line in screen.lines() {
        assert!(
            line.chars().count() <= 80,
            "a line over 80 columns: {line:?}"
        );
    }
    let mut lines = screen.lines();
    let header = lines.next().unwrap_or_default();
    // The clock first (`21:15:41 UTC · `), then the group and the counts, whole in 80 columns.
    assert!(
        header.ends_with(" UTC · operators · 16 partitions: 4 stopped, 1 stalled, 4 behind, 7 ok"),
        "the header: {header:?}"
    );
    let titles = lines.next().unwrap_or_default();
    assert!(
        titles.starts_with("VERDICT    PARTITION    OWNER"),
        "{titles:?}"
    );
    let rows = rows(screen);
    for (subscription, partition) in super::all_partitions() {
        let name = format!("{subscription}/{partition}");
        let label = match super::expected(subscription, partition)[0] {
            "falling_behind" => "behind",
            "caught_up" => "caught up",
            other => other,
        };
        let ok = ["caught up", "keeping up"];
        let shown = rows.get(&name).map(String::as_str);
        assert!(
            shown == Some(label)
                || (label == "caught up" && shown.is_some_and(|s| ok.contains(&s))),
            "{name}: {shown:?}, expected {label}\n{screen}"
        );
    }
    let (_, evidence) = screen
        .split_once("\n\n")
        .expect("a blank line, then the evidence");
    let evidence = evidence.trim_end();
    for partition in 0..4 {
        let line = format!("stopped    killed/{partition}     no live owner; checkpoint ");
        assert!(evidence.contains(&line), "{line:?} in\n{evidence}");
    }
    assert!(
        evidence.contains("stalled    stuck/2      checkpoint 40 unchanged for "),
        "{evidence}"
    );
    assert!(
        evidence.ends_with("… and 4 more"),
        "the 4 falling behind, counted:\n{evidence}"
    );
}
