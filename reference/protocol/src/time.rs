//! Timestamps as the wire carries them: ISO 8601 / RFC 3339 date-times with a zone
//! (v1.1 Appendix D "Timestamps: ISO 8601 with timezone").
//!
//! Parsing is strict (a full date, `T`, a full time, an optional fraction, and `Z` or a
//! numeric offset) because signed documents compare timestamps for expiry and skew, and a
//! lenient parser is where two implementations start to disagree. Values are held as
//! milliseconds since the Unix epoch, the precision every rule in the spec needs.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A point in time, in whole milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Why a timestamp string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampError {
    /// What was expected at the failing position.
    pub reason: &'static str,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an ISO 8601 date-time with zone: {}", self.reason)
    }
}

impl std::error::Error for TimestampError {}

const MS_PER_DAY: i64 = 86_400_000;

impl Timestamp {
    /// The Unix epoch.
    pub const UNIX_EPOCH: Timestamp = Timestamp(0);

    /// Builds a timestamp from milliseconds since the Unix epoch.
    pub const fn from_unix_ms(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn unix_ms(self) -> i64 {
        self.0
    }

    /// This timestamp moved by `ms` milliseconds (saturating).
    pub const fn plus_ms(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; fractions beyond milliseconds
    /// are truncated, leap seconds (`:60`) are rejected.
    pub fn parse(s: &str) -> Result<Self, TimestampError> {
        let b = s.as_bytes();
        let err = |reason| Err(TimestampError { reason });
        if b.len() < 20 {
            return err("too short; expected YYYY-MM-DDTHH:MM:SS followed by Z or an offset");
        }
        let year = digits(b, 0, 4).ok_or(TimestampError {
            reason: "year must be 4 digits",
        })?;
        if b[4] != b'-' || b[7] != b'-' {
            return err("date parts must be separated by '-'");
        }
        let month = digits(b, 5, 2).ok_or(TimestampError {
            reason: "month must be 2 digits",
        })?;
        let day = digits(b, 8, 2).ok_or(TimestampError {
            reason: "day must be 2 digits",
        })?;
        if b[10] != b'T' {
            return err("date and time must be separated by an uppercase 'T'");
        }
        let hour = digits(b, 11, 2).ok_or(TimestampError {
            reason: "hour must be 2 digits",
        })?;
        if b[13] != b':' || b[16] != b':' {
            return err("time parts must be separated by ':'");
        }
        let minute = digits(b, 14, 2).ok_or(TimestampError {
            reason: "minute must be 2 digits",
        })?;
        let second = digits(b, 17, 2).ok_or(TimestampError {
            reason: "second must be 2 digits",
        })?;
        if !(1..=12).contains(&month) {
            return err("month out of range 01-12");
        }
        if day < 1 || day > days_in_month(year, month) {
            return err("day out of range for the month");
        }
        if hour > 23 || minute > 59 {
            return err("hour or minute out of range");
        }
        if second > 59 {
            return err("second out of range 00-59 (leap seconds are not accepted)");
        }
        let mut i = 19;
        let mut millis = 0i64;
        if b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start < 3 {
                    millis = millis * 10 + i64::from(b[i] - b'0');
                }
                i += 1;
            }
            let n = i - start;
            if n == 0 {
                return err("a '.' must be followed by at least one fraction digit");
            }
            if n > 9 {
                return err("fraction has more than 9 digits");
            }
            for _ in n..3 {
                millis *= 10;
            }
        }
        let offset_minutes: i64 = match &b[i..] {
            [b'Z'] => 0,
            [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
                let oh = digits(rest, 0, 2).ok_or(TimestampError {
                    reason: "offset hour must be 2 digits",
                })?;
                let om = digits(rest, 3, 2).ok_or(TimestampError {
                    reason: "offset minute must be 2 digits",
                })?;
                if oh > 23 || om > 59 {
                    return err("offset out of range");
                }
                let m = i64::from(oh * 60 + om);
                if *sign == b'-' { -m } else { m }
            }
            [] => return err("a zone is required: 'Z' or ±HH:MM"),
            _ => return err("zone must be an uppercase 'Z' or ±HH:MM"),
        };
        let days = days_from_civil(i64::from(year), i64::from(month), i64::from(day));
        let secs = i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
        let ms = days * MS_PER_DAY + secs * 1000 + millis - offset_minutes * 60_000;
        Ok(Timestamp(ms))
    }

    /// Formats as `YYYY-MM-DDTHH:MM:SS.sssZ`, the form JavaScript's `toISOString` produces
    /// and the existing v1.1 node emits.
    pub fn to_rfc3339(self) -> String {
        let days = self.0.div_euclid(MS_PER_DAY);
        let ms_of_day = self.0.rem_euclid(MS_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        let h = ms_of_day / 3_600_000;
        let mi = (ms_of_day / 60_000) % 60;
        let s = (ms_of_day / 1000) % 60;
        let ms = ms_of_day % 1000;
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
    }
}

fn digits(b: &[u8], start: usize, len: usize) -> Option<u32> {
    let slice = b.get(start..start + len)?;
    slice.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

fn is_leap(y: u32) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Howard Hinnant's `days_from_civil`: proleptic Gregorian date → days since 1970-01-01.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_zulu_offsets_and_fractions() {
        assert_eq!(
            Timestamp::parse("1970-01-01T00:00:00Z").unwrap().unix_ms(),
            0
        );
        assert_eq!(
            Timestamp::parse("2026-02-16T18:40:00Z").unwrap().unix_ms(),
            1_771_267_200_000
        );
        assert_eq!(
            Timestamp::parse("2026-02-16T20:40:00.5+02:00")
                .unwrap()
                .unix_ms(),
            1_771_267_200_500
        );
        assert_eq!(
            Timestamp::parse("2026-02-16T18:40:00.123456789Z")
                .unwrap()
                .unix_ms(),
            1_771_267_200_123
        );
        assert_eq!(
            Timestamp::parse("1969-12-31T23:59:59.999Z")
                .unwrap()
                .unix_ms(),
            -1
        );
        assert_eq!(
            Timestamp::parse("2024-02-29T00:00:00-00:30")
                .unwrap()
                .to_rfc3339(),
            "2024-02-29T00:30:00.000Z"
        );
    }

    #[test]
    fn rejects_what_is_not_a_zoned_date_time() {
        for bad in [
            "",
            "2026-02-16",
            "2026-02-16T18:40:00",
            "2026-02-16 18:40:00Z",
            "2026-02-16t18:40:00Z",
            "2026-02-16T18:40:00z",
            "2026-02-30T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-02-16T24:00:00Z",
            "2026-02-16T23:59:60Z",
            "2026-02-16T18:40:00.Z",
            "2026-02-16T18:40:00.1234567890Z",
            "2026-02-16T18:40:00+0200",
            "2026-02-16T18:40:00+24:00",
            "+2026-02-16T18:40:00Z",
            "2026-2-16T18:40:00Z",
            "2026-02-16T18:40:00Z ",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(ms in -62_135_596_800_000i64..253_402_300_799_999i64) {
            let t = Timestamp::from_unix_ms(ms);
            prop_assert_eq!(Timestamp::parse(&t.to_rfc3339()).unwrap(), t);
        }
    }
}
