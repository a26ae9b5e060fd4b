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

/// Longest wait a FUSE thread does itself (longer ones go to the timer).
const INLINE_WAIT: Duration = Duration::from_micros(500);
/// How long before the deadline an inline wait stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(20);

/// Waits until `at`: sleeps (1 ns timer slack) until shortly before it,
/// then spins.
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
    let now = Instant::now();
    if at > now + SPIN {
        std::thread::sleep(at - now - SPIN);
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

const ROOT: u64 = 1;
const TTL: Duration = Duration::from_secs(3600);

/// File name of member `m`'s device file.
pub fn device_file_name(m: u32) -> String {
    format!("ioDimm{m}")
}

pub struct CardFs {
    engines: Vec<Arc<Engine>>,
    timer: Arc<Timer>,
    created: SystemTime,
    /// Reads and writes received and not yet answered.
    busy: Arc<AtomicUsize>,
}

impl CardFs {
    pub fn new(engines: Vec<Arc<Engine>>, timer: Arc<Timer>) -> CardFs {
        CardFs {
            engines,
            timer,
            created: SystemTime::now(),
            busy: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Answers an I/O no earlier than the model's completion time (or at
    /// once with `--timing none`), or fails it with its errno.
    fn complete(
        &self,
        e: Arc<Engine>,
        result: Result<crate::engine::Completion, crate::engine::EngineError>,
        is_write: bool,
        received: Instant,
        answer: impl FnOnce(Result<(), Errno>) + Send + 'static,
    ) {
        let busy = self.busy.clone();
        let served = Instant::now();
        match result {
            Ok(done) => {
                let wait = e.wait_for(done);
                let ack: crate::timer::Ack = Box::new(move |now| {
                    answer(Ok(()));
                    busy.fetch_sub(1, Ordering::AcqRel);
                    e.counters.record(is_write, received, served, now, done);
                });
                match wait {
                    Some(at)
                        if self.busy.load(Ordering::Acquire) == 1
                            && at < Instant::now() + INLINE_WAIT =>
                    {
                        wait_until(at);
                        ack(Instant::now())
                    }
                    Some(at) => self.timer.at(at, ack),
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
                    eprintln!(
                        "vsl: ioMemory device {}: {op} failed ({} so far): {err}",
                        e.member,
                        n + 1
                    );
                }
                answer(Err(errno(&err)));
                busy.fetch_sub(1, Ordering::AcqRel);
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
        let _ = config.set_max_write(1 << 20);
        // Without async direct I/O the loop driver waits for each request
        // before sending the next: queue depth 1 whatever the host asks.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        // Async direct I/O travels as background requests; allow a deep queue.
        let _ = config.set_max_background(512);
        let _ = config.set_congestion_threshold(384);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 != ROOT {
            return reply.error(Errno::ENOENT);
        }
        let found = self
            .engines
            .iter()
            .position(|e| OsStr::new(&device_file_name(e.member)) == name);
        match found.and_then(|i| self.attr(ROOT + 1 + i as u64)) {
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
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.engine(ino).is_none() {
            return reply.error(Errno::EISDIR);
        }
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
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
        let Some(e) = self.engine(ino).cloned() else {
            return reply.error(Errno::ENOENT);
        };
        self.busy.fetch_add(1, Ordering::AcqRel);
        let cap = e.capacity_bytes();
        if offset >= cap {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            return reply.data(&[]);
        }
        let len = (size as u64).min(cap - offset);
        let mut buf = Vec::new();
        let result = e.read(offset, len, &mut buf);
        self.complete(e, result, false, received, move |r| match r {
            Ok(()) => reply.data(&buf),
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
        let Some(e) = self.engine(ino).cloned() else {
            return reply.error(Errno::ENOENT);
        };
        self.busy.fetch_add(1, Ordering::AcqRel);
        let n = data.len() as u32;
        let result = e.write(offset, data);
        self.complete(e, result, true, received, move |r| match r {
            Ok(()) => reply.written(n),
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
        let Some(e) = self.engine(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let received = Instant::now();
        let r = e.flush();
        e.counters.record_flush(received.elapsed());
        match r {
            Ok(()) => reply.ok(),
            Err(err) => {
                let n = e
                    .counters
                    .errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                eprintln!(
                    "vsl: ioMemory device {}: flush failed ({} errors so far): {err}",
                    e.member,
                    n + 1
                );
                reply.error(errno(&err))
            }
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
        let Some(e) = self.engine(ino).cloned() else {
            return reply.error(Errno::ENOENT);
        };
        // The loop driver turns a discard into a hole punch (or zero range).
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        if mode & punch != punch && mode & libc::FALLOC_FL_ZERO_RANGE == 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        match e.trim(offset, length) {
            Ok(done) => {
                let ack: crate::timer::Ack = Box::new(move |_| reply.ok());
                match e.wait_for(done) {
                    Some(at) => self.timer.at(at, ack),
                    None => ack(Instant::now()),
                }
            }
            Err(err) => reply.error(errno(&err)),
        }
    }
}
