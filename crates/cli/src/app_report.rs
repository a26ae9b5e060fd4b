//! Application-level results measured on attached cards by the bench
//! scripts, joined to the review report by `vsl review --app FILE`:
//! `bench/pgbench.sh` (PostgreSQL pgbench), `bench/pg_insert.sh` (the
//! reviews' insert-heavy test on PostgreSQL) and `bench/sysbench_oltp.sh`
//! (sysbench OLTP on MariaDB). A file is recognised by its `tool` key.

use anyhow::{anyhow, bail, Context, Result};
use report::{Chart, Section, Series, Table};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One results file of a bench script.
#[derive(Debug)]
pub enum AppResults {
    Pgbench(PgbenchResults),
    PgInsert(PgInsertResults),
    SysbenchOltp(SysbenchOltpResults),
}

const EXPECTED: &str =
    "expected the results JSON of bench/pgbench.sh, bench/pg_insert.sh or bench/sysbench_oltp.sh";

impl AppResults {
    /// Reads a results file and checks it against its tool's schema.
    pub fn load(path: &Path) -> Result<AppResults> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read application results {}", path.display()))?;
        let bad = |e: &dyn std::fmt::Display| {
            anyhow!("application results {}: {e} ({EXPECTED})", path.display())
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e))?;
        let tool = value
            .get("tool")
            .and_then(|t| t.as_str())
            .ok_or_else(|| bad(&"no \"tool\" key"))?
            .to_string();
        let r = match tool.as_str() {
            "pgbench" => AppResults::Pgbench(serde_json::from_value(value).map_err(|e| bad(&e))?),
            "pg_insert" => {
                AppResults::PgInsert(serde_json::from_value(value).map_err(|e| bad(&e))?)
            }
            "sysbench-oltp" => {
                AppResults::SysbenchOltp(serde_json::from_value(value).map_err(|e| bad(&e))?)
            }
            other => bail!(
                "application results {}: unknown tool '{other}' ({EXPECTED})",
                path.display()
            ),
        };
        if r.rows() == 0 {
            bail!("application results {}: no rows", path.display());
        }
        Ok(r)
    }

    fn rows(&self) -> usize {
        match self {
            AppResults::Pgbench(p) => p.results.len(),
            AppResults::PgInsert(p) => p.results.len(),
            AppResults::SysbenchOltp(p) => p.results.len(),
        }
    }

    /// The report section of these results.
    pub fn section(&self) -> Section {
        match self {
            AppResults::Pgbench(p) => pgbench_section(p),
            AppResults::PgInsert(p) => pg_insert_section(p),
            AppResults::SysbenchOltp(p) => sysbench_oltp_section(p),
        }
    }
}

/// What `bench/pg_insert.sh` writes (`--out`).
#[derive(Debug, Deserialize)]
pub struct PgInsertResults {
    pub card: String,
    pub card_scale: f64,
    #[serde(default)]
    pub preconditioned: bool,
    pub connections: u32,
    pub rows_per_transaction: u32,
    pub rows: u64,
    #[serde(default)]
    pub postgres: String,
    /// `complete`, `running` (interrupted) or `failed: ...`.
    pub status: String,
    pub results: Vec<PgInsertRow>,
}

#[derive(Debug, Deserialize)]
pub struct PgInsertRow {
    pub format: String,
    pub sector_bytes: u32,
    pub partitions: u32,
    pub tablespaces: u32,
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_s: f64,
    pub write_amplification: Option<f64>,
    pub samples: u64,
    pub wait_events: Vec<WaitEvent>,
    #[serde(default)]
    pub load_avg_1m: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct WaitEvent {
    pub event: String,
    pub samples: u64,
    pub share: f64,
}

fn sector_label(bytes: u32) -> String {
    if bytes == 4096 {
        "4K".into()
    } else {
        format!("{bytes}B")
    }
}

fn status_note(status: &str) -> String {
    match status {
        "complete" => String::new(),
        "running" => {
            " The run was interrupted: only the configurations listed were measured.".into()
        }
        s => {
            format!(" The run did not finish ({s}): only the configurations listed were measured.")
        }
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn pg_insert_section(p: &PgInsertResults) -> Section {
    // One series per format and sector size, over the partition counts.
    let mut groups: Vec<(String, Vec<&PgInsertRow>)> = Vec::new();
    for r in &p.results {
        let label = format!("{} {}", r.format, sector_label(r.sector_bytes));
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(r),
            None => groups.push((label, vec![r])),
        }
    }
    let completion = Chart::bars(
        "pg-insert-completion",
        "Insert test: completion time by partitions",
        "Partitions (one tablespace each)",
        "Completion time (s)",
        groups
            .iter()
            .map(|(l, rows)| {
                Series::categorical(
                    l.clone(),
                    rows.iter().map(|r| (r.partitions.to_string(), r.seconds)),
                )
            })
            .collect(),
    );
    let wa = Chart::bars(
        "pg-insert-wa",
        "Insert test: write amplification during the run",
        "Partitions (one tablespace each)",
        "NAND bytes programmed / host bytes written",
        groups
            .iter()
            .map(|(l, rows)| {
                Series::categorical(
                    l.clone(),
                    rows.iter()
                        .filter_map(|r| Some((r.partitions.to_string(), r.write_amplification?))),
                )
            })
            .collect(),
    );
    let mut charts = vec![completion, wa];
    // Per sector size: the wait events most sampled over its
    // configurations, their share of the active-backend samples in each.
    let mut sectors: Vec<u32> = p.results.iter().map(|r| r.sector_bytes).collect();
    sectors.sort_unstable_by(|a, b| b.cmp(a));
    sectors.dedup();
    for sector in sectors {
        let runs: Vec<&PgInsertRow> = p
            .results
            .iter()
            .filter(|r| r.sector_bytes == sector)
            .collect();
        let mut total: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &runs {
            for w in &r.wait_events {
                *total.entry(w.event.as_str()).or_default() += w.samples;
            }
        }
        let mut top: Vec<(&str, u64)> = total.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        top.truncate(5);
        let short = |f: &str| f.strip_suffix("-write").unwrap_or(f).to_string();
        charts.push(Chart::bars(
            format!(
                "pg-insert-wait-events-{}",
                sector_label(sector).to_lowercase()
            ),
            format!(
                "Insert test, {} sectors: top wait events (share of active-backend samples)",
                sector_label(sector)
            ),
            "Format, partitions",
            "Share of samples (%)",
            top.iter()
                .map(|(event, _)| {
                    Series::categorical(
                        *event,
                        runs.iter().map(|r| {
                            let share = r
                                .wait_events
                                .iter()
                                .find(|w| w.event == *event)
                                .map_or(0.0, |w| w.share * 100.0);
                            (format!("{} {}p", short(&r.format), r.partitions), share)
                        }),
                    )
                })
                .collect(),
        ));
    }
    let rows = p
        .results
        .iter()
        .map(|r| {
            vec![
                r.format.clone(),
                sector_label(r.sector_bytes),
                r.partitions.to_string(),
                r.tablespaces.to_string(),
                r.rows.to_string(),
                format!("{:.1}", r.seconds),
                format!("{:.0}", r.rows_per_s),
                fmt_opt(r.write_amplification, 2),
                r.wait_events
                    .iter()
                    .take(3)
                    .map(|w| format!("{} {:.0} %", w.event, w.share * 100.0))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.samples.to_string(),
                fmt_opt(r.load_avg_1m, 2),
            ]
        })
        .collect();
    Section {
        id: "pg-insert".into(),
        title: "Application level: insert-heavy test (PostgreSQL)".into(),
        text: format!(
            "{} connections insert rows keyed by random UUIDs into a table with a btree primary key, {} rows per \
             transaction, {} rows per configuration; the table hash-partitioned into {} partitions, each \
             partition (heap and index) in its own tablespace (the analogue of SQL Server data files). PostgreSQL {} \
             on ext4 on the card attached as a real block device (vsl attach, model timing), {} at --scale {}, {}. \
             Completion time in wall time; wait events from pg_stat_activity sampled every 0.1 s over the active \
             client backends (CPU: active with no wait event). Measured by bench/pg_insert.sh.{}",
            p.connections,
            p.rows_per_transaction,
            p.rows,
            {
                let mut parts: Vec<u32> = p.results.iter().map(|r| r.partitions).collect();
                parts.sort_unstable();
                parts.dedup();
                parts
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            p.postgres,
            p.card,
            p.card_scale,
            if p.preconditioned {
                "each format preconditioned to steady state first (whole device written sequentially, then once in random 4 KiB writes)"
            } else {
                "fresh (not preconditioned)"
            },
            status_note(&p.status)
        ),
        charts,
        tables: vec![Table {
            title: "Insert test".into(),
            columns: [
                "format",
                "sector",
                "partitions",
                "tablespaces",
                "rows",
                "completion (s)",
                "rows/s",
                "WA during run",
                "top wait events",
                "samples",
                "load avg",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }],
        ..Section::default()
    }
}

/// What `bench/sysbench_oltp.sh` writes (`--out`).
#[derive(Debug, Deserialize)]
pub struct SysbenchOltpResults {
    pub test: String,
    pub card: String,
    pub card_scale: f64,
    #[serde(default)]
    pub preconditioned: bool,
    pub tables: u32,
    pub table_size: u64,
    pub seconds: u32,
    #[serde(default)]
    pub mariadb: String,
    pub status: String,
    pub results: Vec<SysbenchOltpRow>,
}

#[derive(Debug, Deserialize)]
pub struct SysbenchOltpRow {
    pub format: String,
    pub threads: u32,
    pub tps: f64,
    pub qps: f64,
    pub latency_avg_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_max_ms: f64,
    pub write_amplification: Option<f64>,
    #[serde(default)]
    pub load_avg_1m: Option<f64>,
}

fn sysbench_oltp_section(p: &SysbenchOltpResults) -> Section {
    let mut formats: Vec<&str> = Vec::new();
    for r in &p.results {
        if !formats.contains(&r.format.as_str()) {
            formats.push(&r.format);
        }
    }
    let chart = |key: &str, title: &str, axis: &str, value: fn(&SysbenchOltpRow) -> f64| {
        Chart::line(
            format!("sysbench-oltp-{key}"),
            format!("sysbench OLTP: {title}"),
            "Threads",
            axis,
            formats
                .iter()
                .map(|f| {
                    Series::numeric(
                        *f,
                        p.results
                            .iter()
                            .filter(|r| r.format == *f)
                            .map(|r| (r.threads as f64, value(r))),
                    )
                })
                .collect(),
        )
    };
    let charts = vec![
        chart("tps", "transactions per second", "Transactions/s", |r| {
            r.tps
        }),
        chart(
            "avg-latency",
            "average latency",
            "Average latency (ms)",
            |r| r.latency_avg_ms,
        ),
        chart(
            "p99-latency",
            "99th percentile latency",
            "99th percentile latency (ms)",
            |r| r.latency_p99_ms,
        ),
    ];
    let rows = p
        .results
        .iter()
        .map(|r| {
            vec![
                r.format.clone(),
                r.threads.to_string(),
                format!("{:.1}", r.tps),
                format!("{:.0}", r.qps),
                format!("{:.2}", r.latency_avg_ms),
                format!("{:.2}", r.latency_p99_ms),
                format!("{:.2}", r.latency_max_ms),
                fmt_opt(r.write_amplification, 2),
                fmt_opt(r.load_avg_1m, 2),
            ]
        })
        .collect();
    Section {
        id: "sysbench-oltp".into(),
        title: "Application level: sysbench OLTP (MariaDB)".into(),
        text: format!(
            "sysbench {} ({} tables x {} rows, {} s per thread count) against MariaDB {} (InnoDB, O_DIRECT, log \
             flushed at every commit) on ext4 on the card attached as a real block device (vsl attach, model \
             timing), {} at --scale {}, {}. Measured in wall time by bench/sysbench_oltp.sh.{}",
            p.test,
            p.tables,
            p.table_size,
            p.seconds,
            p.mariadb,
            p.card,
            p.card_scale,
            if p.preconditioned {
                "each format preconditioned to steady state first (whole device written sequentially, then once in random 4 KiB writes)"
            } else {
                "fresh (not preconditioned)"
            },
            status_note(&p.status)
        ),
        charts,
        tables: vec![Table {
            title: "sysbench OLTP".into(),
            columns: [
                "format",
                "threads",
                "TPS",
                "QPS",
                "avg latency (ms)",
                "p99 latency (ms)",
                "max latency (ms)",
                "WA during run",
                "load avg",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }],
        ..Section::default()
    }
}

/// What `bench/pgbench.sh` writes to `JSON_OUT`: PostgreSQL's pgbench on
/// attached cards (real time), one row per format. The other applications' results are above.
#[derive(Debug, serde::Deserialize)]
pub struct PgbenchResults {
    pub pgbench_scale: u32,
    pub clients: u32,
    pub seconds: u32,
    pub card: String,
    pub card_scale: f64,
    pub results: Vec<PgbenchRow>,
}

#[derive(Debug, serde::Deserialize)]
pub struct PgbenchRow {
    pub target: String,
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub latency_p99_ms: f64,
    pub write_amplification: f64,
    pub precondition_write_amplification: f64,
}

impl PgbenchResults {
    /// Reads and checks a results file of `bench/pgbench.sh`.
    pub fn load(path: &Path) -> Result<PgbenchResults> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read pgbench results {}", path.display()))?;
        let r: PgbenchResults = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "pgbench results {}: {e} (expected the JSON_OUT file of bench/pgbench.sh)",
                path.display()
            )
        })?;
        if r.results.is_empty() {
            anyhow::bail!("pgbench results {}: no rows", path.display());
        }
        Ok(r)
    }
}

pub(crate) fn pgbench_section(p: &PgbenchResults) -> Section {
    let rows = p
        .results
        .iter()
        .map(|r| {
            vec![
                r.target.clone(),
                format!("{:.0}", r.tps),
                format!("{:.2}", r.latency_avg_ms),
                format!("{:.2}", r.latency_p99_ms),
                format!("{:.2}", r.precondition_write_amplification),
                format!("{:.2}", r.write_amplification),
            ]
        })
        .collect();
    Section {
        id: "pgbench".into(),
        title: "Application level: PostgreSQL pgbench".into(),
        text: format!(
            "PostgreSQL's pgbench (TPC-B like, scale factor {}, {} clients, {} s) on ext4 on the card attached as a \
             real block device (vsl attach, model timing), {} at --scale {}, each format preconditioned to steady \
             state first (whole device written sequentially, then once in random 4 KiB writes). Measured in wall \
             time by bench/pgbench.sh.",
            p.pgbench_scale, p.clients, p.seconds, p.card, p.card_scale
        ),
        tables: vec![Table {
            title: "pgbench".into(),
            columns: [
                "card",
                "TPS",
                "avg latency (ms)",
                "p99 latency (ms)",
                "WA preconditioning",
                "WA init + run",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }],
        ..Section::default()
    }
}
