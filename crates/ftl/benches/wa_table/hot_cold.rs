//! Hot/cold rows of `bench/wa_table.sh` (included by `wa_table.rs`): write
//! amplification under fio's `zoned:A/S:B/R` traffic (A % of writes to the
//! first S % of the sectors, the rest uniform over the others) for the
//! three placements, next to an independent reference: a small greedy
//! page-mapped simulator written here from the textbook algorithm
//! (Desnoyers, SYSTOR 2012, section 3), sharing no code with the VSL.
//!
//! - `single` vs the reference simulator of one log: within 10 %.
//! - The best static two-pool split: the hot zone's sectors in one pool,
//!   the cold zone's in another, each a greedy log of its own, the free
//!   space divided between them; the bench searches the division (a grid
//!   of 1/10 steps, then 1/40 around the best) with the reference
//!   simulator. `hot-cold` (online classifier, adaptive spare): within 15 %
//!   of it. `streams` with the hot zone as its stream: within 10 % of it.

use ftl::{FtlConfig, GcPolicy, PlacementSpec, Vsl};
use sim::{Nanos, Prng};

/// One zoned traffic: `hot_writes` of the writes go to the first
/// `hot_space` of the sectors.
#[derive(Copy, Clone)]
pub struct Zoned {
    pub hot_writes: f64,
    pub hot_space: f64,
}

impl Zoned {
    pub fn spelling(&self) -> String {
        let a = (self.hot_writes * 100.0).round();
        let s = (self.hot_space * 100.0).round();
        format!("zoned:{a}/{s}:{}/{}", 100.0 - a, 100.0 - s)
    }
    fn hot_sectors(&self, user: u64) -> u64 {
        (user as f64 * self.hot_space) as u64
    }
    fn draw(&self, prng: &mut Prng, user: u64) -> u64 {
        let hot = self.hot_sectors(user);
        if prng.next_f64() < self.hot_writes {
            prng.below(hot)
        } else {
            hot + prng.below(user - hot)
        }
    }
}

/// The reference: a page-mapped log of `blocks` erase blocks of `pages`
/// pages holding `user` logical pages, greedy GC (fewest valid pages) when
/// fewer than 2 blocks are free.
struct RefSim {
    pages: u32,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid: Vec<u32>,
    closed: Vec<bool>,
    free: Vec<u32>,
    open: u32,
    next: u32,
    host: u64,
    moved: u64,
}

const NONE: u32 = u32::MAX;

impl RefSim {
    fn new(blocks: u32, pages: u32, user: u64) -> RefSim {
        assert!(user < (blocks as u64 - 2) * pages as u64, "no spare");
        RefSim {
            pages,
            l2p: vec![NONE; user as usize],
            p2l: vec![NONE; (blocks * pages) as usize],
            valid: vec![0; blocks as usize],
            closed: vec![false; blocks as usize],
            free: (1..blocks).rev().collect(),
            open: 0,
            next: 0,
            host: 0,
            moved: 0,
        }
    }

    fn append(&mut self, lpn: u32) {
        if self.next == self.pages {
            self.closed[self.open as usize] = true;
            self.open = self.free.pop().expect("free block");
            self.next = 0;
        }
        let ppn = self.open * self.pages + self.next;
        let old = self.l2p[lpn as usize];
        if old != NONE {
            self.valid[(old / self.pages) as usize] -= 1;
            self.p2l[old as usize] = NONE;
        }
        self.l2p[lpn as usize] = ppn;
        self.p2l[ppn as usize] = lpn;
        self.valid[self.open as usize] += 1;
        self.next += 1;
    }

    fn write(&mut self, lpn: u32) {
        while self.free.len() < 2 {
            self.collect();
        }
        self.append(lpn);
        self.host += 1;
    }

    fn collect(&mut self) {
        let victim = (0..self.valid.len())
            .filter(|&b| self.closed[b])
            .min_by_key(|&b| (self.valid[b], b))
            .expect("a closed block") as u32;
        for p in victim * self.pages..(victim + 1) * self.pages {
            let lpn = self.p2l[p as usize];
            if lpn != NONE {
                self.append(lpn);
                self.moved += 1;
            }
        }
        assert_eq!(self.valid[victim as usize], 0);
        self.closed[victim as usize] = false;
        self.free.insert(0, victim);
    }

    fn wa_since(&self, host0: u64, moved0: u64) -> (u64, u64) {
        (self.host - host0, self.moved - moved0)
    }
}

/// Reference WA of the pools `pools` (each `(blocks, user sectors)`), the
/// traffic's hot zone in pool 0 and the cold one in pool 1 when there are
/// two (one pool: everything in it). A fill, 6 device writes of warm-up,
/// 6 measured, as the VSL rows.
fn reference(z: Zoned, user: u64, pools: &[(u32, u64)], seed: u64) -> f64 {
    let mut sims: Vec<RefSim> = pools.iter().map(|&(b, u)| RefSim::new(b, 256, u)).collect();
    let hot = z.hot_sectors(user);
    let route = |lba: u64| -> (usize, u32) {
        if pools.len() == 1 || lba < hot {
            (0, lba as u32)
        } else {
            (1, (lba - hot) as u32)
        }
    };
    let mut prng = Prng::from_seed(seed);
    for lba in 0..user {
        let (p, l) = route(lba);
        sims[p].write(l);
    }
    for _ in 0..6 * user {
        let (p, l) = route(z.draw(&mut prng, user));
        sims[p].write(l);
    }
    let before: Vec<(u64, u64)> = sims.iter().map(|s| (s.host, s.moved)).collect();
    for _ in 0..6 * user {
        let (p, l) = route(z.draw(&mut prng, user));
        sims[p].write(l);
    }
    let (mut h, mut m) = (0, 0);
    for (s, b) in sims.iter().zip(before) {
        let (dh, dm) = s.wa_since(b.0, b.1);
        h += dh;
        m += dm;
    }
    (h + m) as f64 / h as f64
}

/// The VSL's WA under the traffic with `placement`.
fn vsl_wa(z: Zoned, lebs: u32, spare: f64, placement: &PlacementSpec, seed: u64) -> f64 {
    let cfg = FtlConfig::wa_study(lebs, spare, 4096, GcPolicy::Greedy);
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg).expect("valid config");
    vsl.set_placement(placement.build(user).expect("valid placement"))
        .expect("placement fits");
    let mut prng = Prng::from_seed(seed);
    let mut t = Nanos::ZERO;
    for lba in 0..user {
        t = vsl.write(t, lba, 1).unwrap();
    }
    for _ in 0..6 * user {
        t = vsl.write(t, z.draw(&mut prng, user), 1).unwrap();
    }
    let before = vsl.stats();
    for _ in 0..6 * user {
        t = vsl.write(t, z.draw(&mut prng, user), 1).unwrap();
    }
    let after = vsl.stats();
    let host = after.host_sectors_written - before.host_sectors_written;
    let moved = after.gc_sectors_moved - before.gc_sectors_moved;
    (host + moved) as f64 / host as f64
}

/// One row: the traffic at one spare factor.
pub struct Row {
    pub traffic: String,
    pub spare: f64,
    pub single: f64,
    pub reference: f64,
    pub best_split: f64,
    /// Fraction of the free space the best split gives the hot pool.
    pub best_hot_share: f64,
    pub hot_cold: f64,
    pub streams: f64,
}

/// The pools of a static split: `share` of the free blocks to the hot pool.
fn split(z: Zoned, blocks: u32, user: u64, share: f64) -> [(u32, u64); 2] {
    let hot = z.hot_sectors(user);
    let cold = user - hot;
    // Each pool keeps its own 2-block GC reserve, as the single log does.
    let free = blocks as f64 - 4.0 - user as f64 / 256.0;
    let hb = (hot as f64 / 256.0 + free * share).ceil() as u32 + 2;
    let hb = hb.clamp(
        hot.div_ceil(256) as u32 + 3,
        blocks - cold.div_ceil(256) as u32 - 3,
    );
    [(hb, hot), (blocks - hb, cold)]
}

pub fn row(z: Zoned, lebs: u32, spare: f64, seed: u64) -> Row {
    let cfg = FtlConfig::wa_study(lebs, spare, 4096, GcPolicy::Greedy);
    let user = cfg.user_sectors;
    let single = vsl_wa(z, lebs, spare, &PlacementSpec::Single, seed);
    let one_log = reference(z, user, &[(lebs, user)], seed);
    // Search the division of the free space.
    let mut best = (f64::MAX, 0.0);
    let probe = |share: f64, best: &mut (f64, f64)| {
        let wa = reference(z, user, &split(z, lebs, user, share), seed);
        if wa < best.0 {
            *best = (wa, share);
        }
    };
    for i in 1..10 {
        probe(i as f64 / 10.0, &mut best);
    }
    let centre = best.1;
    for d in [-2.0, -1.0, 1.0, 2.0] {
        let s = centre + d / 40.0;
        if s > 0.0 && s < 1.0 {
            probe(s, &mut best);
        }
    }
    let hot_cold = vsl_wa(z, lebs, spare, &PlacementSpec::HotCold, seed);
    let streams = vsl_wa(
        z,
        lebs,
        spare,
        &PlacementSpec::Streams(vec![(0, z.hot_sectors(user))]),
        seed,
    );
    Row {
        traffic: z.spelling(),
        spare,
        single,
        reference: one_log,
        best_split: best.0,
        best_hot_share: best.1,
        hot_cold,
        streams,
    }
}
