//! The eight tests: what each runs, in which order, and when it stops.

use super::{
    bs_label, merge_points, HistogramResult, PointResult, PtsError, PtsPlan, PtsTarget, PtsTest,
    Round, SteadyRecord, TestResult, TimePoint,
};
use crate::runner::{RunOptions, RunResult};
use crate::stats::LatencyStats;
use crate::steady::{check_window, WINDOW_ROUNDS};
use std::collections::VecDeque;
use workload::{BlockSizes, Distribution, Pattern, WorkloadSpec};

/// Progress lines (`iops: round 3, 65/35 4KiB`).
pub type Progress<'a> = &'a mut dyn FnMut(&str);

const KIB: u64 = 1024;
/// The IOPS test's R/W mixes, percent reads, in the spec's order.
pub const IOPS_MIXES: [f64; 7] = [100.0, 95.0, 65.0, 50.0, 35.0, 5.0, 0.0];
/// The IOPS test's block sizes, in the spec's order.
pub const IOPS_BLOCK_SIZES: [u64; 8] = [
    1024 * KIB,
    128 * KIB,
    64 * KIB,
    32 * KIB,
    16 * KIB,
    8 * KIB,
    4 * KIB,
    512,
];
/// HIR wait states, seconds (before the time factor).
pub const HIR_WAITS_S: [f64; 5] = [5.0, 10.0, 15.0, 25.0, 50.0];
/// HIR access burst, seconds.
pub const HIR_BURST_S: f64 = 5.0;
/// XSR access groups: (label, sequential?, block size, seconds).
pub const XSR_GROUPS: [(&str, bool, u64, f64); 3] = [
    ("SEQ 1024KiB W", true, 1024 * KIB, 8.0 * 3600.0),
    ("RND 8KiB W", false, 8 * KIB, 6.0 * 3600.0),
    ("SEQ 1024KiB W again", true, 1024 * KIB, 6.0 * 3600.0),
];
/// ECW block sizes (bytes, percent of accesses), PTS-E 1.1.
pub const ECW_BSSPLIT: [(u64, f64); 12] = [
    (512, 4.0),
    (1024, 1.0),
    (1536, 1.0),
    (2048, 1.0),
    (2560, 1.0),
    (3072, 1.0),
    (3584, 1.0),
    (4096, 67.0),
    (8192, 10.0),
    (16384, 7.0),
    (32768, 3.0),
    (65536, 3.0),
];
/// ECW access range: (share of accesses, share of the LBA range).
pub const ECW_ZONES: [(f64, f64); 3] = [(0.50, 0.05), (0.30, 0.15), (0.20, 0.80)];

#[derive(Clone)]
struct PointDef {
    label: String,
    spec: WorkloadSpec,
    read_pct: f64,
    bs: u64,
    threads: u32,
    qd: u32,
}

/// Where the steady-state window may start.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum SteadyFrom {
    /// Any round (tests whose first round already left the fresh state,
    /// or that measure what does not depend on it).
    Start,
    /// The first round in which garbage collection moved data (a modelled
    /// card) or by whose end one capacity was written since the purge (a
    /// real target, whose GC is not visible), as WSAT: a fresh card's flat
    /// line would otherwise pass the rule at once.
    Saturated,
}

#[derive(Copy, Clone)]
enum Metric {
    Iops,
    MbPerS,
    LatAvg,
}

struct Ctx<'a> {
    plan: &'a PtsPlan,
    target: &'a mut dyn PtsTarget,
    progress: Progress<'a>,
    test: PtsTest,
    res: TestResult,
    runs: u64,
    /// Host bytes written since the last purge.
    written: u64,
}

fn spec(pattern: Pattern, read_pct: f64, bs: u64) -> WorkloadSpec {
    let mut s = WorkloadSpec::from_rw(
        if pattern == Pattern::Random {
            "randrw"
        } else {
            "rw"
        },
        Some(read_pct / 100.0),
    )
    .expect("valid rw");
    s.read_fraction = read_pct / 100.0;
    s.block_sizes = BlockSizes::Fixed(bs);
    s
}

fn ecw_spec() -> WorkloadSpec {
    let mut s = spec(Pattern::Random, 40.0, 4096);
    s.block_sizes = BlockSizes::Split(ECW_BSSPLIT.iter().map(|&(b, w)| (b, w / 100.0)).collect());
    s.distribution = Distribution::Zoned(ECW_ZONES.to_vec());
    s.round_to_sector = true;
    s
}

impl Ctx<'_> {
    fn say(&mut self, msg: &str) {
        (self.progress)(&format!("{}: {msg}", self.test.name()));
    }

    /// The spec with the class's active range applied.
    fn active(&self, s: &WorkloadSpec) -> WorkloadSpec {
        let mut s = s.clone();
        let range = self.plan.class.active_range();
        if range < 1.0 {
            let sector = self.target.sector_bytes() as u64;
            let cap = self.target.capacity_bytes();
            s.size = Some(((cap as f64 * range) as u64 / sector * sector).max(s.block_sizes.max()));
        }
        s
    }

    fn run(
        &mut self,
        s: &WorkloadSpec,
        threads: u32,
        qd: u32,
        duration_ns: u64,
        interval_ns: u64,
    ) -> Result<RunResult, PtsError> {
        self.runs += 1;
        let opts = RunOptions {
            threads,
            queue_depth: qd,
            duration_ns,
            interval_ns: interval_ns.min(duration_ns),
            seed: self
                .plan
                .seed
                .wrapping_mul(1_000_003)
                .wrapping_add(self.runs),
        };
        let r = self.target.run(s, &opts)?;
        self.res.target_s += duration_ns as f64 / 1e9;
        self.res.ios += r.summary.totals.ios;
        self.written += r.summary.writes_bytes(s);
        Ok(r)
    }

    fn purge(&mut self) -> Result<(), PtsError> {
        self.say("purge");
        let p = self.target.purge()?;
        if !self.res.purge.contains(&p) {
            self.res.purge.push(p);
        }
        self.written = 0;
        Ok(())
    }

    /// Workload-independent preconditioning: `wipc_multiple` × capacity of
    /// 128 KiB sequential writes over the whole LBA range, T1Q32.
    fn wipc(&mut self) -> Result<(), PtsError> {
        let cap = self.target.capacity_bytes();
        let goal = (cap as f64 * self.plan.wipc_multiple) as u64;
        let s = spec(Pattern::Sequential, 0.0, 128 * KIB);
        let mut done = 0u64;
        let mut secs = 0.0;
        // First chunk: 1 s; then what the measured rate says is left.
        let mut chunk_ns = 1_000_000_000u64;
        while done < goal {
            self.say(&format!(
                "WIPC {:.0} % of {:.1} GB",
                done as f64 * 100.0 / goal as f64,
                goal as f64 / 1e9
            ));
            let r = self.run(&s, 1, 32, chunk_ns, chunk_ns)?;
            let b = r.summary.bytes;
            done += b;
            secs += chunk_ns as f64 / 1e9;
            if b == 0 {
                return Err(PtsError::Target(format!(
                    "{}: WIPC wrote nothing in {:.1} s",
                    self.target.label(),
                    chunk_ns as f64 / 1e9
                )));
            }
            let rate = b as f64 / chunk_ns as f64;
            chunk_ns = (((goal.saturating_sub(done)) as f64 / rate) as u64).max(10_000_000);
        }
        self.res.wipc_bytes += done;
        self.res.wipc_s += secs;
        Ok(())
    }

    fn point(
        &mut self,
        p: &PointDef,
        dur_ns: u64,
    ) -> Result<(PointResult, LatencyStats), PtsError> {
        let s = self.active(&p.spec);
        let r = self.run(&s, p.threads, p.qd, dur_ns, dur_ns)?;
        let lat = r.latency.clone().unwrap_or_default();
        Ok((
            PointResult {
                label: p.label.clone(),
                read_pct: p.read_pct,
                bs: p.bs,
                threads: p.threads,
                qd: p.qd,
                lat_p99999_us: lat.percentile_us(0.99999),
                stats: r.summary.totals,
            },
            lat,
        ))
    }

    /// Rounds of every point until each tracking variable is steady over
    /// the same five-round window, or `max_rounds`. Records the rounds,
    /// the steady-state decisions and the measurement window (the last
    /// five rounds run, merged per point).
    fn rounds(
        &mut self,
        name: &str,
        points: &[PointDef],
        tracking: &[(usize, Metric, &str)],
        from: SteadyFrom,
    ) -> Result<(), PtsError> {
        let mut series: Vec<Vec<f64>> = vec![Vec::new(); tracking.len()];
        // Index of the first round the steady-state window may hold.
        let mut first = (from == SteadyFrom::Start).then_some(0);
        let model = self.target.free_space_units().is_some();
        let cap = self.target.capacity_bytes();
        let mut last: VecDeque<Vec<(PointResult, LatencyStats)>> = VecDeque::new();
        let mut converged = None;
        let round_ns = self.plan.round_ns;
        let mut run_rounds = 0;
        for round in 1..=self.plan.max_rounds {
            let mut this = Vec::with_capacity(points.len());
            for p in points {
                self.say(&format!("{name}round {round}, {}", p.label));
                this.push(self.point(p, round_ns)?);
            }
            for (k, &(i, m, _)) in tracking.iter().enumerate() {
                let s = &this[i].0.stats;
                series[k].push(match m {
                    Metric::Iops => s.iops,
                    Metric::MbPerS => s.mb_per_s,
                    Metric::LatAvg => s.lat_avg_us,
                });
            }
            self.res.rounds.push(Round {
                round,
                points: this.iter().map(|p| p.0.clone()).collect(),
            });
            if first.is_none() {
                let saturated = if model {
                    this.iter().any(|p| p.0.stats.gc_pages_moved > 0)
                } else {
                    self.written >= cap
                };
                first = saturated.then_some(round - 1);
            }
            last.push_back(this);
            if last.len() > WINDOW_ROUNDS {
                last.pop_front();
            }
            run_rounds = round;
            if first.is_some_and(|f| {
                series
                    .iter()
                    .all(|s| check_window(&s[f..]).is_some_and(|c| c.steady))
            }) {
                converged = Some(round);
                break;
            }
        }
        for (k, &(_, _, var)) in tracking.iter().enumerate() {
            let s = &series[k];
            let window = check_window(s);
            self.res.steady.push(SteadyRecord {
                variable: format!("{name}{var}"),
                series: s.clone(),
                converged_round: converged,
                rounds_run: run_rounds,
                window,
                slope_line: slope_line(s),
            });
        }
        if from == SteadyFrom::Saturated {
            self.res.notes.push(match first {
                Some(f) => format!(
                    "{name}steady state searched from round {} (the first after {})",
                    f + 1,
                    if model {
                        "garbage collection first moved data"
                    } else {
                        "one capacity written"
                    }
                ),
                None => format!(
                    "{name}steady state not searched: {} in {run_rounds} rounds",
                    if model {
                        "garbage collection moved no data"
                    } else {
                        "less than one capacity written"
                    }
                ),
            });
        }
        if converged.is_none() {
            self.res.notes.push(format!(
                "{name}steady state not reached in {run_rounds} rounds: the measurement window is the last {} rounds run (reported, as the spec asks, with this note)",
                last.len()
            ));
        }
        let secs = round_ns as f64 / 1e9;
        for i in 0..points.len() {
            let pts: Vec<(&PointResult, &LatencyStats)> =
                last.iter().map(|r| (&r[i].0, &r[i].1)).collect();
            self.res.window.push(merge_points(&pts, secs));
        }
        Ok(())
    }

    fn timeline_point(&mut self, t_s: f64, phase: &str, r: &RunResult) {
        let free_units = self.target.free_space_units();
        self.res.timeline.push(TimePoint {
            t_s,
            tgbw: self.written as f64 / 1e9,
            phase: phase.into(),
            stats: r.summary.totals.clone(),
            free_units,
        });
    }
}

/// The least-squares line over the last window: its values at the
/// window's first and last round.
fn slope_line(s: &[f64]) -> Option<(f64, f64)> {
    if s.len() < WINDOW_ROUNDS {
        return None;
    }
    let (mean, slope) = crate::steady::least_squares(&s[s.len() - WINDOW_ROUNDS..]);
    let xm = (WINDOW_ROUNDS as f64 - 1.0) / 2.0;
    Some((mean - slope * xm, mean + slope * xm))
}

trait WrittenBytes {
    fn writes_bytes(&self, s: &WorkloadSpec) -> u64;
}
impl WrittenBytes for crate::runner::Summary {
    fn writes_bytes(&self, s: &WorkloadSpec) -> u64 {
        (self.writes as f64 * s.block_sizes.mean()) as u64
    }
}

/// The IOPS matrix's block sizes for `target`: the plan's (each must suit
/// the sector: an error otherwise) or the spec's eight, less those the
/// sector rules out (with a note).
fn iops_block_sizes(plan: &PtsPlan, sector: u64) -> Result<(Vec<u64>, Option<String>), PtsError> {
    match &plan.block_sizes {
        Some(b) => {
            if let Some(bad) = b.iter().find(|&&b| !b.is_multiple_of(sector)) {
                return Err(PtsError::Plan(format!(
                    "block size {bad} bytes is not a multiple of the target's {sector}-byte sector"
                )));
            }
            Ok((b.clone(), None))
        }
        None => {
            let (ok, left): (Vec<u64>, Vec<u64>) = IOPS_BLOCK_SIZES
                .iter()
                .partition(|&&b| b.is_multiple_of(sector));
            let note = (!left.is_empty()).then(|| {
                format!(
                    "block sizes {} left out of the IOPS matrix: the target has {sector}-byte sectors (a :512 format runs them)",
                    left.iter().map(|&b| bs_label(b)).collect::<Vec<_>>().join(", ")
                )
            });
            Ok((ok, note))
        }
    }
}

/// Checks that `target` can run `tests` under `plan` before anything is
/// purged: block sizes against the sector, the plan's values.
pub fn preflight(
    plan: &PtsPlan,
    tests: &[PtsTest],
    target: &dyn PtsTarget,
) -> Result<(), PtsError> {
    plan.validate()?;
    let sector = target.sector_bytes() as u64;
    let cap = target.capacity_bytes();
    if tests.contains(&PtsTest::Iops) {
        iops_block_sizes(plan, sector)
            .map_err(|e| PtsError::Plan(format!("{}: {e}", target.label())))?;
    }
    let min_cap = 64 * 1024 * KIB;
    if cap < min_cap {
        return Err(PtsError::Plan(format!(
            "{}: {} bytes is too small for the PTS (at least 64 MiB: the largest block is 1 MiB)",
            target.label(),
            cap
        )));
    }
    if tests.contains(&PtsTest::Latency) && sector > 512 {
        // Not an error: 0.5 KiB is left out with a note.
    }
    Ok(())
}

/// Runs one test on `target`. Never fails as a whole: an error ends the
/// test and is recorded in [`TestResult::error`], with what was measured
/// before it.
pub fn run_test(
    target: &mut dyn PtsTarget,
    plan: &PtsPlan,
    test: PtsTest,
    progress: Progress,
) -> TestResult {
    let res = TestResult {
        test: test.name().into(),
        target: target.label().into(),
        class: format!("{:?}", plan.class).to_lowercase(),
        ..Default::default()
    };
    let mut ctx = Ctx {
        plan,
        target,
        progress,
        test,
        res,
        runs: 0,
        written: 0,
    };
    ctx.res.write_cache = ctx.target.write_cache(plan.class);
    if plan.class.active_range() < 1.0 {
        ctx.res.notes.push(format!(
            "PTS-C: the stimulus addresses the first {:.0} % of the LBA range (WIPC writes all of it)",
            plan.class.active_range() * 100.0
        ));
    }
    let r = match test {
        PtsTest::Iops => iops(&mut ctx),
        PtsTest::Throughput => throughput(&mut ctx),
        PtsTest::Latency => latency(&mut ctx),
        PtsTest::Wsat => wsat(&mut ctx),
        PtsTest::Hir => hir(&mut ctx),
        PtsTest::Xsr => xsr(&mut ctx),
        PtsTest::Dirth => dirth(&mut ctx, false),
        PtsTest::Ecw => dirth(&mut ctx, true),
    };
    if let Err(e) = r {
        ctx.res.error = Some(format!("{}: {e}", ctx.target.label()));
    }
    ctx.res
}

fn mix_label(read_pct: f64) -> String {
    format!("{:.0}/{:.0}", read_pct, 100.0 - read_pct)
}

fn iops(ctx: &mut Ctx) -> Result<(), PtsError> {
    let sector = ctx.target.sector_bytes() as u64;
    let (sizes, note) = iops_block_sizes(ctx.plan, sector)?;
    ctx.res.notes.extend(note);
    ctx.purge()?;
    ctx.wipc()?;
    let (t, q) = (ctx.plan.threads, ctx.plan.qd);
    let mut points = Vec::new();
    for &mix in &IOPS_MIXES {
        for &bs in &sizes {
            points.push(PointDef {
                label: format!("{} {}", mix_label(mix), bs_label(bs)),
                spec: spec(Pattern::Random, mix, bs),
                read_pct: mix,
                bs,
                threads: t,
                qd: q,
            });
        }
    }
    // Tracking variable: 4 KiB random write IOPS (or the smallest block
    // run, when 4 KiB is not in the matrix).
    let track_bs = if sizes.contains(&(4 * KIB)) {
        4 * KIB
    } else {
        *sizes.iter().min().expect("non-empty")
    };
    let i = points
        .iter()
        .position(|p| p.read_pct == 0.0 && p.bs == track_bs)
        .expect("0/100 is in the matrix");
    let var = format!("IOPS 0/100 {}", bs_label(track_bs));
    ctx.rounds(
        "",
        &points,
        &[(i, Metric::Iops, &var)],
        SteadyFrom::Saturated,
    )
}

fn throughput(ctx: &mut Ctx) -> Result<(), PtsError> {
    let (t, q) = (ctx.plan.threads, ctx.plan.qd);
    for bs in [1024 * KIB, 128 * KIB] {
        ctx.purge()?;
        ctx.wipc()?;
        let l = bs_label(bs);
        let points = [
            PointDef {
                label: format!("SEQ {l} W"),
                spec: spec(Pattern::Sequential, 0.0, bs),
                read_pct: 0.0,
                bs,
                threads: t,
                qd: q,
            },
            PointDef {
                label: format!("SEQ {l} R"),
                spec: spec(Pattern::Sequential, 100.0, bs),
                read_pct: 100.0,
                bs,
                threads: t,
                qd: q,
            },
        ];
        let (w, r) = (format!("MB/s SEQ {l} W"), format!("MB/s SEQ {l} R"));
        ctx.rounds(
            &format!("{l}: "),
            &points,
            &[(0, Metric::MbPerS, &w), (1, Metric::MbPerS, &r)],
            SteadyFrom::Start,
        )?;
    }
    Ok(())
}

fn latency(ctx: &mut Ctx) -> Result<(), PtsError> {
    let sector = ctx.target.sector_bytes() as u64;
    let sizes: Vec<u64> = [8 * KIB, 4 * KIB, 512]
        .into_iter()
        .filter(|b| b.is_multiple_of(sector))
        .collect();
    if sizes.len() < 3 {
        ctx.res.notes.push(format!(
            "0.5KiB left out: the target has {sector}-byte sectors (a :512 format runs it)"
        ));
    }
    ctx.purge()?;
    ctx.wipc()?;
    let mut points = Vec::new();
    for mix in [100.0, 65.0, 0.0] {
        for &bs in &sizes {
            points.push(PointDef {
                label: format!("{} {}", mix_label(mix), bs_label(bs)),
                spec: spec(Pattern::Random, mix, bs),
                read_pct: mix,
                bs,
                threads: 1,
                qd: 1,
            });
        }
    }
    let i = points
        .iter()
        .position(|p| p.read_pct == 0.0 && p.bs == 4 * KIB)
        .unwrap_or(points.len() - 1);
    ctx.rounds(
        "",
        &points,
        &[(i, Metric::LatAvg, "ART µs 0/100 4KiB")],
        SteadyFrom::Start,
    )
}

fn wsat(ctx: &mut Ctx) -> Result<(), PtsError> {
    ctx.purge()?;
    let cap = ctx.target.capacity_bytes() as f64;
    let goal = cap * ctx.plan.wsat_capacity_multiple;
    let cap_ns = ctx.plan.scaled_ns(24.0 * 3600.0);
    let s = ctx.active(&spec(Pattern::Random, 0.0, 4 * KIB));
    let (t, q) = (ctx.plan.threads, ctx.plan.qd);
    let round_ns = ctx.plan.round_ns;
    let mut elapsed = 0u64;
    let mut iops = Vec::new();
    let mut round = 0;
    while (ctx.written as f64) < goal && elapsed < cap_ns {
        round += 1;
        ctx.say(&format!(
            "round {round}, {:.1} of {:.1} GB written",
            ctx.written as f64 / 1e9,
            goal / 1e9
        ));
        let r = ctx.run(&s, t, q, round_ns, round_ns)?;
        elapsed += round_ns;
        iops.push(r.summary.totals.iops);
        ctx.timeline_point(elapsed as f64 / 1e9, "RND 4KiB W", &r);
    }
    // A fresh device's flat line would pass the rule at once: steady state
    // is searched from the first round after garbage collection first moved
    // data (modelled cards), or after one capacity was written (real
    // targets, whose GC is not visible).
    let model = ctx.target.free_space_units().is_some();
    let tl = &ctx.res.timeline;
    let from = if model {
        tl.iter().position(|p| p.stats.gc_pages_moved > 0)
    } else {
        tl.iter().position(|p| p.tgbw * 1e9 >= cap)
    }
    .unwrap_or(iops.len());
    let first_steady =
        crate::steady::converged_round(&iops[from.min(iops.len())..]).map(|r| r + from);
    ctx.res.notes.push(format!(
        "steady state searched from round {} (the first after {})",
        from + 1,
        if model {
            "garbage collection first moved data"
        } else {
            "one capacity written"
        }
    ));
    ctx.res.steady.push(SteadyRecord {
        variable: "IOPS RND 4KiB W".into(),
        converged_round: first_steady,
        rounds_run: iops.len(),
        window: check_window(&iops),
        slope_line: slope_line(&iops),
        series: iops,
    });
    ctx.res.notes.push(format!(
        "stopped at {:.2} GB written ({:.1} × capacity) after {:.1} s of stimulus (limits: {} × capacity, 24 h × time factor = {:.0} s)",
        ctx.written as f64 / 1e9,
        ctx.written as f64 / cap,
        elapsed as f64 / 1e9,
        ctx.plan.wsat_capacity_multiple,
        cap_ns as f64 / 1e9
    ));
    if let Some(p) = ctx.res.timeline.iter().find(|p| p.stats.gc_pages_moved > 0) {
        let (tgbw, t_s) = (p.tgbw, p.t_s);
        ctx.res.notes.push(format!(
            "the model's free space ran out (garbage collection first moved data) at {tgbw:.2} GB written, {t_s:.1} s"
        ));
    }
    Ok(())
}

fn hir(ctx: &mut Ctx) -> Result<(), PtsError> {
    ctx.purge()?;
    ctx.wipc()?;
    let (t, q) = (ctx.plan.threads, ctx.plan.qd);
    let point = PointDef {
        label: "RND 4KiB W".into(),
        spec: spec(Pattern::Random, 0.0, 4 * KIB),
        read_pct: 0.0,
        bs: 4 * KIB,
        threads: t,
        qd: q,
    };
    ctx.rounds(
        "preconditioning: ",
        std::slice::from_ref(&point),
        &[(0, Metric::Iops, "IOPS RND 4KiB W")],
        SteadyFrom::Saturated,
    )?;
    let s = ctx.active(&point.spec);
    let burst = ctx.plan.scaled_ns(HIR_BURST_S);
    let cycles = ctx.plan.hir_cycles;
    let mut clock = 0u64;
    for &wait in &HIR_WAITS_S {
        let idle = ctx.plan.scaled_ns(wait);
        for (phase, idle_ns) in [
            (format!("wait {wait:.0} s"), Some(idle)),
            (format!("baseline after wait {wait:.0} s"), None),
        ] {
            for c in 0..cycles {
                if c % 20 == 0 {
                    ctx.say(&format!("{phase}, cycle {} of {cycles}", c + 1));
                }
                let r = ctx.run(&s, t, q, burst, burst)?;
                clock += burst;
                ctx.timeline_point(clock as f64 / 1e9, &phase, &r);
                if let Some(i) = idle_ns {
                    ctx.target.idle(i)?;
                    clock += i;
                }
            }
        }
    }
    ctx.res.notes.push(format!(
        "access bursts of {:.3} s, wait states of {} s, {cycles} cycles per wait state and per return to baseline",
        burst as f64 / 1e9,
        HIR_WAITS_S
            .iter()
            .map(|w| format!("{:.3}", ctx.plan.scaled_ns(*w) as f64 / 1e9))
            .collect::<Vec<_>>()
            .join("/"),
    ));
    Ok(())
}

fn xsr(ctx: &mut Ctx) -> Result<(), PtsError> {
    ctx.purge()?;
    let (t, q) = (ctx.plan.threads, ctx.plan.qd);
    let round_ns = ctx.plan.round_ns;
    let mut clock = 0u64;
    for (label, seq, bs, secs) in XSR_GROUPS {
        let s = ctx.active(&spec(
            if seq {
                Pattern::Sequential
            } else {
                Pattern::Random
            },
            0.0,
            bs,
        ));
        let dur = ctx.plan.scaled_ns(secs);
        let mut done = 0u64;
        while done < dur {
            // A sliver left after this round (a time factor that does not
            // divide the group into whole rounds) joins it rather than
            // becoming a point of its own with next to no I/O.
            let left = dur - done;
            let d = if left < round_ns + round_ns / 10 {
                left
            } else {
                round_ns
            };
            ctx.say(&format!(
                "{label}, {:.0} of {:.0} s",
                done as f64 / 1e9,
                dur as f64 / 1e9
            ));
            let r = ctx.run(&s, t, q, d, d)?;
            done += d;
            clock += d;
            ctx.timeline_point(clock as f64 / 1e9, label, &r);
        }
    }
    Ok(())
}

/// DIRTH (8 KiB random 65/35) or ECW (its block-size mix and access
/// ranges, 40/60): preconditioning at the largest T×Q, the T×Q grid in
/// rounds to steady state, then response-time histograms at the maximum,
/// middle and minimum IOPS points.
fn dirth(ctx: &mut Ctx, ecw: bool) -> Result<(), PtsError> {
    let (base, name) = if ecw {
        (ecw_spec(), "ECW")
    } else {
        (spec(Pattern::Random, 65.0, 8 * KIB), "RND 8KiB 65/35")
    };
    if ecw && ctx.target.sector_bytes() > 512 {
        ctx.res.notes.push(format!(
            "ECW block sizes below the {}-byte sector are rounded up to it",
            ctx.target.sector_bytes()
        ));
    }
    let mut ts = ctx.plan.dirth_threads.clone();
    let mut qs = ctx.plan.dirth_qd.clone();
    ts.sort_unstable_by(|a, b| b.cmp(a));
    qs.sort_unstable_by(|a, b| b.cmp(a));
    ts.dedup();
    qs.dedup();
    let read_pct = base.read_fraction * 100.0;
    let pd = |t: u32, q: u32| PointDef {
        label: format!("T{t}Q{q}"),
        spec: base.clone(),
        read_pct,
        bs: 0,
        threads: t,
        qd: q,
    };
    ctx.purge()?;
    ctx.wipc()?;
    let top = pd(ts[0], qs[0]);
    ctx.rounds(
        "preconditioning: ",
        std::slice::from_ref(&top),
        &[(0, Metric::Iops, &format!("IOPS {name} {}", top.label))],
        SteadyFrom::Saturated,
    )?;
    // The preconditioning window is not a result of the test.
    let pre_window = std::mem::take(&mut ctx.res.window);
    drop(pre_window);
    let pre_rounds = ctx.res.rounds.len();
    let points: Vec<PointDef> = ts
        .iter()
        .flat_map(|&t| qs.iter().map(move |&q| (t, q)))
        .map(|(t, q)| pd(t, q))
        .collect();
    ctx.rounds(
        "T×Q: ",
        &points,
        &[(0, Metric::Iops, &format!("IOPS {name} {}", top.label))],
        SteadyFrom::Start,
    )?;
    ctx.res.notes.push(format!(
        "rounds 1..{pre_rounds} of the round list are preconditioning at {}, the rest the T×Q grid",
        top.label
    ));
    // Operating points from the measurement window.
    let w = ctx.res.window.clone();
    let max = w
        .iter()
        .max_by(|a, b| a.stats.iops.total_cmp(&b.stats.iops))
        .cloned()
        .expect("non-empty grid");
    let min = w
        .iter()
        .min_by_key(|p| p.threads as u64 * p.qd as u64)
        .cloned()
        .expect("non-empty grid");
    let mid_iops = (max.stats.iops + min.stats.iops) / 2.0;
    let mid = w
        .iter()
        .min_by(|a, b| {
            (a.stats.iops - mid_iops)
                .abs()
                .total_cmp(&(b.stats.iops - mid_iops).abs())
        })
        .cloned()
        .expect("non-empty grid");
    ctx.res.ceiling_point = w
        .iter()
        .filter(|p| p.stats.lat_p9999_us <= ctx.plan.latency_ceiling_us)
        .max_by(|a, b| a.stats.iops.total_cmp(&b.stats.iops))
        .cloned();
    let hist_ns = ctx.plan.scaled_ns(600.0);
    for (op, p) in [("max", &max), ("mid", &mid), ("min", &min)] {
        ctx.say(&format!(
            "response-time histogram at {op} IOPS ({})",
            p.label
        ));
        let s = ctx.active(&base);
        let r = ctx.run(&s, p.threads, p.qd, hist_ns, hist_ns)?;
        let lat = r.latency.clone().unwrap_or_default();
        ctx.res.histograms.push(HistogramResult {
            operating_point: op.into(),
            threads: p.threads,
            qd: p.qd,
            stats: r.summary.totals,
            lat_p99999_us: lat.percentile_us(0.99999),
            bins: lat.log_bins_us(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::ModelPts;
    use super::*;
    use device::{CardConfig, Preset};

    fn target(sector: u32) -> ModelPts {
        let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
        c.scale = 0.01;
        c.sector_bytes = sector;
        ModelPts::new("stock", c).unwrap()
    }

    fn quick() -> PtsPlan {
        PtsPlan {
            round_ns: 50_000_000,
            time_factor: 0.001,
            max_rounds: 8,
            threads: 2,
            qd: 8,
            hir_cycles: 2,
            dirth_threads: vec![1, 4],
            dirth_qd: vec![1, 8],
            ..PtsPlan::default()
        }
    }

    #[test]
    fn parse_tests() {
        assert_eq!(PtsTest::parse_list("all").unwrap().len(), 8);
        assert_eq!(
            PtsTest::parse_list("iops,hir").unwrap(),
            vec![PtsTest::Iops, PtsTest::Hir]
        );
        let e = PtsTest::parse_list("nosuch").unwrap_err();
        assert!(e.contains("unknown test 'nosuch'"), "{e}");
    }

    #[test]
    fn rejected_block_size_fails_before_any_io() {
        let t = target(4096);
        let mut plan = quick();
        plan.block_sizes = Some(vec![4096, 512]);
        let e = preflight(&plan, &[PtsTest::Iops], &t).unwrap_err();
        assert!(e.to_string().contains("512 bytes is not a multiple"), "{e}");
        plan.block_sizes = None;
        preflight(&plan, &[PtsTest::Iops], &t).unwrap();
    }

    #[test]
    fn latency_test_reports_five_nines_and_is_deterministic() {
        let mut plan = quick();
        plan.max_rounds = 6;
        let a = run_test(&mut target(512), &plan, PtsTest::Latency, &mut |_| {});
        assert!(a.error.is_none(), "{:?}", a.error);
        assert_eq!(a.window.len(), 9, "3 mixes x 3 sizes");
        for p in &a.window {
            assert_eq!((p.threads, p.qd), (1, 1));
            assert!(p.stats.lat_avg_us > 0.0);
            assert!(p.lat_p99999_us >= p.stats.lat_p9999_us);
            assert!(p.stats.lat_max_us >= p.lat_p99999_us * 0.99);
        }
        assert!(a.wipc_bytes >= 2 * target(512).capacity_bytes());
        let b = run_test(&mut target(512), &plan, PtsTest::Latency, &mut |_| {});
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }

    /// WSAT's rule, as the IOPS test and DIRTH's/ECW's preconditioning
    /// apply it: a window that converged began at or after the round in
    /// which GC first moved data (never on the fresh card's flat line),
    /// and a note says from where the window was searched.
    fn assert_searched_after_gc(r: &TestResult, steady: usize, prefix: &str) {
        if let Some(c) = r.steady[steady].converged_round {
            let first_gc = r
                .rounds
                .iter()
                .position(|rd| rd.points.iter().any(|p| p.stats.gc_pages_moved > 0))
                .expect("converged only after GC moved data");
            assert!(c >= first_gc + 5, "window from round {} before GC", c - 4);
        }
        let note = format!("{prefix}steady state ");
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with(&note) && n.contains("searched")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn iops_matrix_on_4k_sectors_leaves_out_half_kib() {
        let mut plan = quick();
        plan.max_rounds = 5;
        plan.round_ns = 20_000_000;
        let r = run_test(&mut target(4096), &plan, PtsTest::Iops, &mut |_| {});
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.window.len(), 7 * 7);
        assert!(r.notes.iter().any(|n| n.contains("0.5KiB left out")));
        assert_eq!(r.steady.len(), 1);
        assert_eq!(r.steady[0].series.len(), r.rounds.len());
        // 100 % read 4 KiB beats 100 % write 1 MiB in IOPS.
        let get = |l: &str| r.window.iter().find(|p| p.label == l).unwrap().stats.iops;
        assert!(get("100/0 4KiB") > get("0/100 1024KiB"));
        assert_searched_after_gc(&r, 0, "");
    }

    #[test]
    fn wsat_runs_to_the_capacity_multiple_and_sees_gc_start() {
        let mut plan = quick();
        plan.wsat_capacity_multiple = 2.0;
        plan.time_factor = 1.0;
        plan.round_ns = 200_000_000;
        let r = run_test(&mut target(4096), &plan, PtsTest::Wsat, &mut |_| {});
        assert!(r.error.is_none(), "{:?}", r.error);
        let cap = target(4096).capacity_bytes() as f64 / 1e9;
        let last = r.timeline.last().unwrap();
        assert!(last.tgbw >= 2.0 * cap, "{} < {}", last.tgbw, 2.0 * cap);
        assert!(r.timeline.windows(2).all(|w| w[1].tgbw > w[0].tgbw));
        // Steady state is never declared on the fresh card's flat line.
        if let Some(c) = r.steady[0].converged_round {
            let first_gc = r
                .timeline
                .iter()
                .position(|p| p.stats.gc_pages_moved > 0)
                .unwrap();
            assert!(c - 5 >= first_gc, "the window starts after GC began");
        }
        // Fresh out of box writes are faster than after GC starts.
        let first = r.timeline[0].stats.iops;
        assert!(last.stats.iops < first, "{} vs {}", last.stats.iops, first);
        assert!(r.notes.iter().any(|n| n.contains("free space ran out")));
        assert!(last.stats.write_amplification > 1.0);
    }

    #[test]
    fn xsr_has_no_sliver_points() {
        let mut plan = quick();
        plan.round_ns = 100_000_000;
        // 8 h × factor = 1.0001 s: ten rounds and a 0.1 ms sliver.
        plan.time_factor = 1.0001 / (8.0 * 3600.0);
        let r = run_test(&mut target(4096), &plan, PtsTest::Xsr, &mut |_| {});
        assert!(r.error.is_none(), "{:?}", r.error);
        let first: Vec<_> = r
            .timeline
            .iter()
            .filter(|p| p.phase == "SEQ 1024KiB W")
            .collect();
        assert_eq!(first.len(), 10, "the sliver joins the last round");
        assert!(r.timeline.iter().all(|p| p.stats.ios > 0));
    }

    #[test]
    fn dirth_finds_operating_points_and_histograms() {
        let plan = quick();
        let r = run_test(&mut target(4096), &plan, PtsTest::Dirth, &mut |_| {});
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.window.len(), 4);
        assert_eq!(r.histograms.len(), 3);
        assert_searched_after_gc(&r, 0, "preconditioning: ");
        let h = &r.histograms;
        assert_eq!((h[2].threads, h[2].qd), (1, 1));
        assert!(h[0].stats.iops > h[2].stats.iops);
        for x in h {
            let n: u64 = x.bins.iter().map(|b| b.1).sum();
            assert_eq!(n, x.stats.ios, "every I/O is in one bucket");
        }
    }
}

/// The steady-state decision of the round loop, on a scripted target whose
/// tracking variable follows a given series.
#[cfg(test)]
mod steady_decisions {
    use super::*;
    use crate::runner::Summary;
    use crate::stats::IntervalStats;
    use sim::Nanos;

    struct Scripted {
        series: Vec<f64>,
        next: usize,
        /// A modelled card whose GC first moves data in this run (0-based),
        /// or `None`: a real target.
        gc_from: Option<usize>,
        capacity: u64,
    }

    impl PtsTarget for Scripted {
        fn label(&self) -> &str {
            "scripted"
        }
        fn description(&self) -> String {
            "scripted".into()
        }
        fn is_virtual(&self) -> bool {
            true
        }
        fn capacity_bytes(&self) -> u64 {
            self.capacity
        }
        fn sector_bytes(&self) -> u32 {
            512
        }
        fn purge(&mut self) -> Result<String, PtsError> {
            Ok("none".into())
        }
        fn idle(&mut self, _: u64) -> Result<(), PtsError> {
            Ok(())
        }
        fn free_space_units(&self) -> Option<f64> {
            self.gc_from.map(|_| 1.0)
        }
        fn run(&mut self, _: &WorkloadSpec, o: &RunOptions) -> Result<RunResult, PtsError> {
            let iops = self.series[self.next.min(self.series.len() - 1)];
            let moved = self.gc_from.is_some_and(|g| self.next >= g);
            self.next += 1;
            let totals = IntervalStats {
                iops,
                ios: (iops * o.duration_ns as f64 / 1e9) as u64,
                gc_pages_moved: if moved { 100 } else { 0 },
                ..Default::default()
            };
            let writes = totals.ios;
            Ok(RunResult {
                summary: Summary {
                    totals,
                    reads: 0,
                    // Every I/O a 4 KiB write (what `written` counts).
                    writes,
                    bytes: 0,
                    virtual_s: o.duration_ns as f64 / 1e9,
                    precondition_s: 0.0,
                    host_ram_bytes: 0,
                    gc_runs: 0,
                    erases: 0,
                },
                intervals: Vec::new(),
                end: Nanos(o.duration_ns),
                latency: None,
            })
        }
    }

    fn decide(series: Vec<f64>, max_rounds: usize) -> TestResult {
        decide_from(series, max_rounds, SteadyFrom::Start, None, 1 << 40)
    }

    fn decide_from(
        series: Vec<f64>,
        max_rounds: usize,
        from: SteadyFrom,
        gc_from: Option<usize>,
        capacity: u64,
    ) -> TestResult {
        let plan = PtsPlan {
            max_rounds,
            round_ns: 1_000_000_000,
            ..PtsPlan::default()
        };
        let mut t = Scripted {
            series,
            next: 0,
            gc_from,
            capacity,
        };
        let mut ctx = Ctx {
            plan: &plan,
            target: &mut t,
            progress: &mut |_| {},
            test: PtsTest::Iops,
            res: TestResult::default(),
            runs: 0,
            written: 0,
        };
        let p = PointDef {
            label: "p".into(),
            spec: spec(Pattern::Random, 0.0, 4096),
            read_pct: 0.0,
            bs: 4096,
            threads: 1,
            qd: 1,
        };
        ctx.rounds("", &[p], &[(0, Metric::Iops, "IOPS")], from)
            .unwrap();
        ctx.res
    }

    #[test]
    fn a_level_series_converges_at_round_five() {
        let r = decide(vec![1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0], 25);
        assert_eq!(r.steady[0].converged_round, Some(5));
        assert_eq!(r.rounds.len(), 5, "stops at the first steady window");
        assert!(r.notes.is_empty());
        let w = r.steady[0].window.unwrap();
        assert!(w.steady && (w.mean - 1000.0).abs() < 1e-9);
        assert_eq!(r.window.len(), 1);
    }

    #[test]
    fn a_series_that_never_settles_runs_25_rounds_and_says_so() {
        // 6 % growth a round: the data excursion stays above 20 %.
        let s: Vec<f64> = (0..40).map(|i| 1000.0 * 1.06f64.powi(i)).collect();
        let r = decide(s, 25);
        assert_eq!(r.steady[0].converged_round, None);
        assert_eq!(r.rounds.len(), 25);
        assert_eq!(r.steady[0].rounds_run, 25);
        assert!(!r.steady[0].window.unwrap().steady);
        assert!(r.notes[0].contains("steady state not reached in 25 rounds"));
        // The measurement window is still reported: the last five rounds.
        assert_eq!(r.window.len(), 1);
    }

    #[test]
    fn a_fresh_then_falling_series_converges_late() {
        // Falling for 12 rounds (after WIPC the fresh state drains), then level.
        let mut s: Vec<f64> = (0..12).map(|i| 5000.0 - 300.0 * i as f64).collect();
        s.extend([1700.0, 1720.0, 1680.0, 1710.0, 1690.0, 1700.0, 1700.0]);
        let r = decide(s, 25);
        let c = r.steady[0].converged_round.unwrap();
        assert!((13..=17).contains(&c), "converged at {c}");
        assert_eq!(r.rounds.len(), c);
        let (a, b) = r.steady[0].slope_line.unwrap();
        assert!((a - b).abs() / 1700.0 <= 0.10);
    }

    /// HIR's preconditioning: a fresh card's level line is not steady
    /// state; the window may start only in the round GC first moved data.
    #[test]
    fn a_fresh_level_line_is_not_steady_before_gc_moves_data() {
        let level = vec![243_000.0; 30];
        let r = decide_from(level.clone(), 25, SteadyFrom::Saturated, Some(7), 1 << 40);
        // GC first moves data in round 8: the window is rounds 8..12.
        assert_eq!(r.steady[0].converged_round, Some(12));
        assert!(
            r.notes[0].contains("searched from round 8"),
            "{:?}",
            r.notes
        );
        // The same series from the start is steady at once.
        assert_eq!(decide(level.clone(), 25).steady[0].converged_round, Some(5));
        // GC never moves data: never steady, and the report says why.
        let r = decide_from(level, 25, SteadyFrom::Saturated, Some(99), 1 << 40);
        assert_eq!(r.steady[0].converged_round, None);
        assert_eq!(r.rounds.len(), 25);
        assert!(
            r.notes[0].contains("moved no data in 25 rounds"),
            "{:?}",
            r.notes
        );
    }

    /// A real target (no GC visible): the search starts in the round by
    /// whose end one capacity was written since the purge.
    #[test]
    fn a_real_target_is_searched_after_one_capacity_written() {
        // 1000 IOPS for 1 s rounds: 1000 writes of 4 KiB a round; one
        // capacity is six rounds' writes.
        let cap = 6 * 1000 * 4096;
        let r = decide_from(vec![1000.0; 30], 25, SteadyFrom::Saturated, None, cap);
        assert_eq!(r.steady[0].converged_round, Some(10));
        assert!(
            r.notes[0].contains("searched from round 6 (the first after one capacity written)"),
            "{:?}",
            r.notes
        );
        let r = decide_from(vec![1000.0; 30], 25, SteadyFrom::Saturated, None, 1 << 40);
        assert_eq!(r.steady[0].converged_round, None);
        assert!(
            r.notes[0].contains("less than one capacity written"),
            "{:?}",
            r.notes
        );
    }
}
