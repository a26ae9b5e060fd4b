//! Live counters: [`Sampler`] turns the engines' cumulative counters into
//! per-second rates and latency percentiles, and [`StatusReport`] is what the
//! control socket's `status` command returns (JSON) for `vsl status` and the
//! dashboard.

use crate::engine::Engine;
use crate::state::AttachState;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// Latency percentiles, µs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Percentiles {
            count: h.len(),
            mean_us: h.mean() / 1e3,
            p50_us: us(h.value_at_quantile(0.50)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// Upper bounds of the latency histogram's buckets, µs (a last bucket
/// takes the rest): 10 µs to 1 s in 1-2-5 steps.
pub const LATENCY_BOUNDS_US: [f64; 16] = [
    10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6,
];

/// Latency since attach in fixed buckets, for Prometheus: the count in
/// each bucket (not cumulative; one more than `bounds_us`, the last
/// unbounded) and the sum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    pub bounds_us: Vec<f64>,
    pub read_counts: Vec<u64>,
    pub read_sum_us: f64,
    pub write_counts: Vec<u64>,
    pub write_sum_us: f64,
}

/// Counts per bucket of [`LATENCY_BOUNDS_US`] (ns histogram).
fn bucket_counts(h: &Histogram<u64>) -> Vec<u64> {
    let mut out = Vec::with_capacity(LATENCY_BOUNDS_US.len() + 1);
    let mut below = 0;
    for b in LATENCY_BOUNDS_US {
        let upto = h.count_between(0, (b * 1e3) as u64);
        out.push(upto - below);
        below = upto;
    }
    out.push(h.len() - below);
    out
}

impl LatencyHistogram {
    fn of(read: &Histogram<u64>, write: &Histogram<u64>) -> LatencyHistogram {
        let sum = |h: &Histogram<u64>| {
            if h.is_empty() {
                0.0
            } else {
                h.mean() * h.len() as f64 / 1e3
            }
        };
        LatencyHistogram {
            bounds_us: LATENCY_BOUNDS_US.to_vec(),
            read_counts: bucket_counts(read),
            read_sum_us: sum(read),
            write_counts: bucket_counts(write),
            write_sum_us: sum(write),
        }
    }
}

/// Rates over the last sampling interval.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Interval {
    pub seconds: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub read_latency: Percentiles,
    pub write_latency: Percentiles,
}

/// One ioMemory device's live state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemberStatus {
    pub member: u32,
    pub loop_device: String,
    pub capacity_bytes: u64,
    pub sector_bytes: u32,
    pub last_interval: Interval,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub errors: u64,
    pub host_bytes_read: u64,
    pub host_bytes_written: u64,
    pub nand_bytes_programmed: u64,
    pub nand_bytes_read: u64,
    /// Write amplification of the writes since attach.
    pub write_amplification: f64,
    pub gc_runs: u64,
    pub gc_sectors_moved: u64,
    pub erases: u64,
    pub host_ram_bytes: u64,
    /// Host sectors written over the device's life (the OOB sequence).
    pub lifetime_host_sectors_written: u64,
    /// Counters over the device's life, across attaches (absent from
    /// daemons of earlier versions).
    #[serde(default)]
    pub lifetime: crate::store::Lifetime,
    /// NAND programmed over host written, over the device's life.
    #[serde(default)]
    pub lifetime_write_amplification: f64,
    pub read_latency: Percentiles,
    pub write_latency: Percentiles,
    /// Mean of (wall acknowledgement − the time the model says to answer,
    /// its completion less the host software cost the kernel path spends):
    /// what the emulator adds, inside the daemon.
    pub emulator_late_us_mean: f64,
    pub emulator_late: Percentiles,
    /// The model's own latency of the I/Os served (completion − submission).
    pub model_read_latency: Percentiles,
    pub model_write_latency: Percentiles,
    /// Health, endurance, power and temperature (absent from daemons of
    /// earlier versions).
    #[serde(default)]
    pub health: Option<device::HealthReport>,
    /// The daemon's own work per I/O (receipt to the engine's return) and
    /// flush latency (store sync included).
    #[serde(default)]
    pub service_latency: Percentiles,
    #[serde(default)]
    pub flush_latency: Percentiles,
    /// The log's next units made ready ahead (`--prefault`): prepared,
    /// used by a write while ready, taken back by a writer before the
    /// thread reached them, and claims that waited for the thread.
    #[serde(default)]
    pub prefault: Prefault,
    /// The reads' extra lead set by `--path-trim` ([`crate::trim`]), µs,
    /// on top of the probed round trip.
    #[serde(default)]
    pub lead_trim_read_us: f64,
    /// Read and write latency since attach in fixed buckets.
    #[serde(default)]
    pub latency_histogram: LatencyHistogram,
    /// Free erase units over all, percent.
    #[serde(default)]
    pub free_space_pct: f64,
    /// The running model's GC victim policy and data placement (empty
    /// from daemons of earlier versions).
    #[serde(default)]
    pub gc_policy: String,
    #[serde(default)]
    pub placement: String,
    /// Where the reads' and the writes' wall time went, since attach.
    #[serde(default)]
    pub wall_split: WallSplit,
}

/// [`MemberStatus::wall_split`]: per op, the means (µs) of
/// `wall = before_model + model - lead + late` ([`crate::counters::Split`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WallSplit {
    pub read: OpSplit,
    pub write: OpSplit,
}

/// One op's [`WallSplit`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpSplit {
    pub count: u64,
    /// Receipt to answer.
    pub wall_us: f64,
    /// Receipt to the model's submission.
    pub before_model_us: f64,
    pub before_model_p99_us: f64,
    /// The model's latency.
    pub model_us: f64,
    /// How much before the model's completion the answer was due (the
    /// probed kernel path, and for reads the trimmed extra).
    pub lead_us: f64,
    /// The answer after it was due.
    pub late_us: f64,
    pub late_p99_us: f64,
    /// Of `late_us`, how late it already was when the engine returned
    /// (the store I/O outlasting the model's time less the lead).
    pub late_at_return_us: f64,
    /// Submission to the engine's return (the store I/O after the model).
    pub engine_us: f64,
    pub engine_p99_us: f64,
}

impl OpSplit {
    fn of(s: &crate::counters::Split) -> OpSplit {
        let n = s.count.max(1) as f64;
        let us = |ns: u64| ns as f64 / n / 1e3;
        let p99 = |h: &Histogram<u64>| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(0.99) as f64 / 1e3
            }
        };
        OpSplit {
            count: s.count,
            wall_us: us(s.wall_ns),
            before_model_us: us(s.before_model_ns),
            before_model_p99_us: p99(&s.before_model),
            model_us: us(s.model_ns),
            lead_us: us(s.lead_ns),
            late_us: us(s.late_ns),
            late_p99_us: p99(&s.late),
            late_at_return_us: us(s.late_at_return_ns),
            engine_us: us(s.engine_ns),
            engine_p99_us: p99(&s.engine),
        }
    }
}

/// [`MemberStatus::prefault`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Prefault {
    pub on: bool,
    pub prepared: u64,
    pub used: u64,
    pub taken_back: u64,
    pub waited: u64,
    /// `--recycle` ([`crate::recycle`]): on, closed units whose writeback
    /// was started, and stale slots whose pages were dropped.
    #[serde(default)]
    pub recycle: bool,
    #[serde(default)]
    pub written_back_units: u64,
    #[serde(default)]
    pub dropped_slots: u64,
}

/// What `status` returns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatusReport {
    pub name: String,
    pub pid: u32,
    pub store: String,
    pub device: String,
    pub timing: String,
    pub uptime_s: f64,
    pub members: Vec<MemberStatus>,
    /// Trace capture ([`crate::capture`]); absent from older daemons.
    #[serde(default)]
    pub trace: Option<crate::capture::TraceStatus>,
    /// The FUSE ring queues' entry use (FUSE over io_uring only).
    #[serde(default)]
    pub fuse_entries: Option<FuseEntries>,
}

/// [`StatusReport::fuse_entries`], since attach.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FuseEntries {
    /// Entries per queue (one queue per CPU).
    pub per_queue: u64,
    /// Most entries of one queue holding a request at once.
    pub most_in_use: u64,
    /// Requests taken while every entry of their queue held one (later
    /// requests of that CPU waited in the kernel for an entry).
    pub all_in_use: u64,
    /// Answers the queue threads sent at their model's time, and their
    /// mean lateness split by what the thread was doing when they fell
    /// due: waiting (its wake-up came late) or working (serving other
    /// requests), µs; and how many were over 100 µs late, by the larger.
    #[serde(default)]
    pub answers: u64,
    #[serde(default)]
    pub late_waiting_mean_us: f64,
    #[serde(default)]
    pub late_working_mean_us: f64,
    #[serde(default)]
    pub late_100us_waiting: u64,
    #[serde(default)]
    pub late_100us_working: u64,
}

#[derive(Clone, Copy, Default)]
struct Snap {
    reads: u64,
    writes: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// Keeps the previous snapshot of each engine.
pub struct Sampler {
    started: Instant,
    at: Instant,
    prev: Vec<Snap>,
    last: Vec<Interval>,
    base_host: Vec<u64>,
    base_moved: Vec<u64>,
}

fn snap(e: &Engine) -> Snap {
    let c = &e.counters;
    Snap {
        reads: c.reads.load(Relaxed),
        writes: c.writes.load(Relaxed),
        bytes_read: c.bytes_read.load(Relaxed),
        bytes_written: c.bytes_written.load(Relaxed),
    }
}

impl Sampler {
    pub fn new(engines: &[Arc<Engine>]) -> Sampler {
        let (mut base_host, mut base_moved) = (Vec::new(), Vec::new());
        for e in engines {
            let (_, f) = e.model_stats();
            base_host.push(f.host_sectors_written);
            base_moved.push(f.gc_sectors_moved);
        }
        Sampler {
            started: Instant::now(),
            at: Instant::now(),
            prev: engines.iter().map(|e| snap(e)).collect(),
            last: vec![Interval::default(); engines.len()],
            base_host,
            base_moved,
        }
    }

    /// Closes the current interval.
    pub fn sample(&mut self, engines: &[Arc<Engine>]) {
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64().max(1e-9);
        self.at = now;
        for (i, e) in engines.iter().enumerate() {
            let s = snap(e);
            let p = self.prev[i];
            let (rl, wl) = {
                let mut l = e.counters.latency.lock().unwrap_or_else(|p| p.into_inner());
                let r = Percentiles::of(&l.read_interval);
                let w = Percentiles::of(&l.write_interval);
                l.read_interval.reset();
                l.write_interval.reset();
                (r, w)
            };
            self.last[i] = Interval {
                seconds: secs,
                read_iops: (s.reads - p.reads) as f64 / secs,
                write_iops: (s.writes - p.writes) as f64 / secs,
                read_mb_s: (s.bytes_read - p.bytes_read) as f64 / secs / 1e6,
                write_mb_s: (s.bytes_written - p.bytes_written) as f64 / secs / 1e6,
                read_latency: rl,
                write_latency: wl,
            };
            self.prev[i] = s;
        }
    }

    pub fn report(&self, st: &AttachState, engines: &[Arc<Engine>]) -> StatusReport {
        let members = engines
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (d, f) = e.model_stats();
                let c = &e.counters;
                let host = f.host_sectors_written - self.base_host[i];
                let moved = f.gc_sectors_moved - self.base_moved[i];
                let (rl, wl, late, mr, mw, sv, fl, hist, split) = {
                    let l = c.latency.lock().unwrap_or_else(|p| p.into_inner());
                    (
                        Percentiles::of(&l.read_total),
                        Percentiles::of(&l.write_total),
                        Percentiles::of(&l.late),
                        Percentiles::of(&l.model_read),
                        Percentiles::of(&l.model_write),
                        Percentiles::of(&l.service),
                        Percentiles::of(&l.flush),
                        LatencyHistogram::of(&l.read_total, &l.write_total),
                        WallSplit {
                            read: OpSplit::of(&l.split[0]),
                            write: OpSplit::of(&l.split[1]),
                        },
                    )
                };
                let late_n = c.late_count.load(Relaxed).max(1);
                let life = e.lifetime();
                let life_host = life.host_bytes_written / e.sector_bytes() as u64;
                MemberStatus {
                    member: e.member,
                    loop_device: st
                        .devices
                        .iter()
                        .find(|d| d.member == e.member)
                        .map(|d| d.loop_device.clone())
                        .unwrap_or_default(),
                    capacity_bytes: e.capacity_bytes(),
                    sector_bytes: e.sector_bytes(),
                    last_interval: self.last[i].clone(),
                    reads: c.reads.load(Relaxed),
                    writes: c.writes.load(Relaxed),
                    trims: c.trims.load(Relaxed),
                    flushes: c.flushes.load(Relaxed),
                    errors: c.errors.load(Relaxed),
                    host_bytes_read: c.bytes_read.load(Relaxed),
                    host_bytes_written: c.bytes_written.load(Relaxed),
                    nand_bytes_programmed: d.nand_bytes_programmed,
                    nand_bytes_read: d.nand_bytes_read,
                    write_amplification: if host == 0 {
                        0.0
                    } else {
                        (host + moved) as f64 / host as f64
                    },
                    gc_runs: d.gc_runs,
                    gc_sectors_moved: d.gc_sectors_moved,
                    erases: d.erases,
                    host_ram_bytes: d.host_ram_bytes,
                    lifetime_host_sectors_written: f.host_sectors_written,
                    lifetime_write_amplification: if life_host == 0 {
                        0.0
                    } else {
                        (life_host + life.gc_sectors_moved) as f64 / life_host as f64
                    },
                    lifetime: life,
                    read_latency: rl,
                    write_latency: wl,
                    emulator_late_us_mean: c.late_ns_total.load(Relaxed) as f64
                        / late_n as f64
                        / 1e3,
                    emulator_late: late,
                    model_read_latency: mr,
                    model_write_latency: mw,
                    health: Some(e.health()),
                    service_latency: sv,
                    flush_latency: fl,
                    prefault: Prefault {
                        on: e.warm.is_on(),
                        prepared: e.warm.counters.prepared.load(Relaxed),
                        used: e.warm.counters.used.load(Relaxed),
                        taken_back: e.warm.counters.taken_back.load(Relaxed),
                        waited: e.warm.counters.waited.load(Relaxed),
                        recycle: e.warm.recycles(),
                        written_back_units: e.warm.recycled.written_back.load(Relaxed),
                        dropped_slots: e.warm.recycled.dropped_slots.load(Relaxed),
                    },
                    lead_trim_read_us: e.lead.extra_ns() as f64 / 1e3,
                    latency_histogram: hist,
                    free_space_pct: e.free_space_pct(),
                    gc_policy: e.policies().0,
                    placement: e.policies().1,
                    wall_split: split,
                }
            })
            .collect();
        StatusReport {
            name: st.name.clone(),
            pid: st.pid,
            store: st.store.display().to_string(),
            device: st.device.clone(),
            timing: format!("{:?}", st.timing).to_lowercase(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            members,
            trace: None,
            fuse_entries: None,
        }
    }
}
