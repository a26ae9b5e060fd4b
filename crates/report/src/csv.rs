//! One CSV file per chart, wide format: an `x` column, then one column per
//! series, one row per x value.

use std::collections::{HashMap, HashSet};

use crate::model::{format_number, Chart, XValue};

/// Renders `chart`'s data as CSV. Rows are the distinct x values (numbers
/// ascending, categories in order of first appearance); a series without a
/// value at some x leaves its cell empty, as does a non-finite value. If a
/// series repeats an x, the repeat goes on an extra row with the same x, so
/// no number is lost.
pub(crate) fn chart_csv(chart: &Chart) -> String {
    let categorical = chart.is_categorical();
    // Per series: (x, occurrence) → y. Hash maps keep this linear in the
    // number of points (hours of 1 s intervals).
    let mut rows: Vec<(RowKey, &XValue)> = Vec::new();
    let mut row_seen: HashSet<RowKey> = HashSet::new();
    let mut columns: Vec<HashMap<RowKey, f64>> = Vec::with_capacity(chart.series.len());
    for s in &chart.series {
        let mut occurrences: HashMap<XKey, usize> = HashMap::new();
        let mut column = HashMap::with_capacity(s.points.len());
        for p in &s.points {
            let x = XKey::of(&p.x, categorical);
            let n = occurrences.entry(x.clone()).or_insert(0);
            let key = (x, *n);
            *n += 1;
            if row_seen.insert(key.clone()) {
                rows.push((key.clone(), &p.x));
            }
            column.insert(key, p.y);
        }
        columns.push(column);
    }
    if !categorical {
        rows.sort_by(|(a, xa), (b, xb)| match (xa, xb) {
            (XValue::Number(xa), XValue::Number(xb)) => xa.total_cmp(xb).then(a.1.cmp(&b.1)),
            _ => std::cmp::Ordering::Equal,
        });
    }
    let mut out = csv::Writer::from_writer(Vec::with_capacity(
        rows.len() * 16 * (1 + chart.series.len()),
    ));
    let header = std::iter::once(chart.x_label.as_str())
        .chain(chart.series.iter().map(|s| s.target.as_str()));
    push_record(&mut out, header.map(str::to_owned));
    for (key, x) in &rows {
        let cells = columns.iter().map(|column| {
            column
                .get(key)
                .filter(|y| y.is_finite())
                .map(|y| format_number(*y))
                .unwrap_or_default()
        });
        push_record(&mut out, std::iter::once(x.text()).chain(cells));
    }
    let bytes = out
        .into_inner()
        .expect("flushing CSV to memory cannot fail");
    String::from_utf8(bytes).expect("CSV of strings is UTF-8")
}

/// One CSV row: an x value and which occurrence of it within a series.
type RowKey = (XKey, usize);

/// An x value made hashable: categories by their text, numbers by their bits
/// (with -0 as 0 and every NaN alike).
#[derive(Clone, PartialEq, Eq, Hash)]
enum XKey {
    Number(u64),
    Text(String),
}

impl XKey {
    fn of(x: &XValue, categorical: bool) -> Self {
        match x {
            XValue::Number(v) if !categorical => {
                let v = if *v == 0.0 {
                    0.0
                } else if v.is_nan() {
                    f64::NAN
                } else {
                    *v
                };
                XKey::Number(v.to_bits())
            }
            x => XKey::Text(x.text()),
        }
    }
}

/// One record (the `csv` crate quotes only the cells that need it).
fn push_record(out: &mut csv::Writer<Vec<u8>>, cells: impl Iterator<Item = String>) {
    out.write_record(cells)
        .expect("writing CSV to memory cannot fail");
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
