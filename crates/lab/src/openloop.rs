//! The arrival-driven (open-loop) runner, next to the closed loop of
//! [`crate::run`].
//!
//! A source of [`Arrival`]s (a block trace, or a rate such as fio's
//! `rate_iops` with `rate_process=poisson`) says *when* each I/O arrives;
//! [`run_arrivals`] issues it then, unless `max_outstanding` I/Os are
//! already in flight, in which case it waits in the host queue (FIFO) until
//! a completion frees a slot. Latency is measured from the arrival, so host
//! queueing counts as it does in fio's `lat`; the service time (from the
//! issue to the device) is reported beside it, as fio's `clat`.
//!
//! [`Pacing::Afap`] is the closed loop over a source: arrival times are
//! ignored and the next record is issued as soon as one of `max_outstanding`
//! slots frees (`vsl replay --afap --qd N`).
//!
//! Same source, device and options → identical results.

use crate::stats::{IntervalStats, LatencyStats};
use crate::{RunError, RunResult, Summary};
use device::{IoKind, VirtualDevice};
use serde::Serialize;
use sim::{EventQueue, Nanos, Prng};
use workload::OpKind;

/// One I/O of an open-loop source.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival time relative to the start of the run.
    pub at_ns: u64,
    pub op: OpKind,
    /// Bytes; ignored for a flush.
    pub offset: u64,
    pub len: u64,
}

/// The error type of a source (a trace reader's parse error, say).
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// A source of arrivals, in non-decreasing arrival time. An arrival earlier
/// than the one before it is issued at the earlier one's time (counted in
/// [`OpenResult::reordered`]).
pub trait Arrivals {
    /// The next arrival, or `None` when the source has ended.
    fn next_arrival(&mut self) -> Result<Option<Arrival>, SourceError>;
}

impl<F> Arrivals for F
where
    F: FnMut() -> Result<Option<Arrival>, SourceError>,
{
    fn next_arrival(&mut self) -> Result<Option<Arrival>, SourceError> {
        self()
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenLoopError {
    #[error(transparent)]
    Run(#[from] RunError),
    /// The source failed (its message names the file and line).
    #[error("{0}")]
    Source(SourceError),
}

/// When to issue.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "mode")]
pub enum Pacing {
    /// At the source's arrival times divided by `speed` (2.0: twice as fast).
    Timed { speed: f64 },
    /// As fast as possible: a record is issued when a slot frees.
    Afap,
}

/// How to drive an open-loop run.
#[derive(Clone, Debug, Serialize)]
pub struct OpenOptions {
    /// I/Os in flight at most (the host queue depth); further arrivals wait.
    pub max_outstanding: u32,
    pub pacing: Pacing,
    /// Virtual time to run for; `None`: until the source ends and the last
    /// I/O completes.
    pub duration_ns: Option<u64>,
    /// Reporting interval in virtual time.
    pub interval_ns: u64,
}

impl OpenOptions {
    pub fn validate(&self) -> Result<(), RunError> {
        let e = |m: &str| Err(RunError::Options(m.into()));
        if self.max_outstanding == 0 {
            return e("the queue depth (outstanding I/Os) must be at least 1");
        }
        if self.max_outstanding > 65_536 {
            return e("the queue depth (outstanding I/Os) must be at most 65536");
        }
        if self.interval_ns == 0 || self.duration_ns == Some(0) {
            return e("duration and interval must be positive");
        }
        if let Some(d) = self.duration_ns {
            if d / self.interval_ns > MAX_INTERVALS as u64 {
                return e("more than 2 million intervals: use a longer interval");
            }
        }
        if let Pacing::Timed { speed } = self.pacing {
            if !(speed.is_finite() && speed > 0.0) {
                return e("the speed must be a positive number");
            }
        }
        Ok(())
    }
}

/// Latency figures of one kind of operation.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    pub mean_us: f64,
    pub stddev_us: f64,
    pub max_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
}

impl LatencySummary {
    pub fn of(s: &LatencyStats) -> LatencySummary {
        LatencySummary {
            mean_us: s.mean_us(),
            stddev_us: s.stddev_us(),
            max_us: s.max_us(),
            p50_us: s.percentile_us(0.50),
            p95_us: s.percentile_us(0.95),
            p99_us: s.percentile_us(0.99),
            p999_us: s.percentile_us(0.999),
            p9999_us: s.percentile_us(0.9999),
        }
    }
}

/// The quantiles of the latency CDF reported by op.
pub const CDF_QUANTILES: [f64; 19] = [
    0.01, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.95, 0.98, 0.99, 0.995,
    0.999, 0.9999, 0.99999, 1.0,
];

/// One point of a latency CDF: this fraction of the I/Os took at most `us`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CdfPoint {
    pub fraction: f64,
    pub us: f64,
}

/// Results of one kind of operation.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpSummary {
    pub op: OpKind,
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    /// From arrival to completion (host queueing included), as fio's `lat`.
    pub lat: LatencySummary,
    /// From issue to completion, as fio's `clat`.
    pub service: LatencySummary,
    /// CDF of `lat` at [`CDF_QUANTILES`].
    pub cdf: Vec<CdfPoint>,
}

/// Results of an open-loop run: the same summary and intervals as a
/// closed-loop run, plus figures by op and of the host queue.
#[derive(Clone, Debug, Serialize)]
pub struct OpenResult {
    #[serde(flatten)]
    pub run: RunResult,
    /// Ops that completed inside the measured window, in [`OpKind::ALL`] order
    /// (kinds that never occurred are left out).
    pub by_op: Vec<OpSummary>,
    /// Service time (issue to completion) of every counted op.
    pub service: LatencySummary,
    /// Records taken from the source.
    pub arrived: u64,
    /// I/Os issued to the device.
    pub issued: u64,
    /// Arrivals earlier than the one before them (issued in order).
    pub reordered: u64,
    /// Arrivals that waited in the host queue for a free slot (timed pacing).
    pub waited: u64,
}

struct OpStats {
    lat: LatencyStats,
    service: LatencyStats,
    bytes: u64,
}

/// Intervals a run may report (each holds its statistics in the result).
const MAX_INTERVALS: usize = 2_000_000;

#[derive(Default)]
struct Window {
    lat: LatencyStats,
    reads: u64,
    writes: u64,
    bytes: u64,
}

/// The interval being measured, the totals and the closed intervals.
struct Acc {
    start: Nanos,
    window: Window,
    total: Window,
    intervals: Vec<IntervalStats>,
    last_stats: device::DeviceStats,
}

impl Acc {
    fn close<D: VirtualDevice>(
        &mut self,
        dev: &D,
        at: Nanos,
        secs: f64,
        on_interval: &mut dyn FnMut(&IntervalStats),
    ) -> Result<(), RunError> {
        if self.intervals.len() >= MAX_INTERVALS {
            return Err(RunError::Options(format!(
                "the run spans more than {MAX_INTERVALS} intervals: use a longer interval"
            )));
        }
        let s = dev.stats();
        let w = &mut self.window;
        let st = IntervalStats::from_parts(
            (at - self.start).as_secs_f64(),
            secs,
            &w.lat,
            w.reads,
            w.writes,
            w.bytes,
            s.write_amplification_since(&self.last_stats),
            s.gc_sectors_moved - self.last_stats.gc_sectors_moved,
        );
        self.last_stats = s;
        self.total.lat.merge(&w.lat);
        self.total.reads += w.reads;
        self.total.writes += w.writes;
        self.total.bytes += w.bytes;
        w.lat.reset();
        w.reads = 0;
        w.writes = 0;
        w.bytes = 0;
        on_interval(&st);
        self.intervals.push(st);
        Ok(())
    }
}

/// In flight: (arrival, issue, op, len).
type Flight = (Nanos, Nanos, OpKind, u64);

/// Runs the arrivals of `source` on `dev` from virtual time `start`. Calls
/// `on_interval` after each interval. Stops at `duration_ns` (arrivals after
/// it are not issued, I/Os completing after it are not counted, and the
/// device is drained as [`crate::run`] does) or, without a duration, when
/// the source ends and its last I/O completes.
pub fn run_arrivals<D: VirtualDevice>(
    dev: &mut D,
    source: &mut dyn Arrivals,
    opts: &OpenOptions,
    start: Nanos,
    on_interval: &mut dyn FnMut(&IntervalStats),
) -> Result<OpenResult, OpenLoopError> {
    run_arrivals_fio(dev, source, opts, start, on_interval, None)
}

/// [`run_arrivals`], also accounting every counted read and write in `fio`
/// (fio's histogram and one sample per interval) when given. fio measures
/// a rate-limited job's latency from the I/O's issue (its `clat`/`lat`
/// never include the wait for the rate's next slot), so `fio` gets the
/// service time (issue to completion), not the latency from arrival.
pub fn run_arrivals_fio<D: VirtualDevice>(
    dev: &mut D,
    source: &mut dyn Arrivals,
    opts: &OpenOptions,
    start: Nanos,
    on_interval: &mut dyn FnMut(&IntervalStats),
    mut fio: Option<&mut crate::FioStats>,
) -> Result<OpenResult, OpenLoopError> {
    opts.validate()?;
    let qd = opts.max_outstanding as usize;
    let mut queue: EventQueue<Flight> = EventQueue::with_capacity(qd);
    let end = opts.duration_ns.map(|d| start + Nanos(d));
    let interval = Nanos(opts.interval_ns);
    let mut boundary = start + interval;

    let mut acc = Acc {
        start,
        window: Window::default(),
        total: Window::default(),
        intervals: Vec::new(),
        last_stats: dev.stats(),
    };
    let mut ops: Vec<OpStats> = OpKind::ALL
        .iter()
        .map(|_| OpStats {
            lat: LatencyStats::default(),
            service: LatencyStats::default(),
            bytes: 0,
        })
        .collect();
    let base_stats = dev.stats();

    let speed = match opts.pacing {
        Pacing::Timed { speed } => Some(speed),
        Pacing::Afap => None,
    };
    // The next arrival, read one ahead: (absolute arrival time, arrival).
    let mut pending: Option<(Nanos, Arrival)> = None;
    let mut ahead: Option<(Nanos, Arrival)> = None;
    let mut source_done = false;
    let mut last_arrival = start;
    let (mut arrived, mut issued, mut reordered, mut waited) = (0u64, 0u64, 0u64, 0u64);
    let mut now = start;
    let mut drained = start;

    loop {
        // Two arrivals are read ahead so that the device can prefetch their
        // map entries (as `crate::run` does); no result depends on it.
        while (pending.is_none() || ahead.is_none()) && !source_done {
            match source.next_arrival().map_err(OpenLoopError::Source)? {
                Some(a) => {
                    arrived += 1;
                    let rel = match speed {
                        Some(1.0) => a.at_ns,
                        // Saturates far beyond any run (u64::MAX ns: 584 years).
                        Some(s) => (a.at_ns as f64 / s).round() as u64,
                        None => 0,
                    };
                    let at = match (speed, start.0.checked_add(rel)) {
                        (None, _) => now,
                        (Some(_), Some(t)) => Nanos(t),
                        (Some(_), None) => {
                            return Err(OpenLoopError::Source(
                                format!("arrival time {} ns is out of range", a.at_ns).into(),
                            ))
                        }
                    };
                    let at = if at < last_arrival {
                        reordered += speed.is_some() as u64;
                        last_arrival
                    } else {
                        at
                    };
                    last_arrival = at;
                    if end.is_some_and(|e| at > e) {
                        source_done = true;
                    } else {
                        if a.op != OpKind::Flush {
                            dev.prefetch(a.offset, false);
                        }
                        if pending.is_none() {
                            pending = Some((at, a));
                        } else {
                            ahead = Some((at, a));
                        }
                    }
                }
                None => source_done = true,
            }
        }
        // The next event: an issue (a pending arrival with a free slot) or
        // the earliest completion; a completion first on a tie.
        let completion = queue.peek_time();
        let issue_at = match pending {
            Some((at, _)) if queue.len() < qd => Some(at.max(now)),
            _ => None,
        };
        let take_issue = match (issue_at, completion) {
            (Some(i), Some(c)) => i < c,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let t = if take_issue {
            issue_at.unwrap()
        } else {
            completion.unwrap()
        };
        // An I/O completing exactly at a boundary counts in the interval
        // that ends there.
        while t > boundary && end.is_none_or(|e| boundary <= e) {
            if let Some(f) = fio.as_deref_mut() {
                f.close_interval(interval.as_secs_f64());
            }
            acc.close(dev, boundary, interval.as_secs_f64(), on_interval)?;
            boundary += interval;
        }
        if end.is_some_and(|e| t > e) {
            // Stop issuing, let the I/Os in flight finish uncounted.
            drained = t;
            while let Some((t, _)) = queue.pop() {
                drained = drained.max(t);
            }
            break;
        }
        now = t;
        if take_issue {
            let (arrival, a) = pending.take().unwrap();
            pending = ahead.take();
            if let Some((_, n)) = &pending {
                if n.op != OpKind::Flush {
                    dev.prefetch(n.offset, true);
                }
            }
            // As fast as possible: an I/O arrives when its slot frees.
            let arrival = if speed.is_none() { t } else { arrival };
            let kind = match a.op {
                OpKind::Read => Some(IoKind::Read),
                OpKind::Write => Some(IoKind::Write),
                OpKind::Discard => Some(IoKind::Trim),
                // The card acknowledges writes from power-cut-safe buffers:
                // a flush has nothing to wait for (docs/MODEL.md).
                OpKind::Flush => None,
            };
            let done = match kind {
                Some(kind) => match dev.submit(t, kind, a.offset, a.len) {
                    Ok(done) => done,
                    Err(error) => match error.failed_io_done() {
                        Some(done) => done,
                        None => return Err(RunError::Device { at: t, error }.into()),
                    },
                },
                None => t,
            };
            issued += 1;
            let len = if a.op == OpKind::Flush { 0 } else { a.len };
            queue.push(done, (arrival, t, a.op, len));
            waited += (arrival < t) as u64;
            if let Some(f) = fio.as_deref_mut() {
                if matches!(a.op, OpKind::Read | OpKind::Write) {
                    f.record_depth(queue.len());
                }
            }
        } else {
            let (t, (arrival, issue, op, len)) = queue.pop().unwrap();
            drained = drained.max(t);
            let lat = (t - arrival).0;
            let w = &mut acc.window;
            w.lat.record(lat);
            w.reads += (op == OpKind::Read) as u64;
            w.writes += (op == OpKind::Write) as u64;
            w.bytes += len;
            let o = &mut ops[op.index()];
            o.lat.record(lat);
            o.service.record((t - issue).0);
            o.bytes += len;
            if let Some(f) = fio.as_deref_mut() {
                if matches!(op, OpKind::Read | OpKind::Write) {
                    f.record(op == OpKind::Read, (t - issue).0, len);
                }
            }
        }
    }
    let stop = end.unwrap_or(drained.max(start));
    while boundary <= stop {
        if let Some(f) = fio.as_deref_mut() {
            f.close_interval(interval.as_secs_f64());
        }
        acc.close(dev, boundary, interval.as_secs_f64(), on_interval)?;
        boundary += interval;
    }
    // A final partial interval.
    let from = boundary - interval;
    if stop > from {
        if let Some(f) = fio {
            f.close_interval((stop - from).as_secs_f64());
        }
        acc.close(dev, stop, (stop - from).as_secs_f64(), on_interval)?;
    }
    let s = dev.stats();
    let moved = s.gc_sectors_moved - base_stats.gc_sectors_moved;
    let wa = s.write_amplification_since(&base_stats);
    let secs = (stop - start).as_secs_f64();
    let t = &acc.total;
    let totals =
        IntervalStats::from_parts(secs, secs, &t.lat, t.reads, t.writes, t.bytes, wa, moved);
    let mut service_all = LatencyStats::default();
    for o in &ops {
        service_all.merge(&o.service);
    }
    let by_op = OpKind::ALL
        .iter()
        .zip(&ops)
        .filter(|(_, o)| o.lat.count() > 0)
        .map(|(&op, o)| OpSummary {
            op,
            ios: o.lat.count(),
            bytes: o.bytes,
            iops: o.lat.count() as f64 / secs.max(1e-12),
            mb_per_s: o.bytes as f64 / secs.max(1e-12) / 1e6,
            lat: LatencySummary::of(&o.lat),
            service: LatencySummary::of(&o.service),
            cdf: CDF_QUANTILES
                .iter()
                .map(|&q| CdfPoint {
                    fraction: q,
                    us: o.lat.percentile_us(q),
                })
                .collect(),
        })
        .collect();
    Ok(OpenResult {
        run: RunResult {
            summary: Summary {
                totals,
                reads: t.reads,
                writes: t.writes,
                bytes: t.bytes,
                virtual_s: secs,
                precondition_s: 0.0,
                host_ram_bytes: s.host_ram_bytes,
                gc_runs: s.gc_runs - base_stats.gc_runs,
                erases: s.erases - base_stats.erases,
            },
            intervals: acc.intervals,
            end: drained.max(stop),
            latency: Some(acc.total.lat.clone()),
        },
        by_op,
        service: LatencySummary::of(&service_all),
        arrived,
        issued,
        reordered,
        waited,
    })
}

/// Arrivals at a fixed rate (fio's `rate_iops`) or as a Poisson process
/// (`rate_process=poisson`: exponential gaps of the same mean), with the
/// I/Os drawn from a resolved [`workload::WorkloadSpec`]'s generator.
pub struct RateArrivals {
    gen: workload::Generator,
    prng: Prng,
    gap_ns: f64,
    poisson: bool,
    t_ns: f64,
    remaining: Option<u64>,
}

impl RateArrivals {
    /// `spec` must be resolved against the device. `count`: stop after this
    /// many arrivals (`None`: never; give the run a duration).
    pub fn new(
        spec: &workload::WorkloadSpec,
        rate_iops: f64,
        poisson: bool,
        seed: u64,
        count: Option<u64>,
    ) -> Result<RateArrivals, RunError> {
        let mut master = Prng::from_seed(seed);
        let gen = workload::Generator::new(spec, 0, 1);
        let mut a = RateArrivals::with_generator(gen, master.fork(), rate_iops, poisson)?;
        a.remaining = count;
        Ok(a)
    }

    /// Arrivals at `rate_iops` of the I/Os `gen` draws from `prng`, the
    /// gaps drawn from the same stream (one worker of a real target's
    /// open-loop run: its own thread's generator and stream).
    pub fn with_generator(
        gen: workload::Generator,
        prng: Prng,
        rate_iops: f64,
        poisson: bool,
    ) -> Result<RateArrivals, RunError> {
        if !(rate_iops.is_finite() && rate_iops > 0.0) {
            return Err(RunError::Options(
                "the rate must be a positive number of IOPS".into(),
            ));
        }
        Ok(RateArrivals {
            gen,
            prng,
            gap_ns: 1e9 / rate_iops,
            poisson,
            t_ns: 0.0,
            remaining: None,
        })
    }
}

impl Arrivals for RateArrivals {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, SourceError> {
        if let Some(r) = &mut self.remaining {
            if *r == 0 {
                return Ok(None);
            }
            *r -= 1;
        }
        let at_ns = self.t_ns.round() as u64;
        let gap = if self.poisson {
            // Inverse CDF of the exponential; 1 - u is in (0, 1].
            -(1.0 - self.prng.next_f64()).ln() * self.gap_ns
        } else {
            self.gap_ns
        };
        self.t_ns += gap;
        let io = self.gen.next(&mut self.prng);
        Ok(Some(Arrival {
            at_ns,
            op: if io.is_read {
                OpKind::Read
            } else {
                OpKind::Write
            },
            offset: io.offset,
            len: io.len,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precondition_fill;
    use device::{Card, CardConfig, Preset};
    use workload::Profile;

    fn card() -> Card {
        let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
        c.scale = 0.01;
        Card::new(c).unwrap()
    }

    fn filled() -> (Card, Nanos) {
        let mut dev = card();
        let t = precondition_fill(&mut dev, Nanos::ZERO).unwrap();
        (dev, t)
    }

    fn opts(qd: u32, pacing: Pacing, duration_ns: Option<u64>) -> OpenOptions {
        OpenOptions {
            max_outstanding: qd,
            pacing,
            duration_ns,
            interval_ns: 50_000_000,
        }
    }

    fn randread(dev: &Card) -> workload::WorkloadSpec {
        Profile::by_name("4k-randread")
            .unwrap()
            .spec()
            .resolve(dev.capacity_bytes(), dev.sector_bytes())
            .unwrap()
    }

    fn vec_source(v: Vec<Arrival>) -> impl FnMut() -> Result<Option<Arrival>, SourceError> {
        let mut it = v.into_iter();
        move || Ok(it.next())
    }

    fn mean_lat(r: &OpenResult, op: OpKind) -> f64 {
        r.by_op.iter().find(|o| o.op == op).unwrap().lat.mean_us
    }

    /// At low load a Poisson stream sees (almost) no queueing: the mean
    /// latency from arrival is the service time measured at QD 1.
    #[test]
    fn poisson_at_low_load_sees_the_service_time() {
        let (mut dev, t) = filled();
        let spec = randread(&dev);
        // Service time: closed loop over the same kind of source at QD 1.
        let mut src = RateArrivals::new(&spec, 1.0, false, 3, Some(20_000)).unwrap();
        let afap = run_arrivals(
            &mut dev,
            &mut src,
            &opts(1, Pacing::Afap, None),
            t,
            &mut |_| {},
        )
        .unwrap();
        let service = mean_lat(&afap, OpKind::Read);
        let capacity = 1e6 / service; // IOPS at QD 1
        let rate = 0.05 * capacity;
        let mut src = RateArrivals::new(&spec, rate, true, 4, Some(20_000)).unwrap();
        let o = opts(64, Pacing::Timed { speed: 1.0 }, None);
        let r = run_arrivals(&mut dev, &mut src, &o, afap.run.end, &mut |_| {}).unwrap();
        let lat = mean_lat(&r, OpKind::Read);
        assert_eq!(r.arrived, 20_000);
        assert_eq!(r.run.summary.reads, 20_000);
        assert!(
            (lat - service).abs() / service < 0.15,
            "Poisson at 5 % load: latency {lat:.1} us, service time at QD 1 {service:.1} us"
        );
        // Offered load is carried: IOPS ≈ the rate.
        let iops = r.run.summary.totals.iops;
        assert!((iops - rate).abs() / rate < 0.05, "iops {iops} rate {rate}");
    }

    /// Above capacity the host queue grows without bound, and so does the
    /// latency from arrival; the service time stays bounded.
    #[test]
    fn overload_latency_grows_with_time() {
        let (mut dev, t) = filled();
        let spec = randread(&dev);
        let mut src = RateArrivals::new(&spec, 1.0, false, 3, Some(20_000)).unwrap();
        let afap = run_arrivals(
            &mut dev,
            &mut src,
            &opts(4, Pacing::Afap, None),
            t,
            &mut |_| {},
        )
        .unwrap();
        let capacity = afap.run.summary.totals.iops;
        let mut src = RateArrivals::new(&spec, 2.0 * capacity, true, 5, None).unwrap();
        let o = opts(4, Pacing::Timed { speed: 1.0 }, Some(400_000_000));
        let r = run_arrivals(&mut dev, &mut src, &o, afap.run.end, &mut |_| {}).unwrap();
        let iv = &r.run.intervals;
        assert_eq!(iv.len(), 8);
        let (first, last) = (iv[0].lat_avg_us, iv[7].lat_avg_us);
        assert!(
            last > 4.0 * first,
            "latency at overload: first {first} last {last} us"
        );
        for w in iv.windows(2) {
            assert!(w[1].lat_avg_us > w[0].lat_avg_us, "{:?}", iv);
        }
        // Carried load is the capacity, not the offered rate.
        let iops = r.run.summary.totals.iops;
        assert!(
            (iops - capacity).abs() / capacity < 0.1,
            "{iops} vs {capacity}"
        );
        assert!(r.service.mean_us < 2.0 * mean_lat(&afap, OpKind::Read));
        assert!(r.waited > r.issued / 2);
    }

    #[test]
    fn same_source_same_bytes() {
        let go = |seed: u64| {
            let mut dev = card();
            let spec = Profile::by_name("8k-7030")
                .unwrap()
                .spec()
                .resolve(dev.capacity_bytes(), dev.sector_bytes())
                .unwrap();
            let mut src = RateArrivals::new(&spec, 20_000.0, true, seed, None).unwrap();
            let o = opts(16, Pacing::Timed { speed: 1.0 }, Some(200_000_000));
            let r = run_arrivals(&mut dev, &mut src, &o, Nanos::ZERO, &mut |_| {}).unwrap();
            serde_json::to_string(&r).unwrap()
        };
        let a = go(7);
        assert_eq!(a, go(7));
        assert_ne!(a, go(8));
    }

    #[test]
    fn ops_are_counted_and_ordered() {
        let mut dev = card();
        let a = |at_ns, op, offset| Arrival {
            at_ns,
            op,
            offset,
            len: 4096,
        };
        let v = vec![
            a(0, OpKind::Write, 0),
            a(1_000_000, OpKind::Flush, 0),
            a(2_000_000, OpKind::Read, 0),
            a(1_500_000, OpKind::Discard, 8192), // out of order
            a(3_000_000, OpKind::Write, 4096),
            a(900_000_000, OpKind::Read, 4096), // after the duration
        ];
        let mut seen = Vec::new();
        let o = opts(1, Pacing::Timed { speed: 1.0 }, Some(100_000_000));
        let r = run_arrivals(&mut dev, &mut vec_source(v), &o, Nanos::ZERO, &mut |s| {
            seen.push(s.clone())
        })
        .unwrap();
        assert_eq!(r.arrived, 6);
        assert_eq!(r.issued, 5);
        assert_eq!(r.reordered, 1);
        let count = |op| r.by_op.iter().find(|o| o.op == op).map_or(0, |o| o.ios);
        assert_eq!(count(OpKind::Read), 1);
        assert_eq!(count(OpKind::Write), 2);
        assert_eq!(count(OpKind::Discard), 1);
        assert_eq!(count(OpKind::Flush), 1);
        let flush = r.by_op.iter().find(|o| o.op == OpKind::Flush).unwrap();
        assert_eq!(flush.lat.max_us, 0.0);
        assert_eq!(r.run.summary.totals.ios, 5);
        assert_eq!(r.run.summary.bytes, 4 * 4096);
        // Two intervals of 50 ms; every I/O completed in the first.
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].ios, 5);
        assert_eq!(seen[1].ios, 0);
        assert_eq!(r.run.summary.virtual_s, 0.1);
        for o in &r.by_op {
            assert!(o.lat.mean_us >= o.service.mean_us);
            assert!(o.cdf.windows(2).all(|w| w[0].us <= w[1].us));
        }
    }

    #[test]
    fn speed_compresses_time_and_afap_ignores_it() {
        let arrivals: Vec<Arrival> = (0..1000u64)
            .map(|i| Arrival {
                at_ns: i * 1_000_000,
                op: OpKind::Read,
                offset: (i * 7919 % 1000) * 4096,
                len: 4096,
            })
            .collect();
        let go = |pacing| {
            let mut dev = card();
            let o = opts(8, pacing, None);
            run_arrivals(
                &mut dev,
                &mut vec_source(arrivals.clone()),
                &o,
                Nanos::ZERO,
                &mut |_| {},
            )
            .unwrap()
        };
        let x1 = go(Pacing::Timed { speed: 1.0 });
        let x2 = go(Pacing::Timed { speed: 2.0 });
        let fast = go(Pacing::Afap);
        let span = |r: &OpenResult| r.run.summary.virtual_s;
        assert!((span(&x1) - 0.999).abs() < 0.001, "{}", span(&x1));
        assert!((span(&x2) - 0.4995).abs() < 0.001, "{}", span(&x2));
        assert!(span(&fast) < 0.05, "{}", span(&fast));
        assert_eq!(fast.run.summary.reads, 1000);
        assert!((x1.run.summary.totals.iops - 1000.0 / span(&x1)).abs() < 1e-6);
    }

    #[test]
    fn a_source_error_stops_the_run() {
        let mut n = 0;
        let mut src = move || -> Result<Option<Arrival>, SourceError> {
            n += 1;
            if n > 3 {
                return Err("trace t line 4: truncated".into());
            }
            Ok(Some(Arrival {
                at_ns: n * 1000,
                op: OpKind::Read,
                offset: 0,
                len: 4096,
            }))
        };
        let e = run_arrivals(
            &mut card(),
            &mut src,
            &opts(4, Pacing::Afap, None),
            Nanos::ZERO,
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "trace t line 4: truncated");
        assert!(opts(0, Pacing::Afap, None).validate().is_err());
        assert!(opts(1, Pacing::Timed { speed: 0.0 }, None)
            .validate()
            .is_err());
    }
}
