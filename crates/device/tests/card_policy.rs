//! Policies of one's own on a whole card, from outside the `ftl` crate
//! (docs/ARCHITECTURE.md, "Adding a GC policy" and "Adding a placement
//! policy", step 2): only the public `VictimPolicy` and `Placement` traits
//! and `Card::set_victim_policy` / `Card::set_placement`.

use device::{Card, CardConfig, IoKind, Preset, VirtualDevice};
use ftl::{Candidates, Placement, VictimPolicy};
use sim::{Nanos, Prng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Greedy written from outside: the first candidate with the fewest valid
/// slots (what the built-in greedy picks), counting its calls per member.
struct OutsideGreedy {
    calls: Arc<AtomicU64>,
}

impl VictimPolicy for OutsideGreedy {
    fn name(&self) -> String {
        "outside-greedy".into()
    }

    fn select(&mut self, units: &Candidates<'_>, _: &mut Prng) -> Option<u32> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut best: Option<(u32, u32)> = None;
        for c in units.iter() {
            if best.is_none_or(|(_, v)| c.valid() < v) {
                best = Some((c.leb(), c.valid()));
            }
        }
        best.map(|(leb, _)| leb)
    }
}

fn config() -> CardConfig {
    let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
    c.scale = 0.01;
    c
}

/// Fills the card, then writes `rounds` capacities of random 4 KiB
/// sectors; returns the completion times of the random writes.
fn drive(card: &mut Card, rounds: u64) -> Vec<Nanos> {
    let sectors = card.capacity_bytes() / 4096;
    let mut now = Nanos::ZERO;
    for s in 0..sectors {
        now = card.submit(now, IoKind::Write, s * 4096, 4096).unwrap();
    }
    let mut prng = Prng::from_seed(5);
    let mut done = Vec::new();
    for _ in 0..rounds * sectors {
        now = card
            .submit(now, IoKind::Write, prng.below(sectors) * 4096, 4096)
            .unwrap();
        done.push(now);
    }
    done
}

#[test]
fn a_policy_from_outside_runs_on_every_member_of_a_card() {
    let calls: Vec<Arc<AtomicU64>> = (0..2).map(|_| Arc::default()).collect();
    let mut card = Card::new(config()).unwrap();
    assert_eq!(card.member_ids(), [0, 1]);
    card.set_victim_policy(|member| {
        Box::new(OutsideGreedy {
            calls: calls[member as usize].clone(),
        })
    });
    assert_eq!(card.victim_policy_name(), "outside-greedy");
    for i in 0..2 {
        assert_eq!(card.member(i).victim_policy_name(), "outside-greedy");
    }
    let outside = drive(&mut card, 2);
    for (i, chosen) in calls.iter().enumerate() {
        let runs = card.member(i).stats().gc_runs;
        assert!(runs > 0, "member {i} ran no GC");
        assert!(
            chosen.load(Ordering::Relaxed) >= runs,
            "member {i}: {} choices for {runs} GC runs",
            chosen.load(Ordering::Relaxed)
        );
        card.member(i).check_consistency();
    }
    // Making the built-in greedy's choices, it is the built-in greedy:
    // the same completion time for every write, the same GC work.
    let mut builtin = Card::new(config()).unwrap();
    assert_eq!(builtin.victim_policy_name(), "greedy");
    assert_eq!(drive(&mut builtin, 2), outside);
    assert_eq!(
        builtin.stats().gc_sectors_moved,
        card.stats().gc_sectors_moved
    );
}

/// The worked example's placement: a member's first `split` sectors in
/// stream 0, the rest in stream 1.
struct Halves {
    split: u32,
}

impl Placement for Halves {
    fn name(&self) -> String {
        "halves".into()
    }
    fn streams(&self) -> usize {
        2
    }
    fn host(&mut self, lba: u32, _seq: u64) -> usize {
        (lba >= self.split) as usize
    }
}

#[test]
fn a_placement_from_outside_runs_on_every_member_of_a_card() {
    let mut card = Card::new(config()).unwrap();
    let mut seen = Vec::new();
    card.set_placement(|member, sectors| {
        seen.push((member, sectors));
        Box::new(Halves {
            split: (sectors / 10) as u32,
        })
    })
    .unwrap();
    let per_member = card.ftl_config().user_sectors;
    assert_eq!(seen, [(0, per_member), (1, per_member)]);
    assert_eq!(card.placement_name(), "halves");
    // 90 % of the writes to the card's first 10 %: with the Duo's 512 KiB
    // stripe, each member's first 10 % (the stream-0 pool).
    let sectors = card.capacity_bytes() / 4096;
    let hot = sectors / 10;
    let mut now = Nanos::ZERO;
    for s in 0..sectors {
        now = card.submit(now, IoKind::Write, s * 4096, 4096).unwrap();
    }
    let mut prng = Prng::from_seed(9);
    for _ in 0..2 * sectors {
        let s = if prng.chance(0.9) {
            prng.below(hot)
        } else {
            hot + prng.below(sectors - hot)
        };
        now = card.submit(now, IoKind::Write, s * 4096, 4096).unwrap();
    }
    for i in 0..2 {
        let m = card.member(i);
        let pools = m.pool_stats();
        assert_eq!(pools.len(), 2, "member {i}: {pools:?}");
        // The hot pool holds its tenth of the data and takes most writes.
        let hot_data = pools[0].valid_sectors as f64 / per_member as f64;
        assert!((0.09..=0.11).contains(&hot_data), "member {i}: {pools:?}");
        assert!(pools[0].host_share > 0.8, "member {i}: {pools:?}");
        m.check_consistency();
    }
    // A second placement is refused, one line.
    let e = card
        .set_placement(|_, sectors| {
            Box::new(Halves {
                split: sectors as u32 / 2,
            })
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("already set") && !e.contains('\n'), "{e}");
}
