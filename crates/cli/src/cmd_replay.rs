//! `vsl replay TRACE`: replays a block trace on modelled cards in virtual
//! time, timed (the trace's arrivals, `--speed`) or as fast as possible at
//! `--qd` (`--afap`), streamed from the file (bounded memory), with
//! per-interval statistics and latency percentiles and CDF by op.

use crate::args::CardArgs;
use crate::output::DeviceInfo;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use device::{Card, VirtualDevice};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::openloop::{self, Arrival, Arrivals, OpenOptions, OpenResult, Pacing, SourceError};
use lab::IntervalStats;
use serde::Serialize;
use sim::Nanos;
use std::io::Write;
use std::path::{Path, PathBuf};
use workload::tracefmt::{TraceError, TraceFormat, TraceReader, TraceRecord};
use workload::units::{parse_duration_ns, parse_size};
use workload::OpKind;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file (`-`: standard input, e.g. `zcat t.csv.gz | vsl replay -`).
    /// Formats: fio iolog v2/v3, blkparse text, MSR Cambridge CSV, SNIA
    /// IOTTA Tencent CBS CSV and FIU traces, MQSim ASCII; detected from the
    /// first lines.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Force the trace format: iolog, blkparse, msr, snia-tencent, snia-fiu or mqsim.
    #[arg(long, value_name = "FORMAT")]
    pub trace_format: Option<String>,
    #[command(flatten)]
    pub card: CardArgs,
    /// Replay on these cards instead of --device/--format (repeatable, one
    /// run each, compared at the end): PRESET[:FORMAT][:512][:gc=POLICY],
    /// FORMAT one of stock, hp, improved-write, max-write, op=PCT, capacity=SIZE.
    #[arg(long = "target", value_name = "PRESET[:FORMAT]")]
    pub targets: Vec<String>,
    /// Requests beyond the card's capacity: fail (an error), wrap (offsets
    /// wrap around the capacity) or scale (offsets scaled by capacity /
    /// the trace's span when it is larger than the card).
    #[arg(long, default_value = "fail", value_name = "fail|wrap|scale")]
    pub remap: String,
    /// The address span the trace covers, for --remap scale (default: read
    /// the trace once first to find it; required when the trace is stdin).
    #[arg(long, value_name = "SIZE")]
    pub trace_span: Option<String>,
    /// Only requests of this traced device / disk / volume / file number.
    #[arg(long, value_name = "N")]
    pub trace_device: Option<u32>,
    /// Timed replay at this speed: 2x replays the trace's arrivals twice as fast.
    #[arg(long, default_value = "1x", conflicts_with = "afap")]
    pub speed: String,
    /// As fast as possible: ignore the arrival times, keep --qd requests in flight.
    #[arg(long)]
    pub afap: bool,
    /// Requests in flight at most (the host queue depth); in a timed replay
    /// later arrivals wait in the host queue, and their latency counts it.
    #[arg(long, default_value_t = 32)]
    pub qd: u32,
    /// Reporting interval (virtual time).
    #[arg(long, default_value = "1s", allow_hyphen_values = true)]
    pub interval: String,
    /// Stop after this much virtual time (default: at the end of the trace).
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Fill the card sequentially first, as the reviews do.
    #[arg(long)]
    pub precondition: bool,
    /// Seed of the card's random choices (GC).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the results as JSON on stdout (deterministic: no wall-clock fields).
    #[arg(long)]
    pub json: bool,
    /// No progress bar or interval table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Only read and map the trace (no card simulated) and report records
    /// per wall second: the baseline of bench/replay_speed.sh.
    #[arg(long, hide = true)]
    pub parse_only: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Remap {
    Fail,
    Wrap,
    Scale,
}

/// What the replay did to the trace's requests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceCounts {
    /// Requests read from the trace.
    pub records: u64,
    /// Left out by --trace-device.
    pub filtered: u64,
    /// Widened to whole sectors of the card.
    pub widened: u64,
    /// Moved by --remap.
    pub remapped: u64,
    /// Requests the trace gives a completion time for.
    pub with_completion: u64,
}

/// Trace records as open-loop arrivals on one card.
pub struct TraceArrivals {
    reader: TraceReader,
    capacity: u64,
    sector: u64,
    remap: Remap,
    /// Scale factor numerator/denominator (capacity, span) for Remap::Scale.
    scale: Option<(u64, u64)>,
    device: Option<u32>,
    pub counts: TraceCounts,
    progress: ProgressBar,
}

impl TraceArrivals {
    fn map(&mut self, r: &TraceRecord) -> Result<Arrival, TraceError> {
        let s = self.sector;
        if r.op == OpKind::Flush {
            return Ok(Arrival {
                at_ns: r.arrival_ns,
                op: r.op,
                offset: 0,
                len: 0,
            });
        }
        let beyond = |what: &str| {
            TraceError {
            file: self.reader.name().to_string(),
            line: r.line,
            message: format!(
                "{} at offset {} length {} {what} the card's {} bytes: use --remap wrap or --remap scale",
                r.op.name(),
                r.offset,
                r.len,
                self.capacity
            ),
        }
        };
        let mut start = r.offset / s * s;
        let end = r
            .offset
            .checked_add(r.len)
            .ok_or_else(|| beyond("is beyond"))?;
        let mut len = end.div_ceil(s) * s - start;
        if start != r.offset || len != r.len {
            self.counts.widened += 1;
        }
        let cap = self.capacity / s * s;
        if let Some((num, den)) = self.scale {
            let scaled = (start as u128 * num as u128 / den as u128) as u64 / s * s;
            if scaled != start {
                self.counts.remapped += 1;
            }
            start = scaled;
        }
        if start + len > cap {
            match self.remap {
                Remap::Fail => return Err(beyond("goes beyond")),
                Remap::Wrap | Remap::Scale => {
                    len = len.min(cap);
                    let room = (cap - len) / s + 1;
                    start = (start / s % room) * s;
                    self.counts.remapped += 1;
                }
            }
        }
        Ok(Arrival {
            at_ns: r.arrival_ns,
            op: r.op,
            offset: start,
            len,
        })
    }
}

impl Arrivals for TraceArrivals {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, SourceError> {
        loop {
            let Some(r) = self.reader.next() else {
                return Ok(None);
            };
            let r = r?;
            self.counts.records += 1;
            if self.counts.records.is_multiple_of(65_536) {
                self.progress.set_position(self.reader.bytes_read());
            }
            if self.device.is_some_and(|d| d != r.device) {
                self.counts.filtered += 1;
                continue;
            }
            self.counts.with_completion += r.completion_ns.is_some() as u64;
            return Ok(Some(self.map(&r)?));
        }
    }
}

/// One replay's results.
#[derive(Serialize)]
pub struct ReplayRun {
    pub target: String,
    pub device: DeviceInfo,
    pub trace: TraceCounts,
    /// Virtual time of the precondition fill, if any.
    pub precondition_s: f64,
    #[serde(flatten)]
    pub result: OpenResult,
    #[serde(skip)]
    pub wall_s: f64,
}

#[derive(Serialize)]
struct ReplayReport<'a> {
    trace: String,
    trace_format: TraceFormat,
    remap: Remap,
    options: &'a OpenOptions,
    runs: &'a [ReplayRun],
}

fn parse_speed(s: &str) -> Result<f64> {
    let t = s.trim().trim_end_matches(['x', 'X']);
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| anyhow!("--speed: '{s}' is not a positive speed such as 2x or 0.5x"))
}

fn open(a: &ReplayArgs, format: Option<TraceFormat>) -> Result<TraceReader> {
    Ok(TraceReader::open(&a.trace, format)?)
}

/// The trace's address span (end of its furthest request), for --remap scale.
fn trace_span(a: &ReplayArgs, format: Option<TraceFormat>, quiet: bool) -> Result<u64> {
    if let Some(s) = &a.trace_span {
        return parse_size(s).map_err(|e| anyhow!("--trace-span: {e}"));
    }
    if a.trace == Path::new("-") {
        bail!(
            "--remap scale on standard input needs --trace-span (the trace cannot be read twice)"
        );
    }
    let mut reader = open(a, format)?;
    let bar = progress_bar(quiet, &a.trace, "scanning");
    let mut span = 0u64;
    let mut n = 0u64;
    while let Some(r) = reader.next() {
        let r = r?;
        n += 1;
        if n.is_multiple_of(65_536) {
            bar.set_position(reader.bytes_read());
        }
        if a.trace_device.is_some_and(|d| d != r.device) {
            continue;
        }
        span = span.max(r.offset.saturating_add(r.len));
    }
    bar.finish_and_clear();
    Ok(span)
}

fn progress_bar(quiet: bool, trace: &Path, what: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let len = std::fs::metadata(trace).map(|m| m.len()).ok();
    let b = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    let t =
        format!("{{spinner}} {what} {{bytes}}/{{total_bytes}} [{{bar:30}}] {{msg}} eta {{eta}}");
    b.set_style(
        ProgressStyle::with_template(&t)
            .expect("valid template")
            .progress_chars("=> "),
    );
    b
}

/// `vsl replay`.
pub fn replay(a: ReplayArgs) -> Result<()> {
    let format = a
        .trace_format
        .as_deref()
        .map(TraceFormat::parse)
        .transpose()
        .map_err(|e| anyhow!("--trace-format: {e}"))?;
    let remap = match a.remap.as_str() {
        "fail" => Remap::Fail,
        "wrap" => Remap::Wrap,
        "scale" => Remap::Scale,
        o => bail!("--remap: '{o}' (expected fail, wrap or scale)"),
    };
    let pacing = if a.afap {
        Pacing::Afap
    } else {
        Pacing::Timed {
            speed: parse_speed(&a.speed)?,
        }
    };
    let interval_ns = parse_duration_ns(&a.interval).map_err(|e| anyhow!("--interval: {e}"))?;
    let duration_ns = a
        .duration
        .as_deref()
        .map(|d| parse_duration_ns(d).map_err(|e| anyhow!("--duration: {e}")))
        .transpose()?;
    let opts = OpenOptions {
        max_outstanding: a.qd,
        pacing,
        duration_ns,
        interval_ns,
    };
    opts.validate()?;
    if a.targets.len() > 1 && a.trace == Path::new("-") {
        bail!("several --target replay the trace several times: give a file, not standard input");
    }
    let quiet = a.quiet || a.json;
    let span = if remap == Remap::Scale {
        Some(trace_span(&a, format, quiet)?)
    } else {
        None
    };
    let targets: Vec<Option<&str>> = if a.targets.is_empty() {
        vec![None]
    } else {
        a.targets.iter().map(|t| Some(t.as_str())).collect()
    };
    let mut runs = Vec::new();
    let mut detected = format;
    for t in targets {
        let run = replay_one(&a, t, detected, remap, span, &opts, quiet, &mut detected)?;
        if !a.json {
            print_run(&run, &a, detected.expect("known after a run"), pacing);
        }
        runs.push(run);
    }
    if a.json {
        let r = ReplayReport {
            trace: a.trace.display().to_string(),
            trace_format: detected.expect("known after a run"),
            remap,
            options: &opts,
            runs: &runs,
        };
        let mut o = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut o, &r)?;
        writeln!(o)?;
    } else if runs.len() > 1 {
        print_comparison(&runs);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn replay_one(
    a: &ReplayArgs,
    target: Option<&str>,
    format: Option<TraceFormat>,
    remap: Remap,
    span: Option<u64>,
    opts: &OpenOptions,
    quiet: bool,
    detected: &mut Option<TraceFormat>,
) -> Result<ReplayRun> {
    let mut cfg = crate::cmd_run::card_config(&a.card)?;
    if let Some(t) = target {
        let m = crate::cmd_review::model_config(t, cfg.scale, cfg.gc_policy)?;
        cfg.preset = m.preset;
        cfg.format = m.format;
        cfg.sector_bytes = m.sector_bytes;
        cfg.gc_policy = m.gc_policy;
    }
    cfg.gc_seed = a.seed;
    cfg.reliability.seed = a.seed;
    cfg.reliability.defer_failures = true;
    let mut card = Card::new(cfg)?;
    let info = DeviceInfo::new(&card);
    let label = target.map_or_else(
        || format!("{}:{}", info.preset, info.format),
        |t| t.to_string(),
    );
    let reader = open(a, format)?;
    *detected = Some(reader.format());
    let capacity = card.capacity_bytes();
    let scale = span.filter(|&s| s > capacity).map(|s| (capacity, s));
    let bar = progress_bar(quiet, &a.trace, &format!("replaying on {label}"));
    let mut src = TraceArrivals {
        reader,
        capacity,
        sector: card.sector_bytes() as u64,
        remap,
        scale,
        device: a.trace_device,
        counts: TraceCounts::default(),
        progress: bar.clone(),
    };
    if a.parse_only {
        let wall = std::time::Instant::now();
        let mut n = 0u64;
        while src.next_arrival().map_err(|e| anyhow!("{e}"))?.is_some() {
            n += 1;
        }
        let wall_s = wall.elapsed().as_secs_f64();
        bar.finish_and_clear();
        println!(
            "{{\"parse_only\": true, \"records\": {}, \"arrivals\": {n}, \"wall_s\": {wall_s:.6}, \"records_per_wall_s\": {:.0}}}",
            src.counts.records,
            src.counts.records as f64 / wall_s.max(1e-9)
        );
        std::process::exit(0);
    }
    let mut start = Nanos::ZERO;
    if a.precondition {
        bar.set_message("preconditioning");
        start = lab::precondition_fill(&mut card, start)?;
    }
    card.arm_die_failures(start)?;
    let precondition_s = start.as_secs_f64();
    let show_intervals = !quiet;
    if show_intervals {
        bar.suspend(|| print_interval_header(&label));
    }
    let wall = std::time::Instant::now();
    let result = openloop::run_arrivals(&mut card, &mut src, opts, start, &mut |iv| {
        bar.set_message(format!("virtual {:.0}s", iv.t_s));
        if show_intervals {
            bar.suspend(|| print_interval(iv));
        }
    })
    .with_context(|| format!("replay on {label}"))?;
    let wall_s = wall.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(ReplayRun {
        target: label,
        device: DeviceInfo::new(&card),
        trace: src.counts,
        precondition_s,
        result,
        wall_s,
    })
}

fn print_interval_header(label: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "replay on {label}");
    let _ = writeln!(
        o,
        "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "t_s", "IOPS", "read", "write", "MB/s", "lat_us", "p99_us", "WA"
    );
}

fn print_interval(iv: &IntervalStats) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(
        o,
        "{:>10.3} {:>10.0} {:>10.0} {:>10.0} {:>10.1} {:>10.1} {:>10.1} {:>7.3}",
        iv.t_s,
        iv.iops,
        iv.read_iops,
        iv.write_iops,
        iv.mb_per_s,
        iv.lat_avg_us,
        iv.lat_p99_us,
        iv.write_amplification
    );
}

fn print_run(r: &ReplayRun, a: &ReplayArgs, format: TraceFormat, pacing: Pacing) {
    let mut o = std::io::stdout().lock();
    let s = &r.result.run.summary;
    let c = &r.trace;
    let _ = writeln!(o, "{}", r.device.line());
    let _ = writeln!(
        o,
        "trace     {} ({}): {} requests, {} filtered out, {} widened to whole sectors, {} remapped ({})",
        a.trace.display(),
        format,
        c.records,
        c.filtered,
        c.widened,
        c.remapped,
        a.remap
    );
    let _ = writeln!(
        o,
        "replay    {}, QD {}: {} issued, {} waited in the host queue, {} out of order",
        match pacing {
            Pacing::Afap => "as fast as possible".to_string(),
            Pacing::Timed { speed } => format!("timed at {speed}x"),
        },
        a.qd,
        r.result.issued,
        r.result.waited,
        r.result.reordered
    );
    if r.precondition_s > 0.0 {
        let _ = writeln!(o, "precond   fill took {:.1} s (virtual)", r.precondition_s);
    }
    let t = &s.totals;
    let _ = writeln!(
        o,
        "total     {:.3} s virtual, {} I/Os, {:.0} IOPS, {:.1} MB/s, WA {:.3}, GC runs {}",
        s.virtual_s, t.ios, t.iops, t.mb_per_s, t.write_amplification, s.gc_runs
    );
    let _ = writeln!(
        o,
        "{:<8}{:>10}{:>10}{:>9}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>11}",
        "op", "I/Os", "IOPS", "MB/s", "lat avg", "p50", "p99", "p99.9", "max", "svc avg", "svc p99"
    );
    for op in &r.result.by_op {
        let _ = writeln!(
            o,
            "{:<8}{:>10}{:>10.0}{:>9.1}{:>10.1}{:>10.1}{:>10.1}{:>10.1}{:>10.1}{:>11.1}{:>11.1}",
            op.op.name(),
            op.ios,
            op.iops,
            op.mb_per_s,
            op.lat.mean_us,
            op.lat.p50_us,
            op.lat.p99_us,
            op.lat.p999_us,
            op.lat.max_us,
            op.service.mean_us,
            op.service.p99_us
        );
    }
    let _ = writeln!(o, "latency CDF (us, from arrival):");
    let _ = write!(o, "{:<8}", "fraction");
    for op in &r.result.by_op {
        let _ = write!(o, "{:>12}", op.op.name());
    }
    let _ = writeln!(o);
    for (i, q) in openloop::CDF_QUANTILES.iter().enumerate() {
        let _ = write!(o, "{:<8}", q);
        for op in &r.result.by_op {
            let _ = write!(o, "{:>12.1}", op.cdf[i].us);
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "wall      {:.2} s ({:.2} M trace records per wall second)",
        r.wall_s,
        c.records as f64 / r.wall_s.max(1e-9) / 1e6
    );
    let _ = writeln!(o);
}

fn print_comparison(runs: &[ReplayRun]) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "comparison");
    let _ = writeln!(
        o,
        "{:<32}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>8}",
        "target", "IOPS", "read avg", "read p99", "write avg", "write p99", "virt s", "WA"
    );
    for r in runs {
        let s = &r.result.run.summary;
        let op = |k: OpKind| r.result.by_op.iter().find(|o| o.op == k);
        let (ra, rp) = op(OpKind::Read).map_or((0.0, 0.0), |o| (o.lat.mean_us, o.lat.p99_us));
        let (wa, wp) = op(OpKind::Write).map_or((0.0, 0.0), |o| (o.lat.mean_us, o.lat.p99_us));
        let _ = writeln!(
            o,
            "{:<32}{:>10.0}{:>10.1}{:>10.1}{:>10.1}{:>10.1}{:>10.3}{:>8.3}",
            r.target, s.totals.iops, ra, rp, wa, wp, s.virtual_s, s.totals.write_amplification
        );
    }
}

impl std::fmt::Display for Remap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Remap::Fail => "fail",
            Remap::Wrap => "wrap",
            Remap::Scale => "scale",
        })
    }
}
