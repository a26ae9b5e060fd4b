//! `vsl run --output-format json|json+|normal`: a run's results in fio
//! 3.33's output schema, so that tools made for fio's JSON read them.
//!
//! Fed from each run's [`lab::FioStats`] (per direction: fio's `plat`
//! histogram, exact moments, latency buckets, per-interval samples). One
//! fio job per vsl run, its threads reported together as fio's
//! `group_reporting` does. What vsl does not measure is reported as fio
//! reports a figure it has no samples of, never invented:
//!
//! - `slat_ns`: all 0, `N` 0. vsl times an I/O from the moment it is issued
//!   to its completion, so `clat_ns` and `lat_ns` are that same latency.
//! - `usr_cpu`/`sys_cpu`/`ctx`/`majf`/`minf`: the whole vsl process's
//!   `getrusage` over the measured run on a real target; 0 on a modelled
//!   card (no host is modelled).
//! - `iodepth_level`: every I/O is issued into a full queue of the run's
//!   depth (closed loop), so 100 % at that depth; an open-loop run
//!   (`--rate-iops`/`rate_iops`) counts the depth each I/O was issued at.
//!   Open-loop latencies are from issue, as fio's for a rate-limited job
//!   (the latency from arrival, host queue included, is in `--json`).
//!   `iodepth_submit` and
//!   `_complete`: I/Os are submitted and reaped one by one, so 100 % in 1-4.
//! - `disk_util`: the block layer's counters of the devices under a real
//!   target; omitted for a modelled card.
//! - `timestamp`/`time`: the wall clock for a real target; 0 (the epoch)
//!   for a modelled card, whose run happens in virtual time, so that the
//!   same seed and options give byte-identical output.

use crate::cmd_run::Done;
use lab::fiostat::{FioDir, LAT_MS_EDGES, LAT_NU_EDGES, PERCENTILES};
use lab::FioStats;
use std::fmt::Write as _;

/// The value of `--output-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    JsonPlus,
    Normal,
}

impl Format {
    pub fn parse(s: &str) -> anyhow::Result<Format> {
        match s {
            "json" => Ok(Format::Json),
            "json+" => Ok(Format::JsonPlus),
            "normal" => Ok(Format::Normal),
            o => anyhow::bail!("--output-format: '{o}' (expected json, json+ or normal)"),
        }
    }
}

/// CPU use of the process over a run (`getrusage(RUSAGE_SELF)` deltas).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu {
    pub usr_s: f64,
    pub sys_s: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
}

impl Cpu {
    /// The process's totals so far.
    pub fn now() -> Cpu {
        // SAFETY: getrusage fills the zeroed struct it is given.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) } != 0 {
            return Cpu::default();
        }
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Cpu {
            usr_s: s(r.ru_utime),
            sys_s: s(r.ru_stime),
            ctx: (r.ru_nvcsw + r.ru_nivcsw) as u64,
            majf: r.ru_majflt as u64,
            minf: r.ru_minflt as u64,
        }
    }

    /// `self - before`.
    pub fn since(&self, before: &Cpu) -> Cpu {
        Cpu {
            usr_s: (self.usr_s - before.usr_s).max(0.0),
            sys_s: (self.sys_s - before.sys_s).max(0.0),
            ctx: self.ctx.saturating_sub(before.ctx),
            majf: self.majf.saturating_sub(before.majf),
            minf: self.minf.saturating_sub(before.minf),
        }
    }
}

/// One fio job of the output: a run and the options that described it.
pub struct FioJob<'a> {
    pub name: String,
    /// fio's "job options": the job section's options as written, or the
    /// `vsl run` flags that describe it in fio's names.
    pub options: Vec<(String, String)>,
    pub done: &'a Done,
}

/// An ordered JSON value, printed as fio prints it (floats with six
/// decimals, keys in fio's order).
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Int(u64),
    Float(f64),
    Str(String),
}

fn obj(pairs: Vec<(&str, J)>) -> J {
    J::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

impl J {
    fn write(&self, out: &mut String, indent: usize) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            J::Int(i) => {
                let _ = write!(out, "{i}");
            }
            J::Float(f) => {
                let f = if f.is_finite() { *f } else { 0.0 };
                let _ = write!(out, "{f:.6}");
            }
            J::Str(s) => out.push_str(&serde_json::to_string(s).expect("a string")),
            J::Arr(v) => {
                out.push_str("[\n");
                for (i, x) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            J::Obj(v) => {
                out.push_str("{\n");
                for (i, (k, x)) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&serde_json::to_string(k).expect("a string"));
                    out.push_str(" : ");
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
        }
    }
}

/// fio lists the options given a value; flags (`time_based`) it leaves out.
fn opts_obj(o: &[(String, String)]) -> J {
    J::Obj(
        o.iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), J::Str(v.clone())))
            .collect(),
    )
}

/// A direction's figures in fio's units.
struct DirFig {
    io_bytes: u64,
    bw_bytes: u64,
    iops: f64,
    runtime_ms: u64,
}

fn dir_fig(d: &FioDir, runtime_ms: u64) -> DirFig {
    let runt = if d.ios > 0 { runtime_ms.max(1) } else { 0 };
    DirFig {
        io_bytes: d.bytes,
        bw_bytes: if runt > 0 {
            (1000u128 * d.bytes as u128 / runt as u128) as u64
        } else {
            0
        },
        iops: if runt > 0 {
            1000.0 * d.ios as f64 / runt as f64
        } else {
            0.0
        },
        runtime_ms: runt,
    }
}

/// min, max, mean and sample standard deviation of `v` (fio's Welford).
fn sample_stats(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let dev = if v.len() > 1 {
        (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (min, max, mean, dev)
}

fn lat_obj(d: Option<&FioDir>, percentiles: bool, plus: bool) -> J {
    let (min, max, mean, dev) = d.map_or((0, 0, 0.0, 0.0), FioDir::moments);
    let mut v = vec![
        ("min", J::Int(min)),
        ("max", J::Int(max)),
        ("mean", J::Float(mean)),
        ("stddev", J::Float(dev)),
        ("N", J::Int(d.map_or(0, |d| d.ios))),
    ];
    if let Some(d) = d.filter(|d| percentiles && d.ios > 0) {
        let p = d.percentiles(&PERCENTILES);
        v.push((
            "percentile",
            J::Obj(
                PERCENTILES
                    .iter()
                    .zip(p)
                    .map(|(q, x)| (format!("{q:.6}"), J::Int(x)))
                    .collect(),
            ),
        ));
        if plus {
            v.push((
                "bins",
                J::Obj(
                    d.bins()
                        .into_iter()
                        .map(|(b, c)| (b.to_string(), J::Int(c)))
                        .collect(),
                ),
            ));
        }
    }
    obj(v)
}

/// `read`, `write` or `trim` (`d` None: no I/O of that kind).
fn dir_obj(d: Option<&FioDir>, runtime_ms: u64, group_bw: f64, plus: bool) -> J {
    let empty = FioDir::default();
    let dd = d.unwrap_or(&empty);
    let f = dir_fig(dd, runtime_ms);
    let bw: Vec<f64> = dd
        .samples
        .iter()
        .filter(|s| s.secs > 0.0)
        .map(|s| s.bytes as f64 / 1024.0 / s.secs)
        .collect();
    let iops: Vec<f64> = dd
        .samples
        .iter()
        .filter(|s| s.secs > 0.0)
        .map(|s| s.ios as f64 / s.secs)
        .collect();
    let (bmin, bmax, bmean, bdev) = sample_stats(&bw);
    let (imin, imax, imean, idev) = sample_stats(&iops);
    let agg = if group_bw > 0.0 && dd.ios > 0 {
        (bmean / group_bw * 100.0).min(100.0)
    } else {
        0.0
    };
    let ns = if dd.ios > 0 { Some(dd) } else { None };
    obj(vec![
        ("io_bytes", J::Int(f.io_bytes)),
        ("io_kbytes", J::Int(f.io_bytes >> 10)),
        ("bw_bytes", J::Int(f.bw_bytes)),
        ("bw", J::Int(f.bw_bytes / 1024)),
        ("iops", J::Float(f.iops)),
        ("runtime", J::Int(f.runtime_ms)),
        ("total_ios", J::Int(dd.ios)),
        ("short_ios", J::Int(0)),
        ("drop_ios", J::Int(0)),
        ("slat_ns", lat_obj(None, false, false)),
        ("clat_ns", lat_obj(ns, true, plus)),
        ("lat_ns", lat_obj(ns, false, false)),
        ("bw_min", J::Int(bmin as u64)),
        ("bw_max", J::Int(bmax as u64)),
        ("bw_agg", J::Float(agg)),
        ("bw_mean", J::Float(bmean)),
        ("bw_dev", J::Float(bdev)),
        ("bw_samples", J::Int(bw.len() as u64)),
        ("iops_min", J::Int(imin as u64)),
        ("iops_max", J::Int(imax as u64)),
        ("iops_mean", J::Float(imean)),
        ("iops_stddev", J::Float(idev)),
        ("iops_samples", J::Int(iops.len() as u64)),
    ])
}

/// fio's io_u_mark_depth buckets 1, 2, 4, 8, 16, 32, >=64: index of `d`.
fn depth_bucket(d: u32) -> usize {
    match d {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's `stat_calc_lat`: percentages of all I/Os, a non-empty bucket at
/// least 0.01.
fn lat_pct(counts: &[u64], total: u64) -> Vec<f64> {
    counts
        .iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let p = c as f64 / total as f64 * 100.0;
            if c > 0 && p < 0.01 {
                0.01
            } else {
                p
            }
        })
        .collect()
}

/// What a job's latency distribution is: both directions summed.
struct LatDist {
    ns: [u64; 10],
    us: [u64; 10],
    ms: [u64; 12],
    total: u64,
}

fn lat_dist(s: &FioStats) -> LatDist {
    let mut l = LatDist {
        ns: [0; 10],
        us: [0; 10],
        ms: [0; 12],
        total: 0,
    };
    for d in &s.dirs {
        for (a, b) in l.ns.iter_mut().zip(&d.lat_ns) {
            *a += b;
        }
        for (a, b) in l.us.iter_mut().zip(&d.lat_us) {
            *a += b;
        }
        for (a, b) in l.ms.iter_mut().zip(&d.lat_ms) {
            *a += b;
        }
        l.total += d.ios;
    }
    l
}

fn ms_labels() -> Vec<String> {
    let mut v: Vec<String> = LAT_MS_EDGES.iter().map(|e| e.to_string()).collect();
    v.push(">=2000".into());
    v
}

fn job_obj(j: &FioJob, plus: bool) -> anyhow::Result<J> {
    let d = j.done;
    let s = d.fio.as_ref().ok_or_else(|| {
        anyhow::anyhow!("run of job '{}' has no per-direction statistics", j.name)
    })?;
    let runtime_ms = (d.options.duration_ns / 1_000_000).max(1);
    let dir_bw = |x: &FioDir| x.bytes as f64 / 1024.0 / (runtime_ms as f64 / 1000.0);
    let ios = s.dirs[0].ios + s.dirs[1].ios;
    let cpu = d.cpu.unwrap_or_default();
    let secs = runtime_ms as f64 / 1000.0;
    let qd = d.options.queue_depth;
    let mut depth = [0.0; 7];
    match &s.depth {
        // Open loop: the depths its I/Os were issued at.
        Some(c) => {
            let n: u64 = c.iter().sum();
            if n > 0 {
                for (d, k) in depth.iter_mut().zip(c) {
                    *d = 100.0 * *k as f64 / n as f64;
                }
            }
        }
        None if ios > 0 => depth[depth_bucket(qd)] = 100.0,
        None => {}
    }
    let submit_labels = ["0", "4", "8", "16", "32", "64", ">=64"];
    let mut submit = [0.0; 7];
    if ios > 0 {
        submit[1] = 100.0;
    }
    let depth_labels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let pct_obj = |labels: &[&str], v: &[f64]| {
        J::Obj(
            labels
                .iter()
                .zip(v)
                .map(|(k, x)| (k.to_string(), J::Float(*x)))
                .collect(),
        )
    };
    let l = lat_dist(s);
    let nu_labels: Vec<String> = LAT_NU_EDGES.iter().map(|e| e.to_string()).collect();
    let lat_obj = |labels: &[String], counts: &[u64]| {
        J::Obj(
            labels
                .iter()
                .zip(lat_pct(counts, l.total))
                .map(|(k, x)| (k.clone(), J::Float(x)))
                .collect(),
        )
    };
    let elapsed = (d.wall_s.max(secs)).ceil() as u64;
    let v = vec![
        ("jobname", J::Str(j.name.clone())),
        ("groupid", J::Int(0)),
        ("error", J::Int(0)),
        ("eta", J::Int(0)),
        ("elapsed", J::Int(elapsed)),
        ("job options", opts_obj(&j.options)),
        (
            "read",
            dir_obj(Some(&s.dirs[0]), runtime_ms, dir_bw(&s.dirs[0]), plus),
        ),
        (
            "write",
            dir_obj(Some(&s.dirs[1]), runtime_ms, dir_bw(&s.dirs[1]), plus),
        ),
        ("trim", dir_obj(None, runtime_ms, 0.0, plus)),
        (
            "sync",
            obj(vec![("total_ios", J::Int(0)), ("lat_ns", lat_obj_zero())]),
        ),
        ("job_runtime", J::Int(runtime_ms)),
        ("usr_cpu", J::Float(cpu.usr_s / secs * 100.0)),
        ("sys_cpu", J::Float(cpu.sys_s / secs * 100.0)),
        ("ctx", J::Int(cpu.ctx)),
        ("majf", J::Int(cpu.majf)),
        ("minf", J::Int(cpu.minf)),
        ("iodepth_level", pct_obj(&depth_labels, &depth)),
        ("iodepth_submit", pct_obj(&submit_labels, &submit)),
        ("iodepth_complete", pct_obj(&submit_labels, &submit)),
        ("latency_ns", lat_obj(&nu_labels, &l.ns)),
        ("latency_us", lat_obj(&nu_labels, &l.us)),
        ("latency_ms", lat_obj(&ms_labels(), &l.ms)),
        ("latency_depth", J::Int(qd as u64)),
        ("latency_target", J::Int(0)),
        ("latency_percentile", J::Float(100.0)),
        ("latency_window", J::Int(0)),
    ];
    Ok(obj(v))
}

fn lat_obj_zero() -> J {
    lat_obj(None, false, false)
}

/// Seconds since the epoch for a real run's timestamp; 0 for a modelled one.
fn timestamp(done: &[FioJob]) -> (u64, u64) {
    if done.iter().any(|j| j.done.real.is_some()) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        (now.as_secs(), now.as_millis() as u64)
    } else {
        (0, 0)
    }
}

/// `time` as fio prints it (ctime, UTC here), e.g. "Wed Nov 25 14:56:10 2026".
fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        y
    )
}

/// fio's JSON (`plus`: json+, with `bins`) of `jobs`.
pub fn json(
    jobs: &[FioJob],
    global_options: &[(String, String)],
    plus: bool,
) -> anyhow::Result<String> {
    let (ts, ts_ms) = timestamp(jobs);
    let mut top = vec![
        ("fio version", J::Str("fio-3.33".into())),
        ("timestamp", J::Int(ts)),
        ("timestamp_ms", J::Int(ts_ms)),
        ("time", J::Str(ctime(ts))),
    ];
    if !global_options.is_empty() {
        top.push(("global options", opts_obj(global_options)));
    }
    let js = jobs
        .iter()
        .map(|j| job_obj(j, plus))
        .collect::<anyhow::Result<Vec<_>>>()?;
    top.push(("jobs", J::Arr(js)));
    let disks: Vec<J> = jobs
        .iter()
        .filter_map(|j| j.done.real.as_ref())
        .flat_map(|r| r.device.disk_util.iter())
        .map(|u| {
            obj(vec![
                ("name", J::Str(u.name.clone())),
                ("read_ios", J::Int(u.read_ios)),
                ("write_ios", J::Int(u.write_ios)),
                ("read_merges", J::Int(u.read_merges)),
                ("write_merges", J::Int(u.write_merges)),
                ("read_ticks", J::Int(u.read_ticks)),
                ("write_ticks", J::Int(u.write_ticks)),
                ("in_queue", J::Int(u.in_queue)),
                ("util", J::Float(u.util)),
            ])
        })
        .collect();
    if !disks.is_empty() {
        top.push(("disk_util", J::Arr(disks)));
    }
    let mut out = String::new();
    obj(top).write(&mut out, 0);
    out.push('\n');
    Ok(out)
}

/// fio's num2str-like figure: 23241 -> "23.2k".
fn short(v: f64) -> String {
    let (v, u) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if u.is_empty() {
        format!("{}", v.round() as u64)
    } else {
        format!("{v:.1}{u}")
    }
}

/// Bytes per second as fio prints them: "90.8MiB/s (95.2MB/s)".
fn bw_words(bytes_per_s: f64) -> String {
    let bin = |v: f64| {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut v = v;
        let mut i = 0;
        while v >= 1024.0 && i + 1 < units.len() {
            v /= 1024.0;
            i += 1;
        }
        format!("{:.1}{}", v, units[i])
    };
    let dec = |v: f64| {
        let units = ["B", "kB", "MB", "GB", "TB"];
        let mut v = v;
        let mut i = 0;
        while v >= 1000.0 && i + 1 < units.len() {
            v /= 1000.0;
            i += 1;
        }
        format!("{:.1}{}", v, units[i])
    };
    format!("{}/s ({}/s)", bin(bytes_per_s), dec(bytes_per_s))
}

/// fio's human-readable layout of `jobs`.
pub fn normal(jobs: &[FioJob]) -> anyhow::Result<String> {
    let mut o = String::new();
    let (ts, _) = timestamp(jobs);
    let mut groups: Vec<(String, f64, u64, u64)> = Vec::new();
    for j in jobs {
        let d = j.done;
        let s = d.fio.as_ref().ok_or_else(|| {
            anyhow::anyhow!("run of job '{}' has no per-direction statistics", j.name)
        })?;
        let runtime_ms = (d.options.duration_ns / 1_000_000).max(1);
        let _ = writeln!(
            o,
            "{}: (groupid=0, jobs={}): err= 0: pid={}: {}",
            j.name,
            d.options.threads,
            std::process::id(),
            ctime(ts)
        );
        for (name, dd) in [("read", &s.dirs[0]), ("write", &s.dirs[1])] {
            if dd.ios == 0 {
                continue;
            }
            let f = dir_fig(dd, runtime_ms);
            let _ = writeln!(
                o,
                "  {name}: IOPS={}, BW={}({}B/{}msec)",
                short(f.iops),
                bw_words(f.bw_bytes as f64),
                short(f.io_bytes as f64),
                f.runtime_ms
            );
            let (min, max, mean, dev) = dd.moments();
            let _ = writeln!(
                o,
                "    slat (nsec): min=0, max=0, avg= 0.00, stdev= 0.00 (not measured)"
            );
            for w in ["clat", " lat"] {
                let _ = writeln!(
                    o,
                    "    {w} (usec): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
                    min as f64 / 1e3,
                    max as f64 / 1e3,
                    mean / 1e3,
                    dev / 1e3
                );
            }
            let _ = writeln!(o, "    clat percentiles (usec):");
            let p = dd.percentiles(&PERCENTILES);
            for row in PERCENTILES.iter().zip(&p).collect::<Vec<_>>().chunks(4) {
                let cells: Vec<String> = row
                    .iter()
                    .map(|(q, v)| format!("{q:5.2}th=[{:5}]", (**v as f64 / 1e3).round() as u64))
                    .collect();
                let _ = writeln!(o, "     | {}", cells.join(", "));
            }
            let bw: Vec<f64> = dd
                .samples
                .iter()
                .filter(|x| x.secs > 0.0)
                .map(|x| x.bytes as f64 / 1024.0 / x.secs)
                .collect();
            let iops: Vec<f64> = dd
                .samples
                .iter()
                .filter(|x| x.secs > 0.0)
                .map(|x| x.ios as f64 / x.secs)
                .collect();
            let (a, b, c, e) = sample_stats(&bw);
            let _ = writeln!(
                o,
                "   bw (  KiB/s): min={a:.0}, max={b:.0}, avg={c:.2}, stdev={e:.2}, samples={}",
                bw.len()
            );
            let (a, b, c, e) = sample_stats(&iops);
            let _ = writeln!(
                o,
                "   iops        : min={a:.0}, max={b:.0}, avg={c:.2}, stdev={e:.2}, samples={}",
                iops.len()
            );
            groups.push((
                name.to_uppercase(),
                f.bw_bytes as f64,
                f.io_bytes,
                f.runtime_ms,
            ));
        }
        let l = lat_dist(s);
        let line = |unit: &str, labels: &[String], counts: &[u64]| {
            let cells: Vec<String> = labels
                .iter()
                .zip(lat_pct(counts, l.total))
                .filter(|(_, p)| *p > 0.0)
                .map(|(k, p)| format!("{k}={p:.2}%"))
                .collect();
            if cells.is_empty() {
                String::new()
            } else {
                format!("  lat ({unit})   : {}\n", cells.join(", "))
            }
        };
        let nu: Vec<String> = LAT_NU_EDGES.iter().map(|e| e.to_string()).collect();
        o.push_str(&line("nsec", &nu, &l.ns));
        o.push_str(&line("usec", &nu, &l.us));
        o.push_str(&line("msec", &ms_labels(), &l.ms));
        let cpu = d.cpu.unwrap_or_default();
        let secs = runtime_ms as f64 / 1000.0;
        let _ = writeln!(
            o,
            "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
            cpu.usr_s / secs * 100.0,
            cpu.sys_s / secs * 100.0,
            cpu.ctx,
            cpu.majf,
            cpu.minf
        );
        let labels = ["1", "2", "4", "8", "16", "32", ">=64"];
        let b = depth_bucket(d.options.queue_depth);
        let cells: Vec<String> = labels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                format!(
                    "{k}={:.1}%",
                    if i == b && l.total > 0 { 100.0 } else { 0.0 }
                )
            })
            .collect();
        let _ = writeln!(o, "  IO depths    : {}", cells.join(", "));
        let _ = writeln!(
            o,
            "     issued rwts: total={},{},0,0 short=0,0,0,0 dropped=0,0,0,0",
            s.dirs[0].ios, s.dirs[1].ios
        );
        let _ = writeln!(
            o,
            "     latency   : target=0, window=0, percentile=100.00%, depth={}",
            d.options.queue_depth
        );
        o.push('\n');
    }
    let _ = writeln!(o, "Run status group 0 (all jobs):");
    for (name, bw, io, runt) in &groups {
        let w = bw_words(*bw);
        let _ = writeln!(
            o,
            "{name:>7}: bw={w}, {w}-{w}, io={}B, run={runt}-{runt}msec",
            short(*io as f64)
        );
    }
    let disks: Vec<_> = jobs
        .iter()
        .filter_map(|j| j.done.real.as_ref())
        .flat_map(|r| r.device.disk_util.iter())
        .collect();
    if !disks.is_empty() {
        let _ = writeln!(o, "\nDisk stats (read/write):");
        for u in disks {
            let _ = writeln!(
                o,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                u.name,
                u.read_ios,
                u.write_ios,
                u.read_merges,
                u.write_merges,
                u.read_ticks,
                u.write_ticks,
                u.in_queue,
                u.util
            );
        }
    }
    Ok(o)
}

/// fio's names for what `vsl run` flags describe: the "job options" of a
/// run given by flags.
pub fn flag_options(a: &crate::args::RunArgs) -> Vec<(String, String)> {
    let w = &a.workload;
    let mut v: Vec<(String, String)> = vec![("name".into(), job_name(a))];
    if let Some(t) = &a.target {
        v.push(("filename".into(), t.clone()));
    }
    let mut put = |k: &str, x: &Option<String>| {
        if let Some(x) = x {
            v.push((k.into(), x.clone()));
        }
    };
    put("rw", &w.rw);
    put("rwmixread", &w.rwmixread);
    put("bs", &w.bs);
    put("bssplit", &w.bssplit);
    put("random_distribution", &w.random_distribution);
    put("size", &w.size);
    if w.offset != "0" {
        v.push(("offset".into(), w.offset.clone()));
    }
    v.push(("iodepth".into(), a.qd.to_string()));
    v.push(("numjobs".into(), a.threads.to_string()));
    v.push(("runtime".into(), a.duration.clone()));
    v.push(("randseed".into(), a.seed.to_string()));
    if let Some(w) = &a.warmup {
        v.push(("ramp_time".into(), w.clone()));
    }
    v.push(("direct".into(), a.direct.clone()));
    if let Some(r) = &a.rate_iops {
        v.push(("rate_iops".into(), r.clone()));
    }
    if let Some(r) = &a.rate {
        v.push(("rate".into(), r.clone()));
    }
    if a.rate_iops.is_some() || a.rate.is_some() {
        v.push(("rate_process".into(), a.rate_process.clone()));
    }
    v
}

/// The job name of a run given by flags: its profile or rw.
pub fn job_name(a: &crate::args::RunArgs) -> String {
    a.workload
        .profile
        .as_deref()
        .or(a.workload.rw.as_deref())
        .unwrap_or("randwrite")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_the_c_library() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        // fio printed this for timestamp 1795618570.
        assert_eq!(ctime(1_795_618_570), "Wed Nov 25 14:56:10 2026");
    }

    #[test]
    fn depth_buckets_are_fios() {
        let b: Vec<usize> = [1, 2, 3, 4, 16, 31, 32, 64, 256]
            .iter()
            .map(|&d| depth_bucket(d))
            .collect();
        assert_eq!(b, vec![0, 1, 1, 2, 4, 4, 5, 6, 6]);
    }

    #[test]
    fn json_writer_prints_ordered_and_escaped() {
        let mut s = String::new();
        obj(vec![
            ("b", J::Int(1)),
            ("a \"q\"", J::Float(0.5)),
            ("c", J::Arr(vec![J::Str("x".into())])),
        ])
        .write(&mut s, 0);
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["a \"q\""], 0.5);
        assert!(s.find("\"b\"").unwrap() < s.find("\"a").unwrap());
        assert!(s.contains("0.500000"));
    }
}
