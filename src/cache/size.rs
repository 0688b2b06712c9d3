//! Human sizes and durations, in and out: `5` (GiB), `500M`, `2G`,
//! `1.5GiB`, `100KB`, `30d`, `2h 30m`.
//!
//! Owns: the one reading and writing of sizes and durations that every
//! tool, setting and doc uses. Sizes are spelt as ccache spells them: a
//! number with an optional unit, case-insensitive: `K M G T` (and `KiB MiB
//! GiB TiB`) powers of 1,024, `KB MB GB TB` powers of 1,000, `B` bytes; a
//! bare number means GiB, and `0` means no limit where a limit is meant.
//! A size below 1 MiB must say its unit (a bare `0.0001` is refused: a
//! cache that small keeps nothing, and is almost always a unit forgotten).
//! Output is in binary units (`5.0 GiB`, `1.4 KiB`, `512 B`), which parse
//! back. Durations: `humantime`'s syntax (`30d`, `12h`, `90s`, `1w 2d`).
//!
//! Must never: accept a negative or non-finite size, or round a byte count
//! written in bytes.

use std::time::Duration;

/// What a size is when a message names the format.
const EXPECTED: &str = "expected e.g. 5 (GiB), 500M, 2G, 1.5GiB or 100KB";

/// The multiplier of a size unit, lowercase.
fn unit_bytes(unit: &str) -> Option<u64> {
    Some(match unit {
        "b" => 1,
        "k" | "ki" | "kib" => 1 << 10,
        "m" | "mi" | "mib" => 1 << 20,
        "g" | "gi" | "gib" => 1 << 30,
        "t" | "ti" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    })
}

/// Parses a size: `5` (5 GiB), `500M` (MiB), `2GB` (10^9), `1.5GiB`,
/// `64K`, `1000B`, `0`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim().to_ascii_lowercase());
    let bad = || format!("'{s}' is not a size ({EXPECTED})");
    if number.is_empty() || !number.as_bytes()[0].is_ascii_digit() {
        return Err(bad());
    }
    let per = if unit.is_empty() { 1 << 30 } else { unit_bytes(&unit).ok_or_else(bad)? };
    // Whole numbers are exact; a fraction is rounded to the byte.
    let bytes = match number.parse::<u64>() {
        Ok(n) => n.checked_mul(per).ok_or_else(|| format!("'{s}' is too large a size"))?,
        Err(_) => {
            let x: f64 = number.parse().map_err(|_| bad())?;
            let b = x * per as f64;
            if !b.is_finite() || b >= u64::MAX as f64 {
                return Err(format!("'{s}' is too large a size"));
            }
            b.round() as u64
        }
    };
    if unit.is_empty() && bytes != 0 && bytes < 1 << 20 {
        return Err(format!(
            "'{s}' is {bytes} bytes: a number without a unit is GiB, and a size below 1 MiB must say its unit (e.g. 100K, or 1000B)"
        ));
    }
    Ok(bytes)
}

/// Formats a size in binary units, with one decimal above a KiB: `512 B`,
/// `1.4 KiB`, `20.0 MiB`, `5.0 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
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
    fn sizes_as_ccache_spells_them() {
        assert_eq!(parse_size("5"), Ok(5 << 30), "a bare number is GiB");
        assert_eq!(parse_size("0"), Ok(0), "no limit");
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(1_610_612_736));
        assert_eq!(parse_size("10Ki"), Ok(10_240));
        assert_eq!(parse_size("64K"), Ok(65_536));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("100 KB"), Ok(100_000));
        assert_eq!(parse_size("1000B"), Ok(1000));
        assert_eq!(parse_size("0.5"), Ok(1 << 29));
        assert!(parse_size("0.0001").unwrap_err().contains("below 1 MiB must say its unit"));
        for bad in ["", "-5M", "5X", "M", "1.2.3G", "NaN", "inf", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_print_in_binary_units_and_parse_back() {
        for (n, s) in [
            (0, "0 B"),
            (512, "512 B"),
            (1434, "1.4 KiB"),
            (20 << 20, "20.0 MiB"),
            (5 << 30, "5.0 GiB"),
            (1_048_575, "1.0 MiB"),
        ] {
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
        for (secs, s) in
            [(0, "0s"), (45, "45s"), (200, "3m 20s"), (7_200, "2h"), (442_800, "5d 3h"), (12 * 604_800, "12w")]
        {
            assert_eq!(format_duration(Duration::from_secs(secs)), s);
            assert_eq!(parse_duration(s), Ok(Duration::from_secs(secs)));
        }
    }
}
