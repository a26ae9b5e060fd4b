//! Open-loop load for `vsl run` (issue 30): fio's `rate_iops`, `rate` and
//! `rate_process` (job files, or `--rate-iops`, `--rate`, `--rate-process`)
//! as timed arrivals into [`lab::openloop::run_arrivals`], and
//! `--rate-sweep`: one open-loop run per offered rate, latency percentiles
//! against offered IOPS (the hockey stick) as a table, JSON, CSV and an SVG
//! chart.
//!
//! Semantics: as fio, a rate is per job (thread), so `numjobs` (`--threads`)
//! multiplies it; at most threads × iodepth (`--qd`) I/Os are in flight and
//! later arrivals wait in a FIFO host queue; latency counts from the
//! arrival (fio's `lat`). `rate` (bandwidth) arrives at rate / mean block
//! size. `linear` arrivals are evenly spaced, `poisson` ones have
//! exponential gaps of the same mean. On a real `--target` the realtime
//! engine paces each worker the same way ([`real_open`],
//! `realtime::RealTarget::run_open`); its fio JSON counts latency from
//! the issue, as fio does.
//!
//! `thinktime` (`--thinktime`, `--thinktime-blocks`) stays a closed loop:
//! a thread pauses after every `thinktime_blocks` completions
//! ([`lab::Think`]).

use crate::args::RunArgs;
use crate::cmd_run::{self, Done, Step};
use anyhow::{anyhow, bail, Context, Result};
use device::VirtualDevice;
use lab::openloop::{OpenOptions, Pacing, RateArrivals};
use lab::{FioStats, IntervalStats, RunOptions, RunResult};
use serde::Serialize;
use sim::Nanos;
use workload::units::parse_size;
use workload::WorkloadSpec;

/// An open-loop rate per thread (fio's per-job rate).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RateSpec {
    /// I/Os per second per thread.
    pub iops: Option<f64>,
    /// Bytes per second per thread (arrivals at this / the mean block size).
    pub bytes_per_s: Option<u64>,
    pub poisson: bool,
    /// fio's rate_ignore_thinktime (with thinktime_iotime bursts).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignore_thinktime: bool,
}

impl RateSpec {
    /// Offered I/Os per second of the whole run.
    pub fn offered_iops(&self, spec: &WorkloadSpec, threads: u32) -> Result<f64> {
        let per = match (self.iops, self.bytes_per_s) {
            (Some(i), _) => i,
            (None, Some(b)) => b as f64 / spec.block_sizes.mean(),
            (None, None) => bail!("a rate needs rate_iops or rate"),
        };
        let total = per * threads as f64;
        if !(total.is_finite() && total > 0.0) {
            bail!("the offered rate {total} IOPS is not a positive number");
        }
        Ok(total)
    }

    /// The rate of a fio job, if it has one.
    pub fn of_job(j: &workload::jobfile::Job) -> Option<RateSpec> {
        (j.rate_iops.is_some() || j.rate_bytes.is_some()).then(|| RateSpec {
            iops: j.rate_iops.map(|i| i as f64),
            bytes_per_s: j.rate_bytes,
            poisson: j.rate_poisson,
            ignore_thinktime: j.rate_ignore_thinktime,
        })
    }
}

/// A count of IOPS: 5000, 10k (10,000), 1.5M.
pub fn parse_iops(s: &str) -> Result<f64> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| anyhow!("'{s}' is not a number of IOPS (e.g. 5000, 10k, 1.5M)"))?;
    let v = v * mult;
    if !(v.is_finite() && v > 0.0) {
        bail!("'{s}': the rate must be a positive number of IOPS");
    }
    Ok(v)
}

fn process(s: &str) -> Result<bool> {
    match s {
        "poisson" => Ok(true),
        "linear" => Ok(false),
        o => bail!("--rate-process: '{o}' (expected linear or poisson)"),
    }
}

/// The rate `vsl run`'s flags ask for, if any.
pub fn of_flags(a: &RunArgs) -> Result<Option<RateSpec>> {
    let poisson = process(&a.rate_process)?;
    let iops = a
        .rate_iops
        .as_deref()
        .map(|s| parse_iops(s).context("--rate-iops"))
        .transpose()?;
    let bytes_per_s = a
        .rate
        .as_deref()
        .map(|s| match parse_size(s) {
            Ok(0) => Err(anyhow!("--rate: the rate must be positive")),
            Ok(b) => Ok(b),
            Err(e) => Err(anyhow!("--rate: {e}")),
        })
        .transpose()?;
    Ok(
        (iops.is_some() || bytes_per_s.is_some()).then_some(RateSpec {
            iops,
            bytes_per_s,
            poisson,
            ignore_thinktime: a.rate_ignore_thinktime,
        }),
    )
}

/// What an open-loop run was offered (in `vsl run --json` as `open_loop`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpenLoopInfo {
    /// I/Os per second offered, all threads together.
    pub offered_iops: f64,
    /// linear or poisson.
    pub process: &'static str,
    /// threads x queue depth: I/Os in flight at most; later arrivals queue.
    pub max_outstanding: u32,
}

/// The think time `vsl run`'s flags ask for, if any.
pub fn think_of_flags(a: &RunArgs) -> Result<Option<lab::Think>> {
    let Some(t) = a.thinktime.as_deref() else {
        if a.thinktime_blocks.is_some() {
            bail!("--thinktime-blocks needs --thinktime");
        }
        return Ok(None);
    };
    if a.thinktime_blocks == Some(0) {
        bail!("--thinktime-blocks: must be at least 1");
    }
    let iotime_ns = a
        .thinktime_iotime
        .as_deref()
        .map(|s| {
            workload::units::parse_duration_ns(s).map_err(|e| anyhow!("--thinktime-iotime: {e}"))
        })
        .transpose()?;
    if iotime_ns == Some(0) {
        bail!("--thinktime-iotime: must be more than 0");
    }
    if a.rate_sweep.is_some() {
        bail!("--thinktime with --rate-sweep is not modelled");
    }
    let ns = workload::units::parse_duration_ns(t).map_err(|e| anyhow!("--thinktime: {e}"))?;
    let think = think_of(ns, a.thinktime_blocks, iotime_ns);
    if a.rate_iops.is_some() || a.rate.is_some() {
        check_rate_think(&think)
            .map_err(|e| anyhow!("--thinktime with --rate-iops/--rate: {e}"))?;
    }
    Ok(Some(think))
}

/// fio's thinktime options as a [`lab::Think`]: `thinktime_blocks`
/// defaults to 1, and is left out when only `thinktime_iotime` is given
/// (fio: "whichever happens first" of the two that were set).
pub fn think_of(ns: u64, blocks: Option<u32>, iotime_ns: Option<u64>) -> lab::Think {
    lab::Think {
        ns,
        blocks: match (blocks, iotime_ns) {
            (Some(b), _) => b,
            (None, Some(_)) => u32::MAX,
            (None, None) => 1,
        },
        iotime_ns,
    }
}

/// An open-loop run pauses in on/off windows (thinktime_iotime), the same
/// for every thread; a pause after every N blocks is per thread and not
/// modelled with a rate.
pub fn check_rate_think(t: &lab::Think) -> std::result::Result<(), String> {
    if t.iotime_ns.is_none() {
        return Err("bursts need thinktime_iotime (on/off windows); a pause every thinktime_blocks I/Os is not modelled with a rate".into());
    }
    if t.blocks != u32::MAX {
        return Err(
            "thinktime_blocks with a rate is not modelled (give thinktime_iotime alone)".into(),
        );
    }
    Ok(())
}

/// Runs `spec` on `dev`: closed loop (accounting `fio` when given) or, with
/// a rate, open loop at that rate.
pub fn run_any<D: VirtualDevice>(
    dev: &mut D,
    spec: &WorkloadSpec,
    opts: &RunOptions,
    (rate, think): (Option<&RateSpec>, Option<lab::Think>),
    start: Nanos,
    on_interval: &mut dyn FnMut(&IntervalStats),
    fio: Option<&mut FioStats>,
) -> Result<(RunResult, Option<OpenLoopInfo>)> {
    let Some(rate) = rate else {
        let r = lab::run_fio(dev, spec, opts, start, on_interval, fio, think)?;
        return Ok((r, None));
    };
    if let Some(t) = &think {
        check_rate_think(t).map_err(|e| anyhow!("thinktime with a rate: {e}"))?;
    }
    opts.validate()?;
    let spec = spec.resolve(dev.capacity_bytes(), dev.sector_bytes())?;
    let offered = rate.offered_iops(&spec, opts.threads)?;
    let mut rated = RateArrivals::new(&spec, offered, rate.poisson, opts.seed, None)?;
    let mut bursts;
    let src: &mut dyn lab::openloop::Arrivals = match think {
        Some(t) => {
            bursts = lab::bursts::OnOff::new(
                &mut rated,
                t.iotime_ns.expect("checked"),
                t.ns,
                !rate.ignore_thinktime,
            );
            &mut bursts
        }
        None => &mut rated,
    };
    let open = OpenOptions {
        max_outstanding: opts.threads * opts.queue_depth,
        pacing: Pacing::Timed { speed: 1.0 },
        duration_ns: Some(opts.duration_ns),
        interval_ns: opts.interval_ns,
    };
    let r = lab::openloop::run_arrivals_fio(dev, src, &open, start, on_interval, fio)
        .map_err(|e| anyhow!("{e}"))?;
    let info = OpenLoopInfo {
        offered_iops: offered,
        process: if rate.poisson { "poisson" } else { "linear" },
        max_outstanding: open.max_outstanding,
    };
    Ok((r.run, Some(info)))
}

/// A step's rate on a real target (`spec` resolved against it): the
/// realtime engine's open loop and what `vsl run --json` says of it.
pub fn real_open(
    rate: &RateSpec,
    think: Option<lab::Think>,
    spec: &WorkloadSpec,
    opts: &RunOptions,
) -> Result<(realtime::OpenRate, OpenLoopInfo)> {
    let bursts = match think {
        Some(t) => {
            check_rate_think(&t).map_err(|e| anyhow!("thinktime with a rate: {e}"))?;
            Some(realtime::Bursts {
                on_ns: t.iotime_ns.expect("checked"),
                off_ns: t.ns,
                catch_up: !rate.ignore_thinktime,
            })
        }
        None => None,
    };
    let offered = rate.offered_iops(spec, opts.threads)?;
    Ok((
        realtime::OpenRate {
            iops: offered,
            poisson: rate.poisson,
            bursts,
        },
        OpenLoopInfo {
            offered_iops: offered,
            process: if rate.poisson { "poisson" } else { "linear" },
            max_outstanding: opts.threads * opts.queue_depth,
        },
    ))
}

/// One point of a rate sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    pub offered_iops: f64,
    pub achieved_iops: f64,
    pub mb_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub lat_p999_us: f64,
    pub lat_max_us: f64,
}

/// What `--rate-sweep` writes as JSON.
#[derive(Serialize)]
struct SweepReport<'a> {
    tool: &'static str,
    version: &'static str,
    device: &'a serde_json::Value,
    workload: &'a WorkloadSpec,
    options: &'a RunOptions,
    poisson: bool,
    /// `auto`: the closed-loop IOPS the offered rates are fractions of.
    closed_loop_iops: Option<f64>,
    points: &'a [SweepPoint],
}

/// Fractions of the closed-loop maximum `--rate-sweep auto` offers.
const AUTO_FRACTIONS: [f64; 13] = [
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.1,
];

/// `vsl run --rate-sweep`: one open-loop run per offered rate, each on a
/// fresh card (same seed), then the table, --json, --csv and --chart.
pub fn sweep(a: &RunArgs, list: &str) -> Result<()> {
    if a.job_file.is_some() {
        bail!("--rate-sweep takes its workload from the options, not a job file");
    }
    if a.rate_iops.is_some() || a.rate.is_some() {
        bail!("--rate-sweep sets the rate itself: drop --rate-iops/--rate");
    }
    if a.output_format.is_some() {
        bail!("--output-format: not available with --rate-sweep (use --json, --csv, --chart)");
    }
    let poisson = process(&a.rate_process)?;
    let base = cmd_run::flag_step(a)?;
    let say = |m: String| {
        if !a.quiet {
            eprintln!("vsl: {m}");
        }
    };
    let (rates, closed) = if list.trim() == "auto" {
        say(format!(
            "rate sweep: closed loop first ({} threads x QD {})",
            base.opts.threads, base.opts.queue_depth
        ));
        let d = cmd_run::run_steps_silent(a, std::slice::from_ref(&base))?;
        let max = d[0].result.summary.totals.iops;
        if max <= 0.0 {
            bail!("--rate-sweep auto: the closed-loop run completed no I/O");
        }
        say(format!("closed loop: {max:.0} IOPS"));
        (AUTO_FRACTIONS.iter().map(|f| f * max).collect(), Some(max))
    } else {
        let v = list
            .split(',')
            .map(|s| parse_iops(s).context("--rate-sweep"))
            .collect::<Result<Vec<f64>>>()?;
        (v, None)
    };
    let mut points = Vec::with_capacity(rates.len());
    let mut last: Option<Done> = None;
    for (i, &r) in rates.iter().enumerate() {
        let step = Step {
            rate: Some(RateSpec {
                iops: Some(r / base.opts.threads as f64),
                bytes_per_s: None,
                poisson,
                ignore_thinktime: false,
            }),
            label: format!("rate {r:.0} IOPS"),
            ..base.clone()
        };
        let d = cmd_run::run_steps_silent(a, &[step])?
            .pop()
            .expect("one step, one result");
        let t = &d.result.summary.totals;
        let p = SweepPoint {
            offered_iops: r,
            achieved_iops: t.iops,
            mb_per_s: t.mb_per_s,
            lat_mean_us: t.lat_avg_us,
            lat_p50_us: t.lat_p50_us,
            lat_p99_us: t.lat_p99_us,
            lat_p999_us: t.lat_p999_us,
            lat_max_us: t.lat_max_us,
        };
        say(format!(
            "[{}/{}] offered {:.0} IOPS: achieved {:.0}, mean {:.1} us, p99 {:.1} us",
            i + 1,
            rates.len(),
            r,
            p.achieved_iops,
            p.lat_mean_us,
            p.lat_p99_us
        ));
        points.push(p);
        last = Some(d);
    }
    let d = last.ok_or_else(|| anyhow!("--rate-sweep: no rate given"))?;
    if let Some(path) = &a.json {
        let report = SweepReport {
            tool: "openvsl",
            version: env!("CARGO_PKG_VERSION"),
            device: &d.device,
            workload: &d.workload,
            options: &d.options,
            poisson,
            closed_loop_iops: closed,
            points: &points,
        };
        crate::output::write_json(path, &report)?;
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, csv(&points))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &a.chart {
        let svg = report::chart_svg(
            &chart(&points, &d.device_line),
            report::CHART_WIDTH_PX,
            report::CHART_PLOT_HEIGHT_PX,
        )?;
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !a.quiet {
        println!("{}", d.device_line);
        print!("{}", table(&points));
    }
    Ok(())
}

/// The sweep as CSV, one row per offered rate.
pub fn csv(points: &[SweepPoint]) -> String {
    let mut s = String::from(
        "offered_iops,achieved_iops,mb_per_s,lat_mean_us,lat_p50_us,lat_p99_us,lat_p999_us,lat_max_us\n",
    );
    for p in points {
        s.push_str(&format!(
            "{:.1},{:.1},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}\n",
            p.offered_iops,
            p.achieved_iops,
            p.mb_per_s,
            p.lat_mean_us,
            p.lat_p50_us,
            p.lat_p99_us,
            p.lat_p999_us,
            p.lat_max_us
        ));
    }
    s
}

/// The sweep as a text table.
pub fn table(points: &[SweepPoint]) -> String {
    let mut s = format!(
        "{:>12} {:>12} {:>7} {:>11} {:>11} {:>11} {:>11}\n",
        "offered", "achieved", "ach/off", "mean us", "p50 us", "p99 us", "p99.9 us"
    );
    for p in points {
        s.push_str(&format!(
            "{:>12.0} {:>12.0} {:>7.3} {:>11.1} {:>11.1} {:>11.1} {:>11.1}\n",
            p.offered_iops,
            p.achieved_iops,
            p.achieved_iops / p.offered_iops,
            p.lat_mean_us,
            p.lat_p50_us,
            p.lat_p99_us,
            p.lat_p999_us
        ));
    }
    s
}

/// Latency percentiles against offered IOPS, log latency axis.
pub fn chart(points: &[SweepPoint], title: &str) -> report::Chart {
    let series = |name: &str, f: fn(&SweepPoint) -> f64| {
        report::Series::numeric(name, points.iter().map(|p| (p.offered_iops, f(p))))
    };
    let mut c = report::Chart::line(
        "rate-sweep",
        format!("Latency against offered load: {title}"),
        "Offered load (IOPS)",
        "Latency from arrival (us)",
        vec![
            series("mean", |p| p.lat_mean_us),
            series("p50", |p| p.lat_p50_us),
            series("p99", |p| p.lat_p99_us),
            series("p99.9", |p| p.lat_p999_us),
        ],
    );
    c.log_y = true;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iops_counts_parse_with_si_suffixes() {
        assert_eq!(parse_iops("5000").unwrap(), 5000.0);
        assert_eq!(parse_iops("10k").unwrap(), 10_000.0);
        assert_eq!(parse_iops("1.5M").unwrap(), 1_500_000.0);
        for bad in ["", "k", "-5", "0", "fast", "nan"] {
            assert!(parse_iops(bad).is_err(), "{bad}");
        }
    }
}
