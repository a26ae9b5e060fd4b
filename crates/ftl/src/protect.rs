//! Power-cut protection, modelled: what is on the media after a power cut
//! at any NAND operation boundary, map checkpoints, recovery from the last
//! checkpoint plus a scan of the erase units opened since, its modelled
//! time, and a randomized, deterministic power-cut campaign that checks the
//! recovered device against a reference model ([`run_campaign`]).
//!
//! ## The media model
//!
//! [`Media`] replays the VSL's [`PowerEvent`]s: a placed sector sits in the
//! power-cut-protected write buffer until the program of its write unit;
//! a program makes the unit's out-of-band (OOB) records durable (logical
//! sector, sequence number, atomic group, checksum); an erase clears an
//! erase unit. A power cut falls between two NAND operations (programs,
//! erases, checkpoint writes) in the order the VSL issued them: every
//! operation before it completed, the one after it is in flight, nothing
//! later happened. On the capacitor's energy the card finishes the program
//! in flight and programs every sector still in the buffer (the drain);
//! a checkpoint write in flight is torn (its checksum fails and recovery
//! uses the one before).
//!
//! ## Recovery
//!
//! [`Media::recover`] loads the newest intact checkpoint (the map, the host
//! sequence number `S` it covers, and the log frontier it was taken at),
//! reads the trim notes written since (persistent TRIM: a note is metadata
//! in the protected buffer, durable when acknowledged), and scans the OOB
//! of every programmed write unit of each erase unit opened since that
//! frontier, in log order. A scanned record newer than `S` wins over older
//! ones (highest sequence number; a GC copy keeps its sequence number and
//! the later copy wins); a record up to `S` only relocates the checkpoint's
//! entry when it has the same sequence number (a GC move). Records of an
//! atomic group whose last sector is not on the media (and with nothing
//! newer scanned) are discarded, with the group's trims. Each recovery ends
//! with a checkpoint, so a discarded group is never scanned again.
//!
//! Recovery time = the checkpoint and notes read (one tR plus their bytes
//! over every data channel) + the scan (per bank, one tR plus the OOB
//! transfer per write unit read; the banks work in parallel).

use crate::{FtlConfig, FtlError, MediaObserver, OobRecord, PowerEvent, Vsl};

/// The power-cut model's observer of the VSL ([`MediaObserver`]): records
/// every event as a [`PowerEvent`], in the order the VSL issued them, for
/// [`Media`] to replay with power cuts between them
/// ([`Vsl::enable_power_log`], [`Vsl::drain_power_log`]).
#[derive(Default)]
pub struct PowerLog {
    events: Vec<PowerEvent>,
}

impl PowerLog {
    pub fn with_capacity(n: usize) -> PowerLog {
        PowerLog {
            events: Vec::with_capacity(n),
        }
    }

    /// Moves the recorded events, oldest first, into `out`.
    pub fn drain(&mut self, out: &mut Vec<PowerEvent>) {
        out.append(&mut self.events);
    }
}

impl MediaObserver for PowerLog {
    fn wants_placements(&self) -> bool {
        true
    }
    fn placed(&mut self, psa: u32, lba: u32, seq: u64, from: u32) {
        self.events.push(PowerEvent::Placed {
            psa,
            lba,
            seq,
            from,
        });
    }
    fn programmed(&mut self, unit: u32, done: Nanos) {
        self.events.push(PowerEvent::Programmed { unit, done });
    }
    fn erased(&mut self, leb: u32, done: Nanos) {
        self.events.push(PowerEvent::Erased { leb, done });
    }
    fn opened(&mut self, leb: u32) {
        self.events.push(PowerEvent::Opened { leb });
    }
    fn trimmed(&mut self, start: u64, count: u64, floor: u64) {
        self.events.push(PowerEvent::Trimmed {
            start,
            count,
            floor,
        });
    }
    fn atomic_begin(&mut self, first: u64, last: u64) {
        self.events.push(PowerEvent::AtomicBegin { first, last });
    }
    fn atomic_end(&mut self) {
        self.events.push(PowerEvent::AtomicEnd);
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
use serde::Serialize;
use sim::{Nanos, Prng};
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;
/// Bytes of OOB metadata per sector: logical sector, sequence number,
/// atomic group and checksum.
pub const OOB_BYTES_PER_SECTOR: u64 = 16;
/// Bytes per checkpoint map entry (logical sector, slot, sequence number).
pub const CHECKPOINT_ENTRY_BYTES: u64 = 16;
/// Bytes per trim note.
pub const TRIM_NOTE_BYTES: u64 = 24;

/// One slot's out-of-band record on the media.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Oob {
    pub lba: u32,
    pub seq: u64,
    /// The atomic group `(first, last)` sequence numbers, `(0, 0)` if none.
    pub group: (u64, u64),
    /// The checksum verifies (false: a torn program).
    pub good: bool,
}

/// A deliberately broken protection mechanism, to show the campaign's
/// checker catches it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    #[default]
    None,
    /// The capacitor does not drain the write buffer (and the program in
    /// flight is torn).
    SkipDrain,
    /// Recovery uses the checkpoint only, scanning nothing.
    SkipScan,
    /// Recovery keeps incomplete atomic groups.
    KeepIncompleteGroups,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Fault::None),
            "skip-drain" => Ok(Fault::SkipDrain),
            "skip-scan" => Ok(Fault::SkipScan),
            "keep-incomplete-groups" => Ok(Fault::KeepIncompleteGroups),
            _ => Err(format!(
                "unknown fault '{s}' (expected none, skip-drain, skip-scan or keep-incomplete-groups)"
            )),
        }
    }
}

/// Power-cut protection settings.
#[derive(Copy, Clone, Debug, Serialize)]
pub struct ProtectConfig {
    /// Erase units opened between two map checkpoints; 0: none but the
    /// one written at format and after each recovery.
    pub checkpoint_lebs: u32,
    pub fault: Fault,
}

impl ProtectConfig {
    /// The default: a checkpoint every 1/16 of the log's erase units
    /// (docs/MODEL.md).
    pub fn for_ftl(cfg: &FtlConfig) -> ProtectConfig {
        ProtectConfig {
            checkpoint_lebs: (cfg.usable_lebs() / 16).max(1),
            fault: Fault::None,
        }
    }
}

/// A map checkpoint as written to the media.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Host sequence number covered: records up to it are in `map`.
    pub seq: u64,
    /// Open serial of the log frontier when written: recovery scans the
    /// erase units opened at or after it.
    pub horizon: u64,
    /// `(lba, psa, seq)` of every mapped sector.
    pub map: Vec<(u32, u32, u64)>,
}

impl Checkpoint {
    pub fn bytes(&self) -> u64 {
        64 + self.map.len() as u64 * CHECKPOINT_ENTRY_BYTES
    }
}

#[derive(Copy, Clone, Debug)]
struct TrimNote {
    start: u64,
    count: u64,
    floor: u64,
    group: (u64, u64),
}

/// What recovery did and how long it took.
#[derive(Copy, Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct RecoveryReport {
    pub checkpoint_bytes: u64,
    pub lebs_scanned: u64,
    pub units_scanned: u64,
    pub records_scanned: u64,
    pub groups_discarded: u64,
    pub checkpoint_read_ns: u64,
    pub scan_ns: u64,
    pub total_ns: u64,
}

/// The card's NAND contents as far as recovery can see them.
pub struct Media {
    spu: u32,
    spl: u32,
    upl: u32,
    banks: u32,
    slots: Vec<Option<Oob>>,
    pending: Vec<Option<Oob>>,
    pending_units: Vec<u32>,
    unit_written: Vec<bool>,
    leb_serial: Vec<u64>,
    serial: u64,
    checkpoint: Checkpoint,
    notes: Vec<TrimNote>,
    group: Option<(u64, u64)>,
}

impl Media {
    /// A freshly formatted card whose VSL is `vsl` (its power log on).
    pub fn new(vsl: &mut Vsl) -> Media {
        let slots = vsl.physical_slots() as usize;
        let spu = vsl.slots_per_unit();
        let spl = vsl.slots_per_leb();
        let lebs = slots / spl as usize;
        let mut m = Media {
            spu,
            spl,
            upl: spl / spu,
            banks: vsl.config().geometry.banks,
            slots: vec![None; slots],
            pending: vec![None; slots],
            pending_units: Vec::new(),
            unit_written: vec![false; slots / spu as usize],
            leb_serial: vec![0; lebs],
            serial: 0,
            checkpoint: Checkpoint {
                seq: 0,
                horizon: 1,
                map: Vec::new(),
            },
            notes: Vec::new(),
            group: None,
        };
        vsl.enable_power_log();
        m.opened(vsl.frontier_leb());
        m.checkpoint = m.snapshot(vsl);
        m
    }

    fn opened(&mut self, leb: u32) {
        self.erase(leb);
        self.serial += 1;
        self.leb_serial[leb as usize] = self.serial;
    }

    fn erase(&mut self, leb: u32) {
        let base = (leb * self.spl) as usize;
        self.slots[base..base + self.spl as usize].fill(None);
        let ubase = (leb * self.upl) as usize;
        self.unit_written[ubase..ubase + self.upl as usize].fill(false);
    }

    fn program(&mut self, unit: u32, good: bool) {
        let base = (unit * self.spu) as usize;
        for psa in base..base + self.spu as usize {
            if let Some(mut o) = self.pending[psa].take() {
                o.good = good;
                self.slots[psa] = Some(o);
            }
        }
        self.unit_written[unit as usize] = true;
    }

    /// Applies one event.
    pub fn apply(&mut self, e: &PowerEvent) {
        match *e {
            PowerEvent::Placed {
                psa,
                lba,
                seq,
                from,
            } => {
                let group = if from == NONE {
                    match self.group {
                        Some((f, l)) if (f..=l).contains(&seq) => (f, l),
                        _ => (0, 0),
                    }
                } else {
                    let src = self.pending[from as usize].or(self.slots[from as usize]);
                    src.map_or((0, 0), |o| o.group)
                };
                self.pending[psa as usize] = Some(Oob {
                    lba,
                    seq,
                    group,
                    good: true,
                });
                let unit = psa / self.spu;
                if self.pending_units.last() != Some(&unit) {
                    self.pending_units.push(unit);
                }
            }
            PowerEvent::Programmed { unit, .. } => self.program(unit, true),
            PowerEvent::Erased { leb, .. } => self.erase(leb),
            PowerEvent::Opened { leb } => self.opened(leb),
            PowerEvent::Trimmed {
                start,
                count,
                floor,
            } => self.notes.push(TrimNote {
                start,
                count,
                floor,
                group: self.group.unwrap_or((0, 0)),
            }),
            PowerEvent::AtomicBegin { first, last } => self.group = Some((first, last)),
            PowerEvent::AtomicEnd => self.group = None,
        }
        if self.pending_units.len() > 64 {
            let pending = &self.pending;
            let spu = self.spu as usize;
            self.pending_units.retain(|&u| {
                let b = u as usize * spu;
                pending[b..b + spu].iter().any(Option::is_some)
            });
        }
    }

    /// True for the events that are NAND operations (power-cut points).
    pub fn is_op(e: &PowerEvent) -> bool {
        matches!(e, PowerEvent::Programmed { .. } | PowerEvent::Erased { .. })
    }

    /// Power is cut while `in_flight` (a NAND operation, if any) runs.
    /// With `drain` the capacitor completes it and programs the buffer;
    /// without, a program in flight is torn and the buffer is lost.
    pub fn power_cut(&mut self, in_flight: Option<&PowerEvent>, drain: bool) {
        match in_flight {
            Some(&PowerEvent::Programmed { unit, .. }) => self.program(unit, drain),
            Some(e) => self.apply(e),
            None => {}
        }
        for u in std::mem::take(&mut self.pending_units) {
            let b = (u * self.spu) as usize;
            if drain {
                if self.pending[b..b + self.spu as usize]
                    .iter()
                    .any(Option::is_some)
                {
                    self.program(u, true);
                }
            } else {
                self.pending[b..b + self.spu as usize].fill(None);
            }
        }
        self.group = None;
    }

    /// Logical sectors in the write buffer (not yet programmed).
    pub fn buffered_lbas(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for &u in &self.pending_units {
            let b = (u * self.spu) as usize;
            out.extend(
                self.pending[b..b + self.spu as usize]
                    .iter()
                    .flatten()
                    .map(|o| o.lba),
            );
        }
        out
    }

    /// The checkpoint the VSL would write now.
    pub fn snapshot(&self, vsl: &Vsl) -> Checkpoint {
        let mut map = Vec::new();
        for lba in 0..vsl.user_sectors() {
            if let Some(psa) = vsl.lookup(lba) {
                map.push((lba as u32, psa, vsl.slot_sequence(psa)));
            }
        }
        Checkpoint {
            seq: vsl.stats().host_sectors_written,
            horizon: self.leb_serial[vsl.frontier_leb() as usize],
            map,
        }
    }

    /// Writes checkpoint `c`; a torn write leaves the previous one in force.
    pub fn write_checkpoint(&mut self, c: Checkpoint, torn: bool) {
        if !torn {
            self.checkpoint = c;
            self.notes.clear();
        }
    }

    /// Erase units opened since the checkpoint in force.
    pub fn lebs_since_checkpoint(&self) -> u64 {
        self.serial - self.checkpoint.horizon
    }

    /// What slot `psa` holds for logical sector `lba`: its sequence number
    /// when the record is intact and names `lba`. A sector still in the
    /// power-cut-protected write buffer (placed, not yet programmed: e.g.
    /// moved by the GC that finishes a recovery) is read from the buffer,
    /// as the device serves it; the next cut drains it to its slot.
    pub fn read_back(&self, psa: u32, lba: u32) -> Option<u64> {
        let buffered = self.pending.get(psa as usize).copied().flatten();
        match buffered.or(self.slots.get(psa as usize).copied().flatten()) {
            Some(o) if o.good && o.lba == lba => Some(o.seq),
            _ => None,
        }
    }

    /// Rebuilds the map: the winning OOB records, the sequence number new
    /// writes must exceed, and the report.
    pub fn recover(&self, cfg: &FtlConfig, fault: Fault) -> (Vec<OobRecord>, u64, RecoveryReport) {
        let ck = &self.checkpoint;
        let mut best: Vec<(u32, u64)> = vec![(NONE, 0); cfg.user_sectors as usize];
        for &(lba, psa, seq) in &ck.map {
            best[lba as usize] = (psa, seq);
        }
        let mut rep = RecoveryReport {
            checkpoint_bytes: ck.bytes() + self.notes.len() as u64 * TRIM_NOTE_BYTES,
            ..Default::default()
        };
        let mut order: Vec<(u64, u32)> = self
            .leb_serial
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s > 0 && s >= ck.horizon)
            .map(|(leb, &s)| (s, leb as u32))
            .collect();
        if fault == Fault::SkipScan {
            order.clear();
        }
        order.sort_unstable();
        let mut per_bank = vec![0u64; self.banks as usize];
        let mut found: Vec<(u32, Oob)> = Vec::new();
        for &(_, leb) in &order {
            rep.lebs_scanned += 1;
            for u in 0..self.upl {
                let unit = leb * self.upl + u;
                per_bank[(u % self.banks) as usize] += 1;
                rep.units_scanned += 1;
                if !self.unit_written[unit as usize] {
                    break;
                }
                let base = unit * self.spu;
                for psa in base..base + self.spu {
                    if let Some(o) = self.slots[psa as usize] {
                        if o.good {
                            found.push((psa, o));
                        }
                    }
                }
            }
        }
        rep.records_scanned = found.len() as u64;
        // Atomic groups: complete when their last sector (or anything newer)
        // is on the media.
        let max_seq = found.iter().map(|(_, o)| o.seq).max().unwrap_or(0);
        let mut groups: BTreeMap<(u64, u64), bool> = BTreeMap::new();
        for (_, o) in &found {
            if o.seq > ck.seq && o.group != (0, 0) {
                let done = groups.entry(o.group).or_insert(false);
                *done |= o.seq == o.group.1 || max_seq > o.group.1;
            }
        }
        let keep = |g: (u64, u64)| {
            g == (0, 0) || fault == Fault::KeepIncompleteGroups || groups.get(&g) == Some(&true)
        };
        rep.groups_discarded = groups.values().filter(|d| !**d).count() as u64;
        for &(psa, o) in &found {
            let b = &mut best[o.lba as usize];
            if o.seq > ck.seq {
                if keep(o.group) && o.seq >= b.1 {
                    *b = (psa, o.seq);
                }
            } else if b.0 != NONE && o.seq == b.1 {
                b.0 = psa;
            }
        }
        let mut floor = ck.seq.max(max_seq);
        for n in &self.notes {
            // A note of an incomplete group does not count; a group with
            // no record left counts if anything newer is on the media (its
            // records were overwritten since), not if nothing is (it was
            // cut before its first sector).
            let g = n.group;
            if g != (0, 0) && !keep(g) && (groups.contains_key(&g) || max_seq <= g.1) {
                continue;
            }
            floor = floor.max(n.floor);
            for lba in n.start..n.start + n.count {
                if let Some(b) = best.get_mut(lba as usize) {
                    if b.1 <= n.floor {
                        *b = (NONE, 0);
                    }
                }
            }
        }
        let records = best
            .iter()
            .enumerate()
            .filter(|(_, b)| b.0 != NONE)
            .map(|(lba, &(psa, seq))| OobRecord {
                psa,
                lba: lba as u32,
                seq,
            })
            .collect();
        // Time: checkpoint and notes over every data channel; the scan per
        // bank, banks in parallel.
        let t = &cfg.timing;
        let g = &cfg.geometry;
        let channels_bps = t.bus_bytes_per_s * g.data_channels() as u64;
        rep.checkpoint_read_ns = t.read_ns + Nanos::for_bytes(rep.checkpoint_bytes, channels_bps).0;
        let oob_per_die = (g.page_bytes as u64 * g.planes as u64 / cfg.sector_bytes as u64)
            * OOB_BYTES_PER_SECTOR;
        let per_unit = t.read_ns + Nanos::for_bytes(oob_per_die, t.bus_bytes_per_s).0;
        let units = per_bank.iter().copied().max().unwrap_or(0);
        rep.scan_ns = per_unit * units;
        rep.total_ns = rep.checkpoint_read_ns + rep.scan_ns;
        (records, floor, rep)
    }

    /// Recovers the VSL from the media and writes the post-recovery
    /// checkpoint. `erase_counts` are the lost device's (wear survives).
    pub fn recover_vsl(
        &mut self,
        cfg: &FtlConfig,
        fault: Fault,
        erase_counts: &[u32],
    ) -> Result<(Vsl, RecoveryReport), FtlError> {
        let (records, floor, rep) = self.recover(cfg, fault);
        // The log continues after the last programmed unit of the erase
        // unit opened last.
        let resume = (0..self.leb_serial.len())
            .max_by_key(|&l| self.leb_serial[l])
            .and_then(|leb| {
                let base = leb * self.upl as usize;
                let used = self.unit_written[base..base + self.upl as usize]
                    .iter()
                    .rposition(|w| *w)
                    .map_or(0, |u| u + 1) as u32;
                (used < self.upl).then_some((leb as u32, used * self.spu))
            });
        let mut vsl = Vsl::recover_at(cfg.clone(), &records, floor, Some(erase_counts), resume)?;
        vsl.enable_power_log();
        // The cut drained or dropped the buffer already.
        self.pending_units.clear();
        self.group = None;
        let frontier = vsl.frontier_leb();
        if resume.is_some_and(|r| r.0 == frontier) {
            self.serial += 1;
            self.leb_serial[frontier as usize] = self.serial;
        } else {
            self.opened(frontier);
        }
        // GC the recovery found mid-way is finished before the device
        // serves I/O; it is part of recovery (no power cut falls in it).
        vsl.restore_reserve(Nanos::ZERO);
        let mut events = Vec::new();
        vsl.drain_power_log(&mut events);
        for e in &events {
            self.apply(e);
        }
        let c = if events.is_empty() {
            Checkpoint {
                seq: vsl.stats().host_sectors_written,
                horizon: self.leb_serial[frontier as usize],
                map: records.iter().map(|r| (r.lba, r.psa, r.seq)).collect(),
            }
        } else {
            self.snapshot(&vsl)
        };
        self.write_checkpoint(c, false);
        Ok((vsl, rep))
    }
}

/// A power-cut campaign's settings.
#[derive(Clone, Debug, Serialize)]
pub struct CampaignConfig {
    pub ftl: FtlConfig,
    pub protect: ProtectConfig,
    pub cuts: u64,
    pub seed: u64,
    /// Host calls between two cuts: uniform in `1..=max_calls`.
    pub max_calls: u32,
    /// Largest plain write, in sectors.
    pub max_write: u64,
}

impl CampaignConfig {
    pub fn new(ftl: FtlConfig, cuts: u64, seed: u64) -> CampaignConfig {
        let protect = ProtectConfig::for_ftl(&ftl);
        let max_write = (2 * ftl.slots_per_unit() as u64).clamp(8, 256);
        CampaignConfig {
            ftl,
            protect,
            cuts,
            seed,
            max_calls: 200,
            max_write,
        }
    }
}

/// Min / average / max of a duration.
#[derive(Copy, Clone, Debug, Default, Serialize, PartialEq)]
pub struct TimeStats {
    pub min_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
}

/// What a campaign found.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CampaignReport {
    pub seed: u64,
    pub cuts: u64,
    /// Acknowledged host writes (plain and atomic) issued.
    pub writes_acked: u64,
    pub atomic_writes_acked: u64,
    pub trims_acked: u64,
    /// Sector read-backs checked against the reference after the cuts.
    pub sectors_checked: u64,
    /// Cuts after which every sector was read back.
    pub full_checks: u64,
    /// Cuts that fell inside an atomic write.
    pub cuts_in_atomic: u64,
    /// Cuts that tore a checkpoint write.
    pub torn_checkpoints: u64,
    pub recovery: TimeStats,
    pub avg_lebs_scanned: f64,
    /// Acknowledged sectors that did not read back their latest content.
    pub lost: u64,
    /// Trimmed (or never written) sectors whose old data came back.
    pub resurrected: u64,
    /// Atomic writes found half applied.
    pub torn_atomic: u64,
    /// The first failure, with the cut number.
    pub first_failure: Option<String>,
}

impl CampaignReport {
    pub fn failures(&self) -> u64 {
        self.lost + self.resurrected + self.torn_atomic
    }
}

enum Call {
    Write(u64, u64),
    Trim(u64, u64),
    Atomic(Vec<(u64, u64)>, Vec<(u64, u64)>),
    Checkpoint,
}

fn gen_ranges(prng: &mut Prng, user: u64, n: u64, max: u64, taken: &mut Vec<(u64, u64)>) {
    for _ in 0..n {
        for _try in 0..8 {
            let count = 1 + prng.below(max.min(user));
            let start = prng.below(user - count + 1);
            if taken
                .iter()
                .all(|&(s, c)| start + count <= s || s + c <= start)
            {
                taken.push((start, count));
                break;
            }
        }
    }
}

fn gen_call(prng: &mut Prng, cfg: &CampaignConfig, atomic_max: u64) -> Call {
    let user = cfg.ftl.user_sectors;
    let r = prng.below(100);
    if r < 65 {
        let count = 1 + prng.below(cfg.max_write.min(user));
        Call::Write(prng.below(user - count + 1), count)
    } else if r < 75 {
        let count = 1 + prng.below(32.min(user));
        Call::Trim(prng.below(user - count + 1), count)
    } else {
        let mut w = Vec::new();
        let per = (atomic_max / 4).clamp(1, 32);
        let n = 1 + prng.below(4);
        gen_ranges(prng, user, n, per, &mut w);
        let mut t = w.clone();
        if prng.below(3) == 0 {
            gen_ranges(prng, user, 1, 8, &mut t);
        }
        let trims = t.split_off(w.len());
        Call::Atomic(w, trims)
    }
}

/// The expected content of each sector: the sequence number of the write
/// it holds, 0 for none (never written or trimmed).
struct Reference {
    acked: Vec<u64>,
}

const CORRUPT: u64 = u64::MAX;
/// Every this many cuts (and after the last) the campaign reads back every
/// sector, not only those the cut could have touched.
pub const FULL_CHECK_EVERY: u64 = 16;

/// Runs `cfg.cuts` power cuts: between two cuts a random number of host
/// writes, trims and atomic writes (and the checkpoints they bring); then
/// one call is cut at a random NAND operation boundary (or a checkpoint
/// write is torn), the device is recovered from the media and every
/// sector is read back and checked against the reference. `progress` is
/// called after every cut with the cuts done.
pub fn run_campaign(
    cfg: &CampaignConfig,
    mut progress: impl FnMut(u64),
) -> Result<CampaignReport, FtlError> {
    let mut ftl = cfg.ftl.clone();
    ftl.track_sequence = true;
    let mut vsl = Vsl::new(ftl.clone())?;
    let mut media = Media::new(&mut vsl);
    let user = ftl.user_sectors;
    let atomic_max = vsl.max_atomic_sectors().min(128);
    let mut prng = Prng::from_seed(cfg.seed);
    let mut reference = Reference {
        acked: vec![0; user as usize],
    };
    let mut rep = CampaignReport {
        seed: cfg.seed,
        recovery: TimeStats {
            min_ns: u64::MAX,
            ..Default::default()
        },
        ..Default::default()
    };
    let drain = cfg.protect.fault != Fault::SkipDrain;
    let mut events = Vec::new();
    let mut now = Nanos::ZERO;
    let mut rec_sum = 0f64;
    let mut lebs_sum = 0f64;
    // Sectors to check after the next cut besides the full checks.
    let mut suspects: Vec<u64> = Vec::new();
    for cut in 0..cfg.cuts {
        let calls = 1 + prng.below(cfg.max_calls as u64);
        let mut inflight: BTreeMap<u64, u64> = BTreeMap::new();
        let mut inflight_groups: Vec<Vec<u64>> = Vec::new();
        for i in 0..calls {
            let last = i + 1 == calls;
            let call = if last && prng.below(16) == 0 {
                Call::Checkpoint
            } else {
                gen_call(&mut prng, cfg, atomic_max)
            };
            let base = vsl.stats().host_sectors_written;
            // What the call changes, per sector: the new content.
            let mut changes: Vec<(u64, u64)> = Vec::new();
            let mut is_atomic = false;
            match &call {
                Call::Write(s, c) => {
                    now = vsl.write(now, *s, *c)?;
                    changes.extend((0..*c).map(|k| (s + k, base + k + 1)));
                }
                Call::Trim(s, c) => {
                    vsl.trim(*s, *c)?;
                    changes.extend((*s..s + c).map(|l| (l, 0)));
                }
                Call::Atomic(w, t) => {
                    is_atomic = true;
                    now = vsl.atomic_write(now, w, t)?;
                    let mut seq = base;
                    for &(s, c) in w {
                        for l in s..s + c {
                            seq += 1;
                            changes.push((l, seq));
                        }
                    }
                    for &(s, c) in t {
                        changes.extend((s..s + c).map(|l| (l, 0)));
                    }
                }
                Call::Checkpoint => {}
            }
            events.clear();
            vsl.drain_power_log(&mut events);
            if !last {
                for e in &events {
                    media.apply(e);
                }
                for &(l, v) in &changes {
                    reference.acked[l as usize] = v;
                    suspects.push(l);
                }
                match call {
                    Call::Trim(..) => rep.trims_acked += 1,
                    Call::Atomic(..) => {
                        rep.writes_acked += 1;
                        rep.atomic_writes_acked += 1;
                    }
                    _ => rep.writes_acked += 1,
                }
                let every = cfg.protect.checkpoint_lebs as u64;
                if every > 0 && media.lebs_since_checkpoint() >= every {
                    let c = media.snapshot(&vsl);
                    media.write_checkpoint(c, false);
                }
                continue;
            }
            // The cut.
            suspects.extend(media.buffered_lbas().into_iter().map(u64::from));
            if let Call::Checkpoint = call {
                rep.torn_checkpoints += 1;
                let c = media.snapshot(&vsl);
                media.write_checkpoint(c, true);
                media.power_cut(None, drain);
                break;
            }
            let ops = events.iter().filter(|e| Media::is_op(e)).count() as u64;
            let keep = prng.below(ops + 1);
            let mut seen = 0;
            let mut in_flight = None;
            for e in &events {
                if Media::is_op(e) {
                    if seen == keep {
                        in_flight = Some(*e);
                        break;
                    }
                    seen += 1;
                }
                media.apply(e);
            }
            media.power_cut(in_flight.as_ref(), drain);
            if is_atomic {
                rep.cuts_in_atomic += 1;
                inflight_groups.push(changes.iter().map(|c| c.0).collect());
            }
            inflight.extend(changes);
        }
        // Recover and check.
        let counts = vsl.erase_counts().to_vec();
        let (recovered, rr) = media.recover_vsl(&ftl, cfg.protect.fault, &counts)?;
        // Every sector written, trimmed or buffered since the last cut,
        // every sector the recovery maps elsewhere than the lost device
        // did, and, every FULL_CHECK_EVERY cuts and at the end, all.
        let full = (cut + 1) % FULL_CHECK_EVERY == 0 || cut + 1 == cfg.cuts;
        if full {
            rep.full_checks += 1;
            suspects.clear();
            suspects.extend(0..user);
        } else {
            suspects.extend(inflight.keys().copied());
            suspects.extend((0..user).filter(|&l| vsl.lookup(l) != recovered.lookup(l)));
            suspects.sort_unstable();
            suspects.dedup();
        }
        vsl = recovered;
        now = Nanos::ZERO;
        rep.cuts += 1;
        rep.recovery.min_ns = rep.recovery.min_ns.min(rr.total_ns);
        rep.recovery.max_ns = rep.recovery.max_ns.max(rr.total_ns);
        rec_sum += rr.total_ns as f64;
        lebs_sum += rr.lebs_scanned as f64;
        let fail = |rep: &mut CampaignReport, what: String| {
            if rep.first_failure.is_none() {
                rep.first_failure = Some(format!("cut {}: {what}", cut + 1));
            }
        };
        let read = |lba: u64| match vsl.lookup(lba) {
            None => 0,
            Some(psa) => media.read_back(psa, lba as u32).unwrap_or(CORRUPT),
        };
        for &lba in &suspects {
            let got = read(lba);
            let want = reference.acked[lba as usize];
            if want != 0 {
                rep.sectors_checked += 1;
            }
            let alt = inflight.get(&lba).copied();
            if got == want || Some(got) == alt {
                continue;
            }
            if want == 0 && got != CORRUPT && alt != Some(0) {
                rep.resurrected += 1;
                fail(
                    &mut rep,
                    format!("sector {lba} holds write {got} after it was trimmed"),
                );
            } else {
                rep.lost += 1;
                let shown = if got == CORRUPT {
                    "an unreadable slot".to_string()
                } else {
                    format!("write {got}")
                };
                fail(
                    &mut rep,
                    format!("sector {lba}: expected write {want}, read back {shown}"),
                );
            }
        }
        for group in &inflight_groups {
            let applied: Vec<bool> = group
                .iter()
                .map(|&l| read(l) == inflight[&l] && inflight[&l] != reference.acked[l as usize])
                .collect();
            let changed = group
                .iter()
                .filter(|&&l| inflight[&l] != reference.acked[l as usize])
                .count();
            let n = applied.iter().filter(|a| **a).count();
            if n != 0 && n != changed {
                rep.torn_atomic += 1;
                fail(
                    &mut rep,
                    format!("atomic write half applied: {n} of {changed} sectors"),
                );
            }
        }
        // The recovered state is what the device now holds.
        for &l in inflight.keys() {
            reference.acked[l as usize] = read(l);
        }
        if rep.failures() > 0 {
            for lba in 0..user {
                reference.acked[lba as usize] = read(lba);
            }
        }
        suspects.clear();
        progress(cut + 1);
    }
    if rep.cuts > 0 {
        rep.recovery.avg_ns = rec_sum / rep.cuts as f64;
        rep.avg_lebs_scanned = lebs_sum / rep.cuts as f64;
    } else {
        rep.recovery.min_ns = 0;
    }
    Ok(rep)
}

/// Recovery time after filling the card (`fills` × its capacity of random
/// writes) with checkpoints every `checkpoint_lebs` erase units (0: only
/// the format checkpoint), cut after the last write.
pub fn recovery_after_fill(
    cfg: &FtlConfig,
    checkpoint_lebs: u32,
    fills: f64,
    seed: u64,
) -> Result<RecoveryReport, FtlError> {
    let mut ftl = cfg.clone();
    ftl.track_sequence = true;
    let mut vsl = Vsl::new(ftl.clone())?;
    let mut media = Media::new(&mut vsl);
    let mut prng = Prng::from_seed(seed);
    let user = ftl.user_sectors;
    let mut events = Vec::new();
    let mut now = Nanos::ZERO;
    let mut written = 0u64;
    let target = (user as f64 * fills) as u64;
    while written < target {
        let count = 1 + prng.below(16.min(user));
        now = vsl.write(now, prng.below(user - count + 1), count)?;
        written += count;
        events.clear();
        vsl.drain_power_log(&mut events);
        for e in &events {
            media.apply(e);
        }
        if checkpoint_lebs > 0 && media.lebs_since_checkpoint() >= checkpoint_lebs as u64 {
            let c = media.snapshot(&vsl);
            media.write_checkpoint(c, false);
        }
    }
    media.power_cut(None, true);
    Ok(media.recover(&ftl, Fault::None).2)
}

/// The baseline of a campaign's wall-clock cost: the same generator of
/// host calls, as many calls as `cfg.cuts` cuts would bring on average,
/// on a plain VSL with no power log, no cut, no recovery and no check.
/// Returns the host calls made.
pub fn run_plain(cfg: &CampaignConfig) -> Result<u64, FtlError> {
    let mut vsl = Vsl::new(cfg.ftl.clone())?;
    let atomic_max = vsl.max_atomic_sectors().min(128);
    let mut prng = Prng::from_seed(cfg.seed);
    let mut now = Nanos::ZERO;
    let mut calls = 0u64;
    for _ in 0..cfg.cuts {
        let n = 1 + prng.below(cfg.max_calls as u64);
        for _ in 0..n {
            match gen_call(&mut prng, cfg, atomic_max) {
                Call::Write(s, c) => now = vsl.write(now, s, c)?,
                Call::Trim(s, c) => vsl.trim(s, c)?,
                Call::Atomic(w, t) => now = vsl.atomic_write(now, &w, &t)?,
                Call::Checkpoint => {}
            }
            calls += 1;
        }
    }
    Ok(calls)
}
