//! Human sizes and durations, in and out: `500M`, `2G`, `1.5GiB`, `30d`,
//! `2h 30m`.
//!
//! Owns: the one reading and writing of sizes and durations that
//! `kiln-cache-inspect` and the docs use. Sizes: a number with an optional
//! unit, `K M G T` (and `KB MB ...`) decimal as in ccache and `du --si`,
//! `Ki Mi Gi Ti` (and `KiB ...`) binary, case-insensitive (the `bytesize`
//! crate). Durations: `humantime`'s syntax (`30d`, `12h`, `90s`,
//! `1w 2d`). Output uses the same units, so what is printed parses back.
//!
//! Must never: accept a negative or non-finite size, or round a plain
//! byte count.

use std::time::Duration;

/// Parses a size: `1000`, `500M`, `2G`, `1.5GiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() {
        return Err(format!("'{s}' is not a size (expected e.g. 500M, 2G, 1.5GiB)"));
    }
    t.parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| format!("'{s}' is not a size (expected e.g. 500M, 2G, 1.5GiB)"))
}

/// Formats a size with decimal units: `512B`, `20.5K`, `1.2M`, `3.0G`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if bytes < 1000 {
        return format!("{bytes}B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1}{}", UNITS[unit])
}

/// Parses a duration: `30d`, `12h`, `90s`, `1w 2d`, `0s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("'{s}' is not a duration (expected e.g. 30d, 12h, 90s): {e}"))
}

/// Formats a duration compactly in its largest unit, with one smaller unit
/// when that is not zero: `45s`, `3m 20s`, `2h`, `5d 3h`, `12w`.
pub fn format_duration(d: Duration) -> String {
    const UNITS: [(u64, &str); 5] = [(604_800, "w"), (86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let secs = d.as_secs();
    for (i, &(size, name)) in UNITS.iter().enumerate() {
        if secs >= size || size == 1 {
            let major = secs / size;
            let rest = secs % size;
            return match UNITS.get(i + 1) {
                Some(&(small, small_name)) if rest / small > 0 && major < 10 => {
                    format!("{major}{name} {}{small_name}", rest / small)
                }
                _ => format!("{major}{name}"),
            };
        }
    }
    unreachable!("the last unit is one second")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert_eq!(parse_size("2g"), Ok(2_000_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(1_610_612_736));
        assert_eq!(parse_size("10Ki"), Ok(10_240));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in ["", "-5M", "5X", "M", "1.2.3G", "NaN", "inf"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_print_and_parse_back() {
        for (n, s) in [(0, "0B"), (512, "512B"), (20_500, "20.5K"), (1_234_567, "1.2M"), (3_000_000_000, "3.0G"), (999_999, "1.0M")] {
            assert_eq!(format_size(n), s);
            let back = parse_size(s).unwrap();
            assert!(back.abs_diff(n) * 20 <= n.max(1), "{s} -> {back}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("2h 30m"), Ok(Duration::from_secs(9_000)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-3d").is_err());
        for (secs, s) in [(0, "0s"), (45, "45s"), (200, "3m 20s"), (7_200, "2h"), (442_800, "5d 3h"), (12 * 604_800, "12w")] {
            assert_eq!(format_duration(Duration::from_secs(secs)), s);
            assert_eq!(parse_duration(s), Ok(Duration::from_secs(secs)));
        }
    }
}
