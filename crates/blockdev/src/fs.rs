//! [`CardFs`]: the FUSE filesystem that exposes one device file per
//! ioMemory device (`ioDimm0`, `ioDimm1`, …) in one directory. Files are
//! opened in direct-I/O mode so every read and write of the loop device
//! above reaches the model; each request is served on the FUSE thread that
//! read it and acknowledged by the [`Timer`] at the model's completion time.
//! When it is the only request in the daemon (queue depth 1), the FUSE
//! thread waits for the completion time itself (sleeping, then spinning the
//! last microseconds) and answers directly, which saves the hand-off to the
//! timer thread and its wake-up latency.

use crate::engine::Engine;
use crate::timer::Timer;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::ffi::OsStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// `FUSE_OVER_IO_URING` in the 64-bit `FUSE_INIT` flags (served by
/// [`crate::uring`]).
pub const FUSE_OVER_IO_URING: u64 = 1 << 41;

/// Longest wait a FUSE thread does itself (longer ones go to the timer).
const INLINE_WAIT: Duration = Duration::from_micros(500);
thread_local! {
    /// Set on a FUSE ring queue's thread ([`crate::uring`]): answers due
    /// later are queued here for that thread to send at their time, so no
    /// other thread has to wake it.
    pub static LOCAL_DEADLINES: std::cell::RefCell<Option<Vec<(Instant, crate::timer::Ack)>>> =
        const { std::cell::RefCell::new(None) };
}

/// Waits until `at` ([`crate::timer::wait_until`]) with a 1 ns timer slack.
fn wait_until(at: Instant) {
    thread_local! {
        static SLACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    SLACK.with(|s| {
        if !s.get() {
            // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's
            // timer slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
            s.set(true);
        }
    });
    crate::timer::wait_until(at)
}

const ROOT: u64 = 1;
/// The largest write the kernel sends in one request (and so the payload
/// of a FUSE ring entry).
pub const MAX_WRITE: u32 = 1 << 20;
/// The `.probe` file ([`crate::wakeup`]): answers at once, touches no
/// model; a loop device over it measures the kernel path at attach.
const PROBE_INO: u64 = 1 << 40;
const TTL: Duration = Duration::from_secs(3600);

/// File name of member `m`'s device file.
pub fn device_file_name(m: u32) -> String {
    format!("ioDimm{m}")
}

#[derive(Clone)]
pub struct CardFs {
    engines: Vec<Arc<Engine>>,
    timer: Arc<Timer>,
    created: SystemTime,
    /// Reads and writes received and not yet answered.
    busy: Arc<AtomicUsize>,
    /// Ask the kernel for FUSE over io_uring in `FUSE_INIT`; set to
    /// whether it offered it.
    uring: Arc<std::sync::atomic::AtomicBool>,
    /// Set once `FUSE_INIT` has been answered.
    inited: Arc<std::sync::atomic::AtomicBool>,
    /// The `/dev/fuse` transport's flush thread, started at the first
    /// flush (see [`Filesystem::fsync`]).
    flusher: Arc<std::sync::OnceLock<Option<FlushThread>>>,
    /// Trace capture ([`crate::capture`]): every served request is handed
    /// to it (it drops them at once while off).
    capture: Option<Arc<crate::capture::Capture>>,
    /// How full the FUSE ring queues' entries got ([`crate::uring`]).
    ring_use: Arc<RingUse>,
}

/// How full the FUSE ring queues' entries got: a request the kernel has
/// for a queue whose entries all hold one waits in the kernel, outside the
/// daemon's measure ([`crate::status::FuseEntries`]).
#[derive(Default)]
pub struct RingUse {
    /// Most entries of one queue holding a request at once.
    pub most_in_use: std::sync::atomic::AtomicU64,
    /// Requests taken while every entry of their queue held one.
    pub all_in_use: std::sync::atomic::AtomicU64,
    /// Answers a queue thread sent at their deadline ([`crate::uring`]).
    pub answers: std::sync::atomic::AtomicU64,
    /// Their lateness while the thread waited (the wake-up came after the
    /// deadline: a timer's overshoot, a yield that lost the CPU), ns.
    pub late_waiting_ns: std::sync::atomic::AtomicU64,
    /// Their lateness while the thread worked (serving other requests,
    /// sending other answers after it woke), ns.
    pub late_working_ns: std::sync::atomic::AtomicU64,
    /// Answers over 100 µs late, by where most of it came from.
    pub late_100us_waiting: std::sync::atomic::AtomicU64,
    pub late_100us_working: std::sync::atomic::AtomicU64,
}

impl RingUse {
    /// Records an answer due at `at`, sent at `now` by a thread that
    /// waited from `slept` until `woke` (the latest wait before `now`).
    pub fn record_answer(&self, at: Instant, now: Instant, (slept, woke): (Instant, Instant)) {
        use std::sync::atomic::Ordering::Relaxed;
        let waiting = woke.saturating_duration_since(at.max(slept));
        let working = now.saturating_duration_since(at.max(woke));
        self.answers.fetch_add(1, Relaxed);
        self.late_waiting_ns
            .fetch_add(waiting.as_nanos() as u64, Relaxed);
        self.late_working_ns
            .fetch_add(working.as_nanos() as u64, Relaxed);
        if waiting + working > Duration::from_micros(100) {
            if waiting >= working {
                self.late_100us_waiting.fetch_add(1, Relaxed);
            } else {
                self.late_100us_working.fetch_add(1, Relaxed);
            }
        }
    }
}

impl CardFs {
    /// Attribute and entry lifetime given to the kernel.
    pub const TTL: Duration = TTL;

    pub fn new(engines: Vec<Arc<Engine>>, timer: Arc<Timer>, uring: bool) -> CardFs {
        CardFs {
            engines,
            timer,
            created: SystemTime::now(),
            busy: Arc::new(AtomicUsize::new(0)),
            uring: Arc::new(std::sync::atomic::AtomicBool::new(uring)),
            inited: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            flusher: Default::default(),
            capture: None,
            ring_use: Default::default(),
        }
    }

    /// The FUSE ring queues' entry use, shared by every clone.
    pub fn ring_use(&self) -> Arc<RingUse> {
        self.ring_use.clone()
    }

    /// Hands every served request to `capture` ([`crate::capture`]).
    pub fn with_capture(mut self, capture: Arc<crate::capture::Capture>) -> CardFs {
        self.capture = Some(capture);
        self
    }

    /// The capture, while it captures (so that the request path clones
    /// nothing while it is off).
    #[inline]
    fn capturing(&self) -> Option<Arc<crate::capture::Capture>> {
        self.capture.as_ref().filter(|c| c.capturing()).cloned()
    }

    /// Hands one served request to the capture, if any.
    #[inline]
    fn trace(
        &self,
        member: u32,
        op: crate::capture::TraceOp,
        span: (u64, u64),
        received: Instant,
        errno: i32,
    ) {
        if let Some(c) = &self.capture {
            c.record(|| crate::capture::TraceRecord {
                member,
                op,
                offset: span.0,
                len: span.1,
                arrival: received,
                completion: Instant::now(),
                errno,
            });
        }
    }

    /// Waits (up to `timeout`) for `FUSE_INIT`; then whether FUSE over
    /// io_uring was negotiated. With it, the kernel holds every request
    /// until the queues are registered, so nothing may wait on the mount
    /// before [`crate::uring::Queues::start`].
    pub fn wait_init(&self, timeout: Duration) -> Option<bool> {
        let end = Instant::now() + timeout;
        while !self.inited.load(Ordering::SeqCst) {
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Some(self.uring.load(Ordering::SeqCst))
    }

    /// Reads and writes received and not yet answered.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Acquire)
    }

    /// The attributes of `name` in directory `parent`.
    pub fn lookup_attr(&self, parent: u64, name: &OsStr) -> Option<FileAttr> {
        if parent != ROOT {
            return None;
        }
        if name == crate::wakeup::PROBE_FILE {
            return self.attr(PROBE_INO);
        }
        let i = self
            .engines
            .iter()
            .position(|e| OsStr::new(&device_file_name(e.member)) == name)?;
        self.attr(ROOT + 1 + i as u64)
    }

    /// The attributes of inode `ino`.
    pub fn attr_of(&self, ino: u64) -> Option<FileAttr> {
        self.attr(ino)
    }

    /// The open flags of a device file (direct I/O), or why it cannot be
    /// opened.
    pub fn open_flags(&self, ino: u64) -> Result<u32, Errno> {
        if self.engine(INodeNo(ino)).is_none() && ino != PROBE_INO {
            return Err(Errno::EISDIR);
        }
        Ok(FopenFlags::FOPEN_DIRECT_IO.bits())
    }

    /// The root directory's entries: inode, type, name.
    pub fn dir_entries(&self) -> Vec<(u64, FileType, String)> {
        let mut entries = vec![
            (ROOT, FileType::Directory, ".".to_string()),
            (ROOT, FileType::Directory, "..".to_string()),
        ];
        for (i, e) in self.engines.iter().enumerate() {
            entries.push((
                ROOT + 1 + i as u64,
                FileType::RegularFile,
                device_file_name(e.member),
            ));
        }
        entries
    }

    /// Serves a read of up to `size` bytes into `buf` (no more than it
    /// holds); `answer` gets `buf` back and the bytes read at the model's
    /// time (or the error), on this thread or the timer's. Over io_uring
    /// `buf` is the ring entry's payload, so the data is read straight
    /// into what the kernel copies out.
    pub fn serve_read<B: AsMut<[u8]> + Send + 'static>(
        &self,
        ino: u64,
        offset: u64,
        size: u32,
        received: Instant,
        mut buf: B,
        answer: impl FnOnce(B, Result<usize, Errno>) + Send + 'static,
    ) {
        let room = (size as u64).min(buf.as_mut().len() as u64);
        if ino == PROBE_INO {
            wait_until(received + crate::wakeup::PROBE_DELAY);
            let len = room.min(crate::wakeup::PROBE_BYTES.saturating_sub(offset)) as usize;
            buf.as_mut()[..len].fill(0);
            return answer(buf, Ok(len));
        }
        let Some(e) = self.engine(INodeNo(ino)).cloned() else {
            return answer(buf, Err(Errno::ENOENT));
        };
        self.busy.fetch_add(1, Ordering::AcqRel);
        let cap = e.capacity_bytes();
        if offset >= cap {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            return answer(buf, Ok(0));
        }
        let len = room.min(cap - offset) as usize;
        let result = e.read_into(offset, &mut buf.as_mut()[..len]);
        self.complete(e, result, (offset, len as u64), false, received, move |r| {
            answer(buf, r.map(|()| len))
        });
    }

    /// Serves a write; `answer` gets the bytes written at the model's time
    /// (or the error). `data` is stored before this returns.
    pub fn serve_write(
        &self,
        ino: u64,
        offset: u64,
        data: &[u8],
        received: Instant,
        answer: impl FnOnce(Result<u32, Errno>) + Send + 'static,
    ) {
        if ino == PROBE_INO {
            wait_until(received + crate::wakeup::PROBE_DELAY);
            return answer(Ok(data.len() as u32));
        }
        let Some(e) = self.engine(INodeNo(ino)).cloned() else {
            return answer(Err(Errno::ENOENT));
        };
        self.busy.fetch_add(1, Ordering::AcqRel);
        let n = data.len() as u32;
        let result = e.write(offset, data);
        self.complete(e, result, (offset, n as u64), true, received, move |r| {
            answer(r.map(|()| n))
        });
    }

    /// Serves an fsync (flush / FUA of the loop device above).
    pub fn serve_fsync(&self, ino: u64) -> Result<(), Errno> {
        if ino == PROBE_INO {
            return Ok(());
        }
        let Some(e) = self.engine(INodeNo(ino)) else {
            return Err(Errno::ENOENT);
        };
        let received = Instant::now();
        let r = e.flush();
        e.counters.record_flush(received.elapsed());
        let errno_of = |err: &crate::engine::EngineError| err.errno();
        let code = r.as_ref().err().map_or(0, errno_of);
        self.trace(
            e.member,
            crate::capture::TraceOp::Flush,
            (0, 0),
            received,
            code,
        );
        r.map_err(|err| {
            let n = e
                .counters
                .errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::error!(
                "ioMemory device {}: flush failed ({} errors so far): {err}",
                e.member,
                n + 1
            );
            errno(&err)
        })
    }

    /// Serves a hole punch or zero range (the loop device's discard).
    pub fn serve_fallocate(
        &self,
        ino: u64,
        offset: u64,
        length: u64,
        mode: i32,
        answer: impl FnOnce(Result<(), Errno>) + Send + 'static,
    ) {
        let Some(e) = self.engine(INodeNo(ino)).cloned() else {
            return answer(Err(Errno::ENOENT));
        };
        // The loop driver turns a discard into a hole punch (or zero range).
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        if mode & punch != punch && mode & libc::FALLOC_FL_ZERO_RANGE == 0 {
            return answer(Err(Errno::EOPNOTSUPP));
        }
        let received = Instant::now();
        let discard = crate::capture::TraceOp::Discard;
        match e.trim(offset, length) {
            Ok(done) => {
                let (member, capture) = (e.member, self.capturing());
                let ack: crate::timer::Ack = Box::new(move |_| {
                    answer(Ok(()));
                    if let Some(c) = capture {
                        c.record(|| crate::capture::TraceRecord {
                            member,
                            op: discard,
                            offset,
                            len: length,
                            arrival: received,
                            completion: Instant::now(),
                            errno: 0,
                        });
                    }
                });
                match e.wait_for(done) {
                    Some(at) => self.defer(at, ack),
                    None => ack(Instant::now()),
                }
            }
            Err(err) => {
                let code = err.errno();
                answer(Err(errno(&err)));
                self.trace(e.member, discard, (offset, length), received, code);
            }
        }
    }

    /// Runs `ack` at `at`: on a FUSE ring queue's thread, by that thread's
    /// own deadlines ([`LOCAL_DEADLINES`]); else inline when it is the only
    /// I/O in the daemon and near, or by the timer thread.
    fn defer(&self, at: Instant, ack: crate::timer::Ack) {
        let ack = LOCAL_DEADLINES.with(|l| match l.borrow_mut().as_mut() {
            Some(v) => {
                v.push((at, ack));
                None
            }
            None => Some(ack),
        });
        let Some(ack) = ack else { return };
        if self.busy.load(Ordering::Acquire) == 1 && at < Instant::now() + INLINE_WAIT {
            wait_until(at);
            ack(Instant::now())
        } else {
            self.timer.at(at, ack)
        }
    }

    /// Answers an I/O no earlier than the model's completion time (or at
    /// once with `--timing none`), or fails it with its errno.
    fn complete(
        &self,
        e: Arc<Engine>,
        result: Result<crate::engine::Completion, crate::engine::EngineError>,
        span: (u64, u64),
        is_write: bool,
        received: Instant,
        answer: impl FnOnce(Result<(), Errno>) + Send + 'static,
    ) {
        let busy = self.busy.clone();
        let served = Instant::now();
        let op = if is_write {
            crate::capture::TraceOp::Write
        } else {
            crate::capture::TraceOp::Read
        };
        match result {
            Ok(done) => {
                let wait = e.wait_for(done);
                let capture = self.capturing();
                let ack: crate::timer::Ack = Box::new(move |now| {
                    answer(Ok(()));
                    busy.fetch_sub(1, Ordering::AcqRel);
                    e.counters.record(is_write, received, served, now, done);
                    if let Some(c) = capture {
                        c.record(|| crate::capture::TraceRecord {
                            member: e.member,
                            op,
                            offset: span.0,
                            len: span.1,
                            arrival: received,
                            completion: now,
                            errno: 0,
                        });
                    }
                });
                match wait {
                    Some(at) => self.defer(at, ack),
                    None => ack(Instant::now()),
                }
            }
            Err(err) => {
                let n = e
                    .counters
                    .errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // The daemon's log (daemon.log in its run directory): the
                // first errors in full, then every thousandth.
                if n < 20 || n.is_multiple_of(1000) {
                    let op = if is_write { "write" } else { "read" };
                    tracing::error!(
                        "ioMemory device {}: {op} failed ({} so far): {err}",
                        e.member,
                        n + 1
                    );
                }
                let code = err.errno();
                answer(Err(errno(&err)));
                busy.fetch_sub(1, Ordering::AcqRel);
                self.trace(e.member, op, span, received, code);
            }
        }
    }

    fn engine(&self, ino: INodeNo) -> Option<&Arc<Engine>> {
        let i = ino.0.checked_sub(ROOT + 1)?;
        self.engines.get(i as usize)
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, size, perm, blksize) = if ino == ROOT {
            (FileType::Directory, 0, 0o755, 4096)
        } else if ino == PROBE_INO {
            (
                FileType::RegularFile,
                crate::wakeup::PROBE_BYTES,
                0o600,
                4096,
            )
        } else {
            let e = self.engine(INodeNo(ino))?;
            (
                FileType::RegularFile,
                e.capacity_bytes(),
                0o600,
                e.sector_bytes(),
            )
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size / 512,
            atime: self.created,
            mtime: self.created,
            ctime: self.created,
            crtime: self.created,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize,
            flags: 0,
        })
    }
}

fn errno(e: &crate::engine::EngineError) -> Errno {
    Errno::from_i32(e.errno())
}

impl Filesystem for CardFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Large requests pass through whole; a refused size keeps the default.
        let _ = config.set_max_write(MAX_WRITE);
        // Without async direct I/O the loop driver waits for each request
        // before sending the next: queue depth 1 whatever the host asks.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        // Async direct I/O travels as background requests; allow a deep queue.
        let _ = config.set_max_background(512);
        let _ = config.set_congestion_threshold(384);
        // FUSE over io_uring when asked for and offered ([`crate::uring`]).
        if self.uring.load(Ordering::SeqCst) {
            let ok = config
                .add_capabilities(InitFlags::from_bits_retain(FUSE_OVER_IO_URING))
                .is_ok();
            self.uring.store(ok, Ordering::SeqCst);
        }
        self.inited.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lookup_attr(parent.0, name) {
            Some(a) => reply.entry(&TTL, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino.0 != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = self.dir_entries();
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.open_flags(ino.0) {
            Ok(f) => reply.opened(FileHandle(0), FopenFlags::from_bits_retain(f)),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let received = Instant::now();
        let buf = vec![0u8; size as usize];
        self.serve_read(ino.0, offset, size, received, buf, move |buf, r| match r {
            Ok(n) => reply.data(&buf[..n]),
            Err(code) => reply.error(code),
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let received = Instant::now();
        self.serve_write(ino.0, offset, data, received, move |r| match r {
            Ok(n) => reply.written(n),
            Err(code) => reply.error(code),
        });
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(): nothing is cached in the daemon.
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Served here, a flush would hold one of the two session threads
        // that serve every other request ([`FlushThread`]).
        let flusher = self.flusher.get_or_init(|| {
            // The thread's copy has no flusher of its own, so it does not
            // keep its channel open: it ends when the session drops this one.
            let fs = CardFs {
                flusher: Default::default(),
                ..self.clone()
            };
            FlushThread::start("fuse-flush".into(), fs)
        });
        let job: FlushJob = Box::new(move |fs: &CardFs| match fs.serve_fsync(ino.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        });
        match flusher {
            Some(f) => f.send(job, self),
            None => job(self),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.serve_fallocate(ino.0, offset, length, mode, move |r| match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        });
    }
}

/// A flush to serve on a [`FlushThread`]: it answers the request itself.
pub(crate) type FlushJob = Box<dyn FnOnce(&CardFs) + Send>;

/// Serves flushes in order on a thread of its own. A flush syncs the store
/// (an `fdatasync`, hundreds of milliseconds when much is dirty); served
/// on a thread that also serves other requests, it held them all, and the
/// answers falling due meanwhile (`docs/ATTACH_PERF.md`). The engine still
/// groups the flushes that meet into one sync. Used by the `/dev/fuse`
/// session and by every io_uring queue.
pub(crate) struct FlushThread {
    tx: std::sync::mpsc::Sender<FlushJob>,
    thread: std::thread::JoinHandle<()>,
}

impl FlushThread {
    /// None when the thread cannot start (said on stderr): flushes are
    /// then served inline.
    pub(crate) fn start(name: String, fs: CardFs) -> Option<FlushThread> {
        let (tx, rx) = std::sync::mpsc::channel::<FlushJob>();
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            for job in rx {
                job(&fs);
            }
        });
        match spawned {
            Ok(thread) => Some(FlushThread { tx, thread }),
            Err(e) => {
                tracing::warn!("no flush thread ({e}): flushes are served inline");
                None
            }
        }
    }

    /// Hands `job` to the thread; serves it on `fs` here if the thread is
    /// gone.
    pub(crate) fn send(&self, job: FlushJob, fs: &CardFs) {
        if let Err(std::sync::mpsc::SendError(job)) = self.tx.send(job) {
            job(fs);
        }
    }

    /// Waits for the flushes already sent.
    pub(crate) fn finish(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}
