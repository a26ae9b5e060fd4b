//! Tick-label formatting and the target colour palette.

use crate::model::ValueFormat;

/// Colour-blind-friendly, distinct on white (Okabe–Ito, then Tableau).
/// Target `i` gets `PALETTE[i % len]` in every chart.
pub(crate) const PALETTE: [(u8, u8, u8); 12] = [
    (0, 114, 178),   // blue
    (213, 94, 0),    // vermillion
    (0, 158, 115),   // bluish green
    (204, 121, 167), // reddish purple
    (230, 159, 0),   // orange
    (86, 180, 233),  // sky blue
    (0, 0, 0),       // black
    (140, 86, 75),   // brown
    (148, 103, 189), // purple
    (188, 189, 34),  // olive
    (127, 127, 127), // grey
    (23, 190, 207),  // cyan
];

/// The colour of the target at `index` as `#rrggbb`.
pub fn target_colour_hex(index: usize) -> String {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Formats a tick value. `span` is the axis range, which decides how many
/// decimals are worth showing.
pub fn format_tick(v: f64, span: f64, format: ValueFormat) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if format == ValueFormat::Integer {
        return if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            String::new()
        };
    }
    let magnitude = v.abs().max(span.abs());
    let si = match format {
        ValueFormat::Si => true,
        ValueFormat::Plain | ValueFormat::Integer => false,
        ValueFormat::Auto => magnitude >= 10_000.0,
    };
    if si {
        format_si(v)
    } else {
        format_plain(v, span)
    }
}

/// 150000 → "150K", 1250000 → "1.25M", 0.5 → "0.5".
fn format_si(v: f64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")];
    for (scale, suffix) in UNITS {
        if v.abs() >= scale {
            return format!("{}{suffix}", trim_decimals(v / scale, 2));
        }
    }
    trim_decimals(v, 2)
}

fn format_plain(v: f64, span: f64) -> String {
    let span = span.abs();
    // Enough decimals to tell neighbouring ticks (about span/10 apart) apart.
    let decimals = if span > 0.0 && span.is_finite() {
        (2.0 - span.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        3
    };
    let text = trim_decimals(v, decimals);
    if text.len() > 4 && !text.contains('.') {
        group_thousands(&text)
    } else {
        text
    }
}

fn trim_decimals(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    if text == "-0" {
        "0".to_owned()
    } else {
        text
    }
}

/// "1500000" → "1,500,000"; leaves a leading minus sign alone.
fn group_thousands(digits: &str) -> String {
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", digits),
    };
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_ticks() {
        assert_eq!(format_tick(150_000.0, 250_000.0, ValueFormat::Auto), "150K");
        assert_eq!(format_tick(1_250_000.0, 2e6, ValueFormat::Auto), "1.25M");
        assert_eq!(format_tick(0.0, 250_000.0, ValueFormat::Auto), "0");
        assert_eq!(format_tick(500.0, 1000.0, ValueFormat::Si), "500");
    }

    #[test]
    fn plain_ticks() {
        assert_eq!(format_tick(0.25, 1.0, ValueFormat::Auto), "0.25");
        assert_eq!(format_tick(1500.0, 2000.0, ValueFormat::Auto), "1500");
        assert_eq!(
            format_tick(1_500_000.0, 2e6, ValueFormat::Plain),
            "1,500,000"
        );
        assert_eq!(format_tick(-0.0001, 1.0, ValueFormat::Plain), "0");
        assert_eq!(format_tick(f64::NAN, 1.0, ValueFormat::Plain), "");
    }

    #[test]
    fn integer_ticks_only_at_whole_numbers() {
        assert_eq!(format_tick(3.0, 4.0, ValueFormat::Integer), "3");
        assert_eq!(format_tick(25.0, 24.0, ValueFormat::Integer), "25");
        assert_eq!(format_tick(2.5, 4.0, ValueFormat::Integer), "");
        assert_eq!(format_tick(f64::NAN, 4.0, ValueFormat::Integer), "");
    }

    #[test]
    fn colours_are_distinct() {
        let mut all: Vec<String> = (0..PALETTE.len()).map(target_colour_hex).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), PALETTE.len());
    }
}
