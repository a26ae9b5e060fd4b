//! Parsing of human units: sizes (`4k`, `512`, `8G`, `1.5T`, binary
//! multiples as fio does), durations (`90s`, `6h`, `250ms`), percentages
//! (`36%` or `36`).

/// Parses a size in bytes. Suffixes k/m/g/t (optionally followed by `b`,
/// `ib`) are binary multiples, as in fio.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        Some('t') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid size '{s}' (examples: 4096, 4k, 8G)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("size '{s}' must be positive"));
    }
    let bytes = v * mult as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("size '{s}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a duration into nanoseconds. A bare number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{s}' (examples: 90s, 6h, 250ms)"))?;
    let mult = match unit {
        "" | "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        _ => {
            return Err(format!(
                "unknown duration unit in '{s}' (use ns, us, ms, s, m, h, d)"
            ))
        }
    };
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("duration '{s}' must be positive"));
    }
    Ok((v * mult).round() as u64)
}

/// Parses a percentage into a fraction: `36%`, `36` → 0.36.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t);
    let v: f64 = t
        .parse()
        .map_err(|_| format!("invalid percentage '{s}' (example: 36%)"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("percentage '{s}' must be between 0 and 100"));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5m").unwrap(), 3 << 19);
        assert!(parse_size("0").is_err());
        assert!(parse_size("-4k").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("90s").unwrap(), 90_000_000_000);
        assert_eq!(parse_duration_ns("6h").unwrap(), 6 * 3600 * 1_000_000_000);
        assert_eq!(parse_duration_ns("250ms").unwrap(), 250_000_000);
        assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
        assert!(parse_duration_ns("0s").is_err());
        assert!(parse_duration_ns("5 fortnights").is_err());
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("36%").unwrap(), 0.36);
        assert_eq!(parse_percent("50").unwrap(), 0.5);
        assert!(parse_percent("120%").is_err());
    }
}
