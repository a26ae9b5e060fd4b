//! GC victim selection behind one seam: [`VictimPolicy`].
//!
//! Garbage collection asks its policy which closed erase unit to reclaim
//! next, handing it a read-only view of every unit ([`Candidates`]) and
//! the FTL's seeded [`Prng`]. The built-in policies ([`GcPolicy`], spelled
//! as `--gc-policy` spells them, listed with their sources in
//! [`POLICIES`]) implement the trait; a researcher's own policy implements
//! it too and is installed with [`crate::Vsl::set_victim_policy`]
//! (docs/ARCHITECTURE.md, "Adding a GC policy").
//!
//! The policy is asked once per GC run (one erase unit reclaimed), not per
//! sector moved, so a dynamic call costs nothing measurable; what matters
//! is the scan. [`Candidate`] reads its fields lazily so greedy's scan
//! touches only the state and valid-count arrays, as before the seam.
//! The wear-levelling victim (every 64th run when erase counts have
//! spread) is the FTL's choice and bypasses the policy.

use super::LebState;
use serde::{Serialize, Serializer};
use sim::Prng;

/// Picks the erase unit garbage collection reclaims next.
///
/// `select` is called once per GC run with every erase unit of the device
/// in `units`; only closed units with a stale slot are candidates
/// ([`Candidates::get`]). It must return one of them (the FTL asserts
/// it), or `None` when there is none: GC then cannot make progress. Any random
/// choice must draw from `prng`, which the FTL seeds from its config
/// (`FtlConfig::gc_seed`): the same seed must give the same victims.
pub trait VictimPolicy: Send {
    /// The policy as `--gc-policy` spells it (or any short name for one
    /// plugged in from outside), for reports.
    fn name(&self) -> String;

    /// The unit to reclaim next, one for which `units.get(leb)` is `Some`.
    fn select(&mut self, units: &Candidates<'_>, prng: &mut Prng) -> Option<u32>;

    /// Whether this policy reads [`Candidate::close_seq`]. The FTL keeps a
    /// close sequence number per erase unit (8 bytes each, counted in
    /// host RAM) only for policies that ask for it.
    fn needs_close_order(&self) -> bool {
        false
    }
}

/// A read-only view of every erase unit at the moment GC picks a victim.
/// The candidates are the closed units (written whole, not being
/// collected) with at least one stale slot: collecting a fully valid unit
/// would free nothing.
pub struct Candidates<'a> {
    pub(super) state: &'a [LebState],
    pub(super) valid: &'a [u32],
    pub(super) closed_at: &'a [u64],
    /// Empty unless the policy asked for the close order.
    pub(super) close_seq: &'a [u64],
    pub(super) erase_counts: &'a [u32],
    pub(super) capacity: u32,
    pub(super) now: u64,
    /// Stream (pool) of each unit, empty with one stream; with `only`,
    /// the view holds that pool's units alone (GC per pool).
    pub(super) pool: &'a [u8],
    pub(super) only: u8,
}

impl Candidates<'_> {
    /// Erase units in the device, candidates or not: `get` takes `0..units()`.
    pub fn units(&self) -> u32 {
        self.state.len() as u32
    }

    /// Slots (sectors) one erase unit holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Host sectors written so far (the clock of [`Candidate::age`]).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Unit `leb` if it is a candidate, else `None`.
    #[inline]
    pub fn get(&self, leb: u32) -> Option<Candidate<'_>> {
        let i = leb as usize;
        let closed = self.state.get(i) == Some(&LebState::Closed);
        let mine = self.pool.is_empty() || self.pool[i] == self.only;
        (closed && mine && self.valid[i] < self.capacity).then_some(Candidate { view: self, leb })
    }

    /// Every candidate, in erase-unit order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = Candidate<'_>> + '_ {
        let cap = self.capacity;
        let (pool, only) = (self.pool, self.only);
        self.state
            .iter()
            .zip(self.valid)
            .enumerate()
            .filter(move |(i, (s, v))| {
                **s == LebState::Closed && **v < cap && (pool.is_empty() || pool[*i] == only)
            })
            .map(move |(leb, _)| Candidate {
                view: self,
                leb: leb as u32,
            })
    }
}

/// One closed erase unit; each field is read from the FTL's tables when
/// asked for.
#[derive(Copy, Clone)]
pub struct Candidate<'v> {
    view: &'v Candidates<'v>,
    leb: u32,
}

impl Candidate<'_> {
    /// The erase unit's number: what `select` returns.
    pub fn leb(&self) -> u32 {
        self.leb
    }

    /// Slots holding current data: what collecting it moves.
    #[inline]
    pub fn valid(&self) -> u32 {
        self.view.valid[self.leb as usize]
    }

    /// Slots the unit holds ([`Candidates::capacity`]).
    pub fn capacity(&self) -> u32 {
        self.view.capacity
    }

    /// Host sectors written when the unit was closed (0 for a unit found
    /// holding data by recovery).
    pub fn closed_at(&self) -> u64 {
        self.view.closed_at[self.leb as usize]
    }

    /// Host sectors written since the unit was closed.
    pub fn age(&self) -> u64 {
        self.view.now - self.closed_at()
    }

    /// Order in which the units were closed (1, 2, …; unique, 0 after a
    /// recovery). Only kept for a policy whose
    /// [`VictimPolicy::needs_close_order`] is true; panics otherwise.
    pub fn close_seq(&self) -> u64 {
        assert!(
            !self.view.close_seq.is_empty(),
            "close order is kept only for policies that ask for it (needs_close_order)"
        );
        self.view.close_seq[self.leb as usize]
    }

    /// Times the unit has been erased.
    pub fn erase_count(&self) -> u32 {
        self.view.erase_counts[self.leb as usize]
    }
}

/// The built-in victim policies, as `--gc-policy` spells them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GcPolicy {
    /// Fewest valid slots.
    Greedy,
    /// Highest (1-u)/(2u) × age.
    CostBenefit,
    /// Greedy among D units drawn uniformly at random (with replacement).
    DChoices(u32),
    /// The unit closed longest ago.
    Fifo,
    /// Greedy among the W units closed longest ago.
    Windowed(u32),
}

/// One built-in policy for `vsl policies` and error messages: how it is
/// spelled, what it does, where it comes from.
pub struct PolicyInfo {
    pub spelling: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
}

/// Every built-in policy, in the order `vsl policies` lists them.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        spelling: "greedy",
        summary: "the closed unit with the fewest valid sectors (the default)",
        source: "Desnoyers, SYSTOR 2012; analytic WA in ftl::greedy_wa_limit",
    },
    PolicyInfo {
        spelling: "cost-benefit",
        summary: "highest (1-u)/(2u) x age: cold, mostly-stale units first",
        source: "Rosenblum & Ousterhout, LFS, ACM TOCS 1992",
    },
    PolicyInfo {
        spelling: "d-choices:D",
        summary: "greedy among D units drawn at random (seeded); D in 1..=1024",
        source: "Van Houdt, SIGMETRICS 2013",
    },
    PolicyInfo {
        spelling: "fifo",
        summary: "the unit closed longest ago, whatever it holds",
        source: "Desnoyers, SYSTOR 2012 (LRU/FIFO cleaning)",
    },
    PolicyInfo {
        spelling: "windowed:W",
        summary: "greedy among the W units closed longest ago; W >= 1",
        source: "Hu et al., SYSTOR 2009",
    },
];

/// Largest D of `d-choices:D`: each GC run draws D units.
pub const D_CHOICES_MAX: u32 = 1024;

impl GcPolicy {
    /// A fresh instance of the policy, for one FTL.
    pub fn build(self) -> Box<dyn VictimPolicy> {
        match self {
            GcPolicy::Greedy => Box::new(Greedy),
            GcPolicy::CostBenefit => Box::new(CostBenefit),
            GcPolicy::DChoices(d) => Box::new(DChoices { d }),
            GcPolicy::Fifo => Box::new(Fifo),
            GcPolicy::Windowed(w) => Box::new(Windowed {
                w,
                oldest: Vec::new(),
            }),
        }
    }
}

impl std::fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GcPolicy::Greedy => f.write_str("greedy"),
            GcPolicy::CostBenefit => f.write_str("cost-benefit"),
            GcPolicy::DChoices(d) => write!(f, "d-choices:{d}"),
            GcPolicy::Fifo => f.write_str("fifo"),
            GcPolicy::Windowed(w) => write!(f, "windowed:{w}"),
        }
    }
}

/// Serialized as spelled (`"greedy"`, `"d-choices:4"`), so reports name
/// the policy as the command line did.
impl Serialize for GcPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for GcPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let count = |max: u32| -> Result<u32, String> {
            let a = arg.ok_or_else(|| format!("GC policy '{s}' needs a count, e.g. {name}:4"))?;
            a.parse::<u32>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    let range = if max == u32::MAX {
                        "of at least 1".to_string()
                    } else {
                        format!("from 1 to {max}")
                    };
                    format!("GC policy '{s}': '{a}' is not a whole number {range}")
                })
        };
        let plain = |p: GcPolicy| match arg {
            None => Ok(p),
            Some(_) => Err(format!("GC policy '{s}': {name} takes no ':' argument")),
        };
        match name {
            "greedy" => plain(GcPolicy::Greedy),
            "cost-benefit" | "cb" => plain(GcPolicy::CostBenefit),
            "fifo" => plain(GcPolicy::Fifo),
            "d-choices" => count(D_CHOICES_MAX).map(GcPolicy::DChoices),
            "windowed" => count(u32::MAX).map(GcPolicy::Windowed),
            _ => Err(format!(
                "unknown GC policy '{s}' (expected {}; `vsl policies` lists them)",
                POLICIES
                    .iter()
                    .map(|p| p.spelling)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// Fewest valid slots; ties go to the lowest-numbered unit.
struct Greedy;

impl VictimPolicy for Greedy {
    fn name(&self) -> String {
        GcPolicy::Greedy.to_string()
    }

    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        greedy_of(units.iter())
    }
}

/// The first unit with the fewest valid slots among `it`. An empty unit
/// ends the scan: nothing later can beat it.
#[inline]
fn greedy_of<'v>(it: impl Iterator<Item = Candidate<'v>>) -> Option<u32> {
    let mut best: Option<(u32, u32)> = None;
    for c in it {
        let valid = c.valid();
        if best.is_none_or(|(_, v)| valid < v) {
            best = Some((c.leb(), valid));
            if valid == 0 {
                break;
            }
        }
    }
    best.map(|(leb, _)| leb)
}

/// Rosenblum & Ousterhout's benefit/cost: (1-u)/(2u) × (age + 1), an
/// empty unit first; ties go to the lowest-numbered unit.
struct CostBenefit;

impl VictimPolicy for CostBenefit {
    fn name(&self) -> String {
        GcPolicy::CostBenefit.to_string()
    }

    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        let spl = units.capacity() as f64;
        let mut best: Option<(u32, f64)> = None;
        for c in units.iter() {
            let valid = c.valid();
            let score = if valid == 0 {
                f64::INFINITY
            } else {
                let u = valid as f64 / spl;
                (1.0 - u) / (2.0 * u) * (c.age() as f64 + 1.0)
            };
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((c.leb(), score));
            }
        }
        best.map(|(leb, _)| leb)
    }
}

/// Van Houdt's d-choices: D units drawn uniformly (with replacement) among
/// the candidates, the one with the fewest valid slots wins (the first
/// drawn on a tie). Draws that land on a unit that is not a candidate
/// (free, open, being collected) are redrawn, at most 64 times per choice;
/// if every draw missed, greedy over all decides.
struct DChoices {
    d: u32,
}

impl VictimPolicy for DChoices {
    fn name(&self) -> String {
        GcPolicy::DChoices(self.d).to_string()
    }

    fn select(&mut self, units: &Candidates<'_>, prng: &mut Prng) -> Option<u32> {
        let n = units.units() as u64;
        if n == 0 {
            return None;
        }
        let mut best: Option<(u32, u32)> = None;
        for _ in 0..self.d {
            for _ in 0..64 {
                let Some(c) = units.get(prng.below(n) as u32) else {
                    continue;
                };
                if best.is_none_or(|(_, v)| c.valid() < v) {
                    best = Some((c.leb(), c.valid()));
                }
                break;
            }
        }
        best.map(|(leb, _)| leb).or_else(|| greedy_of(units.iter()))
    }
}

/// The unit closed longest ago.
struct Fifo;

impl VictimPolicy for Fifo {
    fn name(&self) -> String {
        GcPolicy::Fifo.to_string()
    }

    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        units
            .iter()
            .min_by_key(|c| (c.close_seq(), c.leb()))
            .map(|c| c.leb())
    }

    fn needs_close_order(&self) -> bool {
        true
    }
}

/// Hu et al.'s windowed greedy: greedy among the `w` units closed longest
/// ago (the oldest on a tie). `oldest` is scratch reused across runs.
struct Windowed {
    w: u32,
    oldest: Vec<(u64, u32)>,
}

impl VictimPolicy for Windowed {
    fn name(&self) -> String {
        GcPolicy::Windowed(self.w).to_string()
    }

    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        self.oldest.clear();
        self.oldest
            .extend(units.iter().map(|c| (c.close_seq(), c.leb())));
        let w = (self.w as usize).min(self.oldest.len());
        if w == 0 {
            return None;
        }
        if w < self.oldest.len() {
            self.oldest.select_nth_unstable(w - 1);
        }
        self.oldest[..w]
            .iter()
            .min_by_key(|&&(seq, leb)| (units.get(leb).map_or(u32::MAX, |c| c.valid()), seq))
            .map(|&(_, leb)| leb)
    }

    fn needs_close_order(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six units: 0 free, 1..=5 closed with the given valid counts, close
    /// order and erase counts; 5, fully valid, is no candidate.
    struct Fixture {
        state: Vec<LebState>,
        valid: Vec<u32>,
        closed_at: Vec<u64>,
        close_seq: Vec<u64>,
        erases: Vec<u32>,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture {
                state: vec![
                    LebState::Free,
                    LebState::Closed,
                    LebState::Closed,
                    LebState::Closed,
                    LebState::Closed,
                    LebState::Closed,
                ],
                valid: vec![0, 50, 10, 10, 90, 100],
                closed_at: vec![0, 400, 300, 100, 200, 0],
                close_seq: vec![0, 4, 3, 1, 2, 5],
                erases: vec![7, 1, 2, 3, 4, 0],
            }
        }

        fn view(&self) -> Candidates<'_> {
            Candidates {
                state: &self.state,
                valid: &self.valid,
                closed_at: &self.closed_at,
                close_seq: &self.close_seq,
                erase_counts: &self.erases,
                capacity: 100,
                now: 1000,
                pool: &[],
                only: 0,
            }
        }
    }

    fn pick(p: GcPolicy, f: &Fixture) -> Option<u32> {
        p.build().select(&f.view(), &mut Prng::from_seed(1))
    }

    #[test]
    fn every_policy_picks_what_its_rule_says() {
        let f = Fixture::new();
        // Fewest valid, lowest unit on the tie of 2 and 3; free unit 0 is
        // no candidate although it holds nothing.
        assert_eq!(pick(GcPolicy::Greedy, &f), Some(2));
        // Unit 3 (10 valid, age 900) beats unit 2 (10 valid, age 700);
        // full unit 5, closed at 0, frees nothing.
        assert_eq!(pick(GcPolicy::CostBenefit, &f), Some(3));
        assert_eq!(pick(GcPolicy::Fifo, &f), Some(3));
        // The two oldest are 3 (10 valid) and 4 (90 valid).
        assert_eq!(pick(GcPolicy::Windowed(2), &f), Some(3));
        // The oldest alone is FIFO.
        assert_eq!(pick(GcPolicy::Windowed(1), &f), Some(3));
        // A window over everything is greedy, the older unit on the tie.
        assert_eq!(pick(GcPolicy::Windowed(100), &f), Some(3));
    }

    /// `n` victims of d-choices:`d` drawn from one stream seeded `seed`.
    fn d_choice_picks(f: &Fixture, d: u32, seed: u64, n: usize) -> Vec<u32> {
        let mut policy = GcPolicy::DChoices(d).build();
        let mut prng = Prng::from_seed(seed);
        (0..n)
            .map(|_| policy.select(&f.view(), &mut prng).expect("a candidate"))
            .collect()
    }

    #[test]
    fn d_choices_is_seeded_and_tends_to_greedy() {
        let f = Fixture::new();
        let one = d_choice_picks(&f, 1, 5, 200);
        assert_eq!(
            one,
            d_choice_picks(&f, 1, 5, 200),
            "same seed, same victims"
        );
        assert_ne!(one, d_choice_picks(&f, 1, 6, 200), "another seed, others");
        // D = 1 is a random candidate: every closed unit comes up, never
        // the free one or the full one.
        for leb in 1..=4 {
            assert!(one.contains(&leb), "unit {leb} never drawn");
        }
        assert!(!one.contains(&0) && !one.contains(&5));
        // D = 64 draws: one of the fewest-valid units (2 or 3) wins.
        for v in d_choice_picks(&f, 64, 9, 100) {
            assert!(v == 2 || v == 3, "d-choices:64 picked {v}");
        }
    }

    #[test]
    fn no_candidate_no_victim() {
        let mut f = Fixture::new();
        f.state.iter_mut().for_each(|s| *s = LebState::Free);
        for p in [
            GcPolicy::Greedy,
            GcPolicy::CostBenefit,
            GcPolicy::DChoices(3),
            GcPolicy::Fifo,
            GcPolicy::Windowed(2),
        ] {
            assert_eq!(pick(p, &f), None, "{p}");
        }
    }

    #[test]
    fn spellings_round_trip_and_bad_ones_are_one_line() {
        for s in [
            "greedy",
            "cost-benefit",
            "d-choices:4",
            "fifo",
            "windowed:16",
        ] {
            let p: GcPolicy = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
            assert_eq!(p.build().name(), s);
        }
        assert_eq!("cb".parse::<GcPolicy>(), Ok(GcPolicy::CostBenefit));
        for (bad, needle) in [
            ("lru", "unknown GC policy"),
            ("d-choices:0", "from 1 to 1024"),
            ("d-choices:1025", "from 1 to 1024"),
            ("d-choices", "needs a count"),
            ("d-choices:x", "not a whole number"),
            ("windowed:0", "not a whole number of at least 1"),
            ("windowed:-3", "not a whole number"),
            ("greedy:2", "takes no"),
        ] {
            let e = bad.parse::<GcPolicy>().unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{bad}: {e}");
        }
    }

    #[test]
    fn candidate_fields_come_from_the_tables() {
        let f = Fixture::new();
        let v = f.view();
        let c = v.get(3).unwrap();
        assert_eq!(
            (
                c.valid(),
                c.closed_at(),
                c.age(),
                c.close_seq(),
                c.erase_count()
            ),
            (10, 100, 900, 1, 3)
        );
        assert_eq!(c.capacity(), 100);
        assert!(v.get(0).is_none(), "a free unit is no candidate");
        assert!(v.get(5).is_none(), "a full unit is no candidate");
        assert!(v.get(6).is_none(), "beyond the device");
        assert_eq!(v.iter().map(|c| c.leb()).collect::<Vec<_>>(), [1, 2, 3, 4]);
    }
}
