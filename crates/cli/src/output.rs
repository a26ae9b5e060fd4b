use anyhow::{Context, Result};
use device::{Card, VirtualDevice};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::{IntervalStats, RunOptions, Summary};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use workload::WorkloadSpec;

/// The device as a report describes it.
#[derive(Serialize)]
pub struct DeviceInfo {
    pub preset: &'static str,
    pub format: String,
    pub sector_bytes: u32,
    pub members: Vec<u32>,
    pub scale: f64,
    pub capacity_bytes: u64,
    pub raw_bytes_per_member: u64,
    pub spare_factor: f64,
    pub gc_policy: ftl::GcPolicy,
    /// Absent with the default single log (reports stay as before).
    #[serde(skip_serializing_if = "ftl::PlacementSpec::is_single")]
    pub placement: ftl::PlacementSpec,
    pub host_ram_bytes: u64,
}

impl DeviceInfo {
    /// One line for the terminal summary.
    pub fn line(&self) -> String {
        let members = self
            .members
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join("+");
        format!(
            "device    {} format {} sector {} B member(s) {} scale {}  capacity {:.1} GB  spare {:.1}%  host RAM {}",
            self.preset,
            self.format,
            self.sector_bytes,
            members,
            self.scale,
            self.capacity_bytes as f64 / 1e9,
            self.spare_factor * 100.0,
            human_bytes(self.host_ram_bytes)
        )
    }

    pub fn new(card: &Card) -> DeviceInfo {
        let f = card.ftl_config();
        DeviceInfo {
            preset: card.config.preset.name,
            format: card.config.format.label(),
            sector_bytes: card.sector_bytes(),
            members: card.member_ids().to_vec(),
            scale: card.config.scale,
            capacity_bytes: card.capacity_bytes(),
            raw_bytes_per_member: f.geometry.raw_bytes(),
            spare_factor: f.spare_factor(),
            gc_policy: f.gc_policy,
            placement: card.config.placement.clone(),
            host_ram_bytes: card.stats().host_ram_bytes,
        }
    }
}

/// Everything `vsl run --json` writes. Deterministic: no wall-clock fields.
#[derive(Serialize)]
pub struct Report<'a> {
    pub tool: &'static str,
    pub version: &'static str,
    pub device: serde_json::Value,
    pub workload: &'a WorkloadSpec,
    pub options: &'a RunOptions,
    pub summary: &'a Summary,
    pub intervals: &'a [IntervalStats],
    /// Temperature, power and endurance used per interval (modelled runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<&'a [crate::health_series::HealthPoint]>,
    /// Die failures, Flashback rebuilds, media errors and lost sectors
    /// (modelled runs with --fail-die or --media-errors on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<&'a [device::MediaReport]>,
    /// Real targets: what was written before the run, and what reads find.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<&'a realtime::Prepared>,
    /// Real targets: the counters of every block device under the target
    /// over the run, in fio's `disk_util` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_util: Option<&'a [realtime::diskstat::DiskUtil]>,
    /// Real targets: whether the result was measured on the device, and
    /// why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_on_device: Option<&'a realtime::Verdict>,
    /// The fio job of a job file of several jobs (`vsl run JOB.fio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<&'a str>,
    /// Job-file options ignored under `--lenient`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_options: Option<&'a [String]>,
    /// Open-loop runs (rate_iops/--rate-iops): the offered rate and process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<&'a crate::cmd_rate::OpenLoopInfo>,
}

/// A `--jobs` option: at least 1; unset means the machine's CPUs.
pub fn jobs(asked: Option<usize>) -> Result<usize> {
    match asked {
        Some(0) => anyhow::bail!("must be at least 1"),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

pub const CSV_HEADER: &str = "t_s,ios,iops,read_iops,write_iops,mb_per_s,lat_avg_us,lat_max_us,lat_stddev_us,lat_p50_us,lat_p95_us,lat_p99_us,lat_p999_us,lat_p9999_us,write_amplification,gc_pages_moved";

pub fn write_csv(path: &Path, intervals: &[IntervalStats]) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    w.write_record(CSV_HEADER.split(','))?;
    for i in intervals {
        w.write_record([
            i.t_s.to_string(),
            i.ios.to_string(),
            format!("{:.3}", i.iops),
            format!("{:.3}", i.read_iops),
            format!("{:.3}", i.write_iops),
            format!("{:.3}", i.mb_per_s),
            format!("{:.3}", i.lat_avg_us),
            format!("{:.3}", i.lat_max_us),
            format!("{:.3}", i.lat_stddev_us),
            format!("{:.3}", i.lat_p50_us),
            format!("{:.3}", i.lat_p95_us),
            format!("{:.3}", i.lat_p99_us),
            format!("{:.3}", i.lat_p999_us),
            format!("{:.3}", i.lat_p9999_us),
            format!("{:.4}", i.write_amplification),
            i.gc_pages_moved.to_string(),
        ])?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))
}

pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

pub fn print_summary(r: &Report, device_line: &str, wall_s: f64) {
    let s = &r.summary.totals;
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{device_line}");
    let _ = writeln!(
        o,
        "workload  {} {:.0}% read, mean block {:.0} B, {} threads x QD {}, seed {}",
        r.workload.rw_name(),
        r.workload.read_fraction * 100.0,
        r.workload.block_sizes.mean(),
        r.options.threads,
        r.options.queue_depth,
        r.options.seed
    );
    if r.summary.precondition_s > 0.0 {
        let _ = writeln!(
            o,
            "precond   fill and warm-up took {:.1} s",
            r.summary.precondition_s
        );
    }
    let _ = writeln!(o, "{:<22}{:>14}", "statistic", "value");
    let rows: [(&str, String); 13] = [
        ("run time", format!("{:.1} s", r.summary.virtual_s)),
        ("I/Os", format!("{}", s.ios)),
        ("IOPS", format!("{:.0}", s.iops)),
        (
            "  read / write IOPS",
            format!("{:.0} / {:.0}", s.read_iops, s.write_iops),
        ),
        ("bandwidth", format!("{:.1} MB/s", s.mb_per_s)),
        ("latency avg", format!("{:.1} us", s.lat_avg_us)),
        ("latency stddev", format!("{:.1} us", s.lat_stddev_us)),
        ("latency max", format!("{:.1} us", s.lat_max_us)),
        (
            "latency p50 / p99",
            format!("{:.1} / {:.1} us", s.lat_p50_us, s.lat_p99_us),
        ),
        (
            "latency p99.9/p99.99",
            format!("{:.1} / {:.1} us", s.lat_p999_us, s.lat_p9999_us),
        ),
        (
            "write amplification",
            format!("{:.3}", s.write_amplification),
        ),
        ("GC sectors moved", format!("{}", s.gc_pages_moved)),
        (
            "wall time (measured)",
            format!(
                "{:.2} s ({:.2} M I/Os per wall second)",
                wall_s,
                s.ios as f64 / wall_s.max(1e-9) / 1e6
            ),
        ),
    ];
    for (k, v) in rows {
        let _ = writeln!(o, "{k:<22}{v:>14}");
    }
    print_device(&mut o, r);
    for m in r.media.unwrap_or_default() {
        let s = &m.stats;
        let media_rows: [(&str, String); 9] = [
            (
                "dies failed / rebuilt",
                format!("{} / {}", s.dies_failed, s.dies_rebuilt),
            ),
            ("rebuild time", format!("{:.2} s", s.rebuild_s)),
            (
                "degraded reads",
                format!("{} sectors", s.degraded_sector_reads),
            ),
            ("corrected bits", format!("{}", s.corrected_bits)),
            ("read retries", format!("{}", s.read_retries)),
            (
                "uncorrectable",
                format!(
                    "{} ({} by parity)",
                    s.uncorrectable_reads, s.parity_rebuilt_reads
                ),
            ),
            (
                "retired (err/disturb)",
                format!("{} / {}", s.error_retired_lebs, s.read_disturb_refreshes),
            ),
            (
                "lost sectors",
                format!("{} ({} read errors)", s.lost_sectors, s.read_errors),
            ),
            ("silent corruptions", format!("{}", s.silent_corruptions)),
        ];
        let _ = writeln!(o, "ioMemory {} media and Flashback", m.member);
        for (k, v) in media_rows {
            let _ = writeln!(o, "  {k:<20}{v:>14}");
        }
        for (start, n) in m.lost_ranges.iter().take(8) {
            let _ = writeln!(o, "  lost sectors {start}..{}", start + n);
        }
        if m.lost_ranges.len() > 8 {
            let _ = writeln!(
                o,
                "  ... {} more lost ranges (--json has them all)",
                m.lost_ranges.len() - 8
            );
        }
    }
}

/// A real target's device counters (fio's disk_util line) and the verdict.
fn print_device(o: &mut impl Write, r: &Report) {
    for d in r.disk_util.unwrap_or_default() {
        let _ = writeln!(
            o,
            "disk      {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util
        );
    }
    if let Some(v) = r.measured_on_device {
        let _ = writeln!(o, "verdict   {}", v.words);
    }
}

/// Progress in virtual time, on stderr, only when it is a terminal.
pub struct Progress {
    bar: ProgressBar,
    layout: ProgressBar,
}

impl Progress {
    pub fn new(quiet: bool, duration_ns: u64) -> Progress {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(
                Some(duration_ns / 1_000_000),
                ProgressDrawTarget::stderr(),
            );
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} virtual {msg} [{bar:30}] {percent}% eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        };
        let layout = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "laying out {bytes}/{total_bytes} [{bar:30}] {binary_bytes_per_sec} eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        };
        Progress { bar, layout }
    }

    /// A real target's layout: `done` of `total` bytes written.
    pub fn layout(&self, done: u64, total: u64) {
        self.layout.set_length(total);
        self.layout.set_position(done);
        if done >= total {
            self.layout.finish_and_clear();
        }
    }

    pub fn message(&self, m: &str) {
        self.bar.set_message(m.to_string());
        self.bar.tick();
    }

    pub fn interval(&self, iv: &IntervalStats) {
        self.bar.set_position((iv.t_s * 1000.0) as u64);
        self.bar.set_message(format!(
            "{:.0}s {:.0} IOPS {:.0} us avg WA {:.2}",
            iv.t_s, iv.iops, iv.lat_avg_us, iv.write_amplification
        ));
    }

    /// A new step (a job of a job file): the bar restarts at its length.
    pub fn step(&self, label: &str, duration_ns: u64) {
        self.bar.set_length(duration_ns / 1_000_000);
        self.bar.set_position(0);
        self.bar.set_message(label.to_string());
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
