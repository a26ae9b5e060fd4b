use crate::stats::{IntervalStats, LatencyStats};
use device::{DeviceError, IoKind, VirtualDevice};
use serde::Serialize;
use sim::{EventQueue, Nanos, Prng};
use workload::{Generator, WorkloadSpec};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error("invalid run options: {0}")]
    Options(String),
    #[error("workload: {0}")]
    Workload(#[from] workload::SpecError),
    /// The device's error is in the message, not in the error chain, so
    /// a chained print (`{:#}`) says it once.
    #[error("device error at {at}: {error}")]
    Device { at: Nanos, error: DeviceError },
}

/// How to drive a run.
#[derive(Clone, Debug, Serialize)]
pub struct RunOptions {
    pub threads: u32,
    pub queue_depth: u32,
    /// Virtual time to run for.
    pub duration_ns: u64,
    /// Reporting interval in virtual time.
    pub interval_ns: u64,
    pub seed: u64,
}

impl RunOptions {
    pub fn validate(&self) -> Result<(), RunError> {
        let e = |m: &str| Err(RunError::Options(m.into()));
        if self.threads == 0 {
            return e("threads must be at least 1");
        }
        if self.queue_depth == 0 {
            return e("queue depth must be at least 1");
        }
        if self.threads as u64 * self.queue_depth as u64 > 65_536 {
            return e("threads x queue depth must be at most 65536");
        }
        if self.duration_ns == 0 || self.interval_ns == 0 {
            return e("duration and interval must be positive");
        }
        if self.duration_ns / self.interval_ns > 10_000_000 {
            return e("more than 10 million intervals: use a longer --interval");
        }
        Ok(())
    }
}

/// Totals of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    #[serde(flatten)]
    pub totals: IntervalStats,
    pub reads: u64,
    pub writes: u64,
    pub bytes: u64,
    pub virtual_s: f64,
    /// Virtual time spent in the sequential precondition fill, if any.
    pub precondition_s: f64,
    pub host_ram_bytes: u64,
    pub gc_runs: u64,
    pub erases: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub summary: Summary,
    pub intervals: Vec<IntervalStats>,
    /// When the last I/O in flight at the end of the run completed: where
    /// the next run on the same device starts.
    #[serde(skip)]
    pub end: Nanos,
    /// Every latency of the run (not serialized): window merges and
    /// histograms (`vsl pts`).
    #[serde(skip)]
    pub latency: Option<LatencyStats>,
}

/// Writes the whole device once, sequentially, in 1 MiB I/Os at QD 32 (the
/// reviews' fill before a test). Starts at `start` and returns when the
/// last write completes.
pub fn precondition_fill<D: VirtualDevice>(dev: &mut D, start: Nanos) -> Result<Nanos, RunError> {
    let cap = dev.capacity_bytes();
    let sector = dev.sector_bytes() as u64;
    let bs = (1u64 << 20).min(cap) / sector * sector;
    let qd = 32usize;
    let mut queue = EventQueue::with_capacity(qd);
    let mut next = 0u64;
    let mut issue = |dev: &mut D, at: Nanos, queue: &mut EventQueue<()>| -> Result<(), RunError> {
        if next < cap {
            let len = bs.min(cap - next);
            let done = dev
                .submit(at, IoKind::Write, next, len)
                .map_err(|error| RunError::Device { at, error })?;
            next += len;
            queue.push(done, ());
        }
        Ok(())
    };
    for _ in 0..qd {
        issue(dev, start, &mut queue)?;
    }
    let mut end = start;
    while let Some((t, ())) = queue.pop() {
        end = t;
        issue(dev, t, &mut queue)?;
    }
    Ok(end)
}

struct Window {
    lat: LatencyStats,
    reads: u64,
    writes: u64,
    bytes: u64,
}

impl Window {
    fn new() -> Window {
        Window {
            lat: LatencyStats::default(),
            reads: 0,
            writes: 0,
            bytes: 0,
        }
    }
}

/// Runs `spec` (resolved against `dev`) from virtual time `start` with a
/// closed loop of `threads × queue_depth` outstanding I/Os, each thread
/// issuing its I/Os at least the device's
/// [`VirtualDevice::host_thread_ns`] apart. Calls `on_interval` after
/// each interval. Same inputs → identical results.
pub fn run<D: VirtualDevice>(
    dev: &mut D,
    spec: &WorkloadSpec,
    opts: &RunOptions,
    start: Nanos,
    on_interval: &mut dyn FnMut(&IntervalStats),
) -> Result<RunResult, RunError> {
    run_fio(dev, spec, opts, start, on_interval, None, None)
}

/// fio's `thinktime`: a thread pauses `ns` after every `blocks` of its I/Os
/// complete. With a queue depth of 1 that is fio's behaviour; deeper, the
/// slot whose completion ends a block waits and the others go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Think {
    pub ns: u64,
    pub blocks: u32,
    /// fio's `thinktime_iotime`: also pause once a thread has issued this
    /// long since its last pause (whichever of the two comes first).
    pub iotime_ns: Option<u64>,
}

/// A queue entry that is a thread's wake-up after its think time, not an I/O.
const WAKE: u64 = u64::MAX;
/// A queue entry that is a thread's next I/O waiting for the thread's CPU
/// ([`VirtualDevice::host_thread_ns`]), issued when it pops: the device
/// sees every I/O at the time it is issued, in time order.
const DEFERRED: u64 = u64::MAX - 1;

/// Whether a queue entry is an I/O in flight (not a wake-up or a wait).
#[inline]
fn in_flight(len: u64) -> bool {
    len != WAKE && len != DEFERRED
}

/// Each thread's CPU: a thread spends `cpu` per I/O it issues, so it
/// issues its I/Os at least `cpu` apart however deep its queue.
struct ThreadCpu {
    cpu: Nanos,
    free: Vec<Nanos>,
}

impl ThreadCpu {
    fn new(cpu_ns: u64, threads: u32, start: Nanos) -> ThreadCpu {
        ThreadCpu {
            cpu: Nanos(cpu_ns),
            free: vec![start; if cpu_ns > 0 { threads as usize } else { 0 }],
        }
    }

    /// The thread wants to issue an I/O at `t`: `None` if it can now
    /// (its CPU is taken from `t`), else when it can (taken from then).
    #[inline]
    fn claim(&mut self, thread: u32, t: Nanos) -> Option<Nanos> {
        if self.cpu.0 == 0 {
            return None;
        }
        let f = &mut self.free[thread as usize];
        let at = (*f).max(t);
        *f = at + self.cpu;
        (at > t).then_some(at)
    }
}

/// [`run`], also accounting every measured completion in `fio` (per
/// direction, fio's histogram and one sample per interval) when given, and
/// pausing threads for `think` when given.
pub fn run_fio<D: VirtualDevice>(
    dev: &mut D,
    spec: &WorkloadSpec,
    opts: &RunOptions,
    start: Nanos,
    on_interval: &mut dyn FnMut(&IntervalStats),
    mut fio: Option<&mut crate::FioStats>,
    think: Option<Think>,
) -> Result<RunResult, RunError> {
    opts.validate()?;
    if think.is_some_and(|t| t.blocks == 0) {
        return Err(RunError::Options(
            "thinktime_blocks must be at least 1".into(),
        ));
    }
    let mut completed = vec![0u64; opts.threads as usize];
    // When each thread last resumed (thinktime_iotime).
    let mut resumed = vec![start; opts.threads as usize];
    let spec = spec.resolve(dev.capacity_bytes(), dev.sector_bytes())?;
    let mut master = Prng::from_seed(opts.seed);
    // Each thread's next I/O is drawn one step early so that the device can
    // prefetch its map entry while other I/Os are simulated; the sequence
    // per thread is unchanged.
    let mut gens: Vec<(Generator, Prng, [workload::Io; 2])> = (0..opts.threads)
        .map(|i| {
            let mut g = Generator::new(&spec, i, opts.threads);
            let mut p = master.fork();
            let first = g.next(&mut p);
            let second = g.next(&mut p);
            (g, p, [first, second])
        })
        .collect();
    let outstanding = (opts.threads * opts.queue_depth) as usize;
    let mut queue: EventQueue<(u32, Nanos, bool, u64)> = EventQueue::with_capacity(outstanding);
    let submit = |dev: &mut D,
                  gens: &mut [(Generator, Prng, [workload::Io; 2])],
                  thread: u32,
                  at: Nanos|
     -> Result<(Nanos, bool, u64), RunError> {
        let (g, p, ahead) = &mut gens[thread as usize];
        let io = ahead[0];
        ahead[0] = ahead[1];
        ahead[1] = g.next(p);
        dev.prefetch(ahead[1].offset, false);
        dev.prefetch(ahead[0].offset, true);
        let kind = if io.is_read {
            IoKind::Read
        } else {
            IoKind::Write
        };
        // A read of lost sectors fails with an I/O error after taking its
        // time (the device counts it); the workload goes on.
        let done = match dev.submit(at, kind, io.offset, io.len) {
            Ok(done) => done,
            Err(source) => match source.failed_io_done() {
                Some(done) => done,
                None => return Err(RunError::Device { at, error: source }),
            },
        };
        Ok((done, io.is_read, io.len))
    };
    let mut cpu = ThreadCpu::new(dev.host_thread_ns(), opts.threads, start);
    for slot in 0..outstanding as u32 {
        let thread = slot / opts.queue_depth;
        if let Some(at) = cpu.claim(thread, start) {
            queue.push(at, (thread, start, false, DEFERRED));
            continue;
        }
        let (done, is_read, len) = submit(dev, &mut gens, thread, start)?;
        queue.push(done, (thread, start, is_read, len));
    }

    let end = start + Nanos(opts.duration_ns);
    let interval = Nanos(opts.interval_ns);
    let mut boundary = start + interval;
    let mut window = Window::new();
    let mut total = Window::new();
    let mut intervals = Vec::with_capacity((opts.duration_ns / opts.interval_ns) as usize + 1);
    let base_stats = dev.stats();
    let mut last_stats = base_stats;
    let mut close = |window: &mut Window,
                     total: &mut Window,
                     at: Nanos,
                     secs: f64,
                     dev: &D,
                     intervals: &mut Vec<IntervalStats>| {
        let s = dev.stats();
        let moved = s.gc_sectors_moved - last_stats.gc_sectors_moved;
        let wa = s.write_amplification_since(&last_stats);
        let st = IntervalStats::from_parts(
            (at - start).as_secs_f64(),
            secs,
            &window.lat,
            window.reads,
            window.writes,
            window.bytes,
            wa,
            moved,
        );
        last_stats = s;
        total.lat.merge(&window.lat);
        total.reads += window.reads;
        total.writes += window.writes;
        total.bytes += window.bytes;
        window.lat.reset();
        window.reads = 0;
        window.writes = 0;
        window.bytes = 0;
        on_interval(&st);
        intervals.push(st);
    };

    let mut drained = end;
    // Each completion issues its thread's next I/O in its place
    // (`replace_top`: one sift of the heap instead of two).
    while let Some((t, &(thread, issued, is_read, len))) = queue.peek() {
        while t >= boundary && boundary <= end {
            if let Some(f) = fio.as_deref_mut() {
                f.close_interval(interval.as_secs_f64());
            }
            close(
                &mut window,
                &mut total,
                boundary,
                interval.as_secs_f64(),
                dev,
                &mut intervals,
            );
            boundary += interval;
        }
        if t > end {
            // Stop issuing and let the I/Os in flight finish, as fio does at
            // the end of a run, so the next run starts on a drained device.
            // They completed after the window closed and are not counted.
            drained = if in_flight(len) { t } else { end };
            while let Some((t, (_, _, _, len))) = queue.pop() {
                if in_flight(len) {
                    drained = drained.max(t);
                }
            }
            break;
        }
        if len == DEFERRED {
            // The thread's CPU is free for the I/O it wanted at `issued`.
            let (done, r, l) = submit(dev, &mut gens, thread, t)?;
            queue.replace_top(done, (thread, issued, r, l));
            continue;
        }
        if len == WAKE {
            // The thread's think time is over: its next I/O now.
            if let Some(at) = cpu.claim(thread, t) {
                queue.replace_top(at, (thread, t, false, DEFERRED));
                continue;
            }
            let (done, r, l) = submit(dev, &mut gens, thread, t)?;
            queue.replace_top(done, (thread, t, r, l));
            continue;
        }
        window.lat.record((t - issued).0);
        if let Some(f) = fio.as_deref_mut() {
            f.record(is_read, (t - issued).0, len);
        }
        window.reads += is_read as u64;
        window.writes += !is_read as u64;
        window.bytes += len;
        if let Some(th) = think {
            let c = &mut completed[thread as usize];
            *c += 1;
            let r = &mut resumed[thread as usize];
            let by_time = th.iotime_ns.is_some_and(|io| (t - *r).0 >= io);
            if by_time || *c >= th.blocks as u64 {
                *c = 0;
                *r = t + Nanos(th.ns);
                queue.replace_top(t + Nanos(th.ns), (thread, t, false, WAKE));
                continue;
            }
        }
        if let Some(at) = cpu.claim(thread, t) {
            queue.replace_top(at, (thread, t, false, DEFERRED));
            continue;
        }
        let (done, r, l) = submit(dev, &mut gens, thread, t)?;
        queue.replace_top(done, (thread, t, r, l));
    }
    // A final partial interval (duration not a multiple of the interval).
    if boundary > end && window.lat.count() > 0 {
        let secs = (end - (boundary - interval)).as_secs_f64();
        if secs > 0.0 {
            if let Some(f) = fio {
                f.close_interval(secs);
            }
            close(&mut window, &mut total, end, secs, dev, &mut intervals);
        }
    }
    let s = dev.stats();
    let moved = s.gc_sectors_moved - base_stats.gc_sectors_moved;
    let wa = s.write_amplification_since(&base_stats);
    let secs = Nanos(opts.duration_ns).as_secs_f64();
    let totals = IntervalStats::from_parts(
        secs,
        secs,
        &total.lat,
        total.reads,
        total.writes,
        total.bytes,
        wa,
        moved,
    );
    Ok(RunResult {
        summary: Summary {
            totals,
            reads: total.reads,
            writes: total.writes,
            bytes: total.bytes,
            virtual_s: secs,
            precondition_s: 0.0,
            host_ram_bytes: s.host_ram_bytes,
            gc_runs: s.gc_runs - base_stats.gc_runs,
            erases: s.erases - base_stats.erases,
        },
        intervals,
        end: drained,
        latency: Some(total.lat),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use device::{Card, CardConfig, Preset};
    use workload::Profile;

    /// `preset` at scale 0.01.
    fn card_of(preset: &'static Preset) -> Card {
        let mut c = CardConfig::new(preset);
        c.scale = 0.01;
        Card::new(c).unwrap()
    }

    fn card() -> Card {
        card_of(Preset::by_name("iodrive-duo-640-mlc").unwrap())
    }

    fn opts(seed: u64) -> RunOptions {
        RunOptions {
            threads: 4,
            queue_depth: 4,
            duration_ns: 200_000_000,
            interval_ns: 50_000_000,
            seed,
        }
    }

    /// The 640 MLC with `host.thread_ns` set to `ns`, scale 0.01.
    fn card_with_thread_ns(ns: u64) -> Card {
        let mut p = Preset::by_name("iodrive-duo-640-mlc").unwrap().clone();
        p.host_thread_ns = ns;
        card_of(Box::leak(Box::new(p)))
    }

    #[test]
    fn a_thread_issues_one_io_per_cpu_time_however_deep_its_queue() {
        let spec = Profile::by_name("4k-randread").unwrap().spec();
        let deep = RunOptions {
            threads: 4,
            queue_depth: 32,
            ..opts(5)
        };
        let iops = |ns: u64, o: &RunOptions| {
            let r = run(
                &mut card_with_thread_ns(ns),
                &spec,
                o,
                Nanos::ZERO,
                &mut |_| {},
            );
            r.unwrap().summary.totals.iops
        };
        // 4 threads at 40 us of CPU per I/O: at most 100 K IOPS.
        let (free, held) = (iops(0, &deep), iops(40_000, &deep));
        assert!(free > 120_000.0, "the card alone gives {free:.0} IOPS");
        assert!(
            (95_000.0..=100_500.0).contains(&held),
            "4 threads x 40 us gave {held:.0} IOPS (card alone {free:.0})"
        );
        // At QD 1 the thread's CPU time is within the I/O's own latency:
        // nothing changes.
        let qd1 = RunOptions {
            queue_depth: 1,
            ..deep
        };
        assert_eq!(iops(0, &qd1), iops(20_000, &qd1));
    }

    #[test]
    fn think_time_paces_a_queue_depth_1_thread() {
        let spec = Profile::by_name("4k-randread").unwrap().spec();
        let o = RunOptions {
            threads: 1,
            queue_depth: 1,
            ..opts(3)
        };
        let free = run(&mut card(), &spec, &o, Nanos::ZERO, &mut |_| {}).unwrap();
        let service_ns = 1e3 * free.summary.totals.lat_avg_us;
        let think = Think {
            ns: 100_000,
            blocks: 1,
            iotime_ns: None,
        };
        let paced = run_fio(
            &mut card(),
            &spec,
            &o,
            Nanos::ZERO,
            &mut |_| {},
            None,
            Some(think),
        )
        .unwrap();
        // Each I/O takes its service time plus 100 us of thinking.
        let expect = 0.2 / ((service_ns + 100_000.0) / 1e9);
        let got = paced.summary.totals.ios as f64;
        assert!(
            (got - expect).abs() / expect < 0.05,
            "{got} I/Os, expected {expect:.0}"
        );
        // Every 4th I/O: a quarter of the pauses.
        let think4 = Think { blocks: 4, ..think };
        let r4 = run_fio(
            &mut card(),
            &spec,
            &o,
            Nanos::ZERO,
            &mut |_| {},
            None,
            Some(think4),
        )
        .unwrap();
        let expect4 = 0.2 / ((service_ns + 25_000.0) / 1e9);
        let got4 = r4.summary.totals.ios as f64;
        assert!(
            (got4 - expect4).abs() / expect4 < 0.05,
            "{got4} I/Os, expected {expect4:.0}"
        );
        let zero = Think { blocks: 0, ..think };
        assert!(run_fio(
            &mut card(),
            &spec,
            &o,
            Nanos::ZERO,
            &mut |_| {},
            None,
            Some(zero)
        )
        .is_err());
    }

    #[test]
    fn think_iotime_alternates_busy_and_idle_intervals() {
        // fio's thinktime_iotime=50ms, thinktime=50ms: 50 ms of I/O, 50 ms
        // of stall; 50 ms intervals alternate between the two.
        let spec = Profile::by_name("4k-randread").unwrap().spec();
        let o = RunOptions {
            threads: 2,
            queue_depth: 1,
            duration_ns: 400_000_000,
            interval_ns: 50_000_000,
            seed: 5,
        };
        let think = Think {
            ns: 50_000_000,
            blocks: u32::MAX,
            iotime_ns: Some(50_000_000),
        };
        let go = || {
            run_fio(
                &mut card(),
                &spec,
                &o,
                Nanos::ZERO,
                &mut |_| {},
                None,
                Some(think),
            )
            .unwrap()
        };
        let r = go();
        let ios: Vec<f64> = r.intervals.iter().map(|i| i.iops).collect();
        assert_eq!(ios.len(), 8, "{ios:?}");
        let busy = ios[0];
        assert!(busy > 10_000.0, "{ios:?}");
        for (k, x) in ios.iter().enumerate() {
            if k % 2 == 0 {
                assert!((x - busy).abs() / busy < 0.1, "interval {k}: {ios:?}");
            } else {
                // Idle but for the windows' drift: a pause starts at the
                // first completion past iotime (as fio checks it), so each
                // cycle starts one service time later than the one before.
                assert!(*x <= 0.01 * busy, "interval {k}: {ios:?}");
            }
        }
        let again: Vec<f64> = go().intervals.iter().map(|i| i.iops).collect();
        assert_eq!(ios, again, "same seed, same intervals");
    }

    #[test]
    fn same_seed_same_bytes() {
        let spec = Profile::by_name("8k-7030").unwrap().spec();
        let a = run(&mut card(), &spec, &opts(7), Nanos::ZERO, &mut |_| {}).unwrap();
        let b = run(&mut card(), &spec, &opts(7), Nanos::ZERO, &mut |_| {}).unwrap();
        let ja = serde_json::to_string(&a).unwrap();
        assert_eq!(ja, serde_json::to_string(&b).unwrap());
        let c = run(&mut card(), &spec, &opts(8), Nanos::ZERO, &mut |_| {}).unwrap();
        assert_ne!(ja, serde_json::to_string(&c).unwrap());
        assert_eq!(a.intervals.len(), 4);
        assert!(a.summary.totals.iops > 1000.0);
    }

    #[test]
    fn little_law_holds() {
        let spec = Profile::by_name("4k-randread").unwrap().spec();
        let mut dev = card();
        let t = precondition_fill(&mut dev, Nanos::ZERO).unwrap();
        let r = run(&mut dev, &spec, &opts(1), t, &mut |_| {}).unwrap();
        let s = &r.summary.totals;
        let outstanding = s.iops * s.lat_avg_us / 1e6;
        assert!(
            (outstanding - 16.0).abs() < 0.5,
            "Little's law: {outstanding}"
        );
    }

    #[test]
    fn zero_queue_depth_is_rejected() {
        let spec = Profile::by_name("4k-randread").unwrap().spec();
        let mut o = opts(1);
        o.queue_depth = 0;
        assert!(run(&mut card(), &spec, &o, Nanos::ZERO, &mut |_| {}).is_err());
    }
}
