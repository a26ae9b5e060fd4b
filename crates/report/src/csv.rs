//! One CSV file per chart, wide format: an `x` column, then one column per
//! series, one row per x value.

use crate::model::{format_number, Chart, XValue};

/// Renders `chart`'s data as CSV. Rows are the distinct x values (numbers
/// ascending, categories in order of first appearance); a series without a
/// value at some x leaves its cell empty, as does a non-finite value. If a
/// series repeats an x, the repeat goes on an extra row with the same x, so
/// no number is lost.
pub(crate) fn chart_csv(chart: &Chart) -> String {
    let rows = row_keys(chart);
    let mut out = String::new();
    let header = std::iter::once(chart.x_label.as_str())
        .chain(chart.series.iter().map(|s| s.target.as_str()));
    push_record(&mut out, header.map(str::to_owned));
    for (x, occurrence) in &rows {
        let cells = chart.series.iter().map(|s| {
            s.points
                .iter()
                .filter(|p| same_x(&p.x, x))
                .nth(*occurrence)
                .filter(|p| p.y.is_finite())
                .map(|p| format_number(p.y))
                .unwrap_or_default()
        });
        push_record(&mut out, std::iter::once(x.text()).chain(cells));
    }
    out
}

fn same_x(a: &XValue, b: &XValue) -> bool {
    match (a, b) {
        (XValue::Number(a), XValue::Number(b)) => a.total_cmp(b).is_eq(),
        (XValue::Label(a), XValue::Label(b)) => a == b,
        _ => a.text() == b.text(),
    }
}

/// Distinct (x, k) pairs: x is the k-th occurrence of that value in some series.
fn row_keys(chart: &Chart) -> Vec<(XValue, usize)> {
    let mut keys: Vec<(XValue, usize)> = Vec::new();
    for s in &chart.series {
        let mut seen: Vec<(&XValue, usize)> = Vec::new();
        for p in &s.points {
            let k = match seen.iter_mut().find(|(x, _)| same_x(x, &p.x)) {
                Some((_, n)) => {
                    *n += 1;
                    *n - 1
                }
                None => {
                    seen.push((&p.x, 1));
                    0
                }
            };
            if !keys.iter().any(|(x, j)| *j == k && same_x(x, &p.x)) {
                keys.push((p.x.clone(), k));
            }
        }
    }
    if !chart.is_categorical() {
        keys.sort_by(|(a, i), (b, j)| match (a, b) {
            (XValue::Number(a), XValue::Number(b)) => a.total_cmp(b).then(i.cmp(j)),
            _ => std::cmp::Ordering::Equal,
        });
    }
    keys
}

fn push_record(out: &mut String, cells: impl Iterator<Item = String>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if cell.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&cell);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Series;

    #[test]
    fn wide_rows_with_gaps_and_quotes() {
        let chart = Chart::line(
            "c",
            "t",
            "Time, minutes",
            "IOPS",
            vec![
                Series::numeric("a", [(2.0, 20.0), (1.0, 10.0)]),
                Series::numeric("b \"x\"", [(1.0, 11.0), (3.0, f64::NAN)]),
            ],
        );
        assert_eq!(
            chart_csv(&chart),
            "\"Time, minutes\",a,\"b \"\"x\"\"\"\n1,10,11\n2,20,\n3,,\n"
        );
    }

    #[test]
    fn repeated_x_keeps_every_value() {
        let chart = Chart::line(
            "c",
            "t",
            "x",
            "y",
            vec![Series::numeric("a", [(1.0, 1.0), (1.0, 2.0)])],
        );
        assert_eq!(chart_csv(&chart), "x,a\n1,1\n1,2\n");
    }

    #[test]
    fn categories_keep_their_order() {
        let chart = Chart::bars(
            "c",
            "t",
            "T/Q",
            "IOPS",
            vec![
                Series::categorical("a", [("2T/2Q", 1.0), ("16T/16Q", 2.0)]),
                Series::categorical("b", [("2T/4Q", 3.0)]),
            ],
        );
        assert_eq!(
            chart_csv(&chart),
            "T/Q,a,b\n2T/2Q,1,\n16T/16Q,2,\n2T/4Q,,3\n"
        );
    }
}
