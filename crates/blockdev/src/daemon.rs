//! The attach daemon: opens the store, builds one [`Engine`] per ioMemory
//! device, mounts [`CardFs`], attaches a loop device to each device file and
//! serves a control socket (`status`, `detach`, `atomic`: see
//! [`crate::atomic`]) until detached or signalled.
//!
//! Runtime state lives in a run directory (`/run/openvsl/<name>/`, or under
//! `$OPENVSL_RUN_DIR`): `state.json` ([`AttachState`]), `control.sock`
//! (owner-only; the protocol is [`crate::control`]), the FUSE mount point
//! `mnt/` and `daemon.log` (the forked daemon's `tracing` output). What must
//! survive a reboot is an [`AttachRecord`] under `/var/lib/openvsl`
//! ([`crate::record`]), removed only by `detach`.

use crate::control::{self, ControlError};
use crate::engine::{Engine, Timing};
use crate::fs::{device_file_name, CardFs};
use crate::record::{self, AttachRecord};
use crate::status::Sampler;
use crate::store::{Store, StoreHeader};
use crate::timer::Timer;
use anyhow::{anyhow, bail, Context, Result};
use device::CardConfig;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

pub use crate::state::{
    list_states, loop_backing_file, loops_backed_under, name_for_store, orphans, AttachState,
    AttachedDevice, Orphan,
};
pub use rundir::{pid_alive, run_base};

/// Everything the daemon needs, resolved by the CLI.
pub struct DaemonConfig {
    pub store: PathBuf,
    pub header: StoreHeader,
    pub card: CardConfig,
    pub timing: Timing,
    pub fuse_threads: usize,
    /// Keep idle CPUs polling while I/O flows ([`crate::wakeup::IdlePoll`]).
    pub idle_poll: bool,
    /// FUSE over io_uring: auto (switch it on if allowed, else /dev/fuse),
    /// on (fail without it) or off.
    pub fuse_uring: UringMode,
    /// How far ahead of the model's completion an I/O is answered
    /// (`--path-cost`).
    pub path_cost: PathMode,
    /// Trim the reads' lead in a closed loop against the loop devices' own
    /// latency (`--path-trim`, [`crate::trim`]).
    pub path_trim: bool,
    /// The answering threads' SCHED_FIFO priority (`--rt-priority`,
    /// [`crate::sched`]); None: ordinary threads.
    pub rt_priority: Option<i32>,
    /// Make the store pages of the units the log opens next ready ahead
    /// (`--prefault`, [`crate::warm`]).
    pub prefault: bool,
    /// With `prefault`, drop stale slots' pages as fresh units are read in
    /// (`--recycle`, [`crate::recycle`]).
    pub recycle: bool,
    /// Saved once the daemon is up, so `vsl attach --restore` brings the
    /// store back after a reboot; removed by `detach`.
    pub record: Option<AttachRecord>,
    /// Tell a service manager (`sd_notify`) when stopping.
    pub notify: bool,
    /// Capture every request from attach on (`--trace`, [`crate::capture`]).
    pub trace: Option<crate::capture::TraceOptions>,
}

/// How far ahead of the model's completion the daemon answers an I/O
/// (`--path-cost`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PathMode {
    /// The kernel path's round trip, probed at attach, so the client sees
    /// the model's latency.
    Probe,
    /// The model's host software cost.
    Host,
    /// No lead: answered at the model's completion, so the daemon's own
    /// per-request latency is the model's (the client sees it plus the
    /// kernel path).
    None,
}

/// `--fuse-uring`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UringMode {
    Auto,
    On,
    Off,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// The store is read through a mapping: a media error on the disk under
/// it, or a store file truncated behind the daemon's back, raises SIGBUS.
/// The daemon cannot go on; it says why in daemon.log and exits. Every
/// acknowledged write is already in the store (power-cut safe), and
/// `vsl detach` or a re-attach cleans up.
extern "C" fn on_sigbus(_: libc::c_int) {
    const MSG: &[u8] = b"vsl: SIGBUS reading the store through its mapping (a media error on \
the disk under the store, or a store file truncated): the daemon stops; acknowledged writes \
are in the store; `vsl detach` cleans up, a re-attach recovers\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::_exit(75);
    }
}

fn install_signal_handlers() {
    // SAFETY: the handlers only store to an atomic, or write and exit.
    unsafe {
        libc::signal(libc::SIGBUS, on_sigbus as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
    }
}

/// Removes what a crashed daemon of the same store left behind: its loop
/// devices, its dead FUSE mount and its run directory.
pub fn clean_stale(name: &str) {
    let dir = run_base().join(name);
    let Ok(text) = std::fs::read_to_string(dir.join("state.json")) else {
        let _ = umount_lazy(&dir.join("mnt"));
        return;
    };
    let Ok(st) = serde_json::from_str::<AttachState>(&text) else {
        return;
    };
    if st.alive() {
        return;
    }
    let _ = release_leftovers(&st.mountpoint);
}

/// Frees what an attachment with no daemon left still holds: the loop
/// devices bound to files in its mount, the mount and its run directory
/// (the mount's parent). Tries every step; returns the first error.
pub fn release_leftovers(mountpoint: &Path) -> Result<()> {
    let mut first: Option<anyhow::Error> = None;
    for d in loops_backed_under(mountpoint) {
        if let Err(e) = losetup_detach(&d) {
            first.get_or_insert(e);
        }
    }
    if let Err(e) = umount_lazy(mountpoint) {
        // Not mounted any more is what we want.
        if e.raw_os_error() != Some(libc::EINVAL) {
            first.get_or_insert(anyhow!("unmounting {}: {e}", mountpoint.display()));
        }
    }
    if let Some(dir) = mountpoint.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    first.map_or(Ok(()), Err)
}

/// Waits up to `timeout` for daemon `pid` to exit.
pub fn wait_exit(pid: u32, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while pid_alive(pid) {
        if Instant::now() > deadline {
            bail!(
                "daemon pid {pid} did not stop within {} s",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Stops an orphan: signals its daemon (which detaches, flushes and
/// unmounts as on `vsl detach`) and waits for it, or, with no daemon left,
/// detaches its loop devices and unmounts it.
pub fn stop_orphan(o: &Orphan, timeout: Duration) -> Result<()> {
    match o.pid {
        Some(pid) => {
            // SAFETY: plain kill(2); the pid was checked to be an attach daemon.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            wait_exit(pid, timeout)
        }
        None => release_leftovers(&o.mountpoint),
    }
}

fn umount_lazy(p: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes())?;
    // SAFETY: umount2 with a valid C string.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Where `dev` is mounted, if it is.
pub fn mounted_at(dev: &str) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()? == dev).then(|| f.next().unwrap_or("?").to_string())
    })
}

/// True when something (a mount, md, an O_EXCL opener) holds `dev`.
pub fn device_busy(dev: &str) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
        .is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY))
}

fn losetup_attach(file: &Path, sector: u32, rq_affinity: u32) -> Result<String> {
    let out = Command::new("losetup")
        .args(["--find", "--show", "--direct-io=on", "--sector-size"])
        .arg(sector.to_string())
        .arg(file)
        .output()
        .context("running losetup (install util-linux)")?;
    if !out.status.success() {
        bail!(
            "losetup {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The kernel may quietly fall back to buffered I/O; the issue asks for
    // direct I/O, so say so if it did.
    let name = dev.trim_start_matches("/dev/");
    if let Ok(dio) = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio")) {
        if dio.trim() != "1" {
            warn!("{dev} runs without direct I/O");
        }
    }
    // Where completions run (docs/ATTACH_PERF.md, seventh and eighth
    // rounds); written even when it is the default, in case a daemon
    // killed while attached left the device otherwise. The default, 1, is
    // put back at detach.
    if let Err(e) = set_rq_affinity(&dev, rq_affinity) {
        if rq_affinity != RQ_AFFINITY_DEFAULT {
            warn!("{dev}: completions stay where the kernel puts them ({e})");
        }
    }
    Ok(dev)
}

/// The kernel's default `rq_affinity`, put back at detach.
const RQ_AFFINITY_DEFAULT: u32 = 1;

/// `rq_affinity` of the loop devices while attached. With model timing, 2:
/// complete each request on the CPU that submitted it. A loop device has
/// one hardware queue, so with the default (1) the daemon's answer, given
/// from its queue thread, raises the block softirq there and wakes
/// `ksoftirqd` to complete it; with 2 the completion is sent to the
/// client's CPU, which helps the few-thread clients the model paces. With
/// no timing the default stays: at 128 requests in flight the
/// inter-processor interrupt per request costs more than it saves
/// (alternating A/B, docs/ATTACH_PERF.md, eighth round).
fn rq_affinity_for(timing: Timing) -> u32 {
    match timing {
        Timing::Model => 2,
        Timing::None => RQ_AFFINITY_DEFAULT,
    }
}

/// Writes `/sys/block/<dev>/queue/rq_affinity`.
fn set_rq_affinity(dev: &str, value: u32) -> std::io::Result<()> {
    let name = dev.trim_start_matches("/dev/");
    std::fs::write(
        format!("/sys/block/{name}/queue/rq_affinity"),
        format!("{value}\n"),
    )
}

/// The kernel path's round trip through a loop device over the `.probe`
/// file ([`crate::wakeup::probe`]).
fn probe_kernel_path(file: &Path) -> Result<crate::wakeup::PathCost> {
    let dev = losetup_attach(file, 512, rq_affinity_for(Timing::Model))?;
    let r = crate::wakeup::probe(Path::new(&dev), 500);
    let d = losetup_detach(&dev);
    let cost = r.with_context(|| format!("probe I/O on {dev}"))?;
    d?;
    Ok(cost)
}

fn losetup_detach(dev: &str) -> Result<()> {
    // The loop device is shared with other users once detached.
    let _ = set_rq_affinity(dev, RQ_AFFINITY_DEFAULT);
    let st = Command::new("losetup").arg("-d").arg(dev).status()?;
    if !st.success() {
        bail!("losetup -d {dev} failed");
    }
    Ok(())
}

/// Saves a device's erase counts and lifetime counters, or says in the
/// daemon's log why it could not.
fn save_counters(e: &Engine) {
    if let Err(err) = e.save_counters() {
        error!("saving the counters of ioMemory device {}: {err}", e.member);
    }
}

/// A running attachment: mounted, looped, serving.
pub struct Daemon {
    state: AttachState,
    engines: Vec<Arc<Engine>>,
    session: Option<fuser::BackgroundSession>,
    timer: Arc<Timer>,
    timer_thread: Option<std::thread::JoinHandle<()>>,
    listener: UnixListener,
    idle: crate::wakeup::IdlePoll,
    queues: Option<crate::uring::Queues>,
    /// The warm threads ([`crate::warm`]) and their stop flag.
    warmers: Vec<std::thread::JoinHandle<()>>,
    warm_stop: Arc<AtomicBool>,
    _store: Store,
    /// The persistent record of this attachment, saved at start.
    record: Option<AttachRecord>,
    /// `sd_notify` the service manager.
    notify: bool,
    /// `detach` was asked for (rather than a signal): the record goes.
    detach_requested: bool,
    /// Trace capture (`--trace`, `vsl trace`).
    capture: Arc<crate::capture::Capture>,
    /// The FUSE ring queues' entry use ([`crate::fs::RingUse`]).
    ring_use: Arc<crate::fs::RingUse>,
}

/// Most atomic writes served at once; more are refused with `busy` (each
/// holds up to [`crate::atomic::BYTES_MAX`] of data and a thread).
const ATOMIC_IN_FLIGHT_MAX: usize = 16;
static ATOMIC_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Releases an atomic-write slot when the serving thread ends.
struct AtomicSlot;
impl AtomicSlot {
    fn take() -> Result<AtomicSlot, ControlError> {
        let n = ATOMIC_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if n >= ATOMIC_IN_FLIGHT_MAX {
            ATOMIC_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            return Err(ControlError::Busy(n));
        }
        Ok(AtomicSlot)
    }
}
impl Drop for AtomicSlot {
    fn drop(&mut self) {
        ATOMIC_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Daemon {
    /// Opens the store, recovers, mounts and attaches. On error, undoes
    /// what it did.
    pub fn start(cfg: DaemonConfig) -> Result<Daemon> {
        install_signal_handlers();
        let name = name_for_store(&cfg.store);
        clean_stale(&name);
        let mut store = Store::open(&cfg.store, &cfg.header)?;
        let epoch = Instant::now();
        let mut engines = Vec::new();
        for ms in std::mem::take(&mut store.members) {
            let mut c = cfg.card.clone();
            c.member = device::MemberSel::One(ms.member);
            c.track_sequence = true;
            let member = ms.member;
            let e = Engine::open(c, ms, epoch, cfg.timing)
                .with_context(|| format!("ioMemory device {member}"))?;
            engines.push(Arc::new(e));
        }
        let dir = run_base().join(&name);
        std::fs::create_dir_all(dir.join("mnt"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let socket = dir.join("control.sock");
        let _ = std::fs::remove_file(&socket);
        let listener =
            UnixListener::bind(&socket).with_context(|| format!("binding {}", socket.display()))?;
        // Owner only; a connection made before this is refused by
        // `control::peer_allowed`.
        control::restrict(&socket)
            .with_context(|| format!("making {} owner-only", socket.display()))?;
        listener.set_nonblocking(true)?;
        let mut idle = crate::wakeup::IdlePoll::new(cfg.idle_poll);
        // The probe below runs under the same wake-up latency as the I/O.
        idle.hold();
        // Only answers held until the model's time need a prompt wake-up;
        // at full speed (`--timing none`) a real-time serving thread would
        // only take the CPU from the loop device's worker and the client.
        let wants_rt = cfg.rt_priority.filter(|_| cfg.timing == Timing::Model);
        let rt = wants_rt.and_then(|p| match crate::sched::check(p) {
            Ok(()) => Some(p),
            Err(why) => {
                warn!("the answering threads stay ordinary threads ({why}): answers may be late under load");
                None
            }
        });
        let (timer, timer_thread) = Timer::start(rt);
        let want_uring = match cfg.fuse_uring {
            UringMode::Off => false,
            mode => match crate::uring::enable_in_kernel().and_then(|()| crate::uring::usable()) {
                Ok(()) => true,
                Err(why) if mode == UringMode::On => {
                    bail!("--fuse-uring on: FUSE over io_uring cannot be switched on ({why})")
                }
                Err(why) => {
                    warn!("FUSE over io_uring is off ({why}); serving through /dev/fuse");
                    false
                }
            },
        };
        let capture =
            crate::capture::Capture::start_writer().context("starting the trace writer")?;
        let fs =
            CardFs::new(engines.clone(), timer.clone(), want_uring).with_capture(capture.clone());
        let ring_fs = fs.clone();
        let ring_use = fs.ring_use();
        let mnt = dir.join("mnt");
        let mut fcfg = fuser::Config::default();
        fcfg.mount_options = vec![
            // The pid lets `vsl detach` find this daemon even if the state
            // file is deleted by hand (see [`orphans`]).
            fuser::MountOption::FSName(format!("openvsl:{name}:{}", std::process::id())),
            fuser::MountOption::Subtype("openvsl".into()),
        ];
        fcfg.n_threads = Some(cfg.fuse_threads.max(1));
        fcfg.clone_fd = true;
        let session = fuser::Session::new(fs, &mnt, &fcfg)
            .map_err(|e| anyhow!("mounting FUSE at {}: {e}", mnt.display()))?;
        // The connection's descriptor, for the io_uring queues.
        let conn_fd = {
            use std::os::fd::{AsFd, AsRawFd};
            // SAFETY: duplicates a valid descriptor.
            unsafe { libc::fcntl(session.as_fd().as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) }
        };
        let session = session
            .spawn()
            .map_err(|e| anyhow!("mounting FUSE at {}: {e}", mnt.display()))?;
        let mut state = AttachState {
            name,
            pid: std::process::id(),
            store: cfg.store.clone(),
            device: cfg.card.preset.name.to_string(),
            timing: cfg.timing,
            devices: Vec::new(),
            socket,
            mountpoint: mnt.clone(),
            idle_poll: cfg.idle_poll,
            path_cost: None,
            fuse_transport: "/dev/fuse".into(),
            path_trim: cfg.path_trim && cfg.timing == Timing::Model,
            rq_affinity: rq_affinity_for(cfg.timing),
            rt_priority: rt,
        };
        let mut d = Daemon {
            state: state.clone(),
            engines,
            session: Some(session),
            timer,
            timer_thread: Some(timer_thread),
            listener,
            idle,
            queues: None,
            warmers: Vec::new(),
            warm_stop: Arc::new(AtomicBool::new(false)),
            _store: store,
            record: cfg.record.clone(),
            notify: cfg.notify,
            detach_requested: false,
            capture,
            ring_use,
        };
        if want_uring {
            // Once negotiated, the kernel holds every request until the
            // queues are registered: a failure here cannot fall back to
            // /dev/fuse on this mount.
            let r = match ring_fs.wait_init(Duration::from_secs(10)) {
                None => Err(Some("no FUSE_INIT from the kernel in 10 s".to_string())),
                Some(false) => Err(None),
                Some(true) => {
                    crate::uring::Queues::start(conn_fd, ring_fs, crate::fs::MAX_WRITE as usize, rt)
                        .map_err(Some)
                }
            };
            match r {
                Ok(q) => {
                    state.fuse_transport = format!("io_uring ({} queues)", q.len());
                    d.queues = Some(q);
                }
                Err(None) if cfg.fuse_uring != UringMode::On => warn!(
                    "the kernel did not offer FUSE over io_uring in FUSE_INIT; serving through /dev/fuse"
                ),
                Err(why) => {
                    let why = why.unwrap_or_else(|| "the kernel did not offer it in FUSE_INIT".into());
                    d.state = state;
                    d.shutdown();
                    bail!("FUSE over io_uring did not start ({why}); attach with --fuse-uring off");
                }
            }
        }
        for e in &d.engines {
            let file = mnt.join(device_file_name(e.member));
            match losetup_attach(&file, e.sector_bytes(), state.rq_affinity) {
                Ok(dev) => state.devices.push(AttachedDevice {
                    member: e.member,
                    loop_device: dev,
                    file,
                    capacity_bytes: e.capacity_bytes(),
                    sector_bytes: e.sector_bytes(),
                }),
                Err(err) => {
                    d.state = state;
                    d.shutdown();
                    return Err(err);
                }
            }
        }
        if cfg.path_cost == PathMode::None {
            let zero = crate::wakeup::PathCost::default();
            d.engines.iter().for_each(|e| e.set_path_cost(zero));
            state.path_cost = Some(zero);
        }
        if cfg.path_cost == PathMode::Probe && cfg.timing == Timing::Model {
            match probe_kernel_path(&mnt.join(crate::wakeup::PROBE_FILE)) {
                Ok(cost) => {
                    d.engines.iter().for_each(|e| e.set_path_cost(cost));
                    state.path_cost = Some(cost);
                }
                Err(e) => warn!(
                    "probing the kernel path failed ({e:#}); answers allow the model's host cost instead"
                ),
            }
        }
        d.state = state;
        if let Some(t) = cfg.trace.clone() {
            if let Err(why) = d.capture.start(t, d.trace_devices()) {
                d.shutdown();
                bail!("{why}");
            }
        }
        let text = serde_json::to_string_pretty(&d.state)?;
        std::fs::write(dir.join("state.json"), text + "\n")?;
        // Started last, once everything else is up.
        if cfg.prefault {
            for e in &d.engines {
                e.warm.switch_on();
                e.warm.switch_recycle(cfg.recycle);
                let (e, stop) = (e.clone(), d.warm_stop.clone());
                let h = std::thread::Builder::new()
                    .name(format!("vsl-warm{}", e.member))
                    .spawn(move || e.warm_loop(&stop))?;
                d.warmers.push(h);
            }
        }
        if let Some(rec) = &d.record {
            // The devices serve either way; only a reboot would miss it.
            match record::save(rec) {
                Ok(()) => info!(
                    "recorded in {} for `vsl attach --restore`",
                    record::records_dir().display()
                ),
                Err(e) => error!(
                    "{e:#}: this store will not come back with `vsl attach --restore` after a reboot"
                ),
            }
        }
        let devs: Vec<&str> = d
            .state
            .devices
            .iter()
            .map(|x| x.loop_device.as_str())
            .collect();
        info!(
            store = %d.state.store.display(),
            pid = d.state.pid,
            transport = %d.state.fuse_transport,
            "attached {} ({})",
            devs.join(", "),
            d.state.device
        );
        Ok(d)
    }

    pub fn state(&self) -> &AttachState {
        &self.state
    }

    /// The loop devices a trace names.
    fn trace_devices(&self) -> Vec<crate::capture::TraceDevice> {
        self.state
            .devices
            .iter()
            .map(|d| crate::capture::TraceDevice::of(d.member, &d.loop_device))
            .collect()
    }

    /// Serves the control socket until `detach` or a signal.
    pub fn serve(mut self) -> Result<()> {
        let mut sampler = Sampler::new(&self.engines);
        let mut next_sample = Instant::now() + Duration::from_secs(1);
        let mut trimmers: Vec<(Arc<Engine>, crate::trim::Trimmer)> = if self.state.path_trim {
            self.state
                .devices
                .iter()
                .filter_map(|d| {
                    let e = self.engines.iter().find(|e| e.member == d.member)?;
                    Some((e.clone(), crate::trim::Trimmer::new(&d.loop_device)))
                })
                .collect()
        } else {
            Vec::new()
        };
        while !STOP.load(Ordering::SeqCst) {
            let served: u64 = self
                .engines
                .iter()
                .map(|e| {
                    e.counters.reads.load(Ordering::Relaxed)
                        + e.counters.writes.load(Ordering::Relaxed)
                        + e.counters.flushes.load(Ordering::Relaxed)
                })
                .sum();
            self.idle.tick(served);
            for (e, t) in &mut trimmers {
                t.step(&e.lead, &e.counters, e.base_lead(false, 4096));
            }
            if Instant::now() >= next_sample {
                sampler.sample(&self.engines);
                self.engines.iter().for_each(|e| save_counters(e));
                next_sample += Duration::from_secs(1);
            }
            match self.listener.accept() {
                Ok((conn, _)) => {
                    if self.handle(conn, &sampler) {
                        self.detach_requested = true;
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    // Out of descriptors, say: the devices keep serving
                    // and the next accept may succeed.
                    warn!("control socket: accept: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        if self.detach_requested {
            info!("detach requested: detaching, flushing, unmounting");
        } else {
            info!("stopped by a signal: detaching, flushing, unmounting (the record for --restore is kept)");
        }
        if self.notify {
            crate::logging::notify(&[sd_notify::NotifyState::Stopping]);
        }
        self.shutdown();
        Ok(())
    }

    /// One control request; true when it asks to detach. Whatever the
    /// peer sends, it gets one line back (or nothing if it hung up).
    fn handle(&mut self, conn: UnixStream, sampler: &Sampler) -> bool {
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = conn.set_write_timeout(Some(Duration::from_secs(5)));
        let mut w = &conn;
        let refuse = |mut w: &UnixStream, e: ControlError| {
            warn!("control socket: refused a request: {e}");
            let _ = writeln!(w, "{}", e.reply());
            // A socket closed with the peer's bytes unread resets the
            // connection, and a peer that wrote its request before reading
            // (as `vsl` does) then gets ECONNRESET instead of this line:
            // read what it sent (bounded, briefly) before closing.
            let _ = w.shutdown(std::net::Shutdown::Write);
            let _ = w.set_read_timeout(Some(Duration::from_millis(100)));
            let mut sink = [0u8; 4096];
            let mut drained = 0;
            while drained < control::LINE_BYTES_MAX {
                match std::io::Read::read(&mut w, &mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        };
        if let Err(e) = control::peer_allowed(&conn) {
            refuse(w, e);
            return false;
        }
        let Ok(read_half) = conn.try_clone() else {
            return false;
        };
        let mut r = BufReader::new(read_half);
        let cmd = match control::read_request(&mut r).and_then(|l| control::parse(&l)) {
            Ok(c) => c,
            Err(e) => {
                refuse(w, e);
                return false;
            }
        };
        match cmd {
            control::Command::TraceStart(opts) => {
                let reply = match self.capture.start(opts, self.trace_devices()) {
                    Ok(()) => "ok".to_string(),
                    Err(why) => format!("error {}", control::one_line(&why)),
                };
                let _ = writeln!(w, "{reply}");
                false
            }
            control::Command::TraceStop => {
                let was = self.capture.stop();
                let st = self.capture.status();
                let reply = match (&st.error, was) {
                    (Some(e), _) => {
                        format!("error the capture had failed: {}", control::one_line(e))
                    }
                    (None, false) => "error not capturing".to_string(),
                    (None, true) => "ok".to_string(),
                };
                let _ = writeln!(w, "{reply}");
                false
            }
            control::Command::Status => {
                let mut s = sampler.report(&self.state, &self.engines);
                s.trace = Some(self.capture.status());
                if self.queues.is_some() {
                    let r = &self.ring_use;
                    let answers = r.answers.load(Ordering::Relaxed);
                    let mean = |ns: &std::sync::atomic::AtomicU64| {
                        ns.load(Ordering::Relaxed) as f64 / answers.max(1) as f64 / 1e3
                    };
                    s.fuse_entries = Some(crate::status::FuseEntries {
                        per_queue: crate::uring::ENTRIES as u64,
                        most_in_use: r.most_in_use.load(Ordering::Relaxed),
                        all_in_use: r.all_in_use.load(Ordering::Relaxed),
                        answers,
                        late_waiting_mean_us: mean(&r.late_waiting_ns),
                        late_working_mean_us: mean(&r.late_working_ns),
                        late_100us_waiting: r.late_100us_waiting.load(Ordering::Relaxed),
                        late_100us_working: r.late_100us_working.load(Ordering::Relaxed),
                    });
                }
                let _ = writeln!(w, "{}", serde_json::to_string(&s).unwrap_or_default());
                false
            }
            control::Command::Detach => {
                for d in &self.state.devices {
                    if device_busy(&d.loop_device) {
                        let at = mounted_at(&d.loop_device)
                            .map(|m| format!("mounted on {m}"))
                            .unwrap_or_else(|| "in use".into());
                        let _ = writeln!(w, "error {} is {at}; unmount it first", d.loop_device);
                        return false;
                    }
                }
                let _ = writeln!(w, "ok");
                true
            }
            control::Command::Atomic(req) => {
                self.spawn_atomic(conn, r, req);
                false
            }
        }
    }

    /// Serves an atomic write on its own thread: the group waits for a
    /// store sync and the model, and `status` must not wait behind it.
    fn spawn_atomic(
        &self,
        conn: UnixStream,
        mut r: BufReader<UnixStream>,
        req: control::AtomicRequest,
    ) {
        let slot = match AtomicSlot::take() {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(&conn, "{}", e.reply());
                return;
            }
        };
        let engines = self.engines.clone();
        let spawned = std::thread::Builder::new()
            .name("vsl-atomic".into())
            .spawn(move || {
                let _slot = slot;
                let mut w = &conn;
                crate::atomic::serve(&engines, &req, &mut r, &mut w);
            });
        if let Err(e) = spawned {
            // The closure (and the connection in it) is gone: the client
            // sees the connection close without an answer.
            error!("no thread for an atomic write: {e}");
        }
    }

    /// Detaches the loop devices, flushes, unmounts and removes the state.
    fn shutdown(&mut self) {
        for d in &self.state.devices {
            if let Err(e) = losetup_detach(&d.loop_device) {
                error!("{e:#}");
            }
        }
        // The loop driver lets go of the file asynchronously, once its
        // last opener (a udev probe, say) closes it: up to 10 s.
        for _ in 0..1000 {
            if self.state.devices.iter().all(|d| {
                loop_backing_file(&d.loop_device)
                    .is_none_or(|f| !f.starts_with(&self.state.mountpoint))
            }) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The loop devices are gone: every request is answered.
        self.capture.shutdown();
        self.warm_stop.store(true, Ordering::SeqCst);
        for h in self.warmers.drain(..) {
            let _ = h.join();
        }
        for e in &self.engines {
            save_counters(e);
            if let Err(err) = e.flush() {
                error!("flushing ioMemory device {}: {err}", e.member);
            }
        }
        if let Some(s) = self.session.take() {
            if let Err(e) = s.umount_and_join() {
                error!("unmounting {}: {e}", self.state.mountpoint.display());
                let _ = umount_lazy(&self.state.mountpoint);
            }
        }
        if let Some(mut q) = self.queues.take() {
            q.stop();
        }
        self.timer.stop();
        if let Some(h) = self.timer_thread.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_dir_all(self.state.dir());
        if self.detach_requested {
            if let Err(e) = record::remove(&self.state.name) {
                error!("{e:#}: `vsl attach --restore` would bring this store back");
            }
        }
        info!("detached");
    }
}

/// Sends one control command to a daemon and returns its reply line.
pub fn control(socket: &Path, cmd: &str) -> Result<String> {
    let mut s = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let owner = std::fs::metadata(socket).map_or_else(
                |_| "its owner".to_string(),
                |m| format!("uid {}", std::os::unix::fs::MetadataExt::uid(&m)),
            );
            anyhow::bail!(
                "permission denied: the control socket {} is for {owner} only; run this as that user (root)",
                socket.display()
            );
        }
        Err(e) => {
            return Err(e).with_context(|| format!("connecting to {}", socket.display()));
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    writeln!(s, "{cmd}")?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line)?;
    Ok(line.trim_end().to_string())
}
