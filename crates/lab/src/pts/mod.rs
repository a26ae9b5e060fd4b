//! SNIA Solid State Storage Performance Test Specification (PTS-E 1.1 /
//! PTS-C 1.2) on a [`PtsTarget`]: the eight tests (IOPS, throughput,
//! latency, WSAT, HIR, XSR, DIRTH, ECW), their purge, workload-independent
//! preconditioning (WIPC), workload-dependent preconditioning rounds, the
//! steady-state window ([`crate::steady`]) and the measurement window.
//!
//! Pure of I/O itself: the target does the I/O (a modelled card in virtual
//! time, or a real file / block device in wall time), this module decides
//! what to run and when a test is done. Choices the specification leaves to
//! the test operator are in [`PtsPlan`] and documented in docs/PTS.md.

mod engine;
mod model;

pub use engine::{
    preflight, run_test, Progress, ECW_BSSPLIT, ECW_ZONES, HIR_WAITS_S, IOPS_BLOCK_SIZES,
    IOPS_MIXES,
};
pub use model::ModelPts;

use crate::runner::{RunError, RunOptions, RunResult};
use crate::stats::{IntervalStats, LatencyStats};
use crate::steady::SteadyCheck;
use serde::{Deserialize, Serialize};
use workload::WorkloadSpec;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PtsError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0}")]
    Target(String),
    #[error("{0}")]
    Plan(String),
}

/// The eight tests of the specification.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PtsTest {
    Iops,
    Throughput,
    Latency,
    Wsat,
    Hir,
    Xsr,
    Dirth,
    Ecw,
}

impl PtsTest {
    pub const ALL: [PtsTest; 8] = [
        PtsTest::Iops,
        PtsTest::Throughput,
        PtsTest::Latency,
        PtsTest::Wsat,
        PtsTest::Hir,
        PtsTest::Xsr,
        PtsTest::Dirth,
        PtsTest::Ecw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PtsTest::Iops => "iops",
            PtsTest::Throughput => "throughput",
            PtsTest::Latency => "latency",
            PtsTest::Wsat => "wsat",
            PtsTest::Hir => "hir",
            PtsTest::Xsr => "xsr",
            PtsTest::Dirth => "dirth",
            PtsTest::Ecw => "ecw",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            PtsTest::Iops => "IOPS",
            PtsTest::Throughput => "Throughput",
            PtsTest::Latency => "Latency",
            PtsTest::Wsat => "Write Saturation (WSAT)",
            PtsTest::Hir => "Host Idle Recovery (HIR)",
            PtsTest::Xsr => "Cross Stimulus Recovery (XSR)",
            PtsTest::Dirth => "Demand Intensity / Response Time Histogram (DIRTH)",
            PtsTest::Ecw => "Enterprise Composite Workload (ECW)",
        }
    }

    /// `iops`, …, or `all`, comma-separated.
    pub fn parse_list(s: &str) -> Result<Vec<PtsTest>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part == "all" {
                return Ok(PtsTest::ALL.to_vec());
            }
            let t = PtsTest::ALL
                .into_iter()
                .find(|t| t.name() == part)
                .ok_or_else(|| {
                    format!(
                        "unknown test '{part}' (expected iops, throughput, latency, wsat, hir, xsr, dirth, ecw or all)"
                    )
                })?;
            if !out.contains(&t) {
                out.push(t);
            }
        }
        Ok(out)
    }
}

/// PTS-E (whole LBA range, write cache off) or PTS-C (75 % active range,
/// write cache on).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PtsClass {
    Enterprise,
    Client,
}

impl PtsClass {
    pub fn parse(s: &str) -> Result<PtsClass, String> {
        match s {
            "enterprise" | "e" => Ok(PtsClass::Enterprise),
            "client" | "c" => Ok(PtsClass::Client),
            _ => Err(format!(
                "unknown class '{s}' (expected enterprise or client)"
            )),
        }
    }
    /// Share of the LBA range the test stimulus addresses.
    pub fn active_range(self) -> f64 {
        match self {
            PtsClass::Enterprise => 1.0,
            PtsClass::Client => 0.75,
        }
    }
}

/// Everything the operator may choose. Durations in ns of the target's
/// time (virtual for modelled cards, wall for real ones).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PtsPlan {
    pub class: PtsClass,
    pub seed: u64,
    /// One test point of one round (the spec: 1 minute).
    pub round_ns: u64,
    /// Every other spec duration (WSAT's cap, HIR's bursts and idles, XSR's
    /// access groups, DIRTH's histogram runs) is multiplied by this
    /// (`round_ns` / 60 s unless set).
    pub time_factor: f64,
    /// At most this many rounds (the spec: 25).
    pub max_rounds: usize,
    /// WIPC: this many times the capacity of 128 KiB sequential writes.
    pub wipc_multiple: f64,
    /// Stimulus of IOPS, throughput, WSAT, HIR: threads × queue depth.
    pub threads: u32,
    pub qd: u32,
    /// IOPS matrix block sizes (bytes), largest first; `None` = the spec's
    /// eight sizes (sizes below the target's sector are left out, with a
    /// note).
    pub block_sizes: Option<Vec<u64>>,
    /// WSAT stops at this many capacities written (the spec: 4) or at
    /// 24 h × `time_factor`.
    pub wsat_capacity_multiple: f64,
    /// HIR: access/idle cycles per wait state (the spec: 360).
    pub hir_cycles: u32,
    /// DIRTH / ECW: the thread and queue-depth grid.
    pub dirth_threads: Vec<u32>,
    pub dirth_qd: Vec<u32>,
    /// DIRTH / ECW: the "max IOPS within a latency ceiling" ceiling on the
    /// 99.99th percentile response time, µs.
    pub latency_ceiling_us: f64,
}

impl Default for PtsPlan {
    fn default() -> Self {
        PtsPlan {
            class: PtsClass::Enterprise,
            seed: 1,
            round_ns: 60_000_000_000,
            time_factor: 1.0,
            max_rounds: 25,
            wipc_multiple: 2.0,
            threads: 4,
            qd: 32,
            block_sizes: None,
            wsat_capacity_multiple: 4.0,
            hir_cycles: 360,
            dirth_threads: vec![1, 2, 4, 8, 16, 32],
            dirth_qd: vec![1, 2, 4, 8, 16, 32],
            latency_ceiling_us: 5_000.0,
        }
    }
}

impl PtsPlan {
    pub fn validate(&self) -> Result<(), PtsError> {
        let e = |m: String| Err(PtsError::Plan(m));
        if self.round_ns == 0 {
            return e("round time must be positive".into());
        }
        if !(self.time_factor > 0.0 && self.time_factor.is_finite()) {
            return e(format!("time factor {} must be positive", self.time_factor));
        }
        if !(1..=1000).contains(&self.max_rounds) {
            return e(format!("max rounds {} must be 1..1000", self.max_rounds));
        }
        if self.threads == 0 || self.qd == 0 {
            return e("threads and queue depth must be at least 1".into());
        }
        if self.dirth_threads.is_empty()
            || self.dirth_qd.is_empty()
            || self
                .dirth_threads
                .iter()
                .chain(&self.dirth_qd)
                .any(|&v| v == 0)
        {
            return e(
                "DIRTH threads and queue depths must be non-empty lists of values ≥ 1".into(),
            );
        }
        if let Some(b) = &self.block_sizes {
            if b.is_empty() || b.contains(&0) {
                return e("block sizes must be a non-empty list of positive sizes".into());
            }
        }
        if !(self.wipc_multiple >= 0.0 && self.wsat_capacity_multiple > 0.0) {
            return e("WIPC and WSAT capacity multiples must be positive".into());
        }
        if self.hir_cycles == 0 {
            return e("HIR cycles must be at least 1".into());
        }
        Ok(())
    }

    /// A spec duration in seconds, scaled: ns of the target's time.
    pub fn scaled_ns(&self, spec_s: f64) -> u64 {
        ((spec_s * 1e9 * self.time_factor) as u64).max(1_000_000)
    }
}

/// A target the PTS drives.
pub trait PtsTarget: Send {
    fn label(&self) -> &str;
    fn description(&self) -> String;
    /// Virtual time (modelled card) or wall time (real device).
    fn is_virtual(&self) -> bool;
    fn capacity_bytes(&self) -> u64;
    fn sector_bytes(&self) -> u32;
    /// Returns the device to fresh-out-of-box as far as it can; says which
    /// purge ran (recorded in the report).
    fn purge(&mut self) -> Result<String, PtsError>;
    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, PtsError>;
    /// No host I/O for `ns` (HIR's wait states).
    fn idle(&mut self, ns: u64) -> Result<(), PtsError>;
    /// Whether the target was set to write cache off (PTS-E) / on (PTS-C);
    /// what was done, for the set-up sheet.
    fn write_cache(&mut self, _class: PtsClass) -> String {
        "not changed (the target has no write-cache setting)".into()
    }
    /// Model internals worth a curve (free erase units, …), if any.
    fn free_space_units(&self) -> Option<f64> {
        None
    }
}

/// One measured test point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PointResult {
    /// E.g. `65/35 4KiB`, `T4Q32`, `SEQ 1024KiB W`.
    pub label: String,
    /// Reads, percent.
    pub read_pct: f64,
    /// Block size in bytes (0 = a mix).
    pub bs: u64,
    pub threads: u32,
    pub qd: u32,
    pub stats: IntervalStats,
    /// Response time: 99.999th percentile, µs (the latency test's "5 nines").
    pub lat_p99999_us: f64,
}

/// One round: every test point once.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Round {
    pub round: usize,
    pub points: Vec<PointResult>,
}

/// The steady-state decision for one tracking variable.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SteadyRecord {
    /// E.g. `IOPS 0/100 4KiB`.
    pub variable: String,
    /// One value per round.
    pub series: Vec<f64>,
    /// 1-based round the window ends in when steady; `None` = not reached
    /// in `rounds_run`.
    pub converged_round: Option<usize>,
    pub rounds_run: usize,
    /// The check of the measurement window (the last five rounds run).
    pub window: Option<SteadyCheck>,
    /// The least-squares line across the window: value at its first and
    /// last round (the convergence plot's slope line).
    pub slope_line: Option<(f64, f64)>,
}

/// A point of a time line (WSAT, HIR, XSR).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimePoint {
    /// Seconds since the test's stimulus began (idle time included).
    pub t_s: f64,
    /// Total gigabytes written by the host since the purge (1e9 B).
    pub tgbw: f64,
    /// Segment, e.g. `wait 10 s`, `SEQ 1024KiB W`.
    pub phase: String,
    pub stats: IntervalStats,
    /// Modelled cards: free erase units after the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_units: Option<f64>,
}

/// A response-time histogram at an operating point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HistogramResult {
    /// `max`, `mid`, `min`.
    pub operating_point: String,
    pub threads: u32,
    pub qd: u32,
    pub stats: IntervalStats,
    pub lat_p99999_us: f64,
    /// (bucket upper bound µs, count), four buckets per decade.
    pub bins: Vec<(f64, u64)>,
}

/// Everything one test measured on one target.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct TestResult {
    pub test: String,
    pub target: String,
    pub class: String,
    pub purge: Vec<String>,
    pub write_cache: String,
    /// WIPC: bytes written and time taken.
    pub wipc_bytes: u64,
    pub wipc_s: f64,
    pub steady: Vec<SteadyRecord>,
    pub rounds: Vec<Round>,
    /// Per test point, the merge of the measurement window's rounds.
    pub window: Vec<PointResult>,
    pub timeline: Vec<TimePoint>,
    pub histograms: Vec<HistogramResult>,
    /// DIRTH/ECW: the point with the most IOPS whose 99.99th percentile is
    /// within the ceiling, if any.
    pub ceiling_point: Option<PointResult>,
    /// Choices made, block sizes left out, what a model does not do.
    pub notes: Vec<String>,
    /// Seconds of target time the test took (virtual or wall).
    pub target_s: f64,
    pub ios: u64,
    pub error: Option<String>,
}

/// Merges the latencies of the same point over several rounds.
pub(crate) fn merge_points(points: &[(&PointResult, &LatencyStats)], secs: f64) -> PointResult {
    let first = points[0].0;
    let mut lat = LatencyStats::default();
    let (mut reads, mut writes, mut bytes, mut moved) = (0.0, 0.0, 0.0, 0u64);
    let mut wa = 0.0;
    for (p, l) in points {
        lat.merge(l);
        let s = &p.stats;
        reads += s.read_iops;
        writes += s.write_iops;
        bytes += s.mb_per_s * 1e6;
        wa += s.write_amplification;
        moved += s.gc_pages_moved;
    }
    let n = points.len() as f64;
    // Rates are the mean of the rounds' rates: each round ran `secs`.
    let stats = IntervalStats::from_parts(
        secs * n,
        secs * n,
        &lat,
        (reads * secs) as u64,
        (writes * secs) as u64,
        (bytes * secs) as u64,
        wa / n,
        moved,
    );
    PointResult {
        label: first.label.clone(),
        read_pct: first.read_pct,
        bs: first.bs,
        threads: first.threads,
        qd: first.qd,
        lat_p99999_us: lat.percentile_us(0.99999),
        stats,
    }
}

/// `4KiB`, `0.5KiB`, `1024KiB`.
pub fn bs_label(bs: u64) -> String {
    if bs.is_multiple_of(1024) {
        format!("{}KiB", bs / 1024)
    } else {
        format!("{}KiB", bs as f64 / 1024.0)
    }
}
