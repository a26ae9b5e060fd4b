//! A sweep's table and page: `results.csv` (one row per finished run: its
//! options, then its summary and steady-state figures) and `index.html`
//! (one chart per swept option, drawn by the `report` crate like the
//! review's, and a table of every run).

use super::{run_path, Plan};
use anyhow::{Context, Result};
use report::{Chart, Review, Section, Series, Table, TargetInfo};
use std::path::{Path, PathBuf};

/// Figures of each run in `results.csv`, from its JSON `summary`.
const SUMMARY_FIELDS: &[&str] = &[
    "iops",
    "read_iops",
    "write_iops",
    "mb_per_s",
    "lat_avg_us",
    "lat_max_us",
    "lat_stddev_us",
    "lat_p50_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_p9999_us",
    "write_amplification",
    "gc_pages_moved",
];

/// What [`write`] produced.
pub struct Written {
    pub csv: PathBuf,
    pub html: PathBuf,
    pub finished: usize,
}

/// One finished run as the table sees it.
struct Row {
    key: String,
    params: Vec<String>,
    figures: Vec<f64>,
    steady_iops: f64,
    steady_wa: f64,
}

/// Mean of the second half of the intervals: the run's steady state, as
/// far as a run of fixed length can tell.
fn steady(intervals: &[serde_json::Value], field: &str) -> f64 {
    let tail = &intervals[intervals.len() / 2..];
    let sum: f64 = tail.iter().filter_map(|i| i[field].as_f64()).sum();
    sum / tail.len().max(1) as f64
}

fn rows(plan: &Plan, out: &Path) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for run in &plan.runs {
        let Ok(text) = std::fs::read_to_string(run_path(out, &run.key)) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("reading {}", run_path(out, &run.key).display()))?;
        let intervals = v["intervals"].as_array().map_or(&[][..], |a| a.as_slice());
        rows.push(Row {
            key: run.key.clone(),
            params: plan
                .keys
                .iter()
                .map(|k| run.params.get(k).cloned().unwrap_or_default())
                .collect(),
            figures: SUMMARY_FIELDS
                .iter()
                .map(|f| v["summary"][f].as_f64().unwrap_or(f64::NAN))
                .collect(),
            steady_iops: steady(intervals, "iops"),
            steady_wa: steady(intervals, "write_amplification"),
        });
    }
    Ok(rows)
}

/// Writes `results.csv` and `index.html` over every finished run of `plan`.
pub fn write(plan: &Plan, out: &Path) -> Result<Written> {
    let rows = rows(plan, out)?;
    let csv = out.join("results.csv");
    std::fs::write(&csv, csv_text(plan, &rows))
        .with_context(|| format!("writing {}", csv.display()))?;
    let rendered = report::render(&review(plan, &rows), out)?;
    Ok(Written {
        csv,
        html: rendered.index_html,
        finished: rows.len(),
    })
}

fn csv_text(plan: &Plan, rows: &[Row]) -> String {
    let mut header: Vec<String> = vec!["key".into()];
    header.extend(plan.keys.iter().map(|k| k.replace('-', "_")));
    header.extend(SUMMARY_FIELDS.iter().map(|f| f.to_string()));
    header.extend(["steady_iops".into(), "steady_write_amplification".into()]);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut put = |cells: Vec<String>| {
        w.write_record(&cells)
            .expect("writing CSV to memory cannot fail")
    };
    put(header);
    for r in rows {
        let mut cells = vec![r.key.clone()];
        cells.extend(r.params.iter().cloned());
        cells.extend(r.figures.iter().map(|f| f.to_string()));
        cells.extend([r.steady_iops.to_string(), r.steady_wa.to_string()]);
        put(cells);
    }
    let bytes = w.into_inner().expect("flushing CSV to memory cannot fail");
    String::from_utf8(bytes).expect("CSV of strings is UTF-8")
}

/// The mean of `y` over the runs with each value of option `k`, in plan order.
fn by_value(rows: &[Row], k: usize, y: impl Fn(&Row) -> f64) -> Vec<(String, f64)> {
    let mut values: Vec<String> = Vec::new();
    for r in rows {
        if !values.contains(&r.params[k]) {
            values.push(r.params[k].clone());
        }
    }
    values
        .into_iter()
        .map(|v| {
            let ys: Vec<f64> = rows.iter().filter(|r| r.params[k] == v).map(&y).collect();
            let label = if v.is_empty() {
                "(default)".to_string()
            } else {
                v
            };
            (label, ys.iter().sum::<f64>() / ys.len() as f64)
        })
        .collect()
}

const SERIES: [&str; 2] = ["steady-state IOPS", "steady-state write amplification"];

fn review(plan: &Plan, rows: &[Row]) -> Review {
    let mut sections = Vec::new();
    for name in &plan.swept {
        let k = plan
            .keys
            .iter()
            .position(|x| x == name)
            .expect("swept keys are keys");
        let iops = by_value(rows, k, |r| r.steady_iops);
        let wa = by_value(rows, k, |r| r.steady_wa);
        let id = report::slug(name);
        sections.push(Section {
            id: format!("by-{id}"),
            title: format!("By {name}"),
            text: format!(
                "Mean over the runs with each value of --{name} (other swept options averaged); \
                 steady state is the mean of each run's second half of intervals."
            ),
            charts: vec![
                Chart::bars(
                    format!("{id}-iops"),
                    format!("Steady-state IOPS by {name}"),
                    name.clone(),
                    "Throughput (IOPS)",
                    vec![Series::categorical(SERIES[0], iops)],
                ),
                Chart::bars(
                    format!("{id}-wa"),
                    format!("Steady-state write amplification by {name}"),
                    name.clone(),
                    "Write amplification",
                    vec![Series::categorical(SERIES[1], wa)],
                ),
            ],
            ..Section::default()
        });
    }
    sections.push(Section {
        id: "runs".into(),
        title: "Every run".into(),
        tables: vec![runs_table(plan, rows)],
        ..Section::default()
    });
    Review {
        title: format!("Sweep of {} runs", plan.runs.len()),
        subtitle: format!("openvsl {} sweep", env!("CARGO_PKG_VERSION")),
        configuration: format!(
            "swept: {}\nresults: results.csv, runs/<key>.json",
            if plan.swept.is_empty() {
                "nothing".to_string()
            } else {
                plan.swept.join(", ")
            }
        ),
        seed: None,
        targets: SERIES
            .iter()
            .map(|s| TargetInfo {
                name: s.to_string(),
                description: String::new(),
            })
            .collect(),
        sections,
    }
}

fn runs_table(plan: &Plan, rows: &[Row]) -> Table {
    let mut columns = vec!["key".to_string()];
    columns.extend(plan.keys.iter().cloned());
    columns.extend(
        [
            "IOPS",
            "avg latency (us)",
            "p99 (us)",
            "WA",
            "steady IOPS",
            "steady WA",
        ]
        .map(String::from),
    );
    let f = |name: &str, r: &Row| {
        r.figures[SUMMARY_FIELDS
            .iter()
            .position(|x| *x == name)
            .expect("known field")]
    };
    Table {
        title: "Runs".into(),
        columns,
        rows: rows
            .iter()
            .map(|r| {
                let mut cells = vec![r.key.clone()];
                cells.extend(r.params.iter().cloned());
                cells.extend([
                    format!("{:.0}", f("iops", r)),
                    format!("{:.1}", f("lat_avg_us", r)),
                    format!("{:.1}", f("lat_p99_us", r)),
                    format!("{:.3}", f("write_amplification", r)),
                    format!("{:.0}", r.steady_iops),
                    format!("{:.3}", r.steady_wa),
                ]);
                cells
            })
            .collect(),
    }
}
