//! `vsl fit` (issue 29): fits a preset's free parameters to measured
//! figures. Each objective evaluation runs the figures' tests on a scaled
//! card with the review's own code ([`crate::review::review_target`]: SNIA
//! steady-state preconditioning, then the thread × queue-depth matrix) and
//! sums the tolerance-normalised squared errors. The search is argmin's
//! Nelder-Mead over the parameters normalised to their ranges.

use crate::review::{review_target, ModelTarget, ReviewPlan, TargetResult};
use crate::stats::IntervalStats;
use device::{CardConfig, Format, Preset};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use workload::units::{parse_percent, parse_size};
use workload::Profile;

/// The statistics a figure can name, and how to read them off a run.
pub const STATISTICS: &[(&str, &str)] = &[
    ("iops", "I/Os per second"),
    ("read_iops", "read I/Os per second"),
    ("write_iops", "write I/Os per second"),
    ("mbps", "MB/s (10^6 bytes)"),
    ("mean_lat_us", "mean latency, µs"),
    ("p50_lat_us", "median latency, µs"),
    ("p99_lat_us", "99th percentile latency, µs"),
    ("p999_lat_us", "99.9th percentile latency, µs"),
    ("lat_stddev_us", "latency standard deviation, µs"),
    ("max_lat_us", "peak latency, µs"),
    ("wa", "write amplification (modelled cards only)"),
    (
        "first_round_iops",
        "I/Os per second of the test's first preconditioning round (16T/16Q, right after the purge and fill): the card's burst, or the host path's cap where that is lower; threads and qd must be 16",
    ),
    (
        "row",
        "a `vsl validate` row, named by `test`, of the stock (SYSTEM.md §4) or hp (§4b) table; threads and qd are not used",
    ),
];

fn statistic(s: &IntervalStats, name: &str) -> f64 {
    match name {
        "iops" => s.iops,
        "read_iops" => s.read_iops,
        "write_iops" => s.write_iops,
        "mbps" => s.mb_per_s,
        "mean_lat_us" => s.lat_avg_us,
        "p50_lat_us" => s.lat_p50_us,
        "p99_lat_us" => s.lat_p99_us,
        "p999_lat_us" => s.lat_p999_us,
        "lat_stddev_us" => s.lat_stddev_us,
        "max_lat_us" => s.lat_max_us,
        "wa" => s.write_amplification,
        // The first preconditioning round's stats, read as IOPS.
        "first_round_iops" => s.iops,
        _ => unreachable!("statistic checked on load"),
    }
}

/// One measured figure: a review profile (`test`) at a format and a
/// thread × queue-depth point, in steady state; or, with statistic `row`,
/// a row of the `vsl validate` tables (SYSTEM.md §4 and §4b) named by
/// `test`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// A workload profile (`vsl profiles`), e.g. 4k-randwrite, 8k-7030;
    /// or a `vsl validate` row's name.
    pub test: String,
    /// stock, hp, improved-write, max-write, op=PCT or capacity=SIZE.
    pub format: String,
    #[serde(default = "sixteen")]
    pub threads: u32,
    #[serde(default = "sixteen")]
    pub qd: u32,
    /// One of [`STATISTICS`].
    pub statistic: String,
    pub value: f64,
    /// Relative tolerance (0.1 = ±10 %): the error unit of the objective.
    pub tolerance: f64,
    /// The figure is a lower bound: a model at or above `value` is no
    /// error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_least: bool,
    /// The figure was measured as a range (`range = [low, high]`, e.g. a
    /// reviewer's 25.6-31.6 ms): a model inside it is no error, and one
    /// outside is judged against the nearer end. `value` lies in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
}

fn sixteen() -> u32 {
    16
}

impl Figure {
    pub fn label(&self) -> String {
        if self.is_row() {
            return format!("{}: {}", self.format, self.test);
        }
        format!(
            "{} {} {}T/{}Q {}",
            self.test, self.format, self.threads, self.qd, self.statistic
        )
    }

    /// What the model must land in to be exact: the measured range, `value`
    /// up for a lower bound, or `value` itself.
    pub fn interval(&self) -> (f64, f64) {
        let (lo, hi) = self.range.map_or((self.value, self.value), |[l, h]| (l, h));
        if self.at_least {
            (lo, f64::INFINITY)
        } else {
            (lo, hi)
        }
    }

    /// A `vsl validate` row rather than a review matrix point.
    pub fn is_row(&self) -> bool {
        self.statistic == "row"
    }

    /// The test's first preconditioning round rather than a matrix point.
    pub fn is_first_round(&self) -> bool {
        self.statistic == "first_round_iops"
    }

    fn check(&self, origin: &str, i: usize) -> Result<(), String> {
        let at = format!("{origin}: figure {} ({})", i + 1, self.label());
        if self.is_row() {
            if crate::validate::measured(&self.format, &self.test).is_none() {
                return Err(format!(
                    "{at}: no `vsl validate` row '{}' in the {} table (format stock or hp; rows as `vsl validate` prints them)",
                    self.test, self.format
                ));
            }
        } else if Profile::by_name(&self.test).is_none() {
            return Err(format!(
                "{at}: unknown test '{}' (a profile of `vsl profiles`)",
                self.test
            ));
        }
        parse_format(&self.format).map_err(|e| format!("{at}: {e}"))?;
        if !STATISTICS.iter().any(|(s, _)| *s == self.statistic) {
            return Err(format!(
                "{at}: unknown statistic '{}' (expected one of {})",
                self.statistic,
                STATISTICS
                    .iter()
                    .map(|(s, _)| *s)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !(self.tolerance > 0.0 && self.tolerance.is_finite()) {
            return Err(format!(
                "{at}: tolerance = {} must be > 0 (a relative tolerance, 0.1 = ±10 %)",
                self.tolerance
            ));
        }
        if !(self.value > 0.0 && self.value.is_finite()) {
            return Err(format!("{at}: value = {} must be > 0", self.value));
        }
        if let Some([lo, hi]) = self.range {
            if !(lo > 0.0 && lo <= self.value && self.value <= hi && hi.is_finite()) {
                return Err(format!(
                    "{at}: range = [{lo}, {hi}] must hold value = {} and be above 0 (range = [low, high], low <= value <= high)",
                    self.value
                ));
            }
        }
        if self.is_first_round() && (self.threads, self.qd) != (16, 16) {
            return Err(format!(
                "{at}: first_round_iops is measured at 16 threads x qd 16 (the preconditioning's), not {}/{}",
                self.threads, self.qd
            ));
        }
        if !(1..=1024).contains(&self.threads) || !(1..=4096).contains(&self.qd) {
            return Err(format!(
                "{at}: threads {} / qd {} out of range 1..=1024 / 1..=4096",
                self.threads, self.qd
            ));
        }
        Ok(())
    }
}

/// A format as a figure spells it.
pub fn parse_format(s: &str) -> Result<Format, String> {
    if let Some(op) = s.strip_prefix("op=") {
        Ok(Format::Overprovision(parse_percent(op)?))
    } else if let Some(c) = s.strip_prefix("capacity=") {
        Ok(Format::Capacity(parse_size(c)?))
    } else {
        Format::parse(s)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FiguresToml {
    figure: Vec<Figure>,
}

/// How to read a `vsl review` results.json as figures.
#[derive(Clone, Debug)]
pub struct ReviewInput {
    /// The format the device was measured at.
    pub format: String,
    /// Relative tolerance of every figure.
    pub tolerance: f64,
    /// Also each test's first preconditioning round (`first_round_iops`),
    /// where the review purged and filled the device before it: the
    /// device's burst, or the host path's cap where that is lower.
    pub first_round: bool,
}

impl Default for ReviewInput {
    fn default() -> Self {
        ReviewInput {
            format: "stock".into(),
            tolerance: 0.1,
            first_round: false,
        }
    }
}

/// Reads a figures table: TOML (`[[figure]]` tables) or CSV (header
/// `test,format,threads,qd,statistic,value,tolerance`), or a `vsl review`
/// results.json of a real device (`review` then says what it was
/// formatted as, how closely to fit it and which figures to take).
pub fn load_figures(path: &std::path::Path, review: &ReviewInput) -> Result<Vec<Figure>, String> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: {e}"))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let figures = match ext {
        "toml" => {
            let t: FiguresToml = toml::from_str(&text)
                .map_err(|e| format!("{origin}: {}", e.message().trim().replace('\n', " ")))?;
            t.figure
        }
        "csv" => parse_csv(&text, &origin)?,
        "json" => from_review_json(&text, &origin, review)?,
        _ => {
            return Err(format!(
                "{origin}: expected a .toml or .csv figures table or a vsl review results.json"
            ))
        }
    };
    if figures.is_empty() {
        return Err(format!("{origin}: no figures"));
    }
    for (i, f) in figures.iter().enumerate() {
        f.check(&origin, i)?;
    }
    Ok(figures)
}

fn parse_csv(text: &str, origin: &str) -> Result<Vec<Figure>, String> {
    const HEADER: &str = "test,format,threads,qd,statistic,value,tolerance";
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    // Two optional columns, low and high: a figure measured as a range
    // (both empty for one measured number).
    let columns = match lines.next() {
        Some((_, h)) if h.replace(' ', "") == HEADER => 7,
        Some((_, h)) if h.replace(' ', "") == format!("{HEADER},low,high") => 9,
        _ => {
            return Err(format!(
                "{origin}: the first line must be the header {HEADER} (optionally followed by ,low,high)"
            ))
        }
    };
    lines
        .map(|(n, l)| {
            let c: Vec<&str> = l.split(',').map(str::trim).collect();
            let at = |what: &str| format!("{origin}:{}: {what}", n + 1);
            if c.len() != columns {
                return Err(at(&format!("{} columns, expected {columns}", c.len())));
            }
            let num = |i: usize, name: &str| -> Result<f64, String> {
                c[i].parse::<f64>()
                    .map_err(|_| at(&format!("{name} '{}' is not a number", c[i])))
            };
            let int = |i: usize, name: &str| -> Result<u32, String> {
                c[i].parse::<u32>()
                    .map_err(|_| at(&format!("{name} '{}' is not a whole number", c[i])))
            };
            Ok(Figure {
                test: c[0].into(),
                format: c[1].into(),
                threads: int(2, "threads")?,
                qd: int(3, "qd")?,
                statistic: c[4].into(),
                value: num(5, "value")?,
                tolerance: num(6, "tolerance")?,
                at_least: false,
                range: match (columns, c.get(7), c.get(8)) {
                    (9, Some(&""), Some(&"")) | (7, ..) => None,
                    _ => Some([num(7, "low")?, num(8, "high")?]),
                },
            })
        })
        .collect()
}

/// The matrix points of a `vsl review` results.json (its first target) as
/// figures: IOPS and mean latency of every profile's every point, and with
/// `review.first_round` the first preconditioning round of every profile
/// that preconditioned from a purge (not one that reused the previous
/// profile's state).
fn from_review_json(text: &str, origin: &str, review: &ReviewInput) -> Result<Vec<Figure>, String> {
    let (format, tolerance) = (review.format.as_str(), review.tolerance);
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{origin}: not JSON ({e})"))?;
    let tool = v.get("tool").and_then(|t| t.as_str()).unwrap_or("");
    if tool != "openvsl" || v.get("targets").is_none() || v.get("plan").is_none() {
        let what = if tool.is_empty() {
            v.get("fio version")
                .map(|_| "fio's".to_string())
                .unwrap_or_else(|| "another tool's".into())
        } else {
            format!("'{tool}'")
        };
        return Err(format!(
            "{origin}: {what} JSON, not a `vsl review` results.json (tool \"openvsl\" with plan and targets)"
        ));
    }
    let targets = v["targets"].as_array().cloned().unwrap_or_default();
    let Some(t) = targets.first() else {
        return Err(format!("{origin}: the review has no targets"));
    };
    if targets.len() > 1 {
        return Err(format!(
            "{origin}: the review has {} targets; fit one device's review",
            targets.len()
        ));
    }
    let mut out = Vec::new();
    let mut first_rounds = 0;
    for p in t["profiles"].as_array().into_iter().flatten() {
        let test = p["profile"].as_str().unwrap_or_default();
        let first = p["precondition"].as_array().and_then(|r| r.first());
        if let (true, false, Some(r)) = (
            review.first_round,
            p["reused_state"].as_bool().unwrap_or(false),
            first,
        ) {
            let value = r["iops"].as_f64().ok_or_else(|| {
                format!("{origin}: {test}'s first preconditioning round has no iops")
            })?;
            first_rounds += 1;
            out.push(Figure {
                test: test.into(),
                format: format.into(),
                threads: 16,
                qd: 16,
                statistic: "first_round_iops".into(),
                value,
                tolerance,
                at_least: false,
                range: None,
            });
        }
        for m in p["matrix"].as_array().into_iter().flatten() {
            let (Some(threads), Some(qd)) = (m["threads"].as_u64(), m["qd"].as_u64()) else {
                return Err(format!(
                    "{origin}: a matrix point of {test} lacks threads/qd"
                ));
            };
            for (stat, key) in [("iops", "iops"), ("mean_lat_us", "lat_avg_us")] {
                let value = m["stats"][key].as_f64().ok_or_else(|| {
                    format!("{origin}: {test} {threads}T/{qd}Q has no stats.{key}")
                })?;
                out.push(Figure {
                    test: test.into(),
                    format: format.into(),
                    threads: threads as u32,
                    qd: qd as u32,
                    statistic: stat.into(),
                    value,
                    tolerance,
                    at_least: false,
                    range: None,
                });
            }
        }
    }
    if out.len() == first_rounds {
        return Err(format!(
            "{origin}: the review measured no profile matrix (run it with profiles)"
        ));
    }
    if review.first_round && first_rounds == 0 {
        return Err(format!(
            "{origin}: first preconditioning rounds asked for, but no test of the review preconditioned"
        ));
    }
    Ok(out)
}

/// A parameter `vsl fit` may move, with its physical range.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParamDef {
    /// Dotted path in the preset file.
    pub name: &'static str,
    pub lo: f64,
    pub hi: f64,
    /// Rounded to a whole number (a boolean: 0 off, 1 on).
    pub integer: bool,
    /// Why this range (docs/MODEL.md, "vsl fit").
    pub why: &'static str,
}

/// The free parameters: those docs/MODEL.md marks calibrated or assumption.
/// NAND times move within the era's spread around the data-sheet value
/// (multipliers of the base preset's figure).
pub const PARAMS: &[ParamDef] = &[
    ParamDef { name: "host.read_ns", lo: 5_000.0, hi: 60_000.0, integer: true, why: "calibrated: host software cost per read, 5-60 µs (a block driver to twice the first VSL's)" },
    ParamDef { name: "host.write_ns", lo: 5_000.0, hi: 60_000.0, integer: true, why: "calibrated: host software cost per write, 5-60 µs" },
    ParamDef { name: "host.thread_ns", lo: 0.0, hi: 2_000_000.0, integer: true, why: "calibrated: host time per I/O that holds the submitting thread, 0-2 ms: 0-40 µs on a native host, up to 2 ms where an emulated path carries the I/O (FUSE and loop in a VM: 0.65 ms measured, docs/MODEL.md)" },
    ParamDef { name: "vsl.reserved_fraction", lo: 0.05, hi: 0.25, integer: false, why: "calibrated: reserved erase units, 5-25 % (beyond the formatted spare)" },
    ParamDef { name: "vsl.gc_share", lo: 0.1, hi: 1.0, integer: false, why: "assumption: the groomer's share of the array's move capacity" },
    ParamDef { name: "vsl.gc_runway_lebs", lo: 0.0, hi: 4.0, integer: false, why: "assumption: free space, in erase units (fractions allowed), a foreground stall gains beyond the low watermark" },
    ParamDef { name: "vsl.catchup_lebs", lo: 0.0, hi: 8.0, integer: false, why: "assumption: catch-up grooming target once host writes stop after a stall, erase units above the low watermark" },
    ParamDef { name: "vsl.gc_yield_ns", lo: 0.0, hi: 200_000_000.0, integer: true, why: "assumption: how long the groomer makes no background moves after a foreground stall, 0-200 ms" },
    ParamDef { name: "vsl.idle_groom_fraction", lo: 0.0, hi: 1.0, integer: false, why: "assumption: the share of the spare the groomer frees while the host is idle" },
    ParamDef { name: "vsl.gc_background_lebs", lo: 3.0, hi: 16.0, integer: true, why: "assumption: the high watermark, above the low one (2)" },
    ParamDef { name: "vsl.buffer_units", lo: 4.0, hi: 64.0, integer: true, why: "assumption: the power-cut-protected write buffer, write units" },
    ParamDef { name: "vsl.read_priority", lo: 0.0, hi: 1.0, integer: true, why: "paper/assumption: reads overtake queued programs (1) or not (0)" },
    ParamDef { name: "vsl.read_pipe_depth", lo: 0.0, hi: 64.0, integer: true, why: "public driver configuration/assumption: host reads a member holds in hardware, 0 (no limit) to 64 (the VSL 3.2.15 default is 32)" },
    ParamDef { name: "vsl.read_priority_background_only", lo: 0.0, hi: 1.0, integer: true, why: "paper/assumption: with read priority, host reads overtake only background work, not a foreground stall's, and GC reads queue FIFO (1), or every read overtakes everything queued (0)" },
    ParamDef { name: "vsl.read_priority_gc_reads_in_order", lo: 0.0, hi: 1.0, integer: true, why: "assumption: with background-only read priority, GC reads keep their place among the reads (1) or host reads overtake them (0)" },
    ParamDef { name: "vsl.gc_pace_progress", lo: 0.0, hi: 1.0, integer: true, why: "assumption: the paced groomer counts free space continuously, the victim's scanned part included (1), or in whole free units (0)" },
    ParamDef { name: "vsl.gc_move_read_hold", lo: 0.0, hi: 1.0, integer: false, why: "assumption: the share of a moved sector's read transfer for which it also holds the write data path (0: each path only its own transfer; 1: the write path both)" },
    ParamDef { name: "vsl.gc_read_charge", lo: 0.0, hi: 1.0, integer: false, why: "assumption: moves each sector a host read takes from the NAND costs the groomer's budget (0.5: a read's bus time where the bus bounds the move capacity)" },
    ParamDef { name: "vsl.gc_stall_quantum_lebs", lo: 0.0, hi: 2.0, integer: false, why: "assumption: the sectors a foreground stall moves in all, in erase units of slots (the VSL's groomer has blocks-per and data-per limits whose values are not published)" },
    ParamDef { name: "vsl.catchup_moves_lebs", lo: 0.0, hi: 16.0, integer: false, why: "assumption: catch-up grooming counted in work, erase units of slots moved once host writes stop after a stall (freeing it sets vsl.catchup_lebs to 0)" },
    ParamDef { name: "vsl.gc_read_ahead_units", lo: 0.0, hi: 16.0, integer: true, why: "assumption: write units the groomer's reads run ahead of its moves beyond one round of the banks" },
    ParamDef { name: "vsl.catchup_after_ns", lo: 1e7, hi: 1e10, integer: true, why: "public driver configuration / assumption: how long without a host write counts as writes having stopped for catch-up grooming (10 ms, the idle detection, up to two of the VSL's 5 s groomer polls)" },
    ParamDef { name: "vsl.dispatch_in_order", lo: 0.0, hi: 1.0, integer: true, why: "assumption: the driver dispatches a member's I/Os in the order submitted (1) or lets writes pass reads waiting for the read pipe (0)" },
    ParamDef { name: "nand.read_ns", lo: 0.8, hi: 1.5, integer: false, why: "data sheet range: × the base tR (typical to maximum of the era)" },
    ParamDef { name: "nand.program_ns", lo: 0.7, hi: 1.6, integer: false, why: "data sheet range: × the base tPROG (typical to maximum of the era)" },
    ParamDef { name: "nand.bus_bytes_per_s", lo: 0.8, hi: 1.25, integer: false, why: "published range: × the base channel bus rate (ONFI 1.0 asynchronous timing modes: 40 MB/s is mode 4, tRC 25 ns; 50 MB/s mode 5, tRC 20 ns; 33 MB/s mode 3)" },
];

/// The default free set of `vsl fit`.
pub const DEFAULT_FREE: &[&str] = &[
    "host.read_ns",
    "host.write_ns",
    "vsl.reserved_fraction",
    "vsl.gc_share",
    "vsl.gc_background_lebs",
];

pub fn param(name: &str) -> Result<&'static ParamDef, String> {
    PARAMS.iter().find(|p| p.name == name).ok_or_else(|| {
        format!(
            "unknown free parameter '{name}' (expected some of {})",
            PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )
    })
}

/// The base preset with the free parameters set (their real values, not
/// normalised). NAND times are multipliers of the base's.
pub fn apply(base: &Preset, free: &[&ParamDef], values: &[f64]) -> Preset {
    let mut p = base.clone();
    for (d, &v) in free.iter().zip(values) {
        match d.name {
            "host.read_ns" => p.host_read_ns = v.round() as u64,
            "host.write_ns" => p.host_write_ns = v.round() as u64,
            "host.thread_ns" => p.host_thread_ns = v.round() as u64,
            "vsl.reserved_fraction" => p.vsl.reserved_fraction = v,
            "vsl.gc_share" => p.vsl.gc_share = v,
            "vsl.idle_groom_fraction" => p.vsl.idle_groom_fraction = v,
            "vsl.gc_runway_lebs" => p.vsl.gc_runway_lebs = v,
            "vsl.catchup_lebs" => p.vsl.catchup_lebs = v,
            "vsl.gc_yield_ns" => p.vsl.gc_yield_ns = v.round() as u64,
            "vsl.gc_background_lebs" => p.vsl.gc_background_lebs = v.round() as u32,
            "vsl.buffer_units" => p.vsl.buffer_units = v.round() as u64,
            "vsl.read_priority" => p.vsl.read_priority = v >= 0.5,
            "vsl.read_pipe_depth" => p.vsl.read_pipe_depth = v.round() as u32,
            "vsl.dispatch_in_order" => p.vsl.dispatch_in_order = v >= 0.5,
            "vsl.gc_pace_progress" => p.vsl.gc_pace_progress = v >= 0.5,
            "vsl.gc_move_read_hold" => p.vsl.gc_move_read_hold = v,
            "vsl.gc_read_charge" => p.vsl.gc_read_charge = v,
            "vsl.gc_stall_quantum_lebs" => p.vsl.gc_stall_quantum_lebs = v,
            "vsl.catchup_after_ns" => p.vsl.catchup_after_ns = Some(v.round() as u64),
            "vsl.gc_read_ahead_units" => p.vsl.gc_read_ahead_units = v.round() as u32,
            "vsl.catchup_moves_lebs" => {
                // One target or the other: work replaces free space.
                p.vsl.catchup_moves_lebs = v;
                if v > 0.0 {
                    p.vsl.catchup_lebs = 0.0;
                }
            }
            "vsl.read_priority_background_only" => p.vsl.read_priority_background_only = v >= 0.5,
            "vsl.read_priority_gc_reads_in_order" => {
                p.vsl.read_priority_gc_reads_in_order = v >= 0.5
            }
            "nand.read_ns" => p.timing.read_ns = (base.timing.read_ns as f64 * v).round() as u64,
            "nand.program_ns" => {
                p.timing.program_ns = (base.timing.program_ns as f64 * v).round() as u64
            }
            "nand.bus_bytes_per_s" => {
                p.timing.bus_bytes_per_s = (base.timing.bus_bytes_per_s as f64 * v).round() as u64
            }
            _ => unreachable!("checked by param()"),
        }
        p.sources
            .insert(d.name.into(), format!("calibrated: vsl fit ({})", d.why));
    }
    p
}

/// The real value a normalised coordinate (clamped to 0..=1) stands for.
pub fn denormalise(d: &ParamDef, x: f64) -> f64 {
    let v = d.lo + x.clamp(0.0, 1.0) * (d.hi - d.lo);
    if d.integer {
        v.round()
    } else {
        v
    }
}

/// The normalised coordinate of a preset's current value.
pub fn normalise(d: &ParamDef, base: &Preset) -> f64 {
    let v = match d.name {
        "host.read_ns" => base.host_read_ns as f64,
        "host.write_ns" => base.host_write_ns as f64,
        "host.thread_ns" => base.host_thread_ns as f64,
        "vsl.reserved_fraction" => base.vsl.reserved_fraction,
        "vsl.gc_share" => base.vsl.gc_share,
        "vsl.idle_groom_fraction" => base.vsl.idle_groom_fraction,
        "vsl.gc_runway_lebs" => base.vsl.gc_runway_lebs,
        "vsl.catchup_lebs" => base.vsl.catchup_lebs,
        "vsl.gc_yield_ns" => base.vsl.gc_yield_ns as f64,
        "vsl.gc_background_lebs" => base.vsl.gc_background_lebs as f64,
        "vsl.buffer_units" => base.vsl.buffer_units as f64,
        "vsl.read_priority" => base.vsl.read_priority as u8 as f64,
        "vsl.read_pipe_depth" => base.vsl.read_pipe_depth as f64,
        "vsl.dispatch_in_order" => base.vsl.dispatch_in_order as u8 as f64,
        "vsl.gc_pace_progress" => base.vsl.gc_pace_progress as u8 as f64,
        "vsl.gc_move_read_hold" => base.vsl.gc_move_read_hold,
        "vsl.gc_read_charge" => base.vsl.gc_read_charge,
        "vsl.gc_stall_quantum_lebs" => base.vsl.gc_stall_quantum_lebs,
        "vsl.catchup_after_ns" => base.vsl.catchup_after_ns.unwrap_or(10_000_000) as f64,
        "vsl.catchup_moves_lebs" => base.vsl.catchup_moves_lebs,
        "vsl.gc_read_ahead_units" => base.vsl.gc_read_ahead_units as f64,
        "vsl.read_priority_background_only" => base.vsl.read_priority_background_only as u8 as f64,
        "vsl.read_priority_gc_reads_in_order" => {
            base.vsl.read_priority_gc_reads_in_order as u8 as f64
        }
        "nand.read_ns" | "nand.program_ns" | "nand.bus_bytes_per_s" => 1.0,
        _ => unreachable!(),
    };
    ((v - d.lo) / (d.hi - d.lo)).clamp(0.0, 1.0)
}

/// How each objective evaluation runs.
#[derive(Clone, Debug, Serialize)]
pub struct FitRun {
    pub scale: f64,
    pub seed: u64,
    /// Review timing (round, window, precondition cap), e.g. 10s, 5s, 300s.
    pub round: String,
    pub window: String,
    pub max_precondition: String,
    /// The ioMemory device(s) modelled (one member when the figures are of
    /// one attached loop device).
    pub member: device::MemberSel,
    /// Threads an evaluation may use: with 2 or more, the stock and hp
    /// tables run at once (the figures are the same either way).
    #[serde(skip)]
    pub jobs: usize,
}

/// The model's value of every figure for one preset.
pub fn evaluate(
    preset: &'static Preset,
    figures: &[Figure],
    run: &FitRun,
) -> Result<Vec<f64>, String> {
    let mut by_format: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in figures.iter().enumerate() {
        if !f.is_row() {
            by_format.entry(f.format.as_str()).or_default().push(i);
        }
    }
    let mut out = vec![0.0; figures.len()];
    evaluate_rows(preset, figures, run, &mut out)?;
    for (format, idx) in by_format {
        let mut cfg = CardConfig::new(preset);
        cfg.format = parse_format(format)?;
        cfg.scale = run.scale;
        cfg.gc_seed = run.seed;
        cfg.member = run.member;
        let uniq = |f: &dyn Fn(&Figure) -> String| {
            let mut v: Vec<String> = idx.iter().map(|&i| f(&figures[i])).collect();
            v.sort();
            v.dedup();
            v
        };
        let profiles = uniq(&|f| f.test.clone());
        // The matrix points the figures name (a first round is no matrix point).
        let points = || {
            idx.iter()
                .map(|&i| &figures[i])
                .filter(|f| !f.is_first_round())
        };
        let mut threads: Vec<u32> = points().map(|f| f.threads).collect();
        threads.sort();
        threads.dedup();
        let mut qds: Vec<u32> = points().map(|f| f.qd).collect();
        qds.sort();
        qds.dedup();
        let plan = ReviewPlan {
            seed: run.seed,
            scale: run.scale,
            profiles,
            matrix_threads: threads,
            matrix_qd: qds,
            round: run.round.clone(),
            window: run.window.clone(),
            max_precondition: run.max_precondition.clone(),
            standard: false,
            sysbench: false,
            ioanalyzer: false,
            ..ReviewPlan::default()
        };
        let mut target = ModelTarget::new(&format!("{}:{format}", preset.name), cfg)
            .map_err(|e| e.to_string())?;
        let r: TargetResult = review_target(&mut target, &plan, &mut |_| {});
        if let Some(e) = r.error {
            return Err(e);
        }
        for &i in &idx {
            let f = &figures[i];
            let p = r.profiles.iter().find(|p| p.profile == f.test);
            let stats = if f.is_first_round() {
                p.and_then(|p| p.precondition.first())
            } else {
                p.and_then(|p| {
                    p.matrix
                        .iter()
                        .find(|m| m.threads == f.threads && m.qd == f.qd)
                        .map(|m| &m.stats)
                })
            }
            .ok_or_else(|| format!("no result for {}", f.label()))?;
            out[i] = statistic(stats, &f.statistic);
        }
    }
    Ok(out)
}

/// The `vsl validate` rows among `figures`: both tables (as far as the
/// rows asked for need them) on a card scaled by `run.scale`, with the
/// run's round, window and preconditioning cap.
fn evaluate_rows(
    preset: &'static Preset,
    figures: &[Figure],
    run: &FitRun,
    out: &mut [f64],
) -> Result<(), String> {
    use crate::validate::{validate_formats, ValidateOptions};
    let rows: Vec<(String, String)> = figures
        .iter()
        .filter(|f| f.is_row())
        .map(|f| (f.format.clone(), f.test.clone()))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let ns = |what: &str, s: &str| {
        workload::units::parse_duration_ns(s).map_err(|e| format!("{what}: {e}"))
    };
    let o = ValidateOptions {
        preset,
        scale: run.scale,
        window_ns: ns("window", &run.window)?,
        round_ns: ns("round", &run.round)?,
        max_precondition_ns: ns("max precondition", &run.max_precondition)?,
        seed: run.seed,
        only: Some(rows),
        purge: false,
        min_capacities: 1.0,
    };
    let has = |format: &str| o.only.iter().flatten().any(|(f, _)| f == format);
    let got: Vec<_> = validate_formats(&o, has("stock"), has("hp"), run.jobs, &|_| {})
        .map_err(|e| e.to_string())?
        .into_iter()
        .flat_map(|(_, rows, _)| rows)
        .collect();
    for (i, f) in figures.iter().enumerate().filter(|(_, f)| f.is_row()) {
        out[i] = got
            .iter()
            .find(|r| r.format == f.format && r.test == f.test)
            .map(|r| r.model)
            .ok_or_else(|| format!("no result for {}", f.label()))?;
    }
    Ok(())
}

/// Tolerance-normalised error of one figure: [`relative_error`] / tol.
pub fn error(f: &Figure, model: f64) -> f64 {
    relative_error(f, model) / f.tolerance
}

/// model / measured − 1, the measured figure being the nearer end of its
/// [`Figure::interval`]: 0 inside a measured range or above a lower bound
/// the model meets (as `vsl validate` judges its rows).
pub fn relative_error(f: &Figure, model: f64) -> f64 {
    let (lo, hi) = f.interval();
    if model < lo {
        model / lo - 1.0
    } else if model > hi {
        model / hi - 1.0
    } else {
        0.0
    }
}

/// The objective: the sum of squared normalised errors of `use_fig`.
pub fn cost(figures: &[Figure], model: &[f64], use_fig: &[bool]) -> f64 {
    figures
        .iter()
        .zip(model)
        .zip(use_fig)
        .filter(|(_, &u)| u)
        .map(|((f, &m), _)| error(f, m).powi(2))
        .sum()
}

/// How much a search's best cost must fall, as a share of it, to count as
/// progress for [`nelder_mead`]'s patience, by default (`vsl fit
/// --progress`). On the 640 MLC's fit, points within 0.1 % of every range
/// of the best cost 70-125 (single-window spreads and peaks): a gain of a
/// few per cent is one of those draws, not a better point.
pub const PROGRESS: f64 = 0.05;

/// How a Nelder-Mead search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchEnd {
    /// The simplex shrank below its tolerance, or the iterations ran out.
    Converged,
    /// `patience` objective calls in a row lowered the best cost by less
    /// than `progress` of it.
    Stalled,
    /// No search (`vsl fit --max-iters 0`): the base preset evaluated.
    None,
}

/// Nelder-Mead (argmin) over normalised coordinates, from `start` with an
/// initial simplex of `step` along each axis (the direction of each step
/// drawn from `seed`, so a seed is a different but repeatable start).
/// `eval` is the objective; it sees coordinates clamped to 0..=1.
///
/// With `patience` > 0 the search also stops once that many objective
/// calls in a row have not lowered the best cost by `progress` of it
/// (a share; [`PROGRESS`] by default): a
/// model's objective is noisy (a run's stalls fall differently at nearby
/// points), and a simplex shrinking to the tolerance on it spends most of
/// its evaluations on that noise. Returns the best point seen, its cost and
/// how the search ended.
pub fn nelder_mead(
    start: &[f64],
    step: f64,
    seed: u64,
    max_iters: u64,
    patience: usize,
    progress_share: f64,
    eval: &mut dyn FnMut(&[f64]) -> f64,
) -> Result<(Vec<f64>, f64, SearchEnd), String> {
    use argmin::core::{CostFunction, Executor};
    use argmin::solver::neldermead::NelderMead;
    use std::cell::RefCell;

    type Objective<'a> = &'a mut dyn FnMut(&[f64]) -> f64;
    /// The best point seen, and the calls since the best cost last fell by
    /// `progress` of it.
    struct Progress {
        best: Option<(Vec<f64>, f64)>,
        reference: f64,
        since: usize,
        stalled: bool,
    }
    struct Problem<'a> {
        eval: RefCell<Objective<'a>>,
        patience: usize,
        gain: f64,
        progress: std::rc::Rc<RefCell<Progress>>,
    }
    impl CostFunction for Problem<'_> {
        type Param = Vec<f64>;
        type Output = f64;
        fn cost(&self, p: &Vec<f64>) -> Result<f64, argmin::core::Error> {
            let x: Vec<f64> = p.iter().map(|v| v.clamp(0.0, 1.0)).collect();
            let c = (self.eval.borrow_mut())(&x);
            let mut g = self.progress.borrow_mut();
            if g.best.as_ref().is_none_or(|(_, b)| c < *b) {
                g.best = Some((x, c));
            }
            if c < g.reference * (1.0 - self.gain) {
                g.reference = c;
                g.since = 0;
            } else {
                g.since += 1;
            }
            if self.patience > 0 && g.since >= self.patience {
                g.stalled = true;
                return Err(argmin::core::Error::msg("the search stalled"));
            }
            Ok(c)
        }
    }
    let mut rng = sim::Prng::from_seed(seed);
    let mut simplex = vec![start.to_vec()];
    for i in 0..start.len() {
        let mut v = start.to_vec();
        let up = rng.next_u64() & 1 == 0;
        v[i] = if (up && v[i] + step <= 1.0) || v[i] - step < 0.0 {
            v[i] + step
        } else {
            v[i] - step
        };
        simplex.push(v);
    }
    let solver = NelderMead::new(simplex)
        .with_sd_tolerance(1e-3)
        .map_err(|e| e.to_string())?;
    let progress = std::rc::Rc::new(RefCell::new(Progress {
        best: None,
        reference: f64::INFINITY,
        since: 0,
        stalled: false,
    }));
    let problem = Problem {
        eval: RefCell::new(eval),
        patience,
        gain: progress_share,
        progress: progress.clone(),
    };
    let res = Executor::new(problem, solver)
        .configure(|s| s.max_iters(max_iters))
        .run();
    let g = progress.borrow();
    match res {
        Ok(res) => {
            let st = res.state();
            let best = st
                .best_param
                .clone()
                .ok_or("the search evaluated nothing")?
                .into_iter()
                .map(|v| v.clamp(0.0, 1.0))
                .collect();
            Ok((best, st.best_cost, SearchEnd::Converged))
        }
        // The objective stopped the run: the best point it saw.
        Err(_) if g.stalled => {
            let (best, cost) = g.best.clone().ok_or("the search evaluated nothing")?;
            Ok((best, cost, SearchEnd::Stalled))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A response surface of every figure over the normalised free
/// parameters: per figure a quadratic in them (a linear one when there are
/// too few points for a quadratic), fitted by least squares to points the
/// search evaluated. Figures whose values are all positive are fitted in
/// log space, since errors are ratios. Leave-one-out refits search this
/// surface instead of the model; each refit's point is then evaluated on
/// the model (`vsl fit --loo`).
#[derive(Clone, Debug)]
pub struct Surrogate {
    quadratic: bool,
    /// Per figure: coefficients, and whether it was fitted in log space.
    coef: Vec<(Vec<f64>, bool)>,
}

/// A figure's surface value (before `exp` for a log-space figure): its
/// coefficients times the point's terms.
fn dot(coef: &[f64], terms: &[f64]) -> f64 {
    coef.iter().zip(terms).map(|(c, t)| c * t).sum()
}

fn surface_terms(x: &[f64], quadratic: bool) -> Vec<f64> {
    let mut t = Vec::with_capacity(1 + x.len() * (x.len() + 3) / 2);
    t.push(1.0);
    t.extend_from_slice(x);
    if quadratic {
        for i in 0..x.len() {
            for j in i..x.len() {
                t.push(x[i] * x[j]);
            }
        }
    }
    t
}

/// Least squares `a c ≈ y` through the normal equations with a small ridge
/// (the points of a search can be nearly collinear), by Gaussian
/// elimination with partial pivoting; None when singular.
fn least_squares(a: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let k = a.first()?.len();
    let mut m = vec![vec![0.0; k + 1]; k];
    for (row, &yv) in a.iter().zip(y) {
        for i in 0..k {
            for j in 0..k {
                m[i][j] += row[i] * row[j];
            }
            m[i][k] += row[i] * yv;
        }
    }
    let trace: f64 = (0..k).map(|i| m[i][i]).sum();
    for (i, r) in m.iter_mut().enumerate() {
        r[i] += 1e-9 * trace.max(1e-300) / k as f64;
    }
    for col in 0..k {
        let piv = (col..k).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))?;
        if m[piv][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, piv);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            if r != col && f != 0.0 {
                for (v, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *v -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| m[i][k] / m[i][i]).collect())
}

impl Surrogate {
    /// Fits the surface to `points` (normalised parameters, the model's
    /// figures there); None with fewer points than a linear surface needs
    /// plus one.
    pub fn fit(points: &[(Vec<f64>, Vec<f64>)]) -> Option<Surrogate> {
        let (x0, m0) = points.first()?;
        let n = x0.len();
        let quadratic = points.len() >= 2 + 1 + n * (n + 3) / 2;
        if points.len() < n + 2 {
            return None;
        }
        let a: Vec<Vec<f64>> = points
            .iter()
            .map(|(x, _)| surface_terms(x, quadratic))
            .collect();
        let coef = (0..m0.len())
            .map(|j| {
                let log = points.iter().all(|(_, m)| m[j] > 0.0);
                let y: Vec<f64> = points
                    .iter()
                    .map(|(_, m)| if log { m[j].ln() } else { m[j] })
                    .collect();
                least_squares(&a, &y).map(|c| (c, log))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Surrogate { quadratic, coef })
    }

    pub fn is_quadratic(&self) -> bool {
        self.quadratic
    }

    /// The surface moved, per figure, so that it gives `model` at `x`
    /// exactly (in log space for a figure fitted there): a least-squares
    /// surface passes near, not through, the points, and at the fitted
    /// point the model's own values are known.
    pub fn anchored(mut self, x: &[f64], model: &[f64]) -> Surrogate {
        let t = surface_terms(x, self.quadratic);
        for ((c, log), &m) in self.coef.iter_mut().zip(model) {
            let v = dot(c, &t);
            let target = if *log {
                if m > 0.0 {
                    m.ln()
                } else {
                    continue;
                }
            } else {
                m
            };
            c[0] += target - v;
        }
        self
    }

    /// Every figure's value on the surface at normalised point `x`.
    pub fn predict(&self, x: &[f64]) -> Vec<f64> {
        let t = surface_terms(x, self.quadratic);
        self.coef
            .iter()
            .map(|(c, log)| {
                let v = dot(c, &t);
                if *log {
                    v.exp()
                } else {
                    v
                }
            })
            .collect()
    }
}

/// Leave-one-out on a response surface: the surface anchored at the
/// fitted point `best` (where the model gave `model`), its own optimum
/// with every figure, and the refit without each figure of `refit`
/// (`None`: not refitted), taken as `best` moved by that refit's distance
/// from the surface's optimum. A least-squares surface's optimum lies off
/// the model's; the offset is the surface's error, the same for every
/// refit, not the left-out figure's weight: so a figure that adds nothing
/// to the objective near the fit is refitted at `best` exactly. Each
/// search is [`nelder_mead`] from `best` with `step`.
pub fn surface_refits(
    surface: Surrogate,
    figures: &[Figure],
    best: &[f64],
    model: &[f64],
    refit: &[bool],
    step: f64,
    seed: u64,
) -> Result<(Vec<f64>, Vec<Option<Vec<f64>>>), String> {
    let s = surface.anchored(best, model);
    let search = |use_fig: &[bool]| {
        nelder_mead(best, step, seed, 400, 0, PROGRESS, &mut |x| {
            cost(figures, &s.predict(x), use_fig)
        })
        .map(|(p, _, _)| p)
    };
    let all = vec![true; figures.len()];
    let optimum = search(&all)?;
    let points = refit
        .iter()
        .enumerate()
        .map(|(j, &r)| {
            if !r {
                return Ok(None);
            }
            let mut use_fig = all.clone();
            use_fig[j] = false;
            let p = search(&use_fig)?;
            Ok(Some(
                best.iter()
                    .zip(p.iter().zip(&optimum))
                    .map(|(b, (p, o))| (b + p - o).clamp(0.0, 1.0))
                    .collect(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((optimum, points))
}

/// The objective at a point whose card failed to build or run.
pub const FAILED_COST: f64 = 1e9;

/// The objective's noise as a fit saw it: the cost of one figure off by
/// its tolerance (1), `progress` of the fit's `cost`, or the spread of the
/// costs of the `points` evaluated around the fitted one (within 1 % of
/// every range of `best`; three or more), whichever is largest. A nearby
/// run's stalls fall differently, so costs within this of each other are
/// not told apart.
pub fn objective_noise(
    figures: &[Figure],
    points: &[(Vec<f64>, Vec<f64>)],
    best: &[f64],
    cost_at_best: f64,
    progress: f64,
) -> (f64, usize) {
    let all = vec![true; figures.len()];
    let near: Vec<f64> = points
        .iter()
        .filter(|(x, _)| x.iter().zip(best).all(|(a, b)| (a - b).abs() <= 0.01))
        .map(|(_, m)| cost(figures, m, &all))
        .collect();
    let spread = if near.len() >= 3 {
        let lo = near.iter().copied().fold(f64::MAX, f64::min);
        let hi = near.iter().copied().fold(f64::MIN, f64::max);
        hi - lo
    } else {
        0.0
    };
    (1f64.max(progress * cost_at_best).max(spread), near.len())
}

/// A surface's leave-one-out refit that the model did not bear out.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RefitRejected {
    /// The surface's refit point (normalised).
    pub surface_point: Vec<f64>,
    /// The held-in figures' cost on the model there (a failed card:
    /// [`FAILED_COST`])...
    pub held_in_cost: f64,
    /// ... and at the fit: the refit is rejected when it is worse than
    /// this by more than the objective's noise.
    pub fit_held_in_cost: f64,
    /// The held-in cost where the model's own refit started (the best
    /// point evaluated so far for them) and where it ended.
    pub start_cost: f64,
    pub end_cost: f64,
}

/// How the model's own refit searches (a [`nelder_mead`]).
pub struct RefitSearch {
    pub step: f64,
    pub seed: u64,
    pub max_iters: u64,
    pub patience: usize,
    pub progress: f64,
}

/// A surface's refit without figure `j`, checked on the model. The refit
/// is the point that fits the other figures best; the fit itself is a
/// point those figures allow, at the held-in cost `fit_model` gives. So a
/// refit point where the model (`model`) fits them worse than the fit does,
/// by more than `noise`, is not a refit but the surface's error (on the
/// 640 MLC's fit of 2026-12-07 the surface's refit without the hp write
/// spread, where no other figure pins the move hold, went to a held-in
/// cost of 41 against the fit's 9.5). Such a point is replaced by the
/// model's own refit: `search` from the point evaluated so far (`points`,
/// the surface's point included) that fits the held-in figures best.
/// Returns the refit's point and, when the surface's was rejected, why.
pub fn checked_refit(
    figures: &[Figure],
    j: usize,
    surface_point: Vec<f64>,
    fit_model: &[f64],
    points: &[(Vec<f64>, Vec<f64>)],
    noise: f64,
    search: &RefitSearch,
    model: &mut dyn FnMut(&[f64]) -> Option<Vec<f64>>,
) -> Result<(Vec<f64>, Option<RefitRejected>), String> {
    let mut held_in = vec![true; figures.len()];
    held_in[j] = false;
    let held = |m: &Option<Vec<f64>>| {
        m.as_ref()
            .map_or(FAILED_COST, |m| cost(figures, m, &held_in))
    };
    let at_refit = held(&model(&surface_point));
    let at_fit = cost(figures, fit_model, &held_in);
    if at_refit <= at_fit + noise {
        return Ok((surface_point, None));
    }
    // The best start the run knows of; ties go to the earlier point (the
    // order of `points`), so the start is the same each run.
    let (start, start_cost) = points
        .iter()
        .map(|(x, m)| (x, cost(figures, m, &held_in)))
        .chain(std::iter::once((&surface_point, at_refit)))
        .fold(None::<(&Vec<f64>, f64)>, |b, (x, c)| match b {
            Some((_, bc)) if bc <= c => b,
            _ => Some((x, c)),
        })
        .map(|(x, c)| (x.clone(), c))
        .expect("the surface's point at least");
    let (point, end_cost, _) = nelder_mead(
        &start,
        search.step,
        search.seed,
        search.max_iters,
        search.patience,
        search.progress,
        &mut |x| held(&model(x)),
    )?;
    Ok((
        point,
        Some(RefitRejected {
            surface_point,
            held_in_cost: at_refit,
            fit_held_in_cost: at_fit,
            start_cost,
            end_cost,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str) -> Result<Vec<Figure>, String> {
        let p = std::env::temp_dir().join(format!("lab-fit-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let r = load_figures(&p, &ReviewInput::default());
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn row_figures_default_their_point_and_name_a_row() {
        let row = "[[figure]]\ntest = \"Web Server preconditioning average latency\"\nformat = \"stock\"\nstatistic = \"row\"\nvalue = 20\ntolerance = 0.07\nat_least = true\n";
        let f = load("row.toml", row).unwrap();
        assert_eq!((f[0].threads, f[0].qd), (16, 16));
        assert!(f[0].is_row() && f[0].at_least);
        assert_eq!(
            f[0].label(),
            "stock: Web Server preconditioning average latency"
        );
        // File Server's steady state is a row of the stock table only.
        let fs = row.replace("Web Server preconditioning", "File Server steady-state");
        assert!(load("fs.toml", &fs).is_ok());
        let e = load("hp.toml", &fs.replace("\"stock\"", "\"hp\"")).unwrap_err();
        assert!(
            e.contains("no `vsl validate` row") && e.contains("hp table"),
            "{e}"
        );
    }

    /// A review results.json of two tests: the first preconditioned from
    /// a purge (first round 24,550 IOPS), the second on its state.
    const REVIEW: &str = r#"{"tool": "openvsl", "plan": {}, "targets": [{"profiles": [
        {"profile": "4k-randwrite", "reused_state": false,
         "precondition": [{"iops": 24550.4}, {"iops": 17188.2}],
         "matrix": [{"threads": 16, "qd": 16, "stats": {"iops": 12516.0, "lat_avg_us": 20277.0}}]},
        {"profile": "4k-randread", "reused_state": true, "precondition": [],
         "matrix": [{"threads": 16, "qd": 16, "stats": {"iops": 90000.0, "lat_avg_us": 2800.0}}]}]}]}"#;

    fn load_review(text: &str, first_round: bool) -> Result<Vec<Figure>, String> {
        let r = ReviewInput {
            first_round,
            ..ReviewInput::default()
        };
        from_review_json(text, "r.json", &r)
    }

    #[test]
    fn a_review_gives_first_rounds_only_when_asked_and_only_after_a_purge() {
        let plain = load_review(REVIEW, false).unwrap();
        assert_eq!(plain.len(), 4);
        assert!(!plain.iter().any(Figure::is_first_round));
        let with = load_review(REVIEW, true).unwrap();
        let first: Vec<&Figure> = with.iter().filter(|f| f.is_first_round()).collect();
        // The read test reused the write test's state: no first round.
        assert_eq!(first.len(), 1, "{with:?}");
        assert_eq!(first[0].test, "4k-randwrite");
        assert_eq!(first[0].value, 24550.4);
        assert_eq!(
            first[0].label(),
            "4k-randwrite stock 16T/16Q first_round_iops"
        );
        assert_eq!(with.len(), 5);
        // Asked for where no test preconditioned: an error, not silence.
        let none = REVIEW.replace(r#"[{"iops": 24550.4}, {"iops": 17188.2}]"#, "[]");
        let e = load_review(&none, true).unwrap_err();
        assert!(e.contains("no test of the review preconditioned"), "{e}");
        assert_eq!(load_review(&none, false).unwrap().len(), 4);
        // A first round is measured at the preconditioning's 16T/16Q.
        let t = "[[figure]]\ntest = \"4k-randwrite\"\nformat = \"stock\"\nqd = 8\nstatistic = \"first_round_iops\"\nvalue = 24550\ntolerance = 0.1\n";
        let e = load("fr.toml", t).unwrap_err();
        assert!(
            e.contains("first_round_iops is measured at 16 threads x qd 16"),
            "{e}"
        );
        assert!(load("fr16.toml", &t.replace("qd = 8", "qd = 16")).is_ok());
    }

    #[test]
    fn the_surface_recovers_a_quadratic_and_falls_back_to_linear() {
        // Two figures over two parameters: one quadratic (fitted in log
        // space, since it is positive), one that changes sign (fitted as is).
        let f = |x: &[f64]| {
            vec![
                (1.0 + x[0] - 0.5 * x[1] + 0.3 * x[0] * x[1] + 0.2 * x[1] * x[1]).exp(),
                2.0 * x[0] - 3.0 * x[1] + 0.25,
            ]
        };
        let mut rng = sim::Prng::from_seed(7);
        let pts: Vec<(Vec<f64>, Vec<f64>)> = (0..12)
            .map(|_| {
                let x = vec![rng.next_f64(), rng.next_f64()];
                let m = f(&x);
                (x, m)
            })
            .collect();
        let s = Surrogate::fit(&pts).expect("enough points");
        assert!(s.is_quadratic());
        for x in [[0.1, 0.9], [0.5, 0.5], [0.8, 0.2]] {
            let (got, want) = (s.predict(&x), f(&x));
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-6 * w.abs().max(1.0), "{x:?}: {g} vs {w}");
            }
        }
        // Four points: too few for a quadratic in two parameters (6 terms
        // plus 2), enough for a plane, which fits the linear figure exactly.
        let s = Surrogate::fit(&pts[..4]).expect("a plane");
        assert!(!s.is_quadratic());
        let x = [0.3, 0.6];
        assert!((s.predict(&x)[1] - f(&x)[1]).abs() < 1e-6);
        assert!(Surrogate::fit(&pts[..3]).is_none());
    }

    #[test]
    fn an_anchored_surface_passes_through_its_point_and_keeps_its_slopes() {
        // A plane fitted to noisy points misses a given point; anchored
        // there it gives that point's values exactly, and differences
        // between other points are the unanchored surface's.
        let mut rng = sim::Prng::from_seed(11);
        let pts: Vec<(Vec<f64>, Vec<f64>)> = (0..5)
            .map(|_| {
                let x = vec![rng.next_f64(), rng.next_f64()];
                let noise = 0.1 * (rng.next_f64() - 0.5);
                (
                    x.clone(),
                    vec![(2.0 + x[0] - x[1] + noise).exp(), 3.0 * x[0] - 1.5 + noise],
                )
            })
            .collect();
        let s = Surrogate::fit(&pts).expect("a plane");
        let at = [0.4, 0.7];
        let model = [9.0, -0.5];
        let before = s.predict(&at);
        assert!((before[0] - 9.0).abs() > 1e-3 && (before[1] + 0.5).abs() > 1e-3);
        let a = s.clone().anchored(&at, &model);
        let got = a.predict(&at);
        assert!(
            (got[0] - 9.0).abs() < 1e-9 && (got[1] + 0.5).abs() < 1e-9,
            "{got:?}"
        );
        let (p, q) = ([0.1, 0.2], [0.9, 0.3]);
        // Ratios for the log-space figure, differences for the other.
        let ratio = |s: &Surrogate| s.predict(&p)[0] / s.predict(&q)[0];
        let diff = |s: &Surrogate| s.predict(&p)[1] - s.predict(&q)[1];
        assert!((ratio(&a) - ratio(&s)).abs() < 1e-9);
        assert!((diff(&a) - diff(&s)).abs() < 1e-9);
    }

    #[test]
    fn surface_refits_move_the_fit_by_what_a_figure_weighs_and_no_more() {
        // Two parameters. Figures a and d follow x0 alone, with different
        // slopes, and disagree (a wants x0 ≈ 0.77, d 0.5); b follows x0 and
        // x1; c is a lower bound met everywhere near the fit. The surface
        // is fitted to points of a model it cannot follow exactly (a sixth
        // power), so its optimum lies off the model's.
        let fig = |test: &str, value: f64, at_least: bool| row(test, value, 0.1, at_least);
        let figures = vec![
            fig("a", 2.0, false),
            fig("b", 3.0, false),
            fig("c", 0.5, true),
            fig("d", 2.0, false),
        ];
        let model = |x: &[f64]| {
            let a = 1.0 + 0.5 * x[0] + 3.0 * x[0].powi(6);
            vec![a, 2.0 + x[0] + 1.5 * x[1], 1.0 + x[1], 1.0 + 2.0 * x[0]]
        };
        let mut rng = sim::Prng::from_seed(5);
        let pts: Vec<(Vec<f64>, Vec<f64>)> = (0..30)
            .map(|_| {
                let x = vec![rng.next_f64(), rng.next_f64()];
                (x.clone(), model(&x))
            })
            .collect();
        let all = [true; 4];
        // The model's own fit, on a fine grid.
        let grid = |use_fig: &[bool]| {
            let mut best = (f64::MAX, vec![0.0, 0.0]);
            for i in 0..=400 {
                for k in 0..=400 {
                    let x = vec![i as f64 / 400.0, k as f64 / 400.0];
                    let c = cost(&figures, &model(&x), use_fig);
                    if c < best.0 {
                        best = (c, x);
                    }
                }
            }
            best.1
        };
        let best = grid(&all);
        let at = model(&best);
        assert!(cost(&figures, &at, &all) > 0.1, "a and d disagree");
        let refits = |flags: &[bool]| {
            surface_refits(
                Surrogate::fit(&pts).expect("a quadratic"),
                &figures,
                &best,
                &at,
                flags,
                0.05,
                1,
            )
            .unwrap()
        };
        let (optimum, points) = refits(&all);
        // The surface's optimum lies off the fit (else the test below
        // could not tell the shift from a plain refit).
        assert!(
            optimum
                .iter()
                .zip(&best)
                .any(|(o, b)| (o - b).abs() > 0.005),
            "{optimum:?} against {best:?}"
        );
        // c weighs nothing near the fit: its refit is the fit.
        let c = points[2].as_ref().unwrap();
        for (v, b) in c.iter().zip(&best) {
            assert!((v - b).abs() < 1e-9, "{c:?} against {best:?}");
        }
        // Without a, the refit moves x0 down towards d, as the model's own
        // refit does, and by about as much.
        let exact = grid(&[false, true, true, true]);
        let p = points[0].as_ref().unwrap();
        assert!(p[0] < best[0] - 0.05, "{p:?} from {best:?}");
        assert!(
            (p[0] - exact[0]).abs() < 0.3 * (best[0] - exact[0]),
            "{p:?}, model's {exact:?}"
        );
        // A figure not asked for is not refitted.
        let (_, none) = refits(&[false; 4]);
        assert!(none.iter().all(Option::is_none));
    }

    #[test]
    fn a_surface_refit_the_model_does_not_bear_out_is_replaced_by_the_models_own() {
        // Two parameters. a pins x0 (wants 0.6); b wants x0 + x1 = 1.0; c
        // wants x1 = 0.4 but with a tolerance ten times wider. Without c
        // the others are met at x0 = 0.6, x1 = 0.4 too, so the refit
        // without c is the fit.
        let fig = |test: &str, value: f64, tolerance: f64| row(test, value, tolerance, false);
        let figures = vec![fig("a", 1.6, 0.05), fig("b", 2.0, 0.05), fig("c", 1.4, 0.5)];
        let model = |x: &[f64]| vec![1.0 + x[0], 1.0 + x[0] + x[1], 1.0 + x[1]];
        let best = vec![0.6, 0.4];
        let at_fit = model(&best);
        let points: Vec<(Vec<f64>, Vec<f64>)> = [[0.5, 0.5], [0.62, 0.41], [0.7, 0.2]]
            .iter()
            .map(|x| (x.to_vec(), model(x)))
            .collect();
        let search = RefitSearch {
            step: 0.05,
            seed: 3,
            max_iters: 200,
            patience: 0,
            progress: PROGRESS,
        };
        let mut calls = 0;
        let run = |surface: Vec<f64>, fail: bool, calls: &mut usize| {
            checked_refit(
                &figures,
                2,
                surface,
                &at_fit,
                &points,
                1.0,
                &search,
                &mut |x| {
                    *calls += 1;
                    (!fail || x != [0.1, 0.9]).then(|| model(x))
                },
            )
            .unwrap()
        };
        // A surface point the model bears out (the held-in cost within the
        // noise of the fit's) is kept, after one model run.
        let (p, rejected) = run(vec![0.61, 0.39], false, &mut calls);
        assert_eq!((p, rejected, calls), (vec![0.61, 0.39], None, 1));
        // One where a and b are far off (x0 0.1: a's error is 31 %, six
        // tolerances) is replaced by the model's own refit, which finds
        // a and b met again, and the held-out figure's value there.
        for fail in [false, true] {
            calls = 0;
            let (p, rejected) = run(vec![0.1, 0.9], fail, &mut calls);
            let r = rejected.expect("rejected");
            assert_eq!(r.surface_point, vec![0.1, 0.9]);
            assert_eq!(r.fit_held_in_cost, 0.0);
            if fail {
                assert_eq!(r.held_in_cost, FAILED_COST);
            } else {
                let held = cost(&figures, &model(&[0.1, 0.9]), &[true, true, false]);
                assert_eq!(r.held_in_cost, held);
                assert!(held > 30.0, "{held}");
            }
            // It starts from the evaluated point best for a and b.
            let start = cost(&figures, &model(&[0.62, 0.41]), &[true, true, false]);
            assert_eq!(r.start_cost, start);
            assert!(r.end_cost <= start && r.end_cost < 0.05, "{r:?}");
            assert!(
                (p[0] - 0.6).abs() < 0.02 && (p[1] - 0.4).abs() < 0.05,
                "{p:?}"
            );
            assert!(calls > 1);
            let c = model(&p)[2];
            assert!(
                (c - 1.4).abs() < 0.05,
                "the held-out figure at the refit: {c}"
            );
        }
    }

    #[test]
    fn a_lower_bound_is_no_error_once_met() {
        let f = Figure {
            test: "Web Server preconditioning average latency".into(),
            format: "stock".into(),
            threads: 16,
            qd: 16,
            statistic: "row".into(),
            value: 20.0,
            tolerance: 0.1,
            at_least: true,
            range: None,
        };
        assert_eq!(error(&f, 20.0), 0.0);
        assert_eq!(error(&f, 35.0), 0.0);
        assert!((error(&f, 18.0) + 1.0).abs() < 1e-12);
        let two_sided = Figure {
            at_least: false,
            ..f.clone()
        };
        assert!((error(&two_sided, 22.0) - 1.0).abs() < 1e-12);
        let c = cost(&[f, two_sided], &[35.0, 22.0], &[true, true]);
        assert!((c - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_measured_range_is_no_error_inside_and_its_nearer_end_outside() {
        let f = Figure {
            test: "4K steady-state write latency stddev".into(),
            format: "stock".into(),
            threads: 16,
            qd: 16,
            statistic: "row".into(),
            value: 28.6,
            tolerance: 0.1,
            at_least: false,
            range: Some([25.6, 31.6]),
        };
        for inside in [25.6, 28.0, 31.6] {
            assert_eq!(relative_error(&f, inside), 0.0, "{inside}");
        }
        assert!((relative_error(&f, 20.48) + 0.2).abs() < 1e-12);
        assert!((relative_error(&f, 37.92) - 0.2).abs() < 1e-12);
        assert!((error(&f, 37.92) - 2.0).abs() < 1e-12);
        // As a single number, the same model is judged against the value.
        let point = Figure {
            range: None,
            ..f.clone()
        };
        assert!((relative_error(&point, 28.0) - (28.0 / 28.6 - 1.0)).abs() < 1e-12);

        // The file form, and a range that does not hold the value.
        let toml = "[[figure]]\ntest = \"4K steady-state write latency stddev\"\nformat = \"stock\"\nstatistic = \"row\"\nvalue = 28.6\ntolerance = 0.1\nrange = [25.6, 31.6]\n";
        assert_eq!(load("range.toml", toml).unwrap()[0], f);
        let e = load(
            "bad-range.toml",
            &toml.replace("[25.6, 31.6]", "[29, 31.6]"),
        )
        .unwrap_err();
        assert!(
            e.contains("range = [29, 31.6] must hold value = 28.6"),
            "{e}"
        );
        // CSV: two optional columns, empty for a single number.
        let csv = "test,format,threads,qd,statistic,value,tolerance,low,high\n\
                   4k-randwrite,stock,16,16,iops,42644,0.05,40900,42644\n\
                   4k-randwrite,hp,16,16,iops,90700,0.05,,\n";
        let c = load("range.csv", csv).unwrap();
        assert_eq!((c[0].range, c[1].range), (Some([40900.0, 42644.0]), None));
        let e = load("short.csv", &csv.replace(",,\n", "\n")).unwrap_err();
        assert!(e.contains("7 columns, expected 9"), "{e}");
    }

    /// The bench figure files give every `vsl validate` row the range the
    /// validate table measures it as, so the fit and validate judge a row
    /// alike.
    #[test]
    fn the_bench_row_files_carry_the_validate_tables_ranges() {
        let bench = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench");
        for name in ["fit_640mlc_rows.toml", "fit_640mlc_steady.toml"] {
            let figures = load_figures(&bench.join(name), &ReviewInput::default()).unwrap();
            for f in figures.iter().filter(|f| f.is_row()) {
                let m = crate::validate::measured(&f.format, &f.test).unwrap();
                assert_eq!(f.interval(), (m.lo, m.hi), "{name}: {}", f.label());
            }
        }
    }

    /// A stock `row` figure at 16T/16Q.
    fn row(test: &str, value: f64, tolerance: f64, at_least: bool) -> Figure {
        Figure {
            test: test.into(),
            format: "stock".into(),
            threads: 16,
            qd: 16,
            statistic: "row".into(),
            value,
            tolerance,
            at_least,
            range: None,
        }
    }

    /// A bowl with its minimum at 0.3 on every axis.
    fn bowl(x: &[f64]) -> f64 {
        x.iter().map(|v| (v - 0.3).powi(2)).sum()
    }

    #[test]
    fn nand_multipliers_scale_the_base_and_start_at_one() {
        // NAND timing and the channel bus are fitted as multiples of the
        // base preset's data-sheet values: the search starts at 1 and a
        // value scales the base's figure (not the last fitted one).
        let base = Preset::by_name("iodrive-duo-640-mlc").expect("built-in");
        for (name, v) in [
            ("nand.bus_bytes_per_s", 1.25),
            ("nand.read_ns", 0.8),
            ("nand.program_ns", 1.6),
        ] {
            let d = param(name).unwrap();
            let x = normalise(d, base);
            assert!(
                (denormalise(d, x) - 1.0).abs() < 1e-12,
                "{name} starts at {x}"
            );
            let p = apply(base, &[d], &[v]);
            let (got, want) = match name {
                "nand.bus_bytes_per_s" => (p.timing.bus_bytes_per_s, base.timing.bus_bytes_per_s),
                "nand.read_ns" => (p.timing.read_ns, base.timing.read_ns),
                _ => (p.timing.program_ns, base.timing.program_ns),
            };
            assert_eq!(got, (want as f64 * v).round() as u64, "{name}");
            assert!(p.sources[name].starts_with("calibrated: vsl fit"), "{name}");
        }
        // The 640 MLC's bus, ONFI 1.0's fastest asynchronous mode (5, 50
        // MB/s), × 0.8 is mode 4's 40 MB/s, its NAND data sheet's.
        let d = param("nand.bus_bytes_per_s").unwrap();
        assert_eq!(base.timing.bus_bytes_per_s, 50_000_000);
        assert_eq!(apply(base, &[d], &[0.8]).timing.bus_bytes_per_s, 40_000_000);
    }

    #[test]
    fn a_search_without_patience_converges_on_a_smooth_objective() {
        let (best, cost, end) =
            nelder_mead(&[0.8, 0.1, 0.6], 0.25, 1, 400, 0, PROGRESS, &mut |x| {
                bowl(x)
            })
            .unwrap();
        assert_eq!(end, SearchEnd::Converged);
        // Within the simplex's tolerance (a spread of 1e-3 in cost).
        assert!(cost < 5e-3, "cost {cost} at {best:?}");
        assert!(best.iter().all(|v| (v - 0.3).abs() < 0.06), "{best:?}");
    }

    #[test]
    fn patience_stops_a_search_whose_gains_are_noise() {
        // The bowl plus noise that depends only on the point (as a model run
        // does on its parameters): near the bottom, steps gain nothing real.
        let noisy = |x: &[f64]| {
            let key = x
                .iter()
                .fold(0u64, |h, v| h.rotate_left(17) ^ (v * 1e9) as u64);
            bowl(x) + 0.05 * sim::Prng::from_seed(key).next_f64()
        };
        let mut seen = Vec::new();
        let (best, cost, end) =
            nelder_mead(&[0.8, 0.1, 0.6], 0.25, 1, 400, 10, PROGRESS, &mut |x| {
                let c = noisy(x);
                seen.push(c);
                c
            })
            .unwrap();
        let patient_calls = seen.len();
        assert_eq!(end, SearchEnd::Stalled);
        // It returns the best point it saw, with that point's own cost.
        let lowest = seen.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(cost, lowest);
        assert_eq!(noisy(&best), cost);
        // It got to the bottom of the bowl, the noise's depth from it.
        assert!(bowl(&best) < 0.05, "{best:?}");
        // And stopped well before a search without patience does.
        let mut calls = 0;
        nelder_mead(&[0.8, 0.1, 0.6], 0.25, 1, 400, 0, PROGRESS, &mut |x| {
            calls += 1;
            noisy(x)
        })
        .unwrap();
        assert!(
            patient_calls < calls,
            "{patient_calls} calls with patience, {calls} without"
        );
    }
}
