//! Times as the command prints them: RFC 3339 in UTC, to the millisecond
//! (`2026-12-03T19:25:26.042Z`). The workspace has no date library, and this is all it needs.

use std::time::SystemTime;

use checkpoint_core::parked::millis_since_epoch;

const MILLIS_PER_DAY: i64 = 86_400_000;

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (a time before the Unix epoch as the epoch, as the
/// stores keep it).
pub fn rfc3339_millis(time: SystemTime) -> String {
    let millis = millis_since_epoch(time);
    let (days, of_day) = (
        millis.div_euclid(MILLIS_PER_DAY),
        millis.rem_euclid(MILLIS_PER_DAY),
    );
    let (year, month, day) = civil_from_days(days);
    let seconds = of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        of_day % 1000
    )
}

/// The proleptic Gregorian date `days` days after 1970-01-01: Howard Hinnant's
/// `civil_from_days` (eras of 400 years, years starting in March so that the leap day is the
/// last of one).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(millis: u64) -> String {
        rfc3339_millis(UNIX_EPOCH + Duration::from_millis(millis))
    }

    #[test]
    fn known_instants() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(951_868_799_999), "2000-02-29T23:59:59.999Z");
        assert_eq!(at(1_796_325_926_042), "2026-12-03T19:25:26.042Z");
        assert_eq!(at(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn before_the_epoch_is_the_epoch() {
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(rfc3339_millis(before), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_one_before() {
        let mut previous = civil_from_days(-1);
        for days in 0..146_097 {
            let (year, month, day) = civil_from_days(days);
            let next_day = (year, month, day) == (previous.0, previous.1, previous.2 + 1);
            let next_month = day == 1 && (year, month) == (previous.0, previous.1 + 1);
            let next_year = (month, day) == (1, 1) && year == previous.0 + 1;
            assert!(
                next_day || next_month || next_year,
                "{days}: {previous:?} then {year}-{month}-{day}"
            );
            previous = (year, month, day);
        }
    }
}
