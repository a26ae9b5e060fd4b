//! Server-rendered SVG line charts: no script library, works offline.

use std::fmt::Write;

/// One line of a chart.
pub struct Line<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub points: Vec<(f64, f64)>,
}

const W: f64 = 560.0;
const H: f64 = 200.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 34.0;

/// A readable number for an axis label.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG chart of `lines` against `x_label` (seconds); `kind` and the
/// point count go into data attributes for tests and scripts.
pub fn svg(title: &str, unit: &str, x_label: &str, kind: &str, lines: &[Line]) -> String {
    let all = lines.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| TOP + ph - y / y1 * ph;
    let n = lines.first().map_or(0, |l| l.points.len());
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" data-kind="{kind}" data-points="{n}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r##"<rect width="{W}" height="{H}" fill="#fff"/><text x="{LEFT}" y="17" font-size="14" font-weight="bold">{}</text>"##,
        escape(title)
    );
    for i in 0..=4 {
        let v = y1 * i as f64 / 4.0;
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            short(v)
        );
    }
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="{}" >{}</text><text x="{}" y="{}" text-anchor="end">{} {}</text><text x="12" y="{}" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>"##,
        H - 8.0,
        short(x0),
        W - RIGHT,
        H - 8.0,
        short(x1),
        escape(x_label),
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        escape(unit)
    );
    let mut legend_x = W - RIGHT;
    for l in lines.iter().rev() {
        legend_x -= 8.0 * l.name.len() as f64 + 24.0;
        let _ = write!(
            s,
            r#"<rect x="{legend_x:.0}" y="8" width="12" height="4" fill="{}"/><text x="{:.0}" y="14">{}</text>"#,
            l.color,
            legend_x + 16.0,
            escape(l.name)
        );
    }
    for l in lines {
        let pts: Vec<String> = l
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
            l.color,
            pts.join(" ")
        );
    }
    if n == 0 {
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#888">waiting for data</text>"##,
            LEFT + pw / 2.0,
            TOP + ph / 2.0
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_counts_its_points_and_escapes_titles() {
        let l = Line {
            name: "iops",
            color: "#06c",
            points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
        };
        let s = svg("a <b>", "IOPS", "s", "run", &[l]);
        assert!(s.contains(r#"data-points="3""#));
        assert!(s.contains("a &lt;b&gt;"));
        assert_eq!(s.matches("<polyline").count(), 1);
        let empty = svg("t", "u", "s", "run", &[]);
        assert!(empty.contains("waiting for data"));
    }
}
