//! Atomic writes on an attached card: an application submits a vector of
//! writes ([`AtomicOp::Write`]) and trims ([`AtomicOp::Trim`]) to one
//! ioMemory device through the daemon's control socket
//! ([`atomic_write`]); the daemon applies them all-or-nothing
//! ([`crate::engine::Engine::atomic`]) and answers once the group is
//! durable. `vsl atomic` ([`AtomicArgs`], [`run_atomic`]) is the same from
//! the command line.
//!
//! Protocol: one line `atomic {"member":M,"writes":[[OFFSET,LEN],…],
//! "trims":[[OFFSET,LEN],…]}`, then the written bytes of every write in
//! order; the answer is one line, `ok {"bytes_written":…,"bytes_trimmed":…}`
//! or `error MESSAGE`.

use crate::control::AtomicRequest;
use crate::engine::Engine;
use crate::state::AttachState;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workload::units::parse_size;

pub use crate::control::{BYTES_MAX, OPS_MAX};

/// One element of an atomic write; offsets and lengths in bytes, sector
/// aligned, within the device, not overlapping one another.
#[derive(Clone, Debug, PartialEq)]
pub enum AtomicOp {
    Write { offset: u64, data: Vec<u8> },
    Trim { offset: u64, len: u64 },
}

/// What an applied atomic write did.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct AtomicReply {
    pub bytes_written: u64,
    pub bytes_trimmed: u64,
}

/// Submits `ops` as one atomic write to ioMemory device `member` of the
/// daemon at `socket`; returns once it is applied and durable. An error
/// means it was refused or the daemon died: then it is applied entirely
/// or not at all (re-attach and read to know which).
pub fn atomic_write(socket: &Path, member: u32, ops: &[AtomicOp]) -> Result<AtomicReply> {
    let mut req = AtomicRequest {
        member,
        writes: Vec::new(),
        trims: Vec::new(),
    };
    for op in ops {
        match op {
            AtomicOp::Write { offset, data } => req.writes.push((*offset, data.len() as u64)),
            AtomicOp::Trim { offset, len } => req.trims.push((*offset, *len)),
        }
    }
    req.check().map_err(|e| anyhow!(e))?;
    let mut s = UnixStream::connect(socket)
        .with_context(|| format!("connecting to {}", socket.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut head = format!("atomic {}\n", serde_json::to_string(&req)?).into_bytes();
    for op in ops {
        if let AtomicOp::Write { data, .. } = op {
            head.extend_from_slice(data);
        }
    }
    s.write_all(&head)
        .with_context(|| format!("sending the atomic write to {}", socket.display()))?;
    let mut line = String::new();
    BufReader::new(&s)
        .read_line(&mut line)
        .with_context(|| format!("waiting for {}", socket.display()))?;
    let line = line.trim_end();
    if let Some(json) = line.strip_prefix("ok ") {
        return serde_json::from_str(json).context("reading the daemon's answer");
    }
    if let Some(msg) = line.strip_prefix("error ") {
        bail!("{msg}");
    }
    if line.is_empty() {
        bail!("the daemon closed the connection without an answer (did it die?)");
    }
    bail!("unexpected answer from the daemon: {line}")
}

/// Serves one `atomic` request, already parsed and checked for shape
/// ([`crate::control::parse`]), whose data follows in `r`; answers on `w`.
/// Runs on its own thread.
pub(crate) fn serve(
    engines: &[Arc<Engine>],
    req: &AtomicRequest,
    r: &mut impl Read,
    w: &mut impl Write,
) {
    let answer = match apply(engines, req, r) {
        Ok(reply) => format!("ok {}", serde_json::to_string(&reply).unwrap_or_default()),
        Err(e) => format!("error {}", crate::control::one_line(&format!("{e:#}"))),
    };
    let _ = writeln!(w, "{answer}");
}

fn apply(engines: &[Arc<Engine>], req: &AtomicRequest, r: &mut impl Read) -> Result<AtomicReply> {
    // The parser checked it; checked again as this is the data's bound.
    req.check().map_err(|e| anyhow!("{e}"))?;
    let bytes = req.bytes();
    let engine = engines
        .iter()
        .find(|e| e.member == req.member)
        .ok_or_else(|| {
            let served: Vec<String> = engines.iter().map(|e| e.member.to_string()).collect();
            anyhow!(
                "ioMemory device {} is not served here (served: {})",
                req.member,
                served.join(", ")
            )
        })?;
    let mut data = vec![0u8; bytes as usize];
    r.read_exact(&mut data)
        .context("reading the atomic write's data")?;
    let mut writes: Vec<(u64, &[u8])> = Vec::with_capacity(req.writes.len());
    let mut at = 0usize;
    for &(offset, len) in &req.writes {
        writes.push((offset, &data[at..at + len as usize]));
        at += len as usize;
    }
    let done = engine.atomic(&writes, &req.trims)?;
    if let Some(t) = engine.wait_for(done) {
        std::thread::sleep(t.saturating_duration_since(Instant::now()));
    }
    Ok(AtomicReply {
        bytes_written: bytes,
        bytes_trimmed: req.trims.iter().map(|t| t.1).sum(),
    })
}

/// `vsl atomic`: apply writes and trims to an attached card all-or-nothing.
#[derive(Args, Debug, Clone)]
pub struct AtomicArgs {
    /// The attached device: a loop device (/dev/loopN), store directory or attachment name.
    pub device: String,
    /// ioMemory device of a card serving several (default: the loop
    /// device's, or the only one).
    #[arg(long)]
    pub member: Option<u32>,
    /// Write FILE's contents at byte OFFSET (repeatable; sizes like 4k, 1M).
    #[arg(long = "write", value_name = "OFFSET:FILE")]
    pub writes: Vec<String>,
    /// Trim LEN bytes at byte OFFSET (repeatable).
    #[arg(long = "trim", value_name = "OFFSET:LEN")]
    pub trims: Vec<String>,
}

/// A byte count or offset: 0 or a size like 4096, 4k, 1M.
fn parse_bytes(what: &str, spec: &str, v: &str) -> Result<u64> {
    if v.trim() == "0" {
        return Ok(0);
    }
    parse_size(v).map_err(|e| anyhow!("{what} '{spec}': {e}"))
}

/// The ops of `a`, files read.
fn ops_of(a: &AtomicArgs) -> Result<Vec<AtomicOp>> {
    let mut ops = Vec::new();
    for spec in &a.writes {
        let (off, file) = spec
            .split_once(':')
            .ok_or_else(|| anyhow!("--write '{spec}': expected OFFSET:FILE"))?;
        let offset = parse_bytes("--write", spec, off)?;
        let path = PathBuf::from(file);
        let meta = std::fs::metadata(&path).with_context(|| format!("--write '{spec}'"))?;
        if meta.len() > BYTES_MAX {
            bail!(
                "--write '{spec}': {file} is {} bytes; an atomic write carries at most {BYTES_MAX}",
                meta.len()
            );
        }
        let data = std::fs::read(&path).with_context(|| format!("--write '{spec}'"))?;
        if data.is_empty() {
            bail!("--write '{spec}': {file} is empty");
        }
        ops.push(AtomicOp::Write { offset, data });
    }
    for spec in &a.trims {
        let (off, len) = spec
            .split_once(':')
            .ok_or_else(|| anyhow!("--trim '{spec}': expected OFFSET:LEN"))?;
        let offset = parse_bytes("--trim", spec, off)?;
        let len = parse_bytes("--trim", spec, len)?;
        ops.push(AtomicOp::Trim { offset, len });
    }
    if ops.is_empty() {
        bail!("nothing to do: give at least one --write OFFSET:FILE or --trim OFFSET:LEN");
    }
    Ok(ops)
}

/// The member `a` addresses on attachment `st`.
fn member_of(a: &AtomicArgs, st: &AttachState) -> Result<u32> {
    let by_loop = st.devices.iter().find(|d| d.loop_device == a.device);
    let served: Vec<String> = st.devices.iter().map(|d| d.member.to_string()).collect();
    match (a.member, by_loop) {
        (Some(m), Some(d)) if m != d.member => {
            bail!("--member {m}: {} is ioMemory device {}", a.device, d.member)
        }
        (_, Some(d)) => Ok(d.member),
        (Some(m), None) if st.devices.iter().any(|d| d.member == m) => Ok(m),
        (Some(m), None) => bail!(
            "--member {m}: {} serves ioMemory device(s) {}",
            a.device,
            served.join(", ")
        ),
        (None, None) if st.devices.len() == 1 => Ok(st.devices[0].member),
        (None, None) => bail!(
            "{} serves ioMemory devices {}: name one with --member or give its loop device",
            a.device,
            served.join(", ")
        ),
    }
}

/// `vsl atomic`.
pub fn run_atomic(a: AtomicArgs) -> Result<()> {
    let ops = ops_of(&a)?;
    let states = crate::state::select(Some(&a.device))?;
    let Some(st) = states.first() else {
        bail!("{} is not attached", a.device);
    };
    let member = member_of(&a, st)?;
    let r = atomic_write(&st.socket, member, &ops)?;
    let loop_dev = st
        .devices
        .iter()
        .find(|d| d.member == member)
        .map_or("?", |d| d.loop_device.as_str());
    println!(
        "atomic write applied to {loop_dev}: {} bytes written in {} range(s), {} bytes trimmed in {} range(s)",
        r.bytes_written,
        a.writes.len(),
        r.bytes_trimmed,
        a.trims.len()
    );
    Ok(())
}
