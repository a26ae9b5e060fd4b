//! The dashboard's charts: drawn by the report's chart code (`plotters`,
//! server-side SVG, no script library, works offline), with the kind and
//! the point count in data attributes for tests and scripts.

use report::{Chart, ChartKind, Point, Series, ValueFormat, XValue};

/// A dashboard chart's size in pixels (its legend adds rows below).
const WIDTH_PX: u32 = 560;
const PLOT_HEIGHT_PX: u32 = 260;

/// One line of a chart.
pub struct Line<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// An SVG chart of `lines` (`y` in `unit`) against `x_label`.
pub fn svg(title: &str, unit: &str, x_label: &str, kind: &str, lines: &[Line]) -> String {
    let n = lines.first().map_or(0, |l| l.points.len());
    let chart = Chart {
        id: kind.to_string(),
        title: if n == 0 {
            format!("{title} (waiting for data)")
        } else {
            title.to_string()
        },
        x_label: x_label.to_string(),
        y_label: unit.to_string(),
        kind: ChartKind::Line,
        log_y: false,
        x_format: ValueFormat::Auto,
        y_format: ValueFormat::Auto,
        series: lines
            .iter()
            .map(|l| Series {
                target: l.name.to_string(),
                points: l
                    .points
                    .iter()
                    .map(|&(x, y)| Point {
                        x: XValue::Number(x),
                        y,
                    })
                    .collect(),
            })
            .collect(),
        markers: Vec::new(),
    };
    let attrs = format!(
        r#"<svg class="chart" data-kind="{}" data-points="{n}" "#,
        report::escape_html(kind)
    );
    match report::chart_svg(&chart, WIDTH_PX, PLOT_HEIGHT_PX) {
        Ok(svg) => svg.replacen("<svg ", &attrs, 1),
        Err(e) => format!(
            "{attrs}viewBox=\"0 0 560 40\"><text x=\"4\" y=\"20\">{}</text></svg>",
            report::escape_html(&e.to_string())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_counts_its_points_and_escapes_titles() {
        let l = Line {
            name: "iops",
            points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
        };
        let s = svg("a <b>", "IOPS", "s", "run", &[l]);
        assert!(
            s.starts_with(r#"<svg class="chart" data-kind="run" data-points="3" "#),
            "{s}"
        );
        assert!(s.contains("a &lt;b&gt;"), "{s}");
        assert!(!s.contains("a <b>"));
        assert_eq!(s.matches("<svg").count(), 1);
        let empty = svg("t", "u", "s", "run", &[]);
        assert!(empty.contains("waiting for data"));
        assert!(empty.contains(r#"data-points="0""#));
    }
}
