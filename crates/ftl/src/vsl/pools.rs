//! Several streams, each with its own frontier and pool of erase units
//! ([`super::Placement`]), and the adaptive split of the spare between the
//! pools (docs/MODEL.md, "Placement: spare shared between pools").
//!
//! The VSL's frontier fields hold the stream being written; the others are
//! parked here and swapped in when the placement policy names them, so the
//! placement loop, the program path and GC stay written once.

use super::blocks::Frontier;
use super::{FtlError, LebState, Origin, Placement, Vsl};

pub(super) struct Pools {
    placement: Box<dyn Placement>,
    frontiers: Vec<Frontier>,
    /// The stream whose frontier is in the VSL's fields.
    cur: usize,
    /// Stream of each erase unit (the one whose frontier last opened it).
    leb_stream: Vec<u8>,
    /// Host sectors written to each stream since the targets were last
    /// solved, and the decayed shares they feed.
    host_writes: Vec<u64>,
    share: Vec<f64>,
    /// Target size of each pool, in slots.
    target: Vec<f64>,
    /// GC victim choices since the targets were last solved.
    since_solve: u32,
    reserve: u32,
}

/// One pool as [`Vsl::pool_stats`] reports it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PoolStats {
    pub stream: usize,
    /// Erase units the pool holds (open, closed or being collected).
    pub units: u32,
    /// Valid sectors in them.
    pub valid_sectors: u64,
    /// The adaptive split's target for the pool, in erase units.
    pub target_units: f64,
    /// The pool's decayed share of host writes.
    pub host_share: f64,
}

/// Solve the split every this many GC victim choices.
const SOLVE_EVERY: u32 = 16;

impl Pools {
    pub(super) fn streams(&self) -> usize {
        self.frontiers.len()
    }

    pub(super) fn leb_stream(&self) -> &[u8] {
        &self.leb_stream
    }

    pub(super) fn stream_of(&self, leb: u32) -> usize {
        self.leb_stream[leb as usize] as usize
    }

    pub(super) fn opened(&mut self, leb: u32) {
        self.leb_stream[leb as usize] = self.cur as u8;
    }

    pub(super) fn ram_bytes(&self) -> u64 {
        self.leb_stream.len() as u64 + self.placement.ram_bytes()
    }

    /// Units held and valid sectors per pool.
    fn occupancy(&self, state: &[LebState], valid: &[u32]) -> (Vec<u32>, Vec<u64>, u32) {
        let n = self.streams();
        let mut held = vec![0u32; n];
        let mut data = vec![0u64; n];
        let mut in_service = 0;
        for (i, s) in state.iter().enumerate() {
            match s {
                LebState::Reserved | LebState::Retired | LebState::Parked => continue,
                LebState::Free => {}
                LebState::Open | LebState::Closed | LebState::Victim => {
                    let p = self.leb_stream[i] as usize;
                    held[p] += 1;
                    data[p] += valid[i] as u64;
                }
            }
            in_service += 1;
        }
        (held, data, in_service)
    }

    /// The pool GC should collect from: the one furthest above its target
    /// that has a candidate; `None` when no pool has one.
    pub(super) fn pool_to_collect(
        &mut self,
        state: &[LebState],
        valid: &[u32],
        spl: u32,
    ) -> Option<u8> {
        let (held, data, in_service) = self.occupancy(state, valid);
        if self.since_solve == 0 {
            let total: u64 = self.host_writes.iter().sum();
            for (p, w) in self.host_writes.iter_mut().enumerate() {
                let now = if total == 0 {
                    0.0
                } else {
                    *w as f64 / total as f64
                };
                // Exponential decay over solves: half old, half new.
                self.share[p] = if total == 0 {
                    self.share[p]
                } else {
                    0.5 * self.share[p] + 0.5 * now
                };
                *w = 0;
            }
            let usable = in_service.saturating_sub(self.reserve) as f64 * spl as f64;
            let data: Vec<f64> = data.iter().map(|&d| d as f64).collect();
            self.target = super::split_spare(&data, &self.share, usable, spl as f64);
        }
        self.since_solve = (self.since_solve + 1) % SOLVE_EVERY;
        let mut has = vec![false; self.streams()];
        for (i, s) in state.iter().enumerate() {
            if *s == LebState::Closed && valid[i] < spl {
                has[self.leb_stream[i] as usize] = true;
            }
        }
        (0..self.streams())
            .filter(|&p| has[p])
            .map(|p| (held[p] as f64 * spl as f64 - self.target[p], p))
            .fold(None, |best: Option<(f64, usize)>, c| match best {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            })
            .map(|(_, p)| p as u8)
    }
}

/// Placement: several streams ([`Placement`]).
impl Vsl {
    /// Installs a placement policy: a built-in one from
    /// [`super::PlacementSpec::build`] or one of your own
    /// (docs/ARCHITECTURE.md, "Adding a placement policy"). A policy of
    /// more than one stream opens a frontier per stream from the free list
    /// at once; best called right after [`Vsl::new`] (units written before
    /// belong to stream 0). Refused with Flashback or the power-cut log on
    /// (they follow one frontier), and when the free list cannot spare a
    /// unit per stream beyond the GC reserve.
    pub fn set_placement(&mut self, placement: Box<dyn Placement>) -> Result<(), FtlError> {
        let n = placement.streams();
        if n == 0 || n > 255 {
            return Err(FtlError::Config(format!(
                "placement {} has {n} streams (expected 1 to 255)",
                placement.name()
            )));
        }
        if self.pools.is_some() {
            return Err(FtlError::Config("a placement policy is already set".into()));
        }
        if n == 1 {
            return Ok(());
        }
        if self.flashback.is_some() || self.obs.placements() {
            return Err(FtlError::Config(format!(
                "placement {} needs one frontier per stream; Flashback and the power-cut model follow one",
                placement.name()
            )));
        }
        let reserve = self.cfg.gc_reserve_lebs as usize;
        if self.blocks.free_len() < reserve + n {
            return Err(FtlError::Config(format!(
                "placement {}: {n} streams need {} free erase units beyond the GC reserve of {reserve}, {} are free",
                placement.name(),
                n - 1,
                self.blocks.free_len()
            )));
        }
        let mut frontiers = vec![Frontier::default(); n];
        for f in frontiers.iter_mut().skip(1) {
            let leb = self.blocks.open_for_stream().expect("checked above");
            *f = Frontier::at(leb);
        }
        let mut leb_stream = vec![0u8; self.blocks.states().len()];
        for (s, f) in frontiers.iter().enumerate().skip(1) {
            leb_stream[f.leb() as usize] = s as u8;
        }
        self.pools = Some(Box::new(Pools {
            placement,
            frontiers,
            cur: 0,
            leb_stream,
            host_writes: vec![0; n],
            share: vec![1.0 / n as f64; n],
            target: vec![0.0; n],
            since_solve: 0,
            reserve: self.cfg.gc_reserve_lebs,
        }));
        Ok(())
    }

    /// The placement policy's name ("single" with one stream).
    pub fn placement_name(&self) -> String {
        self.pools
            .as_ref()
            .map_or_else(|| "single".to_string(), |p| p.placement.name())
    }

    /// Every pool's size, data, target and share of host writes (one pool
    /// with one stream: its target is the whole device).
    pub fn pool_stats(&self) -> Vec<PoolStats> {
        let Some(p) = self.pools.as_ref() else {
            let units = self
                .blocks
                .states()
                .iter()
                .filter(|s| matches!(s, LebState::Open | LebState::Closed | LebState::Victim))
                .count() as u32;
            return vec![PoolStats {
                stream: 0,
                units,
                valid_sectors: self.map.valid_counts().iter().map(|&v| v as u64).sum(),
                target_units: self.cfg.usable_lebs() as f64,
                host_share: 1.0,
            }];
        };
        let (held, data, _) = p.occupancy(self.blocks.states(), self.map.valid_counts());
        (0..p.streams())
            .map(|s| PoolStats {
                stream: s,
                units: held[s],
                valid_sectors: data[s],
                target_units: p.target[s] / self.spl as f64,
                host_share: p.share[s],
            })
            .collect()
    }

    /// Asks the placement policy for the stream of a sector about to be
    /// placed and makes that stream's frontier the VSL's.
    pub(super) fn choose_stream(&mut self, lba: u32, origin: Origin) -> usize {
        let spl = self.spl;
        let p = self.pools.as_mut().expect("called with pools");
        let s = match origin {
            Origin::Host(seq) => p.placement.host(lba, seq),
            Origin::Moved(from) => {
                let f = p.leb_stream[(from / spl) as usize] as usize;
                p.placement.moved(lba, f)
            }
        };
        let s = s.min(p.frontiers.len() - 1);
        if matches!(origin, Origin::Host(_)) {
            p.host_writes[s] += 1;
        }
        self.switch_stream(s);
        s
    }

    /// Parks the frontier being written and brings stream `s`'s in.
    pub(super) fn switch_stream(&mut self, s: usize) {
        let Some(p) = self.pools.as_mut() else {
            return;
        };
        if p.cur == s {
            return;
        }
        p.frontiers[p.cur] = self.blocks.swap_frontier(p.frontiers[s]);
        p.cur = s;
    }

    /// True when write unit `unit` is the partly filled open unit of a
    /// parked frontier (its data is still in the write buffer).
    #[inline]
    pub(super) fn parked_open(&self, unit: u32) -> bool {
        let Some(p) = self.pools.as_ref() else {
            return false;
        };
        p.frontiers
            .iter()
            .enumerate()
            .any(|(s, f)| s != p.cur && f.open_unit(self.spl, self.spu) == Some(unit))
    }
}
