//! `blkparse`'s default text output (blkparse(1), "OUTPUT DESCRIPTION
//! AND FORMATTING"): `%D %2c %8s %5T.%9t %5p %2a %3d` then, for requests,
//! `SECTOR + COUNT [PROCESS]`, e.g.
//! `8,0    1        1     0.000000000   123  Q   W 1234 + 8 [proc]`.
//!
//! A request arrives at its `Q` (queued) event, or at its `D` (issued) when
//! the trace has no `Q` (decided on the first 4096 events). Its
//! completion is the first `C` with the same device, sector and count,
//! looked for within a window of the next 65536 arrivals (records are
//! returned in arrival order once completed or out of the window). The
//! RWBS field gives the op: `R` read, `W` write, `D` discard, `F` before
//! the op a pre-flush (alone, `FN`, a flush), `F` after it FUA, `S` sync.
//! Other actions (`G I M F P U X A m`...) are skipped; the per-CPU and
//! total summaries blkparse prints at the end close the trace.

use super::{flags, num, secs_to_ns, LineParser, OpKind, Out, TraceRecord};
use std::collections::{HashMap, VecDeque};

/// Requests held waiting for their completion.
const WINDOW: usize = 65_536;
/// Events looked at before deciding that a trace without `Q` arrives at `D`.
const DECIDE: usize = 4096;

type Key = (u32, u64, u64);

pub(crate) struct Blkparse {
    /// `Some('Q')` or `Some('D')` once decided.
    arrival: Option<char>,
    /// Lines of `D` and `C` events seen before deciding.
    undecided: Vec<(u64, String)>,
    /// Requests in arrival order awaiting completion; `base` is the
    /// sequence number of the front.
    window: VecDeque<TraceRecord>,
    base: u64,
    waiting: HashMap<Key, VecDeque<u64>>,
    summary: bool,
}

impl Blkparse {
    pub(crate) fn new() -> Blkparse {
        Blkparse {
            arrival: None,
            undecided: Vec::new(),
            window: VecDeque::new(),
            base: 0,
            waiting: HashMap::new(),
            summary: false,
        }
    }

    fn key(r: &TraceRecord) -> Key {
        (r.device, r.offset, r.len)
    }

    /// Moves completed (or pushed out) requests from the front to `out`.
    fn drain(&mut self, out: &mut Out, all: bool) {
        while let Some(front) = self.window.front() {
            if front.completion_ns.is_none() && self.window.len() < WINDOW && !all {
                break;
            }
            let r = self.window.pop_front().expect("front");
            if r.completion_ns.is_none() {
                let k = Blkparse::key(&r);
                if let Some(q) = self.waiting.get_mut(&k) {
                    if q.front() == Some(&self.base) {
                        q.pop_front();
                    }
                    if q.is_empty() {
                        self.waiting.remove(&k);
                    }
                }
            }
            self.base += 1;
            out.push_back(r);
        }
    }

    fn event(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        let mut t = text.split_ascii_whitespace();
        let dev = t.next().unwrap_or("");
        let (maj, min) = dev
            .split_once(',')
            .ok_or_else(|| format!("device '{dev}' (expected MAJOR,MINOR)"))?;
        let (maj, min) = (num(maj, "major")?, num(min, "minor")?);
        if maj > 4095 || min > 1_048_575 {
            return Err(format!("device {maj},{min} out of range"));
        }
        let device = ((maj as u32) << 20) | min as u32;
        let mut field = |what: &str| {
            t.next()
                .ok_or_else(|| format!("truncated event: {what} missing"))
        };
        let _cpu = num(field("cpu")?, "cpu")?;
        let _seq = num(field("sequence")?, "sequence")?;
        let time = secs_to_ns(field("time")?, "time")?;
        let _pid = field("pid")?;
        let action = field("action")?;
        let rwbs = field("RWBS")?;
        let act = match action {
            "Q" | "D" | "C" => action.as_bytes()[0] as char,
            _ => return Ok(()),
        };
        let (mut sector, mut count) = (0u64, 0u64);
        let rest: Vec<&str> = t.collect();
        if rest.len() >= 3 && rest[1] == "+" {
            sector = num(rest[0], "sector")?;
            count = num(rest[2], "sector count")?;
        } else if let Some(first) = rest.first() {
            if !first.starts_with('[') && !first.starts_with('(') {
                return Err("expected 'SECTOR + COUNT'".into());
            }
        }
        let (op, fl) = rwbs_op(rwbs, count)?;
        let Some(op) = op else { return Ok(()) };
        let offset = sector.checked_mul(512).ok_or("sector out of range")?;
        let len = count.checked_mul(512).ok_or("sector count out of range")?;
        let arrival = match self.arrival {
            Some(a) => a,
            None => {
                if act == 'Q' {
                    self.arrival = Some('Q');
                    self.undecided.clear();
                    'Q'
                } else {
                    self.undecided.push((line, text.to_string()));
                    if self.undecided.len() >= DECIDE {
                        self.decide_d(out)?;
                    }
                    return Ok(());
                }
            }
        };
        if act == arrival {
            let r = TraceRecord {
                arrival_ns: time,
                op,
                offset: if op == OpKind::Flush { 0 } else { offset },
                len: if op == OpKind::Flush { 0 } else { len },
                device,
                completion_ns: None,
                flags: fl,
                line,
            };
            let seq = self.base + self.window.len() as u64;
            self.waiting
                .entry(Blkparse::key(&r))
                .or_default()
                .push_back(seq);
            self.window.push_back(r);
        } else if act == 'C' {
            let k = (
                device,
                if op == OpKind::Flush { 0 } else { offset },
                if op == OpKind::Flush { 0 } else { len },
            );
            if let Some(q) = self.waiting.get_mut(&k) {
                if let Some(seq) = q.pop_front() {
                    let r = &mut self.window[(seq - self.base) as usize];
                    r.completion_ns = Some(time.max(r.arrival_ns));
                }
                if q.is_empty() {
                    self.waiting.remove(&k);
                }
            }
        }
        self.drain(out, false);
        Ok(())
    }

    /// No `Q` among the first events: requests arrive at `D`.
    fn decide_d(&mut self, out: &mut Out) -> Result<(), String> {
        self.arrival = Some('D');
        for (line, text) in std::mem::take(&mut self.undecided) {
            self.event(&text, line, out)?;
        }
        Ok(())
    }
}

/// The op of an RWBS field (`None`: nothing to replay, e.g. `N`).
fn rwbs_op(rwbs: &str, count: u64) -> Result<(Option<OpKind>, u8), String> {
    let mut op = None;
    let mut fl = 0;
    for c in rwbs.chars() {
        match c {
            'F' if op.is_none() => fl |= flags::PREFLUSH,
            'F' => fl |= flags::FUA,
            'R' if op.is_none() => op = Some(OpKind::Read),
            'W' if op.is_none() => op = Some(OpKind::Write),
            'D' if op.is_none() => op = Some(OpKind::Discard),
            'N' if op.is_none() => op = Some(OpKind::Flush),
            'S' => fl |= flags::SYNC,
            // Readahead, meta, secure erase, zone ops...: no change.
            c if c.is_ascii_uppercase() => {}
            _ => return Err(format!("RWBS '{rwbs}' not understood")),
        }
    }
    Ok(match op {
        // A flush with no data: `FN`, or `FWS 0 + 0`.
        Some(OpKind::Flush) if fl & flags::PREFLUSH != 0 => (Some(OpKind::Flush), fl),
        Some(OpKind::Write) if count == 0 && fl & flags::PREFLUSH != 0 => (Some(OpKind::Flush), fl),
        Some(OpKind::Flush) | None => (None, fl),
        Some(_) if count == 0 => (None, fl),
        o => (o, fl),
    })
}

impl LineParser for Blkparse {
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        if self.summary {
            return Ok(());
        }
        let first = text.split_ascii_whitespace().next().unwrap_or("");
        if first.contains(',') && first.as_bytes()[0].is_ascii_digit() {
            return self.event(text, line, out);
        }
        // blkparse's summaries: `CPU0 (8,0):`, `Total (8,0):`, `Throughput`...
        if first.starts_with("CPU")
            || first == "Total"
            || first == "Throughput"
            || first == "Events"
        {
            self.summary = true;
            return Ok(());
        }
        Err("not a blkparse event line ('MAJ,MIN CPU SEQ TIME PID ACTION RWBS ...')".into())
    }

    fn end(&mut self, out: &mut Out) -> Result<(), String> {
        if self.arrival.is_none() && !self.undecided.is_empty() {
            self.decide_d(out)?;
        }
        self.drain(out, true);
        Ok(())
    }
}
