//! The real-time engine: runs the lab's workloads against a real file or
//! block device, on the wall clock, with O_DIRECT, and returns the same
//! [`lab::RunResult`] as the virtual-time [`lab::run`], so real targets
//! and modelled cards land on the same axes.
//!
//! - [`Target`]: `file:PATH:SIZE` or `blockdev:/dev/NAME`, as parsed from
//!   the command line.
//! - [`RealTarget`]: an opened target (file created and preallocated with
//!   fallocate, or a block device sized with BLKGETSIZE64 / BLKSSZGET),
//!   opened with O_DIRECT where the filesystem allows it ([`DirectMode`]).
//! - [`RealTarget::run`] / [`run`]: `threads` OS threads, each keeping
//!   `queue_depth` I/Os in flight on its own io_uring; offsets, sizes and
//!   the read mix come from one [`workload::Generator`] per thread, seeded
//!   from `opts.seed` exactly as `lab::run` seeds them. Per-thread interval
//!   windows are merged at interval boundaries into [`lab::IntervalStats`].
//!   [`RealTarget::run_open`]: open loop, each worker issuing
//!   arrivals at its share of an [`OpenRate`] (fio's `rate_iops` /
//!   `rate_process`, `thinktime_iotime` [`Bursts`]).
//!   [`RealRun`] adds what a real run needs said: the engine used
//!   ([`EngineKind`]), direct or buffered, and any fallback taken.
//! - [`RealTarget::precondition_fill`] / [`precondition_fill`] /
//!   [`RealTarget::fill`]: the sequential 1 MiB, QD 32 fill of the whole
//!   target (with a [`FillPattern`] and progress for `fill`).
//! - [`layout`]: [`RealTarget::prepare`] lays a file target out with data
//!   before a run that reads (as fio does) and reports unwritten extents,
//!   holes and never-written devices ([`Written`], [`Prepared`]).
//! - [`diskstat`]: every run reads the counters of the block devices under
//!   the target before and after ([`DeviceWatch`]) and says in
//!   [`RealRun::device`] whether the result was measured on the device
//!   ([`DeviceReport`], [`Verdict`]).
//! - [`RealReviewTarget`]: a real target behind `lab::review::ReviewTarget`,
//!   with the same layout and counters.
//! - [`RealtimeError`]: every failure, one line each.
//!
//! Fallbacks, each reported in [`RunInfo::notes`]: a filesystem that
//! refuses O_DIRECT gets buffered I/O (fio needs `--direct=0` there too);
//! a kernel that refuses io_uring gets the synchronous engine, which runs
//! threads × QD OS threads with one blocking I/O each, so the device still
//! sees threads × QD outstanding I/Os.
//!
//! Write amplification and GC counters are unknowable for a real device
//! and are 0; `Summary::virtual_s` holds the wall-clock run time.

mod buffer;
mod collect;
pub mod diskstat;
mod engine;
mod error;
pub mod layout;
mod review;
mod target;

pub use diskstat::{DeviceReport, DeviceWatch, Issued, Verdict};
pub use engine::{EngineChoice, EngineKind, EngineOptions};
pub use error::RealtimeError;
pub use layout::{FillPattern, LayoutMode, LayoutProgress, Prepared, Written};
pub use review::RealReviewTarget;
pub use target::{DirectMode, RealTarget, Target};

use buffer::IoBuffers;
pub use buffer::{IoMem, MemBacking};
use collect::{Collector, Meter, Msg};
use engine::{sync_worker, sync_worker_paced, Clock, IoSource, UringWorker};
use lab::{IntervalStats, RunOptions, RunResult};
use serde::Serialize;
use sim::Prng;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::channel;
use std::sync::{Barrier, OnceLock};
use std::time::Instant;
use workload::{Generator, Io, WorkloadSpec};

/// The largest block a run accepts (io_uring lengths are 32-bit).
const MAX_BLOCK_BYTES: u64 = 1 << 30;
/// The synchronous engine's thread budget.
const MAX_SYNC_THREADS: usize = 4096;

/// How a real run was carried out.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub target: Target,
    pub engine: EngineKind,
    /// Opened with O_DIRECT.
    pub direct: bool,
    pub capacity_bytes: u64,
    pub sector_bytes: u32,
    /// What the I/O buffers were made of (`--mem`; the least of the
    /// workers' when they differ).
    pub io_memory: MemBacking,
    /// Fallbacks taken and anything else worth telling the user.
    pub notes: Vec<String>,
    /// Wall time from the start of the run to the last worker's exit
    /// (the run itself plus draining the I/Os in flight at the end).
    pub wall_s: f64,
}

/// A real run: the lab's result plus how it was obtained.
#[derive(Clone, Debug, Serialize)]
pub struct RealRun {
    pub result: RunResult,
    pub info: RunInfo,
    /// What reached the block device under the target, and the verdict.
    pub device: DeviceReport,
    /// Per direction, for fio's JSON.
    #[serde(skip)]
    pub fio: lab::FioStats,
}

/// An open-loop rate for a real run ([`RealTarget::run_open`]): fio's
/// `rate_iops`/`rate` with `rate_process`, and `thinktime_iotime` bursts.
/// Each worker (an io_uring thread, or each OS thread of the synchronous
/// engine) arrives at its share of `iops`; see the `engine::paced` module
/// for the semantics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OpenRate {
    /// I/Os per second offered, every worker together.
    pub iops: f64,
    /// Exponential gaps (fio's `rate_process=poisson`), else even ones.
    pub poisson: bool,
    /// On/off windows from the run's start.
    pub bursts: Option<Bursts>,
}

/// fio's `thinktime_iotime` bursts of a rate: issue for `on_ns`, stall for
/// `off_ns`, again and again ([`lab::bursts::OnOff`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bursts {
    pub on_ns: u64,
    pub off_ns: u64,
    /// fio's default: a stall's arrivals go out when it ends; else
    /// (`rate_ignore_thinktime`) they are skipped.
    pub catch_up: bool,
}

impl OpenRate {
    /// Runs `f` on one worker's arrivals: its generator and stream at its
    /// share of the rate, in bursts if asked.
    fn arrivals<R>(
        &self,
        src: GenSource,
        workers: usize,
        f: impl FnOnce(&mut dyn lab::openloop::Arrivals) -> Result<R, RealtimeError>,
    ) -> Result<R, RealtimeError> {
        let mut rated = lab::openloop::RateArrivals::with_generator(
            src.gen,
            src.prng,
            self.iops / workers as f64,
            self.poisson,
        )
        .map_err(|e| RealtimeError::Options(e.to_string()))?;
        match self.bursts {
            None => f(&mut rated),
            Some(b) => f(&mut lab::bursts::OnOff::new(
                &mut rated, b.on_ns, b.off_ns, b.catch_up,
            )),
        }
    }
}

/// What a precondition fill did.
#[derive(Clone, Debug, Serialize)]
pub struct FillReport {
    pub bytes: u64,
    pub wall_s: f64,
    pub engine: EngineKind,
}

struct GenSource {
    gen: Generator,
    prng: Prng,
}

impl IoSource for GenSource {
    #[inline]
    fn next_io(&mut self) -> Option<Io> {
        Some(self.gen.next(&mut self.prng))
    }
}

/// Sequential writes of the whole target; reports progress (bytes issued)
/// every [`FILL_PROGRESS_BYTES`].
struct FillSource<'a> {
    next: u64,
    capacity: u64,
    block: u64,
    progress: LayoutProgress<'a>,
}

const FILL_PROGRESS_BYTES: u64 = 64 << 20;

impl IoSource for FillSource<'_> {
    fn next_io(&mut self) -> Option<Io> {
        if self.next >= self.capacity {
            return None;
        }
        if self.next.is_multiple_of(FILL_PROGRESS_BYTES) {
            (self.progress)(self.next, self.capacity);
        }
        let len = self.block.min(self.capacity - self.next);
        let io = Io {
            is_read: false,
            offset: self.next,
            len,
        };
        self.next += len;
        Some(io)
    }
}

/// Opens `target` (O_DIRECT where possible) and runs `spec` on it in real
/// time with io_uring (or the synchronous fallback). See
/// [`RealTarget::run`] for the run and [`RealRun`] for the details this
/// drops.
pub fn run(
    target: &Target,
    spec: &WorkloadSpec,
    opts: &RunOptions,
    on_interval: &mut dyn FnMut(&IntervalStats),
) -> Result<RunResult, RealtimeError> {
    let rt = RealTarget::open(target, DirectMode::Auto)?;
    Ok(rt
        .run(spec, opts, &EngineOptions::default(), on_interval)?
        .result)
}

/// Opens `target` and writes all of it once, sequentially (1 MiB I/Os at
/// QD 32), as `lab::precondition_fill` does for a modelled card.
pub fn precondition_fill(target: &Target) -> Result<FillReport, RealtimeError> {
    RealTarget::open(target, DirectMode::Auto)?.precondition_fill(EngineChoice::Auto)
}

enum Setup {
    Uring(Box<UringWorker>),
    Sync(IoBuffers),
}

impl RealTarget {
    /// Runs `spec` for `opts.duration_ns` of wall time with `opts.threads`
    /// workers × `opts.queue_depth` I/Os in flight, calling `on_interval`
    /// as each interval closes (once every worker has moved past it).
    /// I/Os completing after the end are waited for but not counted.
    pub fn run(
        &self,
        spec: &WorkloadSpec,
        opts: &RunOptions,
        engine: &EngineOptions,
        on_interval: &mut dyn FnMut(&IntervalStats),
    ) -> Result<RealRun, RealtimeError> {
        self.run_with(spec, opts, engine, None, on_interval)
    }

    /// [`Self::run`] open loop: arrivals at `rate` (every worker together),
    /// at most `opts.threads` × `opts.queue_depth` I/Os in flight. The
    /// result's latencies count from each I/O's scheduled arrival; its fio
    /// statistics from the issue, as fio reports a rate-limited job.
    pub fn run_open(
        &self,
        spec: &WorkloadSpec,
        opts: &RunOptions,
        engine: &EngineOptions,
        rate: &OpenRate,
        on_interval: &mut dyn FnMut(&IntervalStats),
    ) -> Result<RealRun, RealtimeError> {
        if !(rate.iops.is_finite() && rate.iops > 0.0) {
            return Err(RealtimeError::Options(format!(
                "the offered rate {} IOPS is not a positive number",
                rate.iops
            )));
        }
        self.run_with(spec, opts, engine, Some(rate), on_interval)
    }

    fn run_with(
        &self,
        spec: &WorkloadSpec,
        opts: &RunOptions,
        engine: &EngineOptions,
        rate: Option<&OpenRate>,
        on_interval: &mut dyn FnMut(&IntervalStats),
    ) -> Result<RealRun, RealtimeError> {
        opts.validate()?;
        let spec = spec.resolve(self.capacity_bytes(), self.sector_bytes())?;
        let max_block = spec.block_sizes.max();
        if max_block > MAX_BLOCK_BYTES {
            return Err(RealtimeError::Options(format!(
                "block size {max_block} is above the {MAX_BLOCK_BYTES}-byte limit"
            )));
        }
        let (kind, note) = engine::pick(engine.engine)?;
        let qd = opts.queue_depth as usize;
        let workers = match kind {
            EngineKind::IoUring => opts.threads as usize,
            EngineKind::Sync => opts.threads as usize * qd,
        };
        if kind == EngineKind::Sync && workers > MAX_SYNC_THREADS {
            return Err(RealtimeError::Options(format!(
                "the synchronous engine runs one OS thread per outstanding I/O; \
                 {workers} is above its limit of {MAX_SYNC_THREADS}"
            )));
        }
        // Same seeding as lab::run: one generator and one forked stream per
        // thread, in order; the write-data streams are forked after them.
        let mut master = Prng::from_seed(opts.seed);
        let sources: Vec<GenSource> = (0..workers)
            .map(|i| GenSource {
                gen: Generator::new(&spec, i as u32, workers as u32),
                prng: master.fork(),
            })
            .collect();
        let data: Vec<Prng> = (0..workers).map(|_| master.fork()).collect();
        let started = Instant::now();
        let counters = self.watch().snapshot();
        let batch = engine.submit_batch as usize;
        let (result, fio, backing) = self.drive(
            (kind, batch, engine.mem, rate.copied()),
            qd,
            max_block as usize,
            sources,
            data,
            opts,
            on_interval,
        )?;
        let device = self
            .watch()
            .report(&counters, Issued::from_summary(&result.summary));
        let mut notes = self.notes().to_vec();
        notes.extend(note);
        if engine.mem == IoMem::Huge && backing == Some(MemBacking::ThpPartial) {
            notes.push(format!("--mem huge: {}", MemBacking::ThpPartial.describe()));
        }
        Ok(RealRun {
            device,
            result,
            fio,
            info: RunInfo {
                target: self.target().clone(),
                engine: kind,
                direct: self.direct(),
                capacity_bytes: self.capacity_bytes(),
                sector_bytes: self.sector_bytes(),
                io_memory: backing.unwrap_or(MemBacking::Pages),
                notes,
                wall_s: started.elapsed().as_secs_f64(),
            },
        })
    }

    /// Spawns the workers, starts them together, and collects their
    /// windows into intervals.
    #[allow(clippy::too_many_arguments)]
    fn drive(
        &self,
        (kind, batch, mem, rate): (EngineKind, usize, IoMem, Option<OpenRate>),
        qd: usize,
        buf_bytes: usize,
        sources: Vec<GenSource>,
        data: Vec<Prng>,
        opts: &RunOptions,
        on_interval: &mut dyn FnMut(&IntervalStats),
    ) -> Result<(RunResult, lab::FioStats, Option<MemBacking>), RealtimeError> {
        let workers = sources.len();
        let backings = std::sync::Mutex::new(Vec::with_capacity(workers));
        let (tx, rx) = channel::<Msg>();
        let stop = AtomicBool::new(false);
        let ready = Barrier::new(workers + 1);
        let go = Barrier::new(workers + 1);
        let start = OnceLock::<Instant>::new();
        let (interval_ns, end_ns) = (opts.interval_ns, opts.duration_ns);
        let align = self.mem_align_bytes();
        std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(workers);
            for (w, (mut src, mut data)) in sources.into_iter().zip(data).enumerate() {
                let tx = tx.clone();
                let (stop, ready, go, start, backings) = (&stop, &ready, &go, &start, &backings);
                handles.push(s.spawn(move || {
                    let file = self.reopen();
                    let setup = file.and_then(|f| match kind {
                        EngineKind::IoUring => {
                            UringWorker::new(qd, buf_bytes, align, mem, &mut data)
                                .map(|u| (f, Setup::Uring(Box::new(u))))
                        }
                        EngineKind::Sync => IoBuffers::new(1, buf_bytes, align, mem)
                            .map_err(RealtimeError::Buffers)
                            .map(|mut b| {
                                b.fill(FillPattern::Random, &mut data);
                                (f, Setup::Sync(b))
                            }),
                    });
                    let backing = match &setup {
                        Ok((_, Setup::Uring(u))) => Some(u.backing()),
                        Ok((_, Setup::Sync(b))) => Some(b.backing()),
                        Err(_) => None,
                    };
                    if let Some(b) = backing {
                        backings.lock().unwrap_or_else(|e| e.into_inner()).push(b);
                    }
                    ready.wait();
                    go.wait();
                    let clock = Clock {
                        start: *start.get().expect("start is set before go"),
                        end_ns,
                    };
                    let mut meter = Meter::new(tx, w, interval_ns, end_ns);
                    let r = match (setup, rate) {
                        (Err(e), _) => {
                            stop.store(true, std::sync::atomic::Ordering::Relaxed);
                            Err(e)
                        }
                        (Ok((f, Setup::Uring(u))), None) => {
                            u.run(f.as_raw_fd(), batch, &mut src, &mut meter, clock, stop)
                        }
                        (Ok((f, Setup::Sync(b))), None) => {
                            sync_worker(&f, b, &mut src, &mut meter, clock, stop)
                        }
                        (Ok((f, Setup::Uring(u))), Some(rate)) => {
                            rate.arrivals(src, workers, |a| {
                                u.run_paced(f.as_raw_fd(), a, &mut meter, clock, stop)
                            })
                        }
                        (Ok((f, Setup::Sync(b))), Some(rate)) => rate.arrivals(src, workers, |a| {
                            sync_worker_paced(&f, b, a, &mut meter, clock, stop)
                        }),
                    };
                    meter.finish(r);
                }));
            }
            drop(tx);
            ready.wait();
            start.set(Instant::now()).expect("set once");
            go.wait();
            let mut col = Collector::new(workers, interval_ns, end_ns);
            while col.running() > 0 {
                match rx.recv() {
                    Ok(m) => col.take(m, on_interval),
                    Err(_) => break, // every sender gone: a worker panicked
                }
            }
            let panicked = handles.into_iter().any(|h| h.join().is_err());
            if panicked {
                return Err(RealtimeError::WorkerPanicked);
            }
            let drained_ns = start.get().map_or(0, |s| s.elapsed().as_nanos() as u64);
            let backings = std::mem::take(&mut *backings.lock().unwrap_or_else(|e| e.into_inner()));
            // The least of the workers': partial huge pages, then pages.
            let least = [
                MemBacking::ThpPartial,
                MemBacking::Pages,
                MemBacking::Thp,
                MemBacking::Hugetlb,
            ]
            .into_iter()
            .find(|b| backings.contains(b));
            col.finish(drained_ns).map(|(r, f)| (r, f, least))
        })
    }

    /// Writes the whole target once, sequentially, in 1 MiB I/Os at QD 32
    /// (QD 1 on the synchronous engine) with random data, then flushes it.
    pub fn precondition_fill(&self, engine: EngineChoice) -> Result<FillReport, RealtimeError> {
        self.fill_with(engine, FillPattern::Random, &mut |_, _| {})
    }

    /// [`Self::precondition_fill`] with `pattern` and progress: the layout
    /// of [`Self::prepare`], the reviews' fill and `vsl run --precondition`.
    pub fn fill(
        &self,
        pattern: FillPattern,
        progress: LayoutProgress,
    ) -> Result<FillReport, RealtimeError> {
        self.fill_with(EngineChoice::Auto, pattern, progress)
    }

    fn fill_with(
        &self,
        engine: EngineChoice,
        pattern: FillPattern,
        progress: LayoutProgress,
    ) -> Result<FillReport, RealtimeError> {
        let (kind, _) = engine::pick(engine)?;
        let sector = self.sector_bytes() as u64;
        let block = ((1u64 << 20).min(self.capacity_bytes()) / sector * sector).max(sector);
        let mut src = FillSource {
            next: 0,
            capacity: self.capacity_bytes(),
            block,
            progress,
        };
        let mut data = Prng::from_seed(0x5eed_f111);
        let (tx, rx) = channel();
        let mut meter = Meter::new(tx, 0, u64::MAX / 2, u64::MAX);
        let clock = Clock {
            start: Instant::now(),
            end_ns: u64::MAX,
        };
        let stop = AtomicBool::new(false);
        let r = match kind {
            EngineKind::IoUring => {
                let mut w = UringWorker::new(
                    32,
                    block as usize,
                    self.mem_align_bytes(),
                    IoMem::Pages,
                    &mut data,
                )?;
                w.fill_bufs(pattern, &mut data);
                w.run(
                    self.file.as_raw_fd(),
                    32,
                    &mut src,
                    &mut meter,
                    clock,
                    &stop,
                )
            }
            EngineKind::Sync => {
                let mut b = IoBuffers::new(1, block as usize, self.mem_align_bytes(), IoMem::Pages)
                    .map_err(RealtimeError::Buffers)?;
                b.fill(pattern, &mut data);
                sync_worker(&self.file, b, &mut src, &mut meter, clock, &stop)
            }
        };
        r?;
        self.file.sync_data().map_err(|source| RealtimeError::Io {
            path: self.target().path().to_path_buf(),
            what: "flush after fill",
            source,
        })?;
        (src.progress)(src.capacity, src.capacity);
        meter.finish(Ok(()));
        let bytes = rx
            .try_iter()
            .filter_map(|m| match m {
                Msg::Progress {
                    window: Some((_, w)),
                    ..
                } => Some(w.bytes),
                _ => None,
            })
            .sum();
        Ok(FillReport {
            bytes,
            wall_s: clock.start.elapsed().as_secs_f64(),
            engine: kind,
        })
    }
}
