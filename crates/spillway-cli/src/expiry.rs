//! Expiry on the command line: the DURATION that `put --ttl` and `expire` take, and how
//! `get --with-expiry` prints when a key expires.
//!
//! A DURATION is a number and a unit — `1500ms`, `30s`, `5m`, `2h`, `1d` — or a plain number
//! of seconds (`90`, `1.5`); decimals go with any unit (`1.5h`). It is at least a millisecond
//! (the store's resolution) and counts from when the command writes, by the wall clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spillway::Expiry;

/// A DURATION (see the module docs), for clap: anything else is a usage error saying why.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds_per = match unit {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => {
            return Err(format!(
                "`{text}` is not a duration: a number and a unit, ms, s, m, h or d (30s, \
                 1500ms, 5m), or a number of seconds"
            ))
        }
    };
    let n: f64 = number
        .parse()
        .ok()
        .filter(|_| !number.starts_with('.') && !number.ends_with('.'))
        .ok_or_else(|| format!("`{text}` is not a duration: `{number}` is not a number"))?;
    let d = Duration::try_from_secs_f64(n * seconds_per)
        .map_err(|_| format!("`{text}` is too long a duration"))?;
    if d < Duration::from_millis(1) {
        return Err(format!(
            "`{text}` is too short: a duration is at least 1ms (`spillway del` ends a key now)"
        ));
    }
    Ok(d)
}

/// When a value written now with `ttl` expires (`None`: past any time a store keeps).
pub fn after(ttl: Duration) -> Option<SystemTime> {
    SystemTime::now().checked_add(ttl)
}

/// `get --with-expiry`'s line: `no expiry`, or `expires 2026-11-26T01:30:00.123Z (in 29.877s)`
/// — the time in UTC and what is left of it by `now`.
pub fn describe(expiry: Expiry, now: SystemTime) -> String {
    match expiry {
        Expiry::Never => "no expiry".to_owned(),
        Expiry::At(at) => {
            let left = at.duration_since(now).unwrap_or_default();
            format!(
                "expires {} (in {}.{:03}s)",
                rfc3339(at),
                left.as_secs(),
                left.subsec_millis()
            )
        }
    }
}

/// `t` in UTC to the millisecond, RFC 3339: `2026-11-26T01:30:00.123Z`.
fn rfc3339(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64);
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let s = ms_of_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// The (year, month, day) of `days` since 1970-01-01 in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], from March
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_unit_or_are_seconds() {
        let ms = |n| Ok(Duration::from_millis(n));
        assert_eq!(parse_duration("1500ms"), ms(1500));
        assert_eq!(parse_duration("30s"), ms(30_000));
        assert_eq!(parse_duration("30"), ms(30_000));
        assert_eq!(parse_duration("0.25"), ms(250));
        assert_eq!(parse_duration("5m"), ms(300_000));
        assert_eq!(parse_duration("1.5h"), ms(5_400_000));
        assert_eq!(parse_duration("7d"), ms(604_800_000));
        assert_eq!(parse_duration("1ms"), ms(1));
        for bad in [
            "", "s", "0", "0s", "0.5ms", "-1s", "5x", "5 s", "1h30m", ".5", "5.", "1e3",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("0").unwrap_err().contains("at least 1ms"));
        assert!(parse_duration("99999999999999999999d")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn times_print_in_utc_to_the_millisecond() {
        let t = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(rfc3339(t(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(t(951_782_400_000)), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(t(1_795_656_409_955)), "2026-11-26T01:26:49.955Z");
        assert_eq!(rfc3339(t(253_402_300_799_999)), "9999-12-31T23:59:59.999Z");
        let now = t(1_000_000);
        assert_eq!(describe(Expiry::Never, now), "no expiry");
        assert_eq!(
            describe(Expiry::At(t(1_029_877)), now),
            "expires 1970-01-01T00:17:09.877Z (in 29.877s)"
        );
        // A time the read found live but now past: nothing left, not an error.
        assert!(describe(Expiry::At(t(999_000)), now).ends_with("(in 0.000s)"));
    }
}
