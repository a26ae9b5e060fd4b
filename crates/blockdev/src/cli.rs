//! The command-line surface of real-time serving, for the `vsl` binary to
//! flatten in: [`AttachArgs`] / [`run_attach`] (`vsl attach`, `vsl attach
//! --list`, `vsl attach --restore`, `vsl attach --foreground` for service
//! managers), [`DetachArgs`] / [`run_detach`] (`vsl detach`) and
//! [`StatusArgs`] / [`run_status`] (`vsl status`).

use crate::daemon::{self, control, device_busy, mounted_at, stop_orphan, Daemon, DaemonConfig};
use crate::engine::Timing;
use crate::record::{self, AttachRecord, RECORD_VERSION};
use crate::state::{
    list_states, name_for_store, orphans, select, select_with_orphans, AttachState,
};
use crate::status::StatusReport;
use crate::store::{CardSpec, Store, StoreHeader};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser};
/// The card options are parsed by `device` for every command.
pub use device::spec::{card_config, on_off};
use device::{Card, CardConfig, CardSpecArgs, MemberSel, ReliabilityArgs};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `vsl attach`: serve a modelled card as Linux block devices. Also what
/// an [`AttachRecord`] keeps (as JSON; an option a record lacks takes its
/// default), so that `--restore` attaches a store as it was.
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct AttachArgs {
    /// Directory holding the card's data (created on first attach).
    #[arg(long, required_unless_present_any = ["list", "restore"])]
    pub store: Option<PathBuf>,
    /// List what is attached instead.
    #[arg(long)]
    pub list: bool,
    /// Re-attach every store that was attached when the machine went down
    /// (or its daemon died), with the options it was attached with: the
    /// records under /var/lib/openvsl/attached ($OPENVSL_STATE_DIR), which
    /// `vsl detach` removes. Stores attached by a service unit are left to
    /// it.
    #[arg(long, conflicts_with_all = ["store", "list", "foreground"])]
    pub restore: bool,
    /// The card: on an existing store, given options replace the store's
    /// card (all of them: unset ones take their defaults); none keeps it.
    #[command(flatten)]
    #[serde(flatten)]
    pub card: CardSpecArgs,
    /// model: every I/O completes no earlier than the model says;
    /// none: serve at full emulator speed.
    #[arg(long, default_value = "model")]
    pub timing: String,
    /// FUSE worker threads (default: one per CPU; more only adds context
    /// switches on a small machine).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Keep idle CPUs polling while I/O flows (a PM QoS request on
    /// /dev/cpu_dma_latency, dropped after 2 s without I/O): on or off. A
    /// halted CPU's wake-up (20-40 µs in a VM) otherwise adds to every
    /// hand-off of every I/O.
    #[arg(long, default_value = "on")]
    pub idle_poll: String,
    /// FUSE over io_uring: auto (switch the kernel's enable_uring on if
    /// allowed and use it, else serve through /dev/fuse reads), on (fail
    /// without it) or off.
    #[arg(long, default_value = "auto")]
    pub fuse_uring: String,
    /// How much earlier than the model's completion an I/O is answered, so
    /// that the client sees the model's latency: probe (the kernel path's
    /// round trip, measured at attach through a loop device over the
    /// daemon's .probe file), host (the model's host software cost) or
    /// none (answered at the model's completion, so the daemon's own
    /// per-request latency is the model's; the client then sees the model
    /// plus the kernel path; --path-trim is off).
    #[arg(long, default_value = "probe")]
    pub path_cost: String,
    /// Trim the reads' lead while they flow so that the loop device's mean
    /// read latency (its /sys/block statistics) matches the model's: on or
    /// off. The probe sees the path with one I/O in flight; under
    /// concurrency it takes longer.
    #[arg(long, default_value = "on")]
    pub path_trim: String,
    /// The threads that answer I/Os at the model's time run SCHED_FIFO at
    /// this priority (1-99), so that a client keeping every CPU busy does
    /// not make the answers late; off: ordinary threads. With --timing
    /// none nothing waits for a time and it is off. Without the permission
    /// (root or CAP_SYS_NICE) the daemon logs it and goes on.
    #[arg(long, default_value = "10")]
    pub rt_priority: String,
    /// Make the store pages of the units the log opens next ready ahead: a
    /// thread per device syncs the store, zeroes each such free unit's
    /// range (unwritten extents, still allocated) and reads it into the
    /// page cache, so that host writes do not allocate and first-touch
    /// pages (9 µs per page in a VM): on or off.
    #[arg(long, default_value = "on")]
    pub prefault: String,
    /// With --prefault: for each page read in for a unit never written,
    /// drop one cached page of a stale slot (data superseded, written
    /// back first), so that the page cache does not grow into memory the
    /// machine never used (a host fault per page in a VM): on or off.
    #[arg(long, default_value = "on")]
    pub recycle: String,
    /// Stay in the foreground instead of daemonizing, for service managers:
    /// logs go to stderr (the journal), readiness is sent with sd_notify
    /// (READY=1, when NOTIFY_SOCKET is set), SIGTERM or Ctrl-C stops it
    /// (keeping its --restore record; `vsl detach` removes it).
    #[arg(long)]
    pub foreground: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub reliability: ReliabilityArgs,
    /// Capture every request the card serves (arrival, completion, ioMemory
    /// device, op, offset, length) into this existing directory, as fio
    /// iolog v3 (trace.NNN.iolog) and blkparse text (trace.NNN.blkparse);
    /// `vsl trace stop|start` switch it off and on while attached.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// Start a new trace file when one reaches this size (e.g. 256M, 1G).
    #[arg(long, default_value = crate::capture::ROTATE_DEFAULT, value_name = "SIZE")]
    pub trace_rotate: String,
    /// Trace files to write: iolog, blkparse or both.
    #[arg(long, default_value = "both")]
    pub trace_format: String,
}

/// `vsl detach`: flush, detach and stop an attached card.
#[derive(Args, Debug, Clone)]
pub struct DetachArgs {
    /// A loop device (/dev/loopN), store directory or attachment name.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub device: Option<String>,
    /// Detach every attached card.
    #[arg(long)]
    pub all: bool,
}

/// `vsl status`: live counters of attached cards.
#[derive(Args, Debug, Clone)]
pub struct StatusArgs {
    /// A loop device, store directory or attachment name (default: all).
    pub device: Option<String>,
    /// Print the daemon's JSON report.
    #[arg(long)]
    pub json: bool,
}

/// [`AttachArgs`] alone, to parse a record's defaults.
#[derive(Parser)]
struct AttachOnly {
    #[command(flatten)]
    a: AttachArgs,
}

impl Default for AttachArgs {
    /// What `vsl attach` means with no option (store and all unset).
    fn default() -> Self {
        let mut a = AttachOnly::try_parse_from(["attach", "--list"])
            .expect("attach's defaults parse")
            .a;
        a.list = false;
        a
    }
}

impl AttachArgs {
    /// The options a record keeps: these, with the store canonical and
    /// the one-off switches off.
    fn recorded(&self, store: &Path) -> AttachArgs {
        let mut a = self.clone();
        a.store = Some(store.to_path_buf());
        a.list = false;
        a.restore = false;
        a.foreground = false;
        a
    }

    /// The card options as the store records them.
    pub fn card_spec(&self) -> CardSpec {
        self.card.spec()
    }
}

/// Resolves the card and the store header it needs.
fn resolve(a: &AttachArgs, store: &Path) -> Result<(CardConfig, StoreHeader)> {
    let existing = Store::read_header(store)?;
    let spec = match (&existing, a.card.any()) {
        (Some(h), false) => h.card.clone(),
        _ => a.card_spec(),
    };
    let mut card = card_config(&spec)?;
    a.reliability.apply(&mut card)?;
    let members: Vec<u32> = match card.member {
        MemberSel::All => (0..card.preset.members).collect(),
        MemberSel::One(i) => vec![i],
    };
    // Builds member 0's model once to validate the format and size the store.
    let mut one = card.clone();
    one.member = MemberSel::One(members[0]);
    let probe = Card::new(one)?;
    let m = probe.member(0);
    let header = StoreHeader::new(spec, members, m.config(), m.physical_slots());
    Ok((card, header))
}

fn preflight() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("vsl attach needs root (it mounts FUSE and sets up loop devices); run it with sudo");
    }
    if !Path::new("/dev/fuse").exists() {
        bail!("/dev/fuse does not exist: load the fuse module (modprobe fuse) or run where FUSE is available");
    }
    if !Path::new("/dev/loop-control").exists() {
        bail!("/dev/loop-control does not exist: load the loop module (modprobe loop)");
    }
    if std::process::Command::new("losetup")
        .arg("--version")
        .output()
        .is_err()
    {
        bail!("losetup not found: install util-linux");
    }
    Ok(())
}

fn timing(s: &str) -> Result<Timing> {
    match s {
        "model" => Ok(Timing::Model),
        "none" => Ok(Timing::None),
        _ => bail!("--timing: '{s}' (expected model or none)"),
    }
}

fn print_attached(st: &AttachState) {
    for d in &st.devices {
        println!(
            "{}\tioMemory device {} of {}\t{:.2} GB\t{}-byte sectors\tstore {}\tFUSE {}",
            d.loop_device,
            d.member,
            st.device,
            d.capacity_bytes as f64 / 1e9,
            d.sector_bytes,
            st.store.display(),
            if st.fuse_transport.is_empty() {
                "/dev/fuse"
            } else {
                st.fuse_transport.as_str()
            }
        );
    }
}

/// `vsl attach`. Must be called while the process is single-threaded
/// (it forks the daemon), i.e. straight from `main`.
pub fn run_attach(a: AttachArgs) -> Result<()> {
    if a.list {
        return list();
    }
    if a.restore {
        return restore();
    }
    attach(a)
}

/// `vsl attach --restore`: every recorded store not attached now, one
/// daemon each, as it was attached. A store that fails does not stop the
/// others; the command fails if any did.
fn restore() -> Result<()> {
    let (records, unreadable) = record::list();
    for (path, why) in &unreadable {
        eprintln!("vsl: warning: skipping {}: {why}", path.display());
    }
    if records.is_empty() {
        println!(
            "nothing to restore: no store was attached (no record in {})",
            record::records_dir().display()
        );
        return Ok(());
    }
    let mut failed = Vec::new();
    for rec in &records {
        let store = rec.store.display();
        if rec.service {
            println!("{store}: attached by a service unit (openvsl@.service), left to it");
            continue;
        }
        if let Some(st) = list_states()
            .into_iter()
            .find(|s| s.name == rec.name && s.alive())
        {
            println!("{store}: already attached (daemon pid {})", st.pid);
            continue;
        }
        println!("{store}: re-attaching");
        if let Err(e) = restore_one(rec) {
            eprintln!("vsl: error: {store}: {e:#}");
            failed.push(store.to_string());
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} recorded stores were not re-attached: {}",
            failed.len(),
            records.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

fn restore_one(rec: &AttachRecord) -> Result<()> {
    let mut a: AttachArgs = serde_json::from_value(rec.options.clone())
        .context("reading the recorded attach options")?;
    // A store that is gone is not created afresh: that would serve an
    // empty card where data was.
    if Store::read_header(&rec.store)?.is_none() {
        bail!(
            "the store is gone (no store.json): not re-attached; `vsl detach {}` forgets it",
            rec.name
        );
    }
    a.store = Some(rec.store.clone());
    a.foreground = false;
    a.restore = false;
    a.list = false;
    attach(a)
}

fn attach(mut a: AttachArgs) -> Result<()> {
    let store = a.store.clone().expect("clap requires --store");
    let timing = timing(&a.timing)?;
    let idle_poll = on_off("--idle-poll", a.idle_poll.as_str())?;
    let fuse_uring = match a.fuse_uring.as_str() {
        "auto" => crate::daemon::UringMode::Auto,
        "on" => crate::daemon::UringMode::On,
        "off" => crate::daemon::UringMode::Off,
        o => bail!("--fuse-uring: '{o}' (expected auto, on or off)"),
    };
    let path_cost = match a.path_cost.as_str() {
        "probe" => crate::daemon::PathMode::Probe,
        "host" => crate::daemon::PathMode::Host,
        "none" => crate::daemon::PathMode::None,
        o => bail!("--path-cost: '{o}' (expected probe, host or none)"),
    };
    let rt_priority = crate::sched::parse_priority(&a.rt_priority).map_err(anyhow::Error::msg)?;
    let prefault = on_off("--prefault", a.prefault.as_str())?;
    let recycle = on_off("--recycle", a.recycle.as_str())?;
    let path_trim =
        on_off("--path-trim", a.path_trim.as_str())? && path_cost != crate::daemon::PathMode::None;
    let trace = a
        .trace
        .as_deref()
        .map(|dir| crate::capture::TraceOptions::new(dir, &a.trace_rotate, &a.trace_format))
        .transpose()
        .map_err(|e| anyhow!("{e}"))?;
    // Recorded absolute, for `--restore`.
    a.trace = trace.as_ref().map(|t| t.dir.clone());
    // Bad card options (stream ranges beyond the card included) and
    // failure options are refused before anything needs root.
    {
        let spec = match (Store::read_header(&store).ok().flatten(), a.card.any()) {
            (Some(h), false) => h.card,
            _ => a.card_spec(),
        };
        let mut c = card_config(&spec)?;
        a.reliability.apply(&mut c)?;
        c.check()?;
    }
    preflight()?;
    std::fs::create_dir_all(&store)
        .with_context(|| format!("creating store directory {}", store.display()))?;
    let store = store
        .canonicalize()
        .with_context(|| format!("store {}", store.display()))?;
    let name = name_for_store(&store);
    if let Some(st) = list_states()
        .into_iter()
        .find(|s| s.name == name && s.alive())
    {
        let devs: Vec<_> = st.devices.iter().map(|d| d.loop_device.as_str()).collect();
        bail!(
            "store {} is already attached as {} (daemon pid {})",
            store.display(),
            devs.join(", "),
            st.pid
        );
    }
    let (card, header) = resolve(&a, &store)?;
    let record = AttachRecord {
        version: RECORD_VERSION,
        name: name.clone(),
        store: store.clone(),
        service: a.foreground && crate::logging::under_service_manager(),
        options: serde_json::to_value(a.recorded(&store))?,
    };
    let cfg = DaemonConfig {
        store,
        header,
        card,
        timing,
        fuse_threads: a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().max(2))),
        idle_poll,
        path_cost,
        path_trim,
        rt_priority,
        fuse_uring,
        prefault,
        recycle,
        record: Some(record),
        notify: a.foreground,
        trace,
    };
    if a.foreground {
        crate::logging::init();
        let d = Daemon::start(cfg)?;
        print_attached(d.state());
        std::io::stdout().flush()?;
        let devs: Vec<&str> = d
            .state()
            .devices
            .iter()
            .map(|x| x.loop_device.as_str())
            .collect();
        let status = format!("attached {}", devs.join(", "));
        crate::logging::notify(&[
            sd_notify::NotifyState::Ready,
            sd_notify::NotifyState::Status(&status),
            sd_notify::NotifyState::MainPid(std::process::id()),
        ]);
        return d.serve();
    }
    daemonize(cfg)
}

/// Forks the daemon; returns once it reports its block devices (or fails).
fn daemonize(cfg: DaemonConfig) -> Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe");
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        drop(rd);
        let code = daemon_child(cfg, std::fs::File::from(wr));
        std::process::exit(code);
    }
    drop(wr);
    let mut text = String::new();
    std::fs::File::from(rd).read_to_string(&mut text)?;
    let mut lines = text.lines();
    match lines.next() {
        Some("ok") => {
            let st: AttachState = serde_json::from_str(lines.next().unwrap_or(""))
                .context("reading the daemon's state")?;
            print_attached(&st);
            Ok(())
        }
        Some(l) if l.starts_with("error ") => bail!("{}", &l[6..]),
        _ => bail!("the attach daemon exited before it was ready (pid {pid})"),
    }
}

fn daemon_child(cfg: DaemonConfig, mut ready: std::fs::File) -> i32 {
    // SAFETY: setsid in the freshly forked child.
    unsafe { libc::setsid() };
    let log_dir = daemon::run_base().join(name_for_store(&cfg.store));
    let _ = std::fs::create_dir_all(&log_dir);
    redirect_stdio(&log_dir.join("daemon.log"));
    crate::logging::init();
    match Daemon::start(cfg) {
        Ok(d) => {
            let st = serde_json::to_string(d.state()).unwrap_or_default();
            let _ = writeln!(ready, "ok\n{st}");
            drop(ready);
            match d.serve() {
                Ok(()) => 0,
                Err(e) => {
                    tracing::error!("{e:#}");
                    1
                }
            }
        }
        Err(e) => {
            tracing::error!("attach failed: {e:#}");
            let _ = writeln!(ready, "error {}", format!("{e:#}").replace('\n', " "));
            1
        }
    }
}

fn redirect_stdio(log: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    else {
        return;
    };
    let Ok(null) = std::fs::File::open("/dev/null") else {
        return;
    };
    // SAFETY: dup2 onto the standard descriptors with valid sources.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(f.as_raw_fd(), 1);
        libc::dup2(f.as_raw_fd(), 2);
    }
}

fn list() -> Result<()> {
    let states = list_states();
    let orphans = orphans();
    if states.is_empty() && orphans.is_empty() {
        println!("no card attached");
    }
    for o in &orphans {
        let daemon = o
            .pid
            .map_or("no daemon left".to_string(), |p| format!("daemon pid {p}"));
        println!(
            "{}\torphaned attachment {} (its state file is missing; {daemon}): `vsl detach --all` or `vsl detach {}` cleans it up",
            o.loop_devices.join(", "),
            o.mountpoint.display(),
            o.name
        );
    }
    for st in states {
        if st.alive() {
            print_attached(&st);
        } else {
            println!(
                "{}\tdaemon pid {} is gone (crashed?): re-attach the store to recover it",
                st.store.display(),
                st.pid
            );
        }
    }
    Ok(())
}

/// Refuses to detach a loop device that is mounted or held open.
fn check_released(dev: &str) -> Result<()> {
    if let Some(m) = mounted_at(dev) {
        bail!("{dev} is mounted on {m}; unmount it first");
    }
    if device_busy(dev) {
        bail!("{dev} is in use (held open exclusively, e.g. by md or a mount); release it first");
    }
    Ok(())
}

/// The record `sel` (a name or store directory) names, if any.
fn record_named(sel: &str) -> Option<AttachRecord> {
    let store = std::fs::canonicalize(sel).ok();
    record::list()
        .0
        .into_iter()
        .find(|r| r.name == sel || Some(&r.store) == store.as_ref() || r.store == Path::new(sel))
}

/// `vsl detach`. Removes the store's `--restore` record too (the daemon
/// does, for a live one); a store recorded but not attached is forgotten.
pub fn run_detach(a: DetachArgs) -> Result<()> {
    let sel = if a.all { None } else { a.device.as_deref() };
    let (states, orphans) = match select_with_orphans(sel) {
        Ok(found) => found,
        Err(e) => {
            let Some(rec) = sel.and_then(record_named) else {
                return Err(e);
            };
            record::remove(&rec.name)?;
            println!(
                "{} was not attached; forgot its record: `vsl attach --restore` will not bring it back",
                rec.store.display()
            );
            return Ok(());
        }
    };
    let (states, dead): (Vec<_>, Vec<_>) = states.into_iter().partition(|s| s.alive());
    // Refuse before touching anything: every loop device to be detached
    // must be unmounted and released.
    let held = states
        .iter()
        .flat_map(|st| st.devices.iter().map(|d| d.loop_device.clone()))
        .chain(orphans.iter().flat_map(|o| o.loop_devices.clone()))
        .chain(
            dead.iter()
                .flat_map(|st| daemon::loops_backed_under(&st.mountpoint)),
        );
    for dev in held {
        check_released(&dev)?;
    }
    for st in &dead {
        daemon::release_leftovers(&st.mountpoint)?;
        record::remove(&st.name)?;
        let devs: Vec<_> = st.devices.iter().map(|d| d.loop_device.as_str()).collect();
        println!(
            "cleaned up {} (store {}): its daemon, pid {}, had died; the store is consistent, re-attach it to use it",
            devs.join(", "),
            st.store.display(),
            st.pid
        );
    }
    for o in &orphans {
        stop_orphan(o, Duration::from_secs(120))?;
        record::remove(&o.name)?;
        println!(
            "detached {} (orphaned attachment {}: its state file was missing)",
            if o.loop_devices.is_empty() {
                "no loop device".to_string()
            } else {
                o.loop_devices.join(", ")
            },
            o.mountpoint.display()
        );
    }
    for st in &states {
        let reply = control(&st.socket, "detach")?;
        if let Some(msg) = reply.strip_prefix("error ") {
            bail!("{msg}");
        }
        daemon::wait_exit(st.pid, Duration::from_secs(120))?;
        let devs: Vec<_> = st.devices.iter().map(|d| d.loop_device.as_str()).collect();
        println!(
            "detached {} (store {})",
            devs.join(", "),
            st.store.display()
        );
    }
    Ok(())
}

/// Fetches the live report of one attachment.
pub fn fetch_status(st: &AttachState) -> Result<StatusReport> {
    let line = control(&st.socket, "status")?;
    serde_json::from_str(&line).with_context(|| format!("status of {}", st.name))
}

/// `vsl status`.
pub fn run_status(a: StatusArgs) -> Result<()> {
    let states = select(a.device.as_deref())?;
    if states.is_empty() {
        println!("no card attached");
        return Ok(());
    }
    let reports = states
        .iter()
        .map(fetch_status)
        .collect::<Result<Vec<_>>>()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        println!(
            "{} ({}, timing {}, pid {}, up {:.0} s, store {})",
            r.name, r.device, r.timing, r.pid, r.uptime_s, r.store
        );
        for m in &r.members {
            let i = &m.last_interval;
            println!(
                "  {} ioMemory {}: last {:.1} s: read {:.0} IOPS {:.1} MB/s p50/p99 {:.0}/{:.0} us | write {:.0} IOPS {:.1} MB/s p50/p99 {:.0}/{:.0} us",
                m.loop_device, m.member, i.seconds, i.read_iops, i.read_mb_s, i.read_latency.p50_us,
                i.read_latency.p99_us, i.write_iops, i.write_mb_s, i.write_latency.p50_us, i.write_latency.p99_us
            );
            println!(
                "    since attach: {} reads, {} writes, {} trims, {} flushes, {} errors; host written {:.2} GB, NAND programmed {:.2} GB, WA {:.2}, GC runs {}, moved {} sectors, erases {}; emulator late by {:.1} us on average",
                m.reads, m.writes, m.trims, m.flushes, m.errors, m.host_bytes_written as f64 / 1e9,
                m.nand_bytes_programmed as f64 / 1e9, m.write_amplification, m.gc_runs, m.gc_sectors_moved,
                m.erases, m.emulator_late_us_mean
            );
            let l = &m.lifetime;
            println!(
                "    lifetime: {} reads, {} writes; host read {:.2} GB, written {:.2} GB, NAND programmed {:.2} GB, WA {:.2}, GC moved {} sectors, erases {}; attached {:.0} s",
                l.reads, l.writes, l.host_bytes_read as f64 / 1e9, l.host_bytes_written as f64 / 1e9,
                l.nand_bytes_programmed as f64 / 1e9, m.lifetime_write_amplification, l.gc_sectors_moved,
                l.erases, l.attached_s
            );
        }
    }
    Ok(())
}
