//! A whole enterprise-SSD review of one target (SYSTEM.md §3).
//!
//! - [`ReviewPlan`]: what to run and for how long (defaults = the reviews'
//!   methodology; [`ReviewPlan::quick`] for a first look; TOML-loadable).
//! - [`ReviewTarget`]: the seam a target plugs into: [`ModelTarget`] (a
//!   modelled card in virtual time) here, real files and block devices in
//!   the `realtime` crate.
//! - [`review_target`]: runs every phase on one target and returns its
//!   [`TargetResult`], keeping what was gathered if a later phase fails;
//!   [`review_target_observed`] also hands every measured phase
//!   ([`Measured`]) to a callback as it ends (live publication).
//! - [`PhaseHealth`]: the health series of a modelled target, one sample
//!   (temperature, power, endurance used) at the end of every phase.
//!
//! Phases: for each profile, purge and fill, precondition with the
//! profile's own pattern (100 %-read profiles with the same pattern as
//! 100 % write) at 16T/16Q in rounds until SNIA steady state or the time
//! cap, then the thread × queue-depth matrix. A profile whose
//! preconditioning pattern equals the previous profile's reuses that state
//! (4K random read runs on the 4K random-write steady state). Then the
//! standard synthetic tests, the sysbench-fileio style and the I/O
//! Analyzer style tests.

use crate::runner::{precondition_fill, run, RunError, RunOptions, RunResult};
use crate::stats::IntervalStats;
use crate::steady::check_window;

fn check_last_window(rounds: &[f64]) -> bool {
    check_window(rounds).is_some_and(|c| c.steady)
}
use device::{Card, CardConfig, HealthPoint, HealthReport, VirtualDevice};
use serde::{Deserialize, Serialize};
use sim::Nanos;
use std::sync::Arc;
use workload::units::parse_duration_ns;
use workload::{BlockSizes, Profile, Trace, WorkloadSpec};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0}")]
    Target(String),
    #[error("invalid review plan: {0}")]
    Plan(String),
}

/// What a review runs. Durations are human strings (`60s`, `6h`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewPlan {
    pub seed: u64,
    /// Targets (`PRESET:FORMAT`, `file:PATH:SIZE`, `blockdev:/dev/X`) when
    /// the plan comes from a file; the command line adds to them.
    pub targets: Vec<String>,
    /// Erase-block fraction kept by modelled targets (1 = full size).
    pub scale: f64,
    pub profiles: Vec<String>,
    pub matrix_threads: Vec<u32>,
    pub matrix_qd: Vec<u32>,
    /// Preconditioning round length (virtual time for modelled targets).
    pub round: String,
    /// Preconditioning cap (the reviews ran up to 6 hours).
    pub max_precondition: String,
    /// Measurement window of each matrix point and test.
    pub window: String,
    /// Real targets: round, window and per-phase wall-clock cap.
    pub real_round: String,
    pub real_window: String,
    pub real_phase_limit: String,
    pub standard: bool,
    pub sysbench: bool,
    pub ioanalyzer: bool,
    pub sysbench_threads: Vec<u32>,
    /// sysbench file size as fractions of the formatted capacity.
    pub sysbench_file_fractions: Vec<f64>,
    /// MSR Cambridge CSV trace to replay instead of the synthetic mail trace.
    pub trace: Option<String>,
}

impl Default for ReviewPlan {
    fn default() -> Self {
        ReviewPlan {
            seed: 1,
            targets: Vec::new(),
            scale: 1.0,
            profiles: [
                "4k-randwrite",
                "4k-randread",
                "8k-7030",
                "fileserver",
                "webserver",
            ]
            .map(String::from)
            .to_vec(),
            matrix_threads: vec![2, 4, 8, 16],
            matrix_qd: vec![2, 4, 8, 16],
            round: "60s".into(),
            max_precondition: "6h".into(),
            window: "30s".into(),
            real_round: "5s".into(),
            real_window: "5s".into(),
            real_phase_limit: "60s".into(),
            standard: true,
            sysbench: true,
            ioanalyzer: true,
            sysbench_threads: vec![1, 2, 4, 8, 16, 32],
            sysbench_file_fractions: vec![0.25, 0.5, 1.0],
            trace: None,
        }
    }
}

impl ReviewPlan {
    /// Every phase shortened: a scaled card, short rounds and windows.
    pub fn quick() -> ReviewPlan {
        ReviewPlan {
            scale: 0.02,
            round: "10s".into(),
            max_precondition: "300s".into(),
            window: "2s".into(),
            real_round: "1s".into(),
            real_window: "1s".into(),
            real_phase_limit: "5s".into(),
            sysbench_threads: vec![1, 4, 16],
            sysbench_file_fractions: vec![0.25, 1.0],
            ..ReviewPlan::default()
        }
    }

    /// Reads a TOML plan; keys it leaves out keep their value in `base`
    /// (the defaults, or the `--quick` plan).
    pub fn from_toml_text(text: &str, base: ReviewPlan) -> Result<ReviewPlan, String> {
        let one_line = |e: &dyn std::fmt::Display| {
            e.to_string()
                .replace('\n', " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let overlay: toml::Table = toml::from_str(text).map_err(|e| one_line(&e))?;
        let mut merged = toml::Table::try_from(&base).map_err(|e| one_line(&e))?;
        for (k, v) in overlay {
            merged.insert(k, v);
        }
        ReviewPlan::deserialize(merged).map_err(|e| one_line(&e))
    }

    /// Checks every field; returns the parsed durations.
    pub fn timing(&self, real: bool) -> Result<Timing, ReviewError> {
        let d = |name: &str, s: &str| {
            parse_duration_ns(s).map_err(|e| ReviewError::Plan(format!("{name}: {e}")))
        };
        for p in &self.profiles {
            if Profile::by_name(p).is_none() {
                return Err(ReviewError::Plan(format!("unknown profile '{p}'")));
            }
        }
        if self
            .matrix_threads
            .iter()
            .chain(&self.matrix_qd)
            .chain(&self.sysbench_threads)
            .any(|&v| v == 0)
        {
            return Err(ReviewError::Plan(
                "threads and queue depths must be at least 1".into(),
            ));
        }
        if self
            .sysbench_file_fractions
            .iter()
            .any(|&f| !(f > 0.0 && f <= 1.0))
        {
            return Err(ReviewError::Plan(
                "sysbench file fractions must be in (0, 1]".into(),
            ));
        }
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return Err(ReviewError::Plan(format!(
                "scale {} must be in (0, 1]",
                self.scale
            )));
        }
        Ok(if real {
            let limit = d("real_phase_limit", &self.real_phase_limit)?;
            Timing {
                round_ns: d("real_round", &self.real_round)?,
                max_precondition_ns: limit,
                window_ns: d("real_window", &self.real_window)?,
            }
        } else {
            Timing {
                round_ns: d("round", &self.round)?,
                max_precondition_ns: d("max_precondition", &self.max_precondition)?,
                window_ns: d("window", &self.window)?,
            }
        })
    }
}

/// Parsed durations for one kind of target.
#[derive(Copy, Clone, Debug)]
pub struct Timing {
    pub round_ns: u64,
    pub max_precondition_ns: u64,
    pub window_ns: u64,
}

/// A target the review can drive.
pub trait ReviewTarget: Send {
    fn label(&self) -> &str;
    fn description(&self) -> String;
    /// Virtual time (modelled card) or wall time (real device).
    fn is_virtual(&self) -> bool;
    fn capacity_bytes(&self) -> u64;
    fn sector_bytes(&self) -> u32;
    /// Secure erase (where possible) and one sequential fill.
    fn purge_and_fill(&mut self) -> Result<(), ReviewError>;
    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, ReviewError>;
    /// Health of each member now (modelled cards; `None` for real devices).
    fn health(&self) -> Option<Vec<HealthReport>> {
        None
    }
    /// What reached the device over every run so far (real devices;
    /// `None` for modelled cards, whose every I/O is modelled).
    fn device_account(&self) -> Option<DeviceAccount> {
        None
    }
}

/// A real target's account of what reached the device over a review: the
/// I/Os the runs issued, the I/Os the disk under it completed, and the
/// verdict in words ("measured on the device: …" or "not measured on the
/// device: …"). `details` holds the per-device counters as the target
/// reports them (fio's `disk_util` names).
#[derive(Clone, Debug, Serialize, Default)]
pub struct DeviceAccount {
    pub measured_on_device: bool,
    pub words: String,
    pub issued_ios: u64,
    pub device_ios: u64,
    pub details: serde_json::Value,
}

/// A modelled card in virtual time.
pub struct ModelTarget {
    label: String,
    config: CardConfig,
    card: Card,
    now: Nanos,
}

impl ModelTarget {
    pub fn new(label: &str, config: CardConfig) -> Result<ModelTarget, ReviewError> {
        let card =
            Card::new(config.clone()).map_err(|e| ReviewError::Target(format!("{label}: {e}")))?;
        Ok(ModelTarget {
            label: label.into(),
            config,
            card,
            now: Nanos::ZERO,
        })
    }
}

impl ReviewTarget for ModelTarget {
    fn label(&self) -> &str {
        &self.label
    }
    fn description(&self) -> String {
        let f = self.card.ftl_config();
        format!(
            "{} ({}), format {}, {} B sectors, members {:?}, scale {}, {:.1} GB formatted, spare {:.1} %, GC victim {}",
            self.config.preset.name,
            self.config.preset.description,
            self.config.format.label(),
            self.config.sector_bytes,
            self.card.member_ids(),
            self.config.scale,
            self.card.capacity_bytes() as f64 / 1e9,
            f.spare_factor() * 100.0,
            self.card.victim_policy_name()
        )
    }
    fn is_virtual(&self) -> bool {
        true
    }
    fn capacity_bytes(&self) -> u64 {
        self.card.capacity_bytes()
    }
    fn sector_bytes(&self) -> u32 {
        self.card.sector_bytes()
    }
    fn purge_and_fill(&mut self) -> Result<(), ReviewError> {
        // Secure erase: a freshly formatted card that keeps its lifetime
        // counters (physical bytes written and read, hottest temperature),
        // so endurance used only grows. Wear (erase counts) starts afresh.
        let before = self.card.health();
        self.card =
            Card::new(self.config.clone()).map_err(|e| ReviewError::Target(e.to_string()))?;
        self.card.carry_lifetime(&before);
        self.now = precondition_fill(&mut self.card, Nanos::ZERO)?;
        Ok(())
    }
    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, ReviewError> {
        let r = run(&mut self.card, spec, opts, self.now, &mut |_| {})?;
        self.now = r.end;
        Ok(r)
    }
    fn health(&self) -> Option<Vec<HealthReport>> {
        Some(self.card.health())
    }
}

/// One point of the thread × queue-depth matrix.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixPoint {
    pub threads: u32,
    pub qd: u32,
    pub stats: IntervalStats,
}

/// Enterprise synthetic workload analysis of one profile.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileResult {
    pub profile: String,
    /// The pattern preconditioned with (the profile's own, or its write twin).
    pub precondition_pattern: String,
    /// One entry per preconditioning round; `t_s` counts from its start.
    pub precondition: Vec<IntervalStats>,
    /// 1-based round the SNIA window converged in; `None` = did not.
    pub converged_round: Option<usize>,
    /// True when the state was reused from the previous profile.
    pub reused_state: bool,
    pub matrix: Vec<MatrixPoint>,
}

/// One measured point of a standard / sysbench / I/O Analyzer test.
#[derive(Clone, Debug, Serialize)]
pub struct TestPoint {
    /// Chart the point belongs to, e.g. `ramp-4k-randread`.
    pub group: String,
    pub test: String,
    /// X value for the chart (queue depth, threads, file fraction…).
    pub x: f64,
    pub x_label: String,
    pub threads: u32,
    pub qd: u32,
    pub stats: IntervalStats,
}

/// The card's health at the end of one measured phase.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseHealth {
    /// The phase, as the progress line names it (`4k-randwrite: matrix
    /// 2T/2Q`).
    pub phase: String,
    /// `t_s`: seconds of measured time since the target's review started
    /// (virtual time for a modelled card).
    #[serde(flatten)]
    pub point: HealthPoint,
}

/// One measured phase as it ends, for live publication.
pub struct Measured<'a> {
    pub phase: &'a str,
    /// Seconds of measured time since the target's review started.
    pub t_s: f64,
    pub stats: &'a IntervalStats,
    /// Health of each member (modelled cards; empty for real devices).
    pub health: &'a [HealthReport],
}

/// Everything measured on one target.
#[derive(Clone, Debug, Serialize, Default)]
pub struct TargetResult {
    pub label: String,
    pub description: String,
    pub virtual_time: bool,
    pub profiles: Vec<ProfileResult>,
    pub tests: Vec<TestPoint>,
    /// Set when a phase failed; what was gathered before stays.
    pub error: Option<String>,
    /// Simulated or issued I/Os, for speed reports.
    pub ios: u64,
    /// Temperature, power and endurance used after every phase (modelled
    /// cards; empty for real devices).
    pub health: Vec<PhaseHealth>,
    /// Real targets: what reached the device over the whole review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceAccount>,
}

/// Counts the phases `review_target` will run, for progress and ETA.
pub fn phase_count(plan: &ReviewPlan) -> usize {
    let mut n = plan.profiles.len() * (1 + plan.matrix_threads.len() * plan.matrix_qd.len());
    if plan.standard {
        n += 4 + 2 + 2 * 7 + 2 * 8 + 2;
    }
    if plan.sysbench {
        n += 5 * plan.sysbench_threads.len() * plan.sysbench_file_fractions.len();
    }
    if plan.ioanalyzer {
        n += 3;
    }
    n
}

struct Ctx<'a> {
    plan: &'a ReviewPlan,
    timing: Timing,
    progress: &'a mut dyn FnMut(&str),
    measured: &'a mut dyn FnMut(&Measured),
    /// The last progress message: the phase running.
    phase: String,
    /// Measured time run so far.
    elapsed_ns: u64,
    result: TargetResult,
}

impl Ctx<'_> {
    fn progress(&mut self, msg: &str) {
        self.phase.clear();
        self.phase.push_str(msg);
        (self.progress)(msg);
    }
}

/// Runs one measured phase on `target`, then samples the card's health and
/// hands the phase to the live callback.
fn run_phase(
    target: &mut dyn ReviewTarget,
    ctx: &mut Ctx,
    spec: &WorkloadSpec,
    opts: &RunOptions,
) -> Result<RunResult, ReviewError> {
    let r = target.run(spec, opts)?;
    ctx.elapsed_ns += opts.duration_ns;
    let t_s = ctx.elapsed_ns as f64 / 1e9;
    let reports = target.health().unwrap_or_default();
    if !reports.is_empty() {
        ctx.result.health.push(PhaseHealth {
            phase: ctx.phase.clone(),
            point: HealthPoint::of(t_s, &reports),
        });
    }
    let phase = ctx.phase.clone();
    (ctx.measured)(&Measured {
        phase: &phase,
        t_s,
        stats: &r.summary.totals,
        health: &reports,
    });
    Ok(r)
}

fn window(ctx: &Ctx, threads: u32, qd: u32, seed_salt: u64) -> RunOptions {
    RunOptions {
        threads,
        queue_depth: qd,
        duration_ns: ctx.timing.window_ns,
        interval_ns: ctx.timing.window_ns,
        seed: ctx.plan.seed.wrapping_add(seed_salt),
    }
}

/// Runs the plan on one target. Never fails as a whole: an error ends the
/// target's review and is recorded in [`TargetResult::error`].
pub fn review_target(
    target: &mut dyn ReviewTarget,
    plan: &ReviewPlan,
    progress: &mut dyn FnMut(&str),
) -> TargetResult {
    review_target_observed(target, plan, progress, &mut |_| {})
}

/// [`review_target`], handing every measured phase to `measured` as it
/// ends.
pub fn review_target_observed(
    target: &mut dyn ReviewTarget,
    plan: &ReviewPlan,
    progress: &mut dyn FnMut(&str),
    measured: &mut dyn FnMut(&Measured),
) -> TargetResult {
    let result = TargetResult {
        label: target.label().into(),
        description: target.description(),
        virtual_time: target.is_virtual(),
        ..Default::default()
    };
    let timing = match plan.timing(!target.is_virtual()) {
        Ok(t) => t,
        Err(e) => {
            return TargetResult {
                error: Some(e.to_string()),
                ..result
            }
        }
    };
    let mut ctx = Ctx {
        plan,
        timing,
        progress,
        measured,
        phase: String::new(),
        elapsed_ns: 0,
        result,
    };
    if let Err(e) = review_phases(target, &mut ctx) {
        ctx.result.error = Some(format!("{}: {e}", target.label()));
    }
    ctx.result.device = target.device_account();
    ctx.result
}

fn review_phases(target: &mut dyn ReviewTarget, ctx: &mut Ctx) -> Result<(), ReviewError> {
    let mut last_pattern: Option<String> = None;
    for name in ctx.plan.profiles.clone() {
        let p = Profile::by_name(&name)
            .ok_or_else(|| ReviewError::Plan(format!("unknown profile '{name}'")))?;
        let pre_spec = p.precondition_spec();
        let pattern = format!(
            "{} {}",
            pre_spec.rw_name(),
            p.name
                .trim_end_matches("-randread")
                .trim_end_matches("-randwrite")
        );
        let reuse = last_pattern.as_deref() == Some(pattern.as_str());
        let mut pr = ProfileResult {
            profile: name.clone(),
            precondition_pattern: pattern.clone(),
            precondition: Vec::new(),
            converged_round: None,
            reused_state: reuse,
            matrix: Vec::new(),
        };
        ctx.progress(&format!("{name}: preconditioning"));
        if !reuse {
            target.purge_and_fill()?;
            precondition(target, ctx, &pre_spec, &mut pr)?;
        }
        last_pattern = Some(pattern);
        let spec = p.spec();
        for &t in &ctx.plan.matrix_threads.clone() {
            for &q in &ctx.plan.matrix_qd.clone() {
                ctx.progress(&format!("{name}: matrix {t}T/{q}Q"));
                let r = run_phase(target, ctx, &spec, &window(ctx, t, q, (t * 100 + q) as u64))?;
                ctx.result.ios += r.summary.totals.ios;
                pr.matrix.push(MatrixPoint {
                    threads: t,
                    qd: q,
                    stats: r.summary.totals,
                });
            }
        }
        ctx.result.profiles.push(pr);
    }
    if ctx.plan.standard {
        standard_tests(target, ctx)?;
    }
    if ctx.plan.sysbench {
        sysbench_tests(target, ctx)?;
    }
    if ctx.plan.ioanalyzer {
        ioanalyzer_tests(target, ctx)?;
    }
    Ok(())
}

/// Rounds at 16T/16Q until steady state (after at least one capacity of
/// the workload's own writes, or for read-only runs at once) or the cap.
fn precondition(
    target: &mut dyn ReviewTarget,
    ctx: &mut Ctx,
    spec: &WorkloadSpec,
    pr: &mut ProfileResult,
) -> Result<(), ReviewError> {
    let cap = target.capacity_bytes() as f64;
    let mut written = 0.0;
    let mut elapsed = 0u64;
    let mut iops = Vec::new();
    let max_rounds = (ctx.timing.max_precondition_ns / ctx.timing.round_ns).max(1);
    for round in 0..max_rounds {
        let opts = RunOptions {
            threads: 16,
            queue_depth: 16,
            duration_ns: ctx.timing.round_ns,
            interval_ns: ctx.timing.round_ns,
            seed: ctx.plan.seed.wrapping_add(10_000 + round),
        };
        ctx.phase = format!("{}: preconditioning round {}", pr.profile, round + 1);
        let r = run_phase(target, ctx, spec, &opts)?;
        elapsed += ctx.timing.round_ns;
        let mut s = r.summary.totals.clone();
        s.t_s = elapsed as f64 / 1e9;
        written += r.summary.writes as f64 * spec.block_sizes.mean();
        ctx.result.ios += s.ios;
        iops.push(s.iops);
        pr.precondition.push(s);
        // The round steady state is declared in: the first steady window
        // after the workload has written the capacity once (an earlier
        // window may look flat on a fresh card).
        if (written >= cap || spec.read_fraction >= 1.0) && check_last_window(&iops) {
            pr.converged_round = Some(iops.len());
            break;
        }
        if round % 10 == 9 {
            ctx.progress(&format!(
                "{}: preconditioning round {}",
                pr.profile,
                round + 1
            ));
        }
    }
    Ok(())
}

fn push(
    ctx: &mut Ctx,
    group: &str,
    test: &str,
    x: f64,
    x_label: &str,
    o: &RunOptions,
    r: RunResult,
) {
    let (threads, qd) = (o.threads, o.queue_depth);
    ctx.result.ios += r.summary.totals.ios;
    ctx.result.tests.push(TestPoint {
        group: group.into(),
        test: test.into(),
        x,
        x_label: x_label.into(),
        threads,
        qd,
        stats: r.summary.totals,
    });
}

fn profile_spec(name: &str) -> WorkloadSpec {
    Profile::by_name(name).expect("built-in profile").spec()
}

fn standard_tests(target: &mut dyn ReviewTarget, ctx: &mut Ctx) -> Result<(), ReviewError> {
    target.purge_and_fill()?;
    for name in ["seq-2m-read", "seq-2m-write", "2m-randread", "2m-randwrite"] {
        ctx.progress(&format!("standard: {name}"));
        let o = window(ctx, 4, 8, 1);
        let r = run_phase(target, ctx, &profile_spec(name), &o)?;
        push(ctx, "2m-bandwidth", name, 0.0, "test", &o, r);
    }
    for name in ["4k-randread", "4k-randwrite"] {
        ctx.progress(&format!("standard: {name} 4 workers x QD 1"));
        let o = window(ctx, 4, 1, 2);
        let r = run_phase(target, ctx, &profile_spec(name), &o)?;
        push(ctx, "4k-qd1", name, 1.0, "QD per worker", &o, r);
    }
    for name in ["4k-randread", "4k-randwrite"] {
        for qd in [1u32, 2, 4, 8, 16, 32, 64] {
            ctx.progress(&format!("standard: ramp {name} QD {qd}"));
            let o = window(ctx, 4, qd, qd as u64);
            let r = run_phase(target, ctx, &profile_spec(name), &o)?;
            push(
                ctx,
                &format!("ramp-{name}"),
                name,
                qd as f64,
                "QD per worker",
                &o,
                r,
            );
        }
    }
    for name in ["fileserver", "webserver"] {
        for eff in [1u32, 2, 4, 8, 32, 64, 128, 512] {
            let (threads, qd) = if eff < 4 { (eff, 1) } else { (4, eff / 4) };
            ctx.progress(&format!("standard: ramp {name} effective QD {eff}"));
            let o = window(ctx, threads, qd, eff as u64);
            let r = run_phase(target, ctx, &profile_spec(name), &o)?;
            push(
                ctx,
                &format!("ramp-{name}"),
                name,
                eff as f64,
                "effective QD",
                &o,
                r,
            );
        }
    }
    let trace = match &ctx.plan.trace {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ReviewError::Plan(format!("trace {path}: {e}")))?;
            Trace::parse_msr_csv(path, &text).map_err(|e| ReviewError::Plan(e.to_string()))?
        }
        None => Trace::synthetic_mail(ctx.plan.seed, 200_000, target.capacity_bytes()),
    };
    let mut spec = WorkloadSpec::from_rw("randrw", Some(0.95)).expect("valid rw");
    spec.block_sizes = BlockSizes::Fixed(target.sector_bytes() as u64);
    spec.trace = Some(Arc::new(trace));
    for (load, eff) in [("light", 8u32), ("heavy", 48)] {
        ctx.progress(&format!("standard: mail-server trace, {load} (QD {eff})"));
        let o = window(ctx, 1, eff, 7);
        let r = run_phase(target, ctx, &spec, &o)?;
        push(ctx, "mail-trace", load, eff as f64, "effective QD", &o, r);
    }
    Ok(())
}

fn sysbench_tests(target: &mut dyn ReviewTarget, ctx: &mut Ctx) -> Result<(), ReviewError> {
    target.purge_and_fill()?;
    let cap = target.capacity_bytes();
    let sector = target.sector_bytes() as u64;
    for &frac in &ctx.plan.sysbench_file_fractions.clone() {
        let size = ((cap as f64 * frac) as u64 / (16 << 10) * (16 << 10)).max(16 << 10);
        for (mode, rw, mix) in [
            ("seqwr", "write", None),
            ("seqrd", "read", None),
            ("rndrd", "randread", None),
            ("rndwr", "randwrite", None),
            // sysbench's default --file-rw-ratio=1.5: 60 % reads
            ("rndrw", "randrw", Some(0.6)),
        ] {
            for &threads in &ctx.plan.sysbench_threads.clone() {
                ctx.progress(&format!(
                    "sysbench {mode} {threads} threads, file {:.0} %",
                    frac * 100.0
                ));
                let mut spec = WorkloadSpec::from_rw(rw, mix).expect("valid rw");
                spec.block_sizes = BlockSizes::Fixed((16 << 10).max(sector));
                spec.size = Some(size);
                let o = window(ctx, threads, 1, threads as u64);
                let r = run_phase(target, ctx, &spec, &o)?;
                let group = format!("sysbench-{mode}-file{:.0}", frac * 100.0);
                push(ctx, &group, mode, threads as f64, "threads", &o, r);
            }
        }
    }
    Ok(())
}

fn ioanalyzer_tests(target: &mut dyn ReviewTarget, ctx: &mut Ctx) -> Result<(), ReviewError> {
    target.purge_and_fill()?;
    let sector = target.sector_bytes() as u64;
    for (name, rw, mix, bs) in [
        ("512B sequential read", "read", None, 512u64),
        ("4K sequential read", "read", None, 4096),
        ("4K random 50% read", "randrw", Some(0.5), 4096),
    ] {
        ctx.progress(&format!("I/O Analyzer: {name}"));
        let mut spec = WorkloadSpec::from_rw(rw, mix).expect("valid rw");
        spec.block_sizes = BlockSizes::Fixed(bs.max(sector));
        let o = window(ctx, 1, 32, bs);
        let r = run_phase(target, ctx, &spec, &o)?;
        push(ctx, "ioanalyzer", name, bs as f64, "block bytes", &o, r);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use device::Preset;

    #[test]
    fn quick_review_of_a_model_covers_every_phase() {
        let mut plan = ReviewPlan::quick();
        plan.scale = 0.01;
        plan.matrix_threads = vec![2, 16];
        plan.matrix_qd = vec![2, 16];
        plan.sysbench_threads = vec![1, 4];
        plan.sysbench_file_fractions = vec![0.5];
        let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
        c.scale = plan.scale;
        let mut t = ModelTarget::new("stock", c).unwrap();
        let mut phases = 0;
        let mut live = Vec::new();
        let r = review_target_observed(&mut t, &plan, &mut |_| phases += 1, &mut |m| {
            live.push((m.phase.to_string(), m.t_s, m.stats.iops, m.health.len()))
        });
        assert!(r.error.is_none(), "{:?}", r.error);
        // Issue 10: a health sample after every measured phase, handed live
        // to the observer too.
        let rounds: usize = r.profiles.iter().map(|p| p.precondition.len()).sum();
        let matrix: usize = r.profiles.iter().map(|p| p.matrix.len()).sum();
        assert_eq!(r.health.len(), rounds + matrix + r.tests.len());
        assert_eq!(live.len(), r.health.len());
        for (h, l) in r.health.iter().zip(&live) {
            assert_eq!((&h.phase, h.point.t_s), (&l.0, l.1));
            assert_eq!(l.3, 2, "both members of the Duo report");
        }
        assert!(live.iter().all(|l| l.2 > 0.0 || l.0.contains("read")));
        assert!(r.health[0]
            .phase
            .contains("4k-randwrite: preconditioning round 1"));
        assert!(r.health.windows(2).all(|w| w[1].point.t_s > w[0].point.t_s));
        assert!(r
            .health
            .windows(2)
            .all(|w| w[1].point.endurance_used_pct >= w[0].point.endurance_used_pct));
        let last = &r.health.last().unwrap().point;
        assert!(last.endurance_used_pct > 0.0, "{last:?}");
        assert!(r.health.iter().all(|h| h.point.temperature_c > 25.0));
        assert!(r.health.iter().all(|h| h.point.power_w > 0.0));
        assert!(r.health.iter().any(|h| h.phase.starts_with("standard: ")));
        assert_eq!(r.profiles.len(), 5);
        assert!(
            r.profiles[1].reused_state,
            "4K read reuses the 4K write state"
        );
        for p in &r.profiles {
            assert_eq!(p.matrix.len(), 4, "{}", p.profile);
            assert!(p.matrix.iter().all(|m| m.stats.iops > 0.0), "{}", p.profile);
        }
        assert!(r.tests.iter().any(|t| t.group == "mail-trace"));
        assert!(r
            .tests
            .iter()
            .any(|t| t.group.starts_with("sysbench-rndwr")));
        assert_eq!(
            r.tests.iter().filter(|t| t.group == "ioanalyzer").count(),
            3
        );
        assert!(phases > 20);
    }

    /// The example plan in docs/ stays true: it parses, and every value it
    /// sets is the default.
    #[test]
    fn documented_example_plan_is_the_default() {
        let text = include_str!("../../../docs/review-plan.toml");
        let p = ReviewPlan::from_toml_text(text, ReviewPlan::quick()).unwrap();
        let d = ReviewPlan {
            targets: vec![
                "iodrive-duo-640-mlc:stock".into(),
                "iodrive-duo-640-mlc:hp".into(),
            ],
            ..ReviewPlan::default()
        };
        assert_eq!(toml::to_string(&p).unwrap(), toml::to_string(&d).unwrap());
    }

    #[test]
    fn bad_plan_is_reported_not_panicked() {
        let mut plan = ReviewPlan::quick();
        plan.profiles = vec!["nonsense".into()];
        let c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
        let mut cc = c.clone();
        cc.scale = 0.01;
        let mut t = ModelTarget::new("x", cc).unwrap();
        let r = review_target(&mut t, &plan, &mut |_| {});
        assert!(r.error.unwrap().contains("unknown profile"));
        assert!(ReviewPlan::from_toml_text("window = 3", ReviewPlan::default()).is_err());
        let p = ReviewPlan::from_toml_text(
            "window = \"5s\"\nprofiles = [\"8k-7030\"]",
            ReviewPlan::default(),
        )
        .unwrap();
        assert_eq!(p.profiles, vec!["8k-7030".to_string()]);
        assert_eq!(p.matrix_qd, vec![2, 4, 8, 16]);
        let q = ReviewPlan::from_toml_text("window = \"9s\"", ReviewPlan::quick()).unwrap();
        assert_eq!((q.window.as_str(), q.scale), ("9s", 0.02));
        assert!(ReviewPlan::from_toml_text("windows = \"9s\"", ReviewPlan::quick()).is_err());
    }
}
