//! The two I/O engines: io_uring (each worker keeps `queue_depth` I/Os in
//! flight on its own ring) and a synchronous fallback (one blocking
//! pread/pwrite per OS thread).

mod paced;

pub(crate) use paced::sync_worker_paced;

use crate::buffer::{IoBuffers, IoMem, MemBacking};
use crate::collect::Meter;
use crate::RealtimeError;
#[cfg(feature = "uring")]
use io_uring::{opcode, types, IoUring};
use serde::Serialize;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use workload::Io;

/// Which engine to use.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// io_uring, or the synchronous engine if the kernel refuses io_uring.
    #[default]
    Auto,
    IoUring,
    Sync,
}

/// How a run drives the target.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineOptions {
    pub engine: EngineChoice,
    /// io_uring: submit after this many I/Os are queued (fio's
    /// `iodepth_batch_submit`, default 1: each I/O is submitted as soon as
    /// it is ready, one `io_uring_enter` each). Larger batches save system
    /// calls, which shows on targets as fast as tmpfs.
    pub submit_batch: u32,
    /// What the I/O buffers are made of (fio's `mem=`).
    pub mem: IoMem,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            engine: EngineChoice::Auto,
            submit_batch: 1,
            mem: IoMem::Pages,
        }
    }
}

/// The engine a run actually used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    IoUring,
    /// threads × queue depth OS threads, each with one blocking I/O.
    Sync,
}

/// Resolves a choice against the running kernel; the note says why the
/// fallback was taken.
#[cfg(feature = "uring")]
pub(crate) fn pick(choice: EngineChoice) -> Result<(EngineKind, Option<String>), RealtimeError> {
    match choice {
        EngineChoice::Sync => Ok((EngineKind::Sync, None)),
        EngineChoice::IoUring => {
            IoUring::new(2).map_err(RealtimeError::NoIoUring)?;
            Ok((EngineKind::IoUring, None))
        }
        EngineChoice::Auto => match IoUring::new(2) {
            Ok(_) => Ok((EngineKind::IoUring, None)),
            Err(e) => Ok((
                EngineKind::Sync,
                Some(format!(
                    "io_uring unavailable ({e}): using the synchronous engine \
                     (one blocking I/O per OS thread, threads x QD threads)"
                )),
            )),
        },
    }
}

/// Without the `uring` feature: the synchronous engine, or an error when
/// io_uring is asked for.
#[cfg(not(feature = "uring"))]
pub(crate) fn pick(choice: EngineChoice) -> Result<(EngineKind, Option<String>), RealtimeError> {
    let off = || {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "this build has no io_uring engine (the realtime crate's `uring` feature is off)",
        )
    };
    match choice {
        EngineChoice::Sync => Ok((EngineKind::Sync, None)),
        EngineChoice::IoUring => Err(RealtimeError::NoIoUring(off())),
        EngineChoice::Auto => Ok((
            EngineKind::Sync,
            Some(format!(
                "{}: using the synchronous engine (one blocking I/O per OS thread, \
                 threads x QD threads)",
                off()
            )),
        )),
    }
}

/// Where a worker's I/Os come from.
pub(crate) trait IoSource {
    /// The next I/O, or `None` when the source is exhausted.
    fn next_io(&mut self) -> Option<Io>;
}

/// The shared wall clock of a run: nanoseconds since its start.
#[derive(Copy, Clone)]
pub(crate) struct Clock {
    pub(crate) start: Instant,
    pub(crate) end_ns: u64,
}

impl Clock {
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

fn op_name(is_read: bool) -> &'static str {
    if is_read {
        "read"
    } else {
        "write"
    }
}

fn check(res: io::Result<usize>, io: &Io) -> Result<(), RealtimeError> {
    match res {
        Ok(n) if n as u64 == io.len => Ok(()),
        Ok(n) => Err(RealtimeError::ShortTransfer {
            op: op_name(io.is_read),
            offset: io.offset,
            len: io.len,
            done_bytes: n as u64,
        }),
        Err(source) => Err(RealtimeError::IoFailed {
            op: op_name(io.is_read),
            offset: io.offset,
            len: io.len,
            source,
        }),
    }
}

#[cfg(feature = "uring")]
#[derive(Copy, Clone)]
struct Slot {
    io: Io,
    issued_ns: u64,
}

#[cfg(feature = "uring")]
/// A ring set up as fio's io_uring engine sets its own: cooperative task
/// running, single issuer and deferred task work (each ring belongs to one
/// thread, which reaps its own completions), dropping flags an older
/// kernel refuses.
fn new_ring(entries: u32) -> io::Result<IoUring> {
    let all = IoUring::builder()
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    match all {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            match IoUring::builder().setup_coop_taskrun().build(entries) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::new(entries),
                r => r,
            }
        }
        r => r,
    }
}

/// The submission entry of `io` on `fd` through the buffer at `ptr`,
/// tagged with its slot.
#[cfg(feature = "uring")]
fn rw_entry(fd: RawFd, ptr: *mut u8, io: &Io, slot: usize) -> io_uring::squeue::Entry {
    let len = io.len as u32;
    if io.is_read {
        opcode::Read::new(types::Fd(fd), ptr, len)
            .offset(io.offset)
            .build()
    } else {
        opcode::Write::new(types::Fd(fd), ptr, len)
            .offset(io.offset)
            .build()
    }
    .user_data(slot as u64)
}

/// One io_uring worker: a ring and `queue_depth` aligned buffers in one
/// region. The ring is declared first so it is dropped (and the kernel
/// done with the buffers) before they are freed.
#[cfg(feature = "uring")]
pub(crate) struct UringWorker {
    ring: IoUring,
    bufs: IoBuffers,
    slots: Vec<Slot>,
    reaped: Vec<(u64, i32)>,
}

#[cfg(feature = "uring")]
impl UringWorker {
    pub(crate) fn new(
        queue_depth: usize,
        buf_bytes: usize,
        align_bytes: usize,
        mem: IoMem,
        data: &mut sim::Prng,
    ) -> Result<UringWorker, RealtimeError> {
        assert!(queue_depth > 0);
        let entries = u32::try_from(queue_depth)
            .map_err(|_| RealtimeError::Options("queue depth too large".into()))?;
        let ring = new_ring(entries).map_err(RealtimeError::NoIoUring)?;
        let mut bufs = IoBuffers::new(queue_depth, buf_bytes, align_bytes, mem)
            .map_err(RealtimeError::Buffers)?;
        bufs.fill(crate::FillPattern::Random, data);
        let idle = Slot {
            io: Io {
                is_read: true,
                offset: 0,
                len: 0,
            },
            issued_ns: 0,
        };
        Ok(UringWorker {
            ring,
            bufs,
            slots: vec![idle; queue_depth],
            reaped: Vec::with_capacity(queue_depth * 2),
        })
    }

    /// Refills every buffer with `pattern` (the data a fill writes).
    pub(crate) fn fill_bufs(&mut self, pattern: crate::FillPattern, data: &mut sim::Prng) {
        self.bufs.fill(pattern, data);
    }

    /// What the buffers are made of.
    pub(crate) fn backing(&self) -> MemBacking {
        self.bufs.backing()
    }

    /// Queues the source's next I/O in `slot`; false when the source is
    /// exhausted. Its issue time is read here, per I/O (as fio stamps each
    /// I/O as it queues it): I/Os re-issued after one reap go out one
    /// `io_uring_enter` after another, and a shared stamp would charge the
    /// later ones with the earlier ones' submission time.
    fn issue(&mut self, slot: usize, clock: &Clock, fd: RawFd, src: &mut dyn IoSource) -> bool {
        let Some(io) = src.next_io() else {
            return false;
        };
        assert!(io.len as usize <= self.bufs.slot_bytes());
        if !io.is_read {
            self.bufs.stamp(slot, io.offset, io.len as usize);
        }
        let ptr = self.bufs.slot_ptr(slot);
        let entry = rw_entry(fd, ptr, &io, slot);
        self.slots[slot] = Slot {
            io,
            issued_ns: clock.now_ns(),
        };
        // SAFETY: the buffer lives in `self.bufs` until the ring is dropped
        // or the completion is reaped; at most queue_depth entries are ever
        // outstanding, so the submission queue has room.
        unsafe { self.ring.submission().push(&entry) }.expect("submission queue has room");
        true
    }

    /// Submits what is queued, retrying on EINTR / EAGAIN. The enter
    /// carries GETEVENTS without waiting, as fio's io_uring engine does
    /// (`io_uring_enter(fd, n, 0, IORING_ENTER_GETEVENTS)`): with
    /// DEFER_TASKRUN the kernel runs a ring's deferred completion work
    /// only in an enter that asks for events, so a submit without it
    /// leaves finished I/Os unposted until the next wait. Measured on a
    /// file on this machine's virtio disk: 4 KiB random writes at
    /// 2 threads × QD 64 went from 0.6 to 1.0 of fio's IOPS (issue 31).
    fn submit(&mut self) -> io::Result<()> {
        let getevents = io_uring::EnterFlags::GETEVENTS.bits();
        loop {
            let queued = self.ring.submission().len() as u32;
            // SAFETY: no argument is passed; the queued entries point into
            // buffers that live as long as the ring.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(queued, 0, getevents, None)
            };
            match r {
                Ok(_) => return Ok(()),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Counts one more queued I/O and submits once `submit_batch` are queued.
    fn count_queued(&mut self, queued: &mut usize, submit_batch: usize) -> io::Result<()> {
        *queued += 1;
        if *queued >= submit_batch {
            self.submit()?;
            *queued = 0;
        }
        Ok(())
    }

    /// After a failed `io_uring_enter` the kernel may still write into the
    /// buffers: leak them rather than free memory under a live I/O.
    fn abandon(self, e: io::Error) -> RealtimeError {
        std::mem::forget(self);
        RealtimeError::IoFailed {
            op: "io_uring_enter",
            offset: 0,
            len: 0,
            source: e,
        }
    }

    /// Keeps every slot busy until the clock's end (or `stop`, or the source
    /// runs dry), then waits for what is in flight. Returns the first I/O
    /// error, after draining.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        mut self,
        fd: RawFd,
        submit_batch: usize,
        src: &mut dyn IoSource,
        meter: &mut Meter,
        clock: Clock,
        stop: &AtomicBool,
    ) -> Result<(), RealtimeError> {
        let qd = self.bufs.slots();
        let submit_batch = submit_batch.max(1);
        let mut inflight = 0usize;
        let mut queued = 0usize;
        for slot in 0..qd {
            if !self.issue(slot, &clock, fd, src) {
                break;
            }
            inflight += 1;
            if let Err(e) = self.count_queued(&mut queued, submit_batch) {
                return Err(self.abandon(e));
            }
        }
        let mut first_err: Option<RealtimeError> = None;
        while inflight > 0 {
            // Reap what the ring already holds; only when it is empty,
            // submit what is queued and wait for one (fio's io_uring
            // engine reaps before it enters to wait, too). With submits
            // that run the deferred completion work, completions are often
            // posted by the time the last slot is re-issued, and a wait
            // per I/O would cost a system call and a sleep each.
            self.reaped.clear();
            let reaped = &mut self.reaped;
            reaped.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            if self.reaped.is_empty() {
                queued = 0;
                match self.ring.submit_and_wait(1) {
                    Ok(_) => {}
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {}
                    Err(e) => return Err(self.abandon(e)),
                }
                continue;
            }
            let now = clock.now_ns();
            let stopping = now >= clock.end_ns || stop.load(Ordering::Relaxed);
            for i in 0..self.reaped.len() {
                let (slot, res) = self.reaped[i];
                let slot = slot as usize;
                inflight -= 1;
                let s = self.slots[slot];
                let res = if res < 0 {
                    Err(io::Error::from_raw_os_error(-res))
                } else {
                    Ok(res as usize)
                };
                if let Err(e) = check(res, &s.io) {
                    first_err.get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                    continue;
                }
                meter.record(now, now - s.issued_ns, s.io.is_read, s.io.len);
                if !stopping && first_err.is_none() && self.issue(slot, &clock, fd, src) {
                    inflight += 1;
                    if let Err(e) = self.count_queued(&mut queued, submit_batch) {
                        return Err(self.abandon(e));
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Without the `uring` feature no io_uring worker exists: [`pick`] never
/// chooses one, and the type has no values.
#[cfg(not(feature = "uring"))]
pub(crate) enum UringWorker {}

#[cfg(not(feature = "uring"))]
impl UringWorker {
    pub(crate) fn new(
        _queue_depth: usize,
        _buf_bytes: usize,
        _align_bytes: usize,
        _mem: IoMem,
        _data: &mut sim::Prng,
    ) -> Result<UringWorker, RealtimeError> {
        Err(RealtimeError::NoIoUring(io::Error::new(
            io::ErrorKind::Unsupported,
            "this build has no io_uring engine (the realtime crate's `uring` feature is off)",
        )))
    }

    pub(crate) fn fill_bufs(&mut self, _pattern: crate::FillPattern, _data: &mut sim::Prng) {
        match *self {}
    }

    pub(crate) fn backing(&self) -> MemBacking {
        match *self {}
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        self,
        _fd: RawFd,
        _submit_batch: usize,
        _src: &mut dyn IoSource,
        _meter: &mut Meter,
        _clock: Clock,
        _stop: &AtomicBool,
    ) -> Result<(), RealtimeError> {
        match self {}
    }
}

/// One synchronous worker: one blocking I/O at a time.
pub(crate) fn sync_worker(
    file: &File,
    mut buf: IoBuffers,
    src: &mut dyn IoSource,
    meter: &mut Meter,
    clock: Clock,
    stop: &AtomicBool,
) -> Result<(), RealtimeError> {
    loop {
        if stop.load(Ordering::Relaxed) || clock.now_ns() >= clock.end_ns {
            return Ok(());
        }
        let Some(io) = src.next_io() else {
            return Ok(());
        };
        let len = io.len as usize;
        if !io.is_read {
            buf.stamp(0, io.offset, len);
        }
        let t0 = clock.now_ns();
        let res = sync_io(file, &mut buf, &io);
        let t1 = clock.now_ns();
        if let Err(e) = check(res, &io) {
            stop.store(true, Ordering::Relaxed);
            return Err(e);
        }
        meter.record(t1, t1 - t0, io.is_read, io.len);
    }
}

/// One blocking read or write of `io` through buffer slot 0, retried on
/// EINTR (a write's stamp is the caller's, before its clock starts).
pub(crate) fn sync_io(file: &File, buf: &mut IoBuffers, io: &Io) -> io::Result<usize> {
    let len = io.len as usize;
    loop {
        let r = if io.is_read {
            file.read_at(&mut buf.slot_mut(0)[..len], io.offset)
        } else {
            file.write_at(&buf.slot(0)[..len], io.offset)
        };
        match r {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}
