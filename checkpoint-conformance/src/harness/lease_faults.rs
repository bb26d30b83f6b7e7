//! Leases under network faults: a holder cut off from its server stops treating its leases as
//! held before the server can give them to another owner.

use std::time::{Duration, Instant};

use checkpoint_core::LeaseStore;
use checkpoint_core::lease::holder_deadline;

use crate::proxy::Proxy;
use crate::{Failure, error_chain, fresh_group};

/// What [`black_holed_holder_stops_first`] measured.
#[derive(Debug, Clone, Copy)]
pub struct BlackHoledHolder {
    /// How long after the holder's last successful renew was sent its local deadline fell.
    pub holder_deadline: Duration,
    /// How long after that send the taker's grant arrived.
    pub taken_after: Duration,
    /// Renews the holder tried inside the black hole; every one failed.
    pub failed_renews: u32,
}

/// Holder `holder` (reaching the server only through `proxy`) acquires three partitions for
/// `duration` and renews once; then `proxy` turns into a black hole. The holder keeps trying to
/// renew (each must fail: timeout or backend error) while `taker` (a direct client) tries to
/// acquire the same partitions every 20 ms. Checks that the taker is granted them, and only
/// after the holder's local deadline of its last successful renew: the holder had stopped
/// treating them as held before anyone else could hold them. The proxy forwards again at the
/// end.
///
/// `holder`'s timeout should be well under `duration`, so that its renews fail within it.
///
/// # Errors
///
/// A [`Failure`] saying what broke: a renew that succeeded inside the black hole, a grant
/// before the deadline, or none within `duration` plus 15 s.
pub async fn black_holed_holder_stops_first<S: LeaseStore + ?Sized>(
    holder: &S,
    taker: &S,
    proxy: &Proxy,
    duration: Duration,
) -> Result<BlackHoledHolder, Failure> {
    let group = fresh_group("lease-black-hole");
    let partitions = [0, 1, 2];
    holder
        .acquire(&group, "orders", "holder", &partitions, duration)
        .await?;
    let sent = Instant::now();
    holder.renew(&group, "orders", "holder", duration).await?;
    let deadline = holder_deadline(sent, duration);
    proxy.black_hole();
    let renewing = async {
        let mut failed = 0;
        while Instant::now() < deadline + duration {
            match holder.renew(&group, "orders", "holder", duration).await {
                Ok(held) => {
                    return Err(Failure::new(format!(
                        "the holder renewed {held:?} through a black hole"
                    )));
                }
                Err(_) => failed += 1,
            }
        }
        Ok(failed)
    };
    let taking = take_all(
        taker,
        &group,
        &partitions,
        duration + Duration::from_secs(15),
    );
    let (failed_renews, taken) = tokio::join!(renewing, taking);
    proxy.forward();
    let taken = taken?;
    let failed_renews = failed_renews?;
    if taken < deadline {
        return Err(Failure::new(format!(
            "the taker was granted the black-holed holder's leases {:?} before the holder's local deadline",
            deadline - taken
        )));
    }
    Ok(BlackHoledHolder {
        holder_deadline: deadline - sent,
        taken_after: taken - sent,
        failed_renews,
    })
}

/// `taker` acquires `partitions` every 20 ms until it holds them all; when its last grant
/// arrived.
async fn take_all<S: LeaseStore + ?Sized>(
    taker: &S,
    group: &str,
    partitions: &[u32],
    patience: Duration,
) -> Result<Instant, Failure> {
    let start = Instant::now();
    loop {
        let acquired = taker
            .acquire(
                group,
                "orders",
                "taker",
                partitions,
                Duration::from_secs(60),
            )
            .await
            .map_err(|error| {
                Failure::new(format!("the taker's acquire: {}", error_chain(&error)))
            })?;
        if acquired.refused.is_empty() {
            return Ok(Instant::now());
        }
        if start.elapsed() > patience {
            return Err(Failure::new(format!(
                "the taker still had {:?} refused {patience:?} after the holder was cut off",
                acquired.refused
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
