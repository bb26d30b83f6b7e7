//! Graceful handover with the source attached: a third subscription joins the failover row's
//! survivor (taking half the partitions, gracefully), then shuts down (`shutdown()`: its
//! readers stop dispatching, handlers finish, final checkpoints, releases). Measured: from the
//! `shutdown()` call until the other has handled, on every partition the leaver held, an entry
//! appended after the call; when `shutdown()` returned; the entries handled twice.

use std::time::{Instant, SystemTime};

use super::fleet::{Fleet, SETTLE, setting};
use super::pairs::Pair;
use super::{Figure, Plan};
use crate::subject::BenchError;
use crate::workers::report::ms;

const ROW: &str = "Graceful handover with the source attached (shutdown of 1 of 2 subscriptions)";

/// Joins a subscription to `stayer`, waits for the balance, shuts the newcomer down.
pub(super) async fn measure(
    fleet: &mut Fleet,
    stayer: usize,
    pair: &Pair,
    plan: Plan,
    figures: &mut Vec<Figure>,
) -> Result<(), BenchError> {
    let leaver = fleet.add()?;
    fleet.wait_balanced(&[stayer, leaver]).await?;
    tokio::time::sleep(SETTLE).await;

    let leaving = fleet.held(leaver);
    let twice_before = fleet.ledger.twice();
    let (since, started) = (SystemTime::now(), Instant::now());
    let shutdown = async {
        fleet.members[leaver].shutdown().await?;
        Ok::<_, BenchError>(started.elapsed())
    };
    let taken = async {
        fleet.wait_handled(stayer, &leaving, since).await?;
        Ok::<_, BenchError>(started.elapsed())
    };
    let (returned, took) = tokio::join!(shutdown, taken);
    let (returned, took) = (returned?, took?);
    tokio::time::sleep(SETTLE).await;
    let twice = fleet.ledger.twice() - twice_before;

    figures.push(Figure {
        row: ROW,
        pair: pair.name,
        setting: setting(plan),
        measured: format!(
            "{} until the other handled a new entry on each of the {} partitions handed over \
             (`shutdown()` returned after {}); {twice} entries handled twice",
            ms(took),
            leaving.len(),
            ms(returned)
        ),
        target: "0 entries handled twice".into(),
        met: Some(twice == 0),
    });
    Ok(())
}
