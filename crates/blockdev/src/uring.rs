//! FUSE over io_uring (issue 13): the kernel hands requests to the daemon
//! through io_uring command entries instead of `read(2)` on `/dev/fuse`,
//! and the daemon answers by committing the entry (one `io_uring_enter`
//! that also fetches the next request), with one queue per CPU.
//!
//! The kernel offers it when the fuse module's `enable_uring` parameter is
//! on (`/sys/module/fuse/parameters/enable_uring`, root may switch it) and
//! the daemon asks for it in its `FUSE_INIT` reply. `fuser` keeps the
//! mount, the `INIT` handshake and whatever still travels through
//! `/dev/fuse` (forgets, interrupts, requests sent before the queues are
//! ready); this module serves every other request from the queues, with
//! the same [`CardFs`] logic: the engine, the model's timing, the probe
//! file.
//!
//! Layout (the kernel's `include/uapi/linux/fuse.h`): each entry has a
//! header buffer (`fuse_uring_req_header`: 128 bytes for the in/out
//! header, 128 for the operation's own header, then `ent_in_out` with the
//! commit id and the payload size) and a payload buffer (the request's
//! further arguments in, the reply's arguments out).

use crate::fs::CardFs;
use fuser::{Errno, FileAttr, FileType};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::collections::BinaryHeap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

const CMD_REGISTER: u32 = 1;
const CMD_COMMIT_AND_FETCH: u32 = 2;
/// `sizeof(struct fuse_uring_req_header)`.
const HEADER_BYTES: usize = 128 + 128 + 32;
const OP_IN: usize = 128;
const ENT_IN_OUT: usize = 256;
/// Entries (requests in flight) per queue. A request that finds every
/// entry of its CPU's queue holding one waits in the kernel, outside the
/// daemon's measure; an answer due later holds its entry until then, and
/// under pgbench 32 entries ran out (`fuse_entries` in status,
/// bench/RESULTS.md). Each entry has a payload of the largest write (1
/// MiB), touched as requests use it.
pub const ENTRIES: usize = 64;
/// The tag of the eventfd read in the ring (entries use their index).
const WAKE: u64 = u64::MAX;

/// The kernel's switch for FUSE over io_uring.
pub const ENABLE_PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

/// Whether the kernel offers FUSE over io_uring to new mounts.
pub fn kernel_enabled() -> bool {
    std::fs::read_to_string(ENABLE_PARAM).is_ok_and(|s| s.trim() == "Y")
}

/// Switches the kernel's FUSE over io_uring on if it is off (root), or
/// says why it could not.
pub fn enable_in_kernel() -> Result<(), String> {
    if kernel_enabled() {
        return Ok(());
    }
    std::fs::write(ENABLE_PARAM, "Y").map_err(|e| format!("{ENABLE_PARAM}: {e}"))?;
    if kernel_enabled() {
        Ok(())
    } else {
        Err(format!("{ENABLE_PARAM} stays off"))
    }
}

/// Whether this process may use io_uring with 128-byte entries (the
/// `kernel.io_uring_disabled` sysctl, seccomp or an old kernel may forbid
/// it): checked before FUSE over io_uring is asked for, since a mount that
/// negotiated it cannot serve without its queues.
pub fn usable() -> Result<(), String> {
    IoUring::<squeue::Entry128, cqueue::Entry>::builder()
        .build(4)
        .map(|_| ())
        .map_err(|e| format!("io_uring_setup: {e}"))
}

// FUSE opcodes served here.
const LOOKUP: u32 = 1;
const GETATTR: u32 = 3;
const OPEN: u32 = 14;
const READ: u32 = 15;
const WRITE: u32 = 16;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const FSYNC: u32 = 20;
const FLUSH: u32 = 25;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const DESTROY: u32 = 38;
const FALLOCATE: u32 = 43;

/// One entry's buffers. The kernel writes them between a register or
/// commit and the entry's completion; the daemon between the completion
/// and the next commit.
struct Ent {
    header: Box<[u64; HEADER_BYTES / 8]>,
    payload: Vec<u8>,
    iov: Box<[libc::iovec; 2]>,
}

/// A raw view of an entry for the thread that answers it later.
#[derive(Copy, Clone)]
struct EntPtr {
    header: *mut u8,
    payload: *mut u8,
    payload_len: usize,
}
// SAFETY: an entry is written by one party at a time: the queue thread
// hands it to exactly one answer, which hands it back by index.
unsafe impl Send for EntPtr {}

/// The payload, which a read fills directly.
impl AsMut<[u8]> for EntPtr {
    fn as_mut(&mut self) -> &mut [u8] {
        self.payload()
    }
}

// The views are mutable through a shared pointer by design: one party owns
// the entry at a time (see the Send impl), and the kernel is not that party
// while they are used.
#[allow(clippy::mut_from_ref)]
impl EntPtr {
    fn header(&self) -> &mut [u8] {
        // SAFETY: see the Send impl: this party owns the entry now.
        unsafe { std::slice::from_raw_parts_mut(self.header, HEADER_BYTES) }
    }
    fn payload(&self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.payload, self.payload_len) }
    }
    /// Writes the reply: the out header and the payload's size.
    fn reply(&self, unique: u64, result: Result<usize, Errno>) {
        let h = self.header();
        let (error, len) = match result {
            Ok(n) => (0i32, n),
            Err(e) => (-e.code(), 0),
        };
        h[0..4].copy_from_slice(&((16 + len) as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&error.to_ne_bytes());
        h[8..16].copy_from_slice(&unique.to_ne_bytes());
        h[ENT_IN_OUT + 16..ENT_IN_OUT + 20].copy_from_slice(&(len as u32).to_ne_bytes());
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// An answer due at `at` (earliest first out of the max-heap).
struct Deadline {
    at: Instant,
    seq: u64,
    ack: crate::timer::Ack,
}
impl PartialEq for Deadline {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl Eq for Deadline {}
impl PartialOrd for Deadline {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Deadline {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

/// Answers waiting to be committed, and how to wake the queue thread.
struct Done {
    ready: Mutex<Vec<usize>>,
    wake: RawFd,
    thread: std::thread::ThreadId,
}

impl Done {
    fn push(&self, i: usize) {
        self.ready.lock().unwrap_or_else(|p| p.into_inner()).push(i);
        if std::thread::current().id() != self.thread {
            let one = 1u64;
            // SAFETY: writes 8 bytes to our eventfd.
            unsafe { libc::write(self.wake, (&one as *const u64).cast(), 8) };
        }
    }
}

/// The running queues.
pub struct Queues {
    threads: Vec<std::thread::JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    wakes: Vec<RawFd>,
}

impl Queues {
    /// Starts one queue per CPU on the FUSE connection `fd` (a duplicate of
    /// the session's), each with [`ENTRIES`] entries of `payload` bytes.
    /// Returns once every queue has registered its entries, or the first
    /// error (the kernel refuses: FUSE over io_uring not negotiated).
    /// Their threads are SCHED_FIFO at `rt` if given ([`crate::sched`]).
    pub fn start(fd: RawFd, fs: CardFs, payload: usize, rt: Option<i32>) -> Result<Queues, String> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The kernel has a queue per possible CPU and routes a request to
        // the queue of the CPU it was sent from: every one needs entries.
        let possible = possible_cpus().max(cpus);
        let stop = Arc::new(AtomicBool::new(false));
        let mut q = Queues {
            threads: Vec::new(),
            stop: stop.clone(),
            wakes: Vec::new(),
        };
        for qid in 0..possible {
            // SAFETY: plain syscall.
            let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
            if wake < 0 {
                q.stop();
                return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
            }
            q.wakes.push(wake);
            let (tx, rx) = std::sync::mpsc::channel();
            let fs = fs.clone();
            let stop = stop.clone();
            let h = std::thread::Builder::new()
                .name(format!("fuse-uring-{qid}"))
                .spawn(move || queue_thread(fd, (qid, rt), fs, payload, wake, stop, tx))
                .map_err(|e| format!("spawning a FUSE queue thread: {e}"))?;
            q.threads.push(h);
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    q.stop();
                    return Err(e);
                }
                Err(_) => {
                    q.stop();
                    return Err("a FUSE queue thread ended while registering".into());
                }
            }
        }
        Ok(q)
    }

    /// Number of queues.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Ends the queue threads (after the unmount, which cancels their
    /// entries; a thread still waiting is woken by its eventfd).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for &w in &self.wakes {
            let one = 1u64;
            // SAFETY: writes 8 bytes to our eventfd.
            unsafe { libc::write(w, (&one as *const u64).cast(), 8) };
        }
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
        for w in self.wakes.drain(..) {
            // SAFETY: our descriptor, closed once.
            unsafe { libc::close(w) };
        }
    }
}

impl Drop for Queues {
    fn drop(&mut self) {
        self.stop();
    }
}

/// CPUs the kernel may run on (its queue count), from sysfs.
fn possible_cpus() -> usize {
    let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/possible") else {
        return 1;
    };
    s.trim()
        .split(',')
        .filter_map(|r| r.split('-').next_back()?.parse::<usize>().ok())
        .max()
        .map_or(1, |m| m + 1)
}

/// An io_uring command entry for the FUSE connection.
fn fuse_cmd(fd: RawFd, op: u32, commit_id: u64, qid: u16, ent: &Ent, i: usize) -> squeue::Entry128 {
    let mut cmd = [0u8; 80];
    cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    cmd[16..18].copy_from_slice(&qid.to_ne_bytes());
    let e = opcode::UringCmd80::new(types::Fd(fd), op)
        .cmd(cmd)
        .addr(Some(ent.iov.as_ptr() as u64))
        .build()
        .user_data(i as u64);
    with_len(e, 2)
}

/// Sets the SQE's `len` (the iovec count), which the crate's URING_CMD
/// builder leaves at zero.
fn with_len(e: squeue::Entry128, len: u32) -> squeue::Entry128 {
    // SAFETY: Entry128 is a #[repr(C)] 128-byte io_uring_sqe; `len` is the
    // u32 at byte 24 of struct io_uring_sqe.
    unsafe {
        let mut raw: [u8; 128] = std::mem::transmute(e);
        raw[24..28].copy_from_slice(&len.to_ne_bytes());
        std::mem::transmute::<[u8; 128], squeue::Entry128>(raw)
    }
}

fn queue_thread(
    fd: RawFd,
    (qid, rt): (usize, Option<i32>),
    fs: CardFs,
    payload: usize,
    wake: RawFd,
    stop: Arc<AtomicBool>,
    started: std::sync::mpsc::Sender<Result<(), String>>,
) {
    pin_to_cpu(qid);
    let rt = crate::sched::make_realtime_or_log(rt, &format!("FUSE queue {qid}"));
    let mut ring: IoUring<squeue::Entry128, cqueue::Entry> =
        match IoUring::builder().build((2 * ENTRIES + 8) as u32) {
            Ok(r) => r,
            Err(e) => {
                let _ = started.send(Err(format!("io_uring_setup: {e}")));
                return;
            }
        };
    let mut ents: Vec<Ent> = (0..ENTRIES)
        .map(|_| {
            let mut header = Box::new([0u64; HEADER_BYTES / 8]);
            let mut payload = vec![0u8; payload];
            let iov = Box::new([
                libc::iovec {
                    iov_base: header.as_mut_ptr().cast(),
                    iov_len: HEADER_BYTES,
                },
                libc::iovec {
                    iov_base: payload.as_mut_ptr().cast(),
                    iov_len: payload.len(),
                },
            ]);
            Ent {
                header,
                payload,
                iov,
            }
        })
        .collect();
    let ptrs: Vec<EntPtr> = ents
        .iter_mut()
        .map(|e| EntPtr {
            header: e.header.as_mut_ptr().cast(),
            payload: e.payload.as_mut_ptr(),
            payload_len: e.payload.len(),
        })
        .collect();
    let done = Arc::new(Done {
        ready: Mutex::new(Vec::new()),
        wake,
        thread: std::thread::current().id(),
    });
    // Flushes run on a thread of their own.
    let flusher = crate::fs::FlushThread::start(format!("fuse-flush-{qid}"), fs.clone());
    let mut wake_buf = 0u64;
    let wake_read = |buf: &mut u64| {
        opcode::Read::new(types::Fd(wake), (buf as *mut u64).cast(), 8)
            .build()
            .user_data(WAKE)
            .into()
    };
    // The first entry registers alone: the kernel answers EAGAIN until it
    // has taken the FUSE_INIT reply in; a refusal comes back at once.
    let mut tries = 0;
    loop {
        // SAFETY (for every push in this function): the entries' buffers
        // and the wake buffer live until it returns, after the ring is
        // dropped.
        unsafe {
            let e = fuse_cmd(fd, CMD_REGISTER, 0, qid as u16, &ents[0], 0);
            ring.submission().push(&e).expect("an empty ring");
        }
        if let Err(e) = ring.submit() {
            let _ = started.send(Err(format!("registering FUSE ring entries: {e}")));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        match ring.completion().next().map(|c| c.result()) {
            None => break,
            Some(r) if r == -libc::EAGAIN && tries < 5000 => tries += 1,
            Some(r) => {
                let err = std::io::Error::from_raw_os_error(-r);
                let _ = started.send(Err(format!("registering FUSE ring entries: {err}")));
                return;
            }
        }
    }
    unsafe {
        let mut sq = ring.submission();
        for (i, e) in ents.iter().enumerate().skip(1) {
            sq.push(&fuse_cmd(fd, CMD_REGISTER, 0, qid as u16, e, i))
                .expect("ring sized for every entry");
        }
        sq.push(&wake_read(&mut wake_buf))
            .expect("ring sized for the wake read");
    }
    if let Err(e) = ring.submit() {
        let _ = started.send(Err(format!("registering FUSE ring entries: {e}")));
        return;
    }
    if let Some(c) = ring.completion().find(|c| c.result() < 0) {
        let err = std::io::Error::from_raw_os_error(-c.result());
        let _ = started.send(Err(format!("registering FUSE ring entries: {err}")));
        return;
    }
    let _ = started.send(Ok(()));
    let mut cqes = Vec::with_capacity(2 * ENTRIES);
    let mut ready = Vec::new();
    // Answers due later, sent by this thread at their time (no hand-off).
    let mut due: BinaryHeap<Deadline> = BinaryHeap::new();
    let mut seq = 0u64;
    // Entries holding a request not yet committed: when all are, the
    // kernel keeps further requests of this CPU queued (in status).
    let mut in_use = 0usize;
    let ring_use = fs.ring_use();
    crate::fs::LOCAL_DEADLINES.with(|l| *l.borrow_mut() = Some(Vec::new()));
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // The thread's latest wait for work: from, until (where an answer's
    // lateness came from, in status).
    let mut waited = (Instant::now(), Instant::now());
    'serve: loop {
        // Answers whose time has come, then the commits of every answer.
        let now = Instant::now();
        while due.peek().is_some_and(|d| d.at <= now) {
            let d = due.pop().expect("peeked");
            ring_use.record_answer(d.at, now, waited);
            (d.ack)(now);
        }
        in_use = in_use.saturating_sub(queue_commits(
            &mut ring,
            (fd, qid),
            &ents,
            &ptrs,
            &done,
            &mut ready,
        ));
        // Wait for a request, or until the next answer is due: sleep while
        // the wake-up's overshoot leaves time, then poll the completions.
        waited.0 = Instant::now();
        let r = match due.peek().map(|d| d.at.saturating_duration_since(now)) {
            None => ring.submit_and_wait(1),
            Some(left) => match crate::timer::sleep_for(left) {
                Some(d) => {
                    let ts = types::Timespec::from(d);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    let t0 = Instant::now();
                    let r = ring.submitter().submit_with_args(1, &args);
                    if matches!(&r, Err(e) if e.raw_os_error() == Some(libc::ETIME)) {
                        crate::timer::record_overshoot(d, t0.elapsed());
                    }
                    r
                }
                None => {
                    let r = ring.submit();
                    let until = now + left;
                    let _ordinary = crate::sched::Ordinary::new(rt);
                    let mut cq = ring.completion();
                    while cq.is_empty() && Instant::now() < until {
                        crate::timer::spin_step();
                        cq.sync();
                    }
                    r
                }
            },
        };
        waited.1 = Instant::now();
        match r {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ETIME)) => {}
            Err(e) => {
                tracing::error!("FUSE queue {qid}: io_uring_enter: {e}");
                break;
            }
        }
        cqes.clear();
        cqes.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(tag, res) in &cqes {
            if tag == WAKE {
                if stop.load(Ordering::SeqCst) {
                    break 'serve;
                }
                // SAFETY: as above.
                unsafe {
                    let _ = ring.submission().push(&wake_read(&mut wake_buf));
                }
                continue;
            }
            if res < 0 {
                // The connection ended (unmount, abort): entries come back
                // cancelled.
                if !stop.load(Ordering::SeqCst)
                    && !matches!(-res, libc::ENOTCONN | libc::ECANCELED | libc::ENODEV)
                {
                    tracing::error!(
                        "FUSE queue {qid}: entry failed: {}",
                        std::io::Error::from_raw_os_error(-res)
                    );
                }
                break 'serve;
            }
            let i = tag as usize;
            in_use += 1;
            ring_use
                .most_in_use
                .fetch_max(in_use as u64, Ordering::Relaxed);
            if in_use == ENTRIES {
                ring_use.all_in_use.fetch_add(1, Ordering::Relaxed);
            }
            handle(&fs, ptrs[i], i, &done, flusher.as_ref());
            // Answers that fell due while this request was served go out
            // now, not after the rest of the batch.
            crate::fs::LOCAL_DEADLINES.with(|l| {
                if let Some(v) = l.borrow_mut().as_mut() {
                    for (at, ack) in v.drain(..) {
                        seq += 1;
                        due.push(Deadline { at, seq, ack });
                    }
                }
            });
            let now = Instant::now();
            if due.peek().is_some_and(|d| d.at <= now) {
                while due.peek().is_some_and(|d| d.at <= now) {
                    let d = due.pop().expect("peeked");
                    ring_use.record_answer(d.at, now, waited);
                    (d.ack)(now);
                }
                in_use = in_use.saturating_sub(queue_commits(
                    &mut ring,
                    (fd, qid),
                    &ents,
                    &ptrs,
                    &done,
                    &mut ready,
                ));
                let _ = ring.submit();
            }
        }
    }

    crate::fs::LOCAL_DEADLINES.with(|l| *l.borrow_mut() = None);
    let now = Instant::now();
    for d in due.drain() {
        (d.ack)(now);
    }
    // Answers still owed (the timer, a flush) write into the entries: wait
    // for them before the buffers go.
    drop(ring);
    if let Some(f) = flusher {
        f.finish();
    }
    while fs.busy() > 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(ents);
}

/// Queues the commit of every answered entry (its answer, and the fetch
/// of the entry's next request); returns how many. `ready` is scratch.
fn queue_commits(
    ring: &mut IoUring<squeue::Entry128, cqueue::Entry>,
    (fd, qid): (RawFd, usize),
    ents: &[Ent],
    ptrs: &[EntPtr],
    done: &Done,
    ready: &mut Vec<usize>,
) -> usize {
    std::mem::swap(
        ready,
        &mut *done.ready.lock().unwrap_or_else(|p| p.into_inner()),
    );
    let n = ready.len();
    for i in ready.drain(..) {
        let commit_id = u64_at(ptrs[i].header(), ENT_IN_OUT + 8);
        let e = fuse_cmd(fd, CMD_COMMIT_AND_FETCH, commit_id, qid as u16, &ents[i], i);
        // SAFETY: the entries' buffers live until the queue thread returns,
        // after the ring is dropped.
        unsafe {
            if ring.submission().push(&e).is_err() {
                let _ = ring.submit();
                let _ = ring.submission().push(&e);
            }
        }
    }
    n
}

fn pin_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; the calls only affect this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Serves one request; its answer (now or later) queues the entry for its
/// commit.
fn handle(
    fs: &CardFs,
    ent: EntPtr,
    i: usize,
    done: &Arc<Done>,
    flusher: Option<&crate::fs::FlushThread>,
) {
    let received = Instant::now();
    let h = ent.header();
    let opcode = u32_at(h, 4);
    let unique = u64_at(h, 8);
    let nodeid = u64_at(h, 16);
    let payload_in = u32_at(h, ENT_IN_OUT + 16) as usize;
    let reply_now = |r: Result<usize, Errno>| {
        ent.reply(unique, r);
        done.push(i);
    };
    match opcode {
        LOOKUP => {
            let p = &ent.payload()[..payload_in.min(ent.payload_len)];
            let name = p.split(|&b| b == 0).next().unwrap_or(&[]);
            match fs.lookup_attr(nodeid, std::os::unix::ffi::OsStrExt::from_bytes(name)) {
                Some(a) => {
                    let out = ent.payload();
                    out[0..8].copy_from_slice(&a.ino.0.to_ne_bytes());
                    out[8..16].copy_from_slice(&0u64.to_ne_bytes());
                    let ttl = CardFs::TTL.as_secs();
                    out[16..24].copy_from_slice(&ttl.to_ne_bytes());
                    out[24..32].copy_from_slice(&ttl.to_ne_bytes());
                    out[32..40].fill(0);
                    encode_attr(&a, &mut out[40..128]);
                    reply_now(Ok(128));
                }
                None => reply_now(Err(Errno::ENOENT)),
            }
        }
        GETATTR => match fs.attr_of(nodeid) {
            Some(a) => {
                let out = ent.payload();
                out[0..8].copy_from_slice(&CardFs::TTL.as_secs().to_ne_bytes());
                out[8..16].fill(0);
                encode_attr(&a, &mut out[16..104]);
                reply_now(Ok(104));
            }
            None => reply_now(Err(Errno::ENOENT)),
        },
        OPEN | OPENDIR => {
            let r = if opcode == OPEN {
                fs.open_flags(nodeid)
            } else {
                Ok(0)
            };
            match r {
                Ok(flags) => {
                    let out = ent.payload();
                    out[0..8].fill(0);
                    out[8..12].copy_from_slice(&flags.to_ne_bytes());
                    out[12..16].fill(0);
                    reply_now(Ok(16))
                }
                Err(e) => reply_now(Err(e)),
            }
        }
        RELEASE | RELEASEDIR | FLUSH | DESTROY => reply_now(Ok(0)),
        STATFS => {
            let out = ent.payload();
            out[..80].fill(0);
            out[40..44].copy_from_slice(&4096u32.to_ne_bytes()); // bsize
            out[44..48].copy_from_slice(&255u32.to_ne_bytes()); // namelen
            out[48..52].copy_from_slice(&4096u32.to_ne_bytes()); // frsize
            reply_now(Ok(80))
        }
        READDIR => {
            let offset = u64_at(h, OP_IN + 8);
            let size = u32_at(h, OP_IN + 16) as usize;
            let out = ent.payload();
            let cap = size.min(out.len());
            let mut n = 0;
            for (k, (ino, kind, name)) in fs.dir_entries().into_iter().enumerate() {
                if (k as u64) < offset {
                    continue;
                }
                let rec = (24 + name.len()).div_ceil(8) * 8;
                if n + rec > cap {
                    break;
                }
                let r = &mut out[n..n + rec];
                r.fill(0);
                r[0..8].copy_from_slice(&ino.to_ne_bytes());
                r[8..16].copy_from_slice(&(k as u64 + 1).to_ne_bytes());
                r[16..20].copy_from_slice(&(name.len() as u32).to_ne_bytes());
                r[20..24].copy_from_slice(&(file_type(kind) >> 12).to_ne_bytes());
                r[24..24 + name.len()].copy_from_slice(name.as_bytes());
                n += rec;
            }
            reply_now(Ok(n))
        }
        READ => {
            let offset = u64_at(h, OP_IN + 8);
            let size = u32_at(h, OP_IN + 16);
            let done = done.clone();
            fs.serve_read(nodeid, offset, size, received, ent, move |ent, r| {
                ent.reply(unique, r);
                done.push(i);
            });
        }
        WRITE => {
            let offset = u64_at(h, OP_IN + 8);
            let size = (u32_at(h, OP_IN + 16) as usize).min(ent.payload_len);
            let out = ent;
            let done = done.clone();
            fs.serve_write(nodeid, offset, &ent.payload()[..size], received, move |r| {
                let r = r.map(|n| {
                    out.payload()[0..4].copy_from_slice(&n.to_ne_bytes());
                    out.payload()[4..8].fill(0);
                    8
                });
                out.reply(unique, r);
                done.push(i);
            });
        }
        FSYNC => {
            let done = done.clone();
            let job: crate::fs::FlushJob = Box::new(move |fs: &CardFs| {
                ent.reply(unique, fs.serve_fsync(nodeid).map(|()| 0));
                done.push(i);
            });
            match flusher {
                Some(f) => f.send(job, fs),
                None => job(fs),
            }
        }
        FALLOCATE => {
            let offset = u64_at(h, OP_IN + 8);
            let length = u64_at(h, OP_IN + 16);
            let mode = u32_at(h, OP_IN + 24) as i32;
            let done = done.clone();
            fs.serve_fallocate(nodeid, offset, length, mode, move |r| {
                ent.reply(unique, r.map(|()| 0));
                done.push(i);
            });
        }
        _ => reply_now(Err(Errno::ENOSYS)),
    }
}

/// `S_IF*` bits of a file type.
fn file_type(kind: FileType) -> u32 {
    match kind {
        FileType::Directory => libc::S_IFDIR,
        FileType::RegularFile => libc::S_IFREG,
        FileType::Symlink => libc::S_IFLNK,
        FileType::BlockDevice => libc::S_IFBLK,
        FileType::CharDevice => libc::S_IFCHR,
        FileType::NamedPipe => libc::S_IFIFO,
        FileType::Socket => libc::S_IFSOCK,
    }
}

fn secs(t: SystemTime) -> (u64, u32) {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

/// `struct fuse_attr` (88 bytes).
fn encode_attr(a: &FileAttr, out: &mut [u8]) {
    let (at, atn) = secs(a.atime);
    let (mt, mtn) = secs(a.mtime);
    let (ct, ctn) = secs(a.ctime);
    let mode = file_type(a.kind) | a.perm as u32;
    let u64s = [a.ino.0, a.size, a.blocks, at, mt, ct];
    for (k, v) in u64s.iter().enumerate() {
        out[k * 8..k * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    let u32s = [
        atn, mtn, ctn, mode, a.nlink, a.uid, a.gid, a.rdev, a.blksize, 0,
    ];
    for (k, v) in u32s.iter().enumerate() {
        out[48 + k * 4..52 + k * 4].copy_from_slice(&v.to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_encoding_matches_the_kernel_layout() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::new(7, 9);
        let a = FileAttr {
            ino: fuser::INodeNo(5),
            size: 4096,
            blocks: 8,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: FileType::RegularFile,
            perm: 0o600,
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        };
        let mut out = [0u8; 88];
        encode_attr(&a, &mut out);
        assert_eq!(u64_at(&out, 0), 5);
        assert_eq!(u64_at(&out, 8), 4096);
        assert_eq!(u64_at(&out, 24), 7);
        assert_eq!(u32_at(&out, 48), 9);
        assert_eq!(u32_at(&out, 60), libc::S_IFREG | 0o600);
        assert_eq!(u32_at(&out, 80), 4096);
    }

    #[test]
    fn the_iovec_count_lands_in_the_sqe() {
        let e = opcode::UringCmd80::new(types::Fd(3), CMD_REGISTER)
            .addr(Some(0x1000))
            .build();
        let e = with_len(e, 2);
        // SAFETY: reading the 128 bytes of a repr(C) SQE.
        let raw: [u8; 128] = unsafe { std::mem::transmute(e) };
        assert_eq!(raw[0], 46); // IORING_OP_URING_CMD
        assert_eq!(u32_at(&raw, 4), 3);
        assert_eq!(u64_at(&raw, 16), 0x1000);
        assert_eq!(u32_at(&raw, 24), 2);
    }

    #[test]
    fn possible_cpus_counts_at_least_one() {
        assert!(possible_cpus() >= 1);
    }
}
