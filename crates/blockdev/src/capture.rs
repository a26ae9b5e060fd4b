//! Trace capture on the attached card (`vsl attach --trace DIR`, `vsl
//! trace start|stop|status`): every request the card serves — arrival,
//! completion, ioMemory device, op, offset, length — written as fio iolog
//! v3 (`trace.NNN.iolog`) and as `blkparse`'s default text output
//! (`trace.NNN.blkparse`), each rotated by size.
//!
//! [`Capture`] is what the request path sees: one relaxed load when
//! capture is off, and when it is on a push of a [`TraceRecord`] into the
//! serving thread's own buffer (a mutex only the writer ever contends,
//! once per poll). A full buffer drops the record and counts it
//! ([`TraceStatus::dropped`]), so the I/O path never waits on the disk the
//! trace goes to, and no cache line is shared between serving threads.
//! The writer thread ([`Capture::start_writer`]) takes every buffer each
//! [`POLL`], puts the records back in time order (a request completes
//! after later arrivals; events are held [`HOLD`] before they are
//! written) and formats them straight into the files' buffers.
//!
//! What a loop device above a FUSE file lets the daemon see: reads,
//! writes, discards (hole punch / zero range) and flushes (fsync). The
//! loop driver has no FUA: the block layer turns a FUA write into the write
//! and a flush, and both are captured as such.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Records one serving thread's buffer holds before the request path
/// starts dropping (~4 MB of records; at 0.1 M requests a second, the
/// attached card's pace, a buffer holds more than half a second).
pub const SLOT_RECORDS: usize = 1 << 16;
/// How long an event waits in the writer before it is written, so that a
/// request still in flight (arrived earlier, completes later) is not
/// written out of order. Longer than any latency the model gives.
pub const HOLD: Duration = Duration::from_millis(1000);
/// Events held in the writer at most (then the oldest are written even if
/// younger than [`HOLD`]; a later, earlier event counts as out of order).
const HELD_MAX: usize = 1 << 20;
/// The writer holds events in buckets of this much time, each sorted when
/// it is written: pushing is an append, and sorting a bucket of a few
/// hundred events stays in the cache (a heap of a second's events did not:
/// its pops were most of the writer's time).
const BUCKET_NS: u64 = 1_000_000;
/// How often the writer takes what the serving threads' buffers hold.
/// Each poll is a wake-up of the writer's thread: 5 ms polls cost an idle
/// pgbench run a tenth of the daemon's CPU. Control requests (start, stop)
/// wake it at once.
pub const POLL: Duration = Duration::from_millis(20);
/// Smallest `--trace-rotate`.
pub const ROTATE_MIN_BYTES: u64 = 4096;
/// `--trace-rotate`'s default.
pub const ROTATE_DEFAULT: &str = "256M";
/// What a request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    Read,
    Write,
    Discard,
    Flush,
}

/// One served request, as the request path hands it over.
#[derive(Clone, Copy, Debug)]
pub struct TraceRecord {
    pub member: u32,
    pub op: TraceOp,
    pub offset: u64,
    pub len: u64,
    pub arrival: Instant,
    pub completion: Instant,
    /// 0, or the errno the request failed with.
    pub errno: i32,
}

/// Which files a capture writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    Iolog,
    Blkparse,
    Both,
}

impl TraceFormat {
    pub fn parse(s: &str) -> Result<TraceFormat, String> {
        match s {
            "iolog" => Ok(TraceFormat::Iolog),
            "blkparse" => Ok(TraceFormat::Blkparse),
            "both" => Ok(TraceFormat::Both),
            o => Err(format!(
                "--trace-format: '{o}' (expected iolog, blkparse or both)"
            )),
        }
    }
    fn iolog(self) -> bool {
        self != TraceFormat::Blkparse
    }
    fn blkparse(self) -> bool {
        self != TraceFormat::Iolog
    }
}

/// Where and how to capture (the `trace-start` request of the control
/// socket carries it as JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceOptions {
    pub dir: PathBuf,
    pub rotate_bytes: u64,
    pub format: TraceFormat,
}

impl TraceOptions {
    /// Parses `--trace-rotate` and `--trace-format` and checks `dir`:
    /// an existing directory this process can create files in.
    pub fn new(dir: &Path, rotate: &str, format: &str) -> Result<TraceOptions, String> {
        let rotate_bytes = workload::units::parse_size(rotate)
            .map_err(|e| format!("--trace-rotate '{rotate}': {e}"))?;
        if rotate_bytes < ROTATE_MIN_BYTES {
            return Err(format!(
                "--trace-rotate '{rotate}': at least {ROTATE_MIN_BYTES} bytes"
            ));
        }
        let format = TraceFormat::parse(format)?;
        let dir = check_dir(dir)?;
        Ok(TraceOptions {
            dir,
            rotate_bytes,
            format,
        })
    }
}

/// `dir`, made absolute, if it is a directory files can be created in.
pub fn check_dir(dir: &Path) -> Result<PathBuf, String> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir).map_err(|e| format!("--trace {shown}: {e}"))?;
    if !meta.is_dir() {
        return Err(format!("--trace {shown}: not a directory"));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("--trace {shown}: {e}"))?;
    let probe = dir.join(format!(".vsl-trace-probe-{}", std::process::id()));
    File::create(&probe).map_err(|e| format!("--trace {shown}: cannot create files there: {e}"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

/// One block device a capture names: the member's loop device.
#[derive(Clone, Debug)]
pub struct TraceDevice {
    pub member: u32,
    pub path: String,
    pub major: u32,
    pub minor: u32,
}

impl TraceDevice {
    /// `path`'s device numbers (0,0 when it cannot be read).
    pub fn of(member: u32, path: &str) -> TraceDevice {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(path).map(|m| m.rdev()).unwrap_or(0);
        TraceDevice {
            member,
            path: path.to_string(),
            major: libc::major(rdev),
            minor: libc::minor(rdev),
        }
    }
}

/// What `status` reports of the capture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceStatus {
    /// `off`, `capturing` or `failed` (the writer hit an error and
    /// stopped; `error` says which).
    pub state: String,
    pub dir: Option<String>,
    pub format: Option<TraceFormat>,
    pub rotate_bytes: u64,
    /// Records the writer took since attach (every capture); each is
    /// written within about [`HOLD`], and all of them by `stop`.
    pub records: u64,
    /// Bytes written to trace files since attach.
    pub bytes: u64,
    /// Records the request path could not hand over (the writer was
    /// behind); they are in no file.
    pub dropped: u64,
    /// Records written after a later one (held longer than [`HOLD`]).
    pub out_of_order: u64,
    /// Trace files opened since attach.
    pub files: u64,
    pub error: Option<String>,
}

/// Control requests to the writer (records do not pass through here).
enum Msg {
    Start(
        TraceOptions,
        Vec<TraceDevice>,
        SyncSender<Result<(), String>>,
    ),
    Stop(SyncSender<()>),
    Quit,
}

#[derive(Default)]
struct Counters {
    records: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
    out_of_order: AtomicU64,
    files: AtomicU64,
}

/// One serving thread's records, waiting for the writer.
#[derive(Default)]
struct Slot(Mutex<Vec<TraceRecord>>);

/// Every serving thread's [`Slot`] of one capture.
type Slots = Arc<Mutex<Vec<Arc<Slot>>>>;

/// Distinguishes the captures of one process (a thread may serve several
/// attached cards' requests in tests; each has its own slots).
static NEXT_CAPTURE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's slot in each capture it has handed records to.
    static MY_SLOTS: RefCell<Vec<(u64, Arc<Slot>)>> = const { RefCell::new(Vec::new()) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The request path's handle on trace capture, shared by every serving
/// thread, and the control side's (start, stop, status).
pub struct Capture {
    id: u64,
    active: AtomicBool,
    slots: Slots,
    tx: SyncSender<Msg>,
    counters: Arc<Counters>,
    /// The running capture's options, or the error that ended it.
    state: Arc<Mutex<(Option<TraceOptions>, Option<String>)>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Capture {
    /// A capture that is off, with its writer thread waiting.
    pub fn start_writer() -> std::io::Result<Arc<Capture>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let counters = Arc::new(Counters::default());
        let state = Arc::new(Mutex::new((None, None)));
        let slots: Slots = Default::default();
        let c = Arc::new(Capture {
            id: NEXT_CAPTURE.fetch_add(1, Relaxed),
            active: AtomicBool::new(false),
            slots: slots.clone(),
            tx,
            counters: counters.clone(),
            state: state.clone(),
            writer: Mutex::new(None),
        });
        let weak = Arc::downgrade(&c);
        let h = std::thread::Builder::new()
            .name("vsl-trace".into())
            .spawn(move || writer_loop(rx, slots, counters, state, weak))?;
        *lock(&c.writer) = Some(h);
        Ok(c)
    }

    /// Hands one served request to the writer, if capturing: into this
    /// thread's slot. Never waits for the writer (it holds a slot's mutex
    /// only to swap the slot's buffer for an empty one).
    #[inline]
    pub fn record(&self, rec: impl FnOnce() -> TraceRecord) {
        if !self.active.load(Relaxed) {
            return;
        }
        let r = rec();
        let kept = MY_SLOTS
            .try_with(|mine| {
                let mut mine = mine.borrow_mut();
                let i = match mine.iter().position(|(id, _)| *id == self.id) {
                    Some(i) => i,
                    None => {
                        // Slots of captures that are gone (only this
                        // thread still holds them) are let go.
                        mine.retain(|(_, s)| Arc::strong_count(s) > 1);
                        let s = Arc::new(Slot::default());
                        lock(&self.slots).push(s.clone());
                        mine.push((self.id, s));
                        mine.len() - 1
                    }
                };
                let mut v = lock(&mine[i].1 .0);
                let room = v.len() < SLOT_RECORDS;
                if room {
                    v.push(r);
                }
                room
            })
            .unwrap_or(false);
        if !kept {
            self.counters.dropped.fetch_add(1, Relaxed);
        }
    }

    pub fn capturing(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Starts capturing into `opts.dir` (numbering after the trace files
    /// already there). Refused while capturing.
    pub fn start(&self, opts: TraceOptions, devices: Vec<TraceDevice>) -> Result<(), String> {
        if opts.rotate_bytes < ROTATE_MIN_BYTES {
            return Err(format!(
                "trace files rotate at {} bytes; at least {ROTATE_MIN_BYTES}",
                opts.rotate_bytes
            ));
        }
        if let Some(o) = &self.lock_state().0 {
            return Err(format!(
                "already capturing into {}; `vsl trace stop` first",
                o.dir.display()
            ));
        }
        let (rtx, rrx) = std::sync::mpsc::sync_channel(1);
        self.tx
            .send(Msg::Start(opts.clone(), devices, rtx))
            .map_err(|_| "the trace writer is gone".to_string())?;
        rrx.recv()
            .map_err(|_| "the trace writer is gone".to_string())??;
        *self.lock_state() = (Some(opts), None);
        self.active.store(true, Relaxed);
        Ok(())
    }

    /// Stops capturing: what was handed over is written, the files are
    /// closed and synced. False if it was not capturing.
    pub fn stop(&self) -> bool {
        let was = self.active.swap(false, Relaxed) || self.lock_state().0.is_some();
        let (rtx, rrx) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Msg::Stop(rtx)).is_ok() {
            let _ = rrx.recv();
        }
        self.lock_state().0 = None;
        was
    }

    pub fn status(&self) -> TraceStatus {
        let st = self.lock_state();
        let c = &self.counters;
        TraceStatus {
            state: if st.0.is_some() {
                "capturing"
            } else if st.1.is_some() {
                "failed"
            } else {
                "off"
            }
            .into(),
            dir: st.0.as_ref().map(|o| o.dir.display().to_string()),
            format: st.0.as_ref().map(|o| o.format),
            rotate_bytes: st.0.as_ref().map_or(0, |o| o.rotate_bytes),
            records: c.records.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
            out_of_order: c.out_of_order.load(Relaxed),
            files: c.files.load(Relaxed),
            error: st.1.clone(),
        }
    }

    /// Stops capturing and ends the writer thread (at detach).
    pub fn shutdown(&self) {
        self.stop();
        let _ = self.tx.send(Msg::Quit);
        if let Some(h) = lock(&self.writer).take() {
            let _ = h.join();
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, (Option<TraceOptions>, Option<String>)> {
        lock(&self.state)
    }
}

type SharedState = Arc<Mutex<(Option<TraceOptions>, Option<String>)>>;

/// Takes every slot's records (swapping each slot's buffer for `spare`,
/// which keeps its capacity) into `sink`, or counts them dropped when no
/// capture runs (handed over as it stopped or failed: in no file).
fn drain(slots: &Slots, spare: &mut Vec<TraceRecord>, sink: Option<&mut Sink>, c: &Counters) {
    let all: Vec<Arc<Slot>> = {
        let mut v = lock(slots);
        // A slot only the registry holds belongs to a thread that ended;
        // once empty it is let go.
        v.retain(|s| Arc::strong_count(s) > 1 || !lock(&s.0).is_empty());
        v.clone()
    };
    let mut sink = sink;
    for s in &all {
        std::mem::swap(&mut *lock(&s.0), spare);
        if spare.is_empty() {
            continue;
        }
        match sink.as_deref_mut() {
            Some(k) => {
                c.records.fetch_add(spare.len() as u64, Relaxed);
                for r in spare.iter() {
                    k.push(r);
                }
            }
            None => {
                c.dropped.fetch_add(spare.len() as u64, Relaxed);
            }
        }
        spare.clear();
    }
}

fn writer_loop(
    rx: Receiver<Msg>,
    slots: Slots,
    counters: Arc<Counters>,
    state: SharedState,
    capture: std::sync::Weak<Capture>,
) {
    let mut sink: Option<Sink> = None;
    let mut spare: Vec<TraceRecord> = Vec::new();
    let mut last_flush = Instant::now();
    loop {
        // A control request wakes the writer at once; records never do
        // (the request path only pushes into its own slot).
        let msg = match rx.recv_timeout(POLL) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        // What was handed over before the request goes where the capture
        // then was.
        drain(&slots, &mut spare, sink.as_mut(), &counters);
        let mut fail = None;
        match msg {
            Some(Msg::Quit) => return,
            Some(m) => fail = handle_control(m, &mut sink, &counters).err(),
            None => {}
        }
        if fail.is_none() {
            if let Some(s) = sink.as_mut() {
                let before = s.ns(Instant::now()).saturating_sub(HOLD.as_nanos() as u64);
                let r = s.write_due(Some(before), &counters).and_then(|()| {
                    if last_flush.elapsed() >= Duration::from_secs(1) {
                        last_flush = Instant::now();
                        s.flush()
                    } else {
                        Ok(())
                    }
                });
                fail = r.err().map(|e| format!("writing the trace: {e}"));
            }
        }
        if let Some(why) = fail {
            // Capture ends; the request path stops handing records over.
            if let Some(c) = capture.upgrade() {
                c.active.store(false, Relaxed);
            }
            tracing::error!("trace capture stopped: {why}");
            *lock(&state) = (None, Some(why));
            sink = None;
        }
    }
}

/// A control message to the writer; an error ends the capture.
fn handle_control(msg: Msg, sink: &mut Option<Sink>, counters: &Counters) -> Result<(), String> {
    match msg {
        Msg::Start(opts, devices, reply) => {
            let r = match sink {
                Some(_) => Err("already capturing".to_string()),
                None => Sink::open(opts, devices).map(|s| *sink = Some(s)),
            };
            let _ = reply.send(r);
            Ok(())
        }
        Msg::Stop(reply) => {
            let r = match sink.take() {
                Some(mut s) => s.finish(counters),
                None => Ok(()),
            };
            let _ = reply.send(());
            r.map_err(|e| format!("closing the trace: {e}"))
        }
        Msg::Quit => Ok(()),
    }
}

/// An event of the time-ordered stream: a request's arrival (Q) or its
/// completion (C), times in ns since the capture started. Small, so the
/// writer's heap moves little.
#[derive(Clone, Copy, Debug)]
struct Event {
    at: u64,
    /// Completions after arrivals of the same time, then insertion order
    /// (top bit: a completion; the rest: a count).
    tie: u64,
    offset: u64,
    len: u64,
    member: u32,
    errno: i32,
    op: TraceOp,
}

const COMPLETE_BIT: u64 = 1 << 63;

impl Event {
    fn complete(&self) -> bool {
        self.tie & COMPLETE_BIT != 0
    }
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.tie) == (o.at, o.tie)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.tie).cmp(&(o.at, o.tie))
    }
}

/// Events waiting to be written, in buckets of [`BUCKET_NS`] by time:
/// bucket `base + i` holds the events of [i × BUCKET_NS, (i + 1) ×
/// BUCKET_NS) after `base`'s start.
#[derive(Default)]
struct Held {
    base: u64,
    buckets: VecDeque<Vec<Event>>,
    /// Events of buckets already written.
    late: Vec<Event>,
    len: usize,
    /// Emptied buckets, kept for their capacity.
    spare: Vec<Vec<Event>>,
}

impl Held {
    fn push(&mut self, e: Event) {
        let idx = e.at / BUCKET_NS;
        if idx < self.base {
            self.late.push(e);
            return;
        }
        let i = (idx - self.base) as usize;
        while self.buckets.len() <= i {
            let b = self.spare.pop().unwrap_or_default();
            self.buckets.push_back(b);
        }
        self.buckets[i].push(e);
        self.len += 1;
    }

    /// The oldest bucket if it ends by bucket `upto`, or while more than
    /// `max` events are held; the next bucket becomes the oldest.
    fn pop_due(&mut self, upto: u64, max: usize) -> Option<Vec<Event>> {
        if self.base >= upto && self.len <= max {
            return None;
        }
        match self.buckets.pop_front() {
            Some(b) => {
                self.base += 1;
                self.len -= b.len();
                Some(b)
            }
            None => {
                // Nothing held: the next event starts from `upto`.
                if upto != u64::MAX {
                    self.base = self.base.max(upto);
                }
                None
            }
        }
    }

    fn recycle(&mut self, mut b: Vec<Event>) {
        b.clear();
        self.spare.push(b);
    }
}

/// A device's text, formatted once: the blkparse line's `maj,min cpu `
/// prefix and its `[ioDimmN]` tag, and the iolog's file name.
struct DevText {
    member: u32,
    blkparse_prefix: Vec<u8>,
    tag: Vec<u8>,
    path: Vec<u8>,
}

impl DevText {
    fn of(d: &TraceDevice) -> DevText {
        DevText {
            member: d.member,
            blkparse_prefix: format!("{:>3},{:<3} {:>2} ", d.major, d.minor, 0).into_bytes(),
            tag: format!("[ioDimm{}]\n", d.member).into_bytes(),
            path: d.path.clone().into_bytes(),
        }
    }

    /// A member the capture was not told about: named by its member.
    fn unnamed(member: u32) -> DevText {
        DevText::of(&TraceDevice {
            member,
            path: format!("ioDimm{member}"),
            major: 0,
            minor: 0,
        })
    }
}

/// The open trace files of a running capture.
struct Sink {
    opts: TraceOptions,
    devices: Vec<TraceDevice>,
    text: Vec<DevText>,
    t0: Instant,
    iolog: Option<Rotating>,
    blkparse: Option<Rotating>,
    held: Held,
    n: u64,
    last_written: Option<u64>,
    seq: u64,
    /// The line being formatted (reused: no allocation per event).
    line: Vec<u8>,
}

impl Sink {
    fn open(opts: TraceOptions, devices: Vec<TraceDevice>) -> Result<Sink, String> {
        check_dir(&opts.dir)?;
        let rot = |ext: &'static str| {
            next_index(&opts.dir, ext).map(|index| Rotating {
                dir: opts.dir.clone(),
                ext,
                index,
                file: None,
                bytes_in_file: 0,
                last_us: 0,
            })
        };
        let iolog = if opts.format.iolog() {
            Some(rot("iolog").map_err(|e| format!("--trace {}: {e}", opts.dir.display()))?)
        } else {
            None
        };
        let blkparse = if opts.format.blkparse() {
            Some(rot("blkparse").map_err(|e| format!("--trace {}: {e}", opts.dir.display()))?)
        } else {
            None
        };
        Ok(Sink {
            opts,
            text: devices.iter().map(DevText::of).collect(),
            devices,
            t0: Instant::now(),
            iolog,
            blkparse,
            held: Held::default(),
            n: 0,
            last_written: None,
            seq: 0,
            line: Vec::with_capacity(160),
        })
    }

    fn push(&mut self, r: &TraceRecord) {
        for (complete, at) in [(0, r.arrival), (COMPLETE_BIT, r.completion)] {
            let e = Event {
                at: self.ns(at),
                tie: complete | self.n,
                offset: r.offset,
                len: r.len,
                member: r.member,
                errno: r.errno,
                op: r.op,
            };
            self.held.push(e);
            self.n += 1;
        }
    }

    /// Writes the events of the buckets that end by `before` ns (all with
    /// `None`), and the oldest beyond [`HELD_MAX`]; first any event that
    /// came after its bucket was written (out of order).
    fn write_due(&mut self, before: Option<u64>, c: &Counters) -> std::io::Result<()> {
        let mut late = std::mem::take(&mut self.held.late);
        late.sort_unstable();
        for e in late.drain(..) {
            self.write_event(&e, c)?;
        }
        self.held.late = late;
        let upto = before.map_or(u64::MAX, |b| b / BUCKET_NS);
        while let Some(mut bucket) = self.held.pop_due(upto, HELD_MAX) {
            bucket.sort_unstable();
            for e in &bucket {
                self.write_event(e, c)?;
            }
            self.held.recycle(bucket);
        }
        Ok(())
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.t0).as_nanos() as u64
    }

    /// The formatted text of member `m` (added if the capture was not told
    /// about it).
    fn dev_text(&mut self, m: u32) -> usize {
        match self.text.iter().position(|d| d.member == m) {
            Some(i) => i,
            None => {
                self.text.push(DevText::unnamed(m));
                self.text.len() - 1
            }
        }
    }

    fn write_event(&mut self, e: &Event, c: &Counters) -> std::io::Result<()> {
        let complete = e.complete();
        if self.last_written.is_some_and(|l| e.at < l) {
            if !complete {
                c.out_of_order.fetch_add(1, Relaxed);
            }
        } else {
            self.last_written = Some(e.at);
        }
        let d = self.dev_text(e.member);
        if !complete {
            if let Some(io) = self.iolog.as_mut() {
                io.write_iolog(
                    &self.opts,
                    &self.devices,
                    &mut self.line,
                    e.at / 1000,
                    &self.text[d].path,
                    e,
                    c,
                )?;
            }
        }
        if let Some(bp) = self.blkparse.as_mut() {
            self.seq += 1;
            self.line.clear();
            fmt_blkparse(&mut self.line, &self.text[d], self.seq, e);
            bp.write_text(&self.opts, &self.line, c)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        for r in [self.iolog.as_mut(), self.blkparse.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(f) = r.file.as_mut() {
                f.flush()?;
            }
        }
        Ok(())
    }

    /// Writes everything held, closes and syncs the files.
    fn finish(&mut self, c: &Counters) -> std::io::Result<()> {
        self.write_due(None, c)?;
        let devices = self.devices.clone();
        if let Some(io) = self.iolog.as_mut() {
            io.close_iolog(&devices, c)?;
        }
        if let Some(bp) = self.blkparse.as_mut() {
            bp.close(c)?;
        }
        Ok(())
    }
}

/// Appends `v` in decimal, right-aligned in `width` columns.
fn put_right(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let s = b.format(v).as_bytes();
    out.resize(out.len() + width.saturating_sub(s.len()), b' ');
    out.extend_from_slice(s);
}

/// Appends `v` in decimal.
fn put_num(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// The `blkparse` default output line of one event: `maj,min cpu seq
/// secs.nsecs pid action rwbs sector + nsectors [process|error]`, sectors
/// of 512 bytes. The process is the ioMemory device's name (the daemon
/// does not see the process that issued the I/O), the pid 0.
pub fn blkparse_line(
    dev: &TraceDevice,
    seq: u64,
    t_ns: u64,
    complete: bool,
    r: &TraceRecord,
) -> String {
    let e = Event {
        at: t_ns,
        tie: if complete { COMPLETE_BIT } else { 0 },
        offset: r.offset,
        len: r.len,
        member: r.member,
        errno: r.errno,
        op: r.op,
    };
    let mut out = Vec::new();
    fmt_blkparse(&mut out, &DevText::of(dev), seq, &e);
    String::from_utf8(out).expect("ASCII")
}

/// [`blkparse_line`] appended to `out`: `{:>3},{:<3} {:>2} {:>8}
/// {:>5}.{:09} {:>5} {:>2} {:>3} ` then the sectors and the tag.
fn fmt_blkparse(out: &mut Vec<u8>, dev: &DevText, seq: u64, e: &Event) {
    let complete = e.complete();
    out.extend_from_slice(&dev.blkparse_prefix);
    put_right(out, seq, 8);
    out.push(b' ');
    put_right(out, e.at / 1_000_000_000, 5);
    out.push(b'.');
    let mut b = itoa::Buffer::new();
    let nanos = b.format(e.at % 1_000_000_000).as_bytes();
    out.resize(out.len() + 9 - nanos.len(), b'0');
    out.extend_from_slice(nanos);
    // pid 0, action, rwbs.
    out.extend_from_slice(if complete {
        b"     0  C "
    } else {
        b"     0  Q "
    });
    out.extend_from_slice(match e.op {
        TraceOp::Read => b"  R ",
        TraceOp::Write => b"  W ",
        TraceOp::Discard => b"  D ",
        TraceOp::Flush => b" FN ",
    });
    let sectors = e.len.div_ceil(512);
    if complete || sectors > 0 {
        put_num(out, e.offset / 512);
        if sectors > 0 {
            out.extend_from_slice(b" + ");
            put_num(out, sectors);
        }
        out.push(b' ');
    }
    if complete {
        out.push(b'[');
        put_num(out, -e.errno);
        out.extend_from_slice(b"]\n");
    } else {
        out.extend_from_slice(&dev.tag);
    }
}

/// The fio iolog v3 action of an op.
pub fn iolog_action(op: TraceOp) -> &'static str {
    match op {
        TraceOp::Read => "read",
        TraceOp::Write => "write",
        TraceOp::Discard => "trim",
        TraceOp::Flush => "sync",
    }
}

/// The first free index of `trace.NNN.EXT` in `dir` (one past the highest
/// there), so a capture resumed into the same directory adds files.
fn next_index(dir: &Path, ext: &str) -> std::io::Result<u32> {
    let mut next = 0;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let Some(mid) = name
            .strip_prefix("trace.")
            .and_then(|s| s.strip_suffix(&format!(".{ext}")))
        else {
            continue;
        };
        if let Ok(i) = mid.parse::<u32>() {
            next = next.max(i + 1);
        }
    }
    Ok(next)
}

/// One format's current file, rotated by size.
struct Rotating {
    dir: PathBuf,
    ext: &'static str,
    index: u32,
    file: Option<BufWriter<File>>,
    bytes_in_file: u64,
    /// The iolog's last timestamp, µs (for its `close` lines).
    last_us: u64,
}

impl Rotating {
    fn path(&self) -> PathBuf {
        self.dir
            .join(format!("trace.{:03}.{}", self.index, self.ext))
    }

    fn put(&mut self, text: &[u8], c: &Counters) -> std::io::Result<()> {
        if self.file.is_none() {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.path())?;
            self.file = Some(BufWriter::with_capacity(1 << 20, f));
            self.bytes_in_file = 0;
            c.files.fetch_add(1, Relaxed);
        }
        let f = self.file.as_mut().expect("opened above");
        f.write_all(text)?;
        self.bytes_in_file += text.len() as u64;
        c.bytes.fetch_add(text.len() as u64, Relaxed);
        Ok(())
    }

    fn write_text(&mut self, o: &TraceOptions, line: &[u8], c: &Counters) -> std::io::Result<()> {
        self.put(line, c)?;
        if self.bytes_in_file >= o.rotate_bytes {
            self.close(c)?;
        }
        Ok(())
    }

    /// One iolog line, `TIME_US FILE ACTION OFFSET LENGTH`, formatted in
    /// `line`.
    #[allow(clippy::too_many_arguments)]
    fn write_iolog(
        &mut self,
        o: &TraceOptions,
        devices: &[TraceDevice],
        line: &mut Vec<u8>,
        t_us: u64,
        path: &[u8],
        e: &Event,
        c: &Counters,
    ) -> std::io::Result<()> {
        // Timestamps never go back within a file (fio waits by their
        // differences).
        let t_us = t_us.max(self.last_us);
        if self.file.is_none() {
            let mut head = String::from("fio version 3 iolog\n");
            for d in devices {
                head.push_str(&format!("{t_us} {} add\n", d.path));
            }
            for d in devices {
                head.push_str(&format!("{t_us} {} open\n", d.path));
            }
            self.put(head.as_bytes(), c)?;
        }
        self.last_us = t_us;
        line.clear();
        put_num(line, t_us);
        line.push(b' ');
        line.extend_from_slice(path);
        line.push(b' ');
        line.extend_from_slice(iolog_action(e.op).as_bytes());
        line.push(b' ');
        put_num(line, if e.op == TraceOp::Flush { 0 } else { e.offset });
        line.push(b' ');
        put_num(line, e.len);
        line.push(b'\n');
        self.put(line, c)?;
        if self.bytes_in_file >= o.rotate_bytes {
            self.close_iolog(devices, c)?;
        }
        Ok(())
    }

    fn close_iolog(&mut self, devices: &[TraceDevice], c: &Counters) -> std::io::Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        let mut tail = String::new();
        for d in devices {
            tail.push_str(&format!("{} {} close\n", self.last_us, d.path));
        }
        self.put(tail.as_bytes(), c)?;
        self.close(c)
    }

    fn close(&mut self, _c: &Counters) -> std::io::Result<()> {
        if let Some(f) = self.file.take() {
            let f = f.into_inner().map_err(|e| e.into_error())?;
            f.sync_data()?;
            self.index += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: TraceOp, offset: u64, len: u64, a: Instant, c_us: u64) -> TraceRecord {
        TraceRecord {
            member: 0,
            op,
            offset,
            len,
            arrival: a,
            completion: a + Duration::from_micros(c_us),
            errno: 0,
        }
    }

    #[test]
    fn blkparse_lines_have_the_default_layout() {
        let d = TraceDevice {
            member: 0,
            path: "/dev/loop3".into(),
            major: 7,
            minor: 3,
        };
        let t = Instant::now();
        let r = rec(TraceOp::Write, 8192, 4096, t, 10);
        assert_eq!(
            blkparse_line(&d, 1, 1_500_000_123, false, &r),
            "  7,3    0        1     1.500000123     0  Q   W 16 + 8 [ioDimm0]\n"
        );
        let mut f = rec(TraceOp::Flush, 0, 0, t, 10);
        assert_eq!(
            blkparse_line(&d, 2, 5, false, &f),
            "  7,3    0        2     0.000000005     0  Q  FN [ioDimm0]\n"
        );
        f.errno = 5;
        assert_eq!(
            blkparse_line(&d, 3, 5, true, &f),
            "  7,3    0        3     0.000000005     0  C  FN 0 [-5]\n"
        );
    }

    /// Records handed over out of arrival order come out in order, in
    /// both formats, rotated, with the iolog's header and close lines.
    #[test]
    fn the_writer_orders_rotates_and_closes() {
        let dir = std::env::temp_dir().join(format!("vsl-capture-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let c = Capture::start_writer().unwrap();
        let dev = TraceDevice {
            member: 0,
            path: "/dev/loopX".into(),
            major: 7,
            minor: 9,
        };
        let opts = TraceOptions::new(&dir, "4k", "both").unwrap();
        c.start(opts.clone(), vec![dev.clone()]).unwrap();
        assert!(c.start(opts.clone(), vec![dev.clone()]).is_err());
        let t = Instant::now();
        // The second arrives first but completes later: handed over later.
        let n = 200u64;
        for i in 0..n {
            let a = t + Duration::from_micros(100 * i);
            c.record(|| rec(TraceOp::Write, i * 4096, 4096, a, 50));
        }
        c.record(|| rec(TraceOp::Read, 0, 4096, t + Duration::from_micros(1), 30_000));
        assert!(c.stop());
        let s = c.status();
        assert_eq!(s.state, "off");
        assert_eq!(s.records, n + 1);
        assert_eq!(s.dropped, 0);
        let mut iologs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "iolog"))
            .collect();
        iologs.sort();
        assert!(iologs.len() >= 2, "no rotation: {iologs:?}");
        let mut ops = Vec::new();
        for p in &iologs {
            let text = std::fs::read_to_string(p).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], "fio version 3 iolog");
            assert!(lines[1].ends_with(" /dev/loopX add"), "{}", lines[1]);
            assert!(lines[2].ends_with(" /dev/loopX open"), "{}", lines[2]);
            assert!(lines.last().unwrap().ends_with(" /dev/loopX close"));
            let mut last = 0u64;
            for l in &lines[3..lines.len() - 1] {
                let f: Vec<&str> = l.split(' ').collect();
                assert_eq!(f.len(), 5, "{l}");
                let ts: u64 = f[0].parse().unwrap();
                assert!(ts >= last, "time went back: {l}");
                last = ts;
                ops.push((f[2].to_string(), f[3].parse::<u64>().unwrap()));
            }
        }
        assert_eq!(ops.len() as u64, n + 1);
        assert_eq!(ops[0], ("write".to_string(), 0));
        assert_eq!(ops[1], ("read".to_string(), 0));
        assert_eq!(ops[2], ("write".to_string(), 4096));
        // blkparse: a Q and a C per record.
        let mut q = 0;
        let mut cc = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|e| e == "blkparse") {
                let text = std::fs::read_to_string(&p).unwrap();
                q += text.lines().filter(|l| l.contains("  Q ")).count();
                cc += text.lines().filter(|l| l.contains("  C ")).count();
            }
        }
        assert_eq!((q, cc), (n as usize + 1, n as usize + 1));
        // Resumed: new files after the old ones.
        let before = iologs.len();
        c.start(opts, vec![dev]).unwrap();
        c.record(|| rec(TraceOp::Discard, 4096, 8192, Instant::now(), 5));
        c.stop();
        let after = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "iolog")
            })
            .count();
        assert_eq!(after, before + 1);
        let last = dir.join(format!("trace.{:03}.iolog", before));
        let text = std::fs::read_to_string(last).unwrap();
        assert!(text.contains(" /dev/loopX trim 4096 8192\n"), "{text}");
        c.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_options_are_one_line() {
        let e = TraceOptions::new(Path::new("/nonexistent/x"), "256M", "both").unwrap_err();
        assert!(e.starts_with("--trace /nonexistent/x: "), "{e}");
        let tmp = std::env::temp_dir();
        let e = TraceOptions::new(&tmp, "1k", "both").unwrap_err();
        assert!(e.contains("at least 4096"), "{e}");
        let e = TraceOptions::new(&tmp, "256M", "csv").unwrap_err();
        assert!(e.contains("expected iolog, blkparse or both"), "{e}");
        let e = TraceOptions::new(&tmp, "lots", "both").unwrap_err();
        assert!(e.starts_with("--trace-rotate 'lots'"), "{e}");
    }
}
