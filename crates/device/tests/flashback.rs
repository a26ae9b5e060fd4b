//! Flashback and media errors end to end (issue 11): a workload on a small
//! card, a reference model of every sector's contents (the sequence number
//! of its last acknowledged write, counted here), and every read checked
//! against it.

use device::{
    Card, CardConfig, DeviceError, DieFailure, Format, HealthState, IoKind, MemberSel, Preset,
    VirtualDevice,
};
use ftl::{content_tag, FtlError, MediaConfig};
use nand::{CellTiming, Geometry};
use sim::{Nanos, Prng};

/// One member, 25 channels (24 data + parity) × 2 banks, small blocks.
fn small_card(cycles: u32, blocks: u32) -> CardConfig {
    let base = Preset::by_name("iodrive-duo-640-mlc").unwrap();
    let mut p = base.clone();
    p.members = 1;
    p.geometry = Geometry {
        channels: 25,
        parity_channels: 1,
        banks: 2,
        planes: 1,
        blocks_per_plane: blocks,
        pages_per_block: 2,
        page_bytes: 4096,
    };
    p.timing = CellTiming {
        endurance_cycles: cycles,
        ..CellTiming::MLC_2009
    };
    let mut c = CardConfig::new(Box::leak(Box::new(p)));
    c.member = MemberSel::One(0);
    c.format = Format::Overprovision(0.2);
    c
}

/// Drives a card with 4 KiB random reads and writes at queue depth 1 and
/// checks every read against what was acknowledged.
struct Checked {
    card: Card,
    seq: Vec<u64>,
    written: u64,
    now: Nanos,
    reads: u64,
    read_errors: u64,
    read_latency: Vec<(Nanos, u64)>,
}

impl Checked {
    fn new(card: Card) -> Checked {
        let sectors = (card.capacity_bytes() / 4096) as usize;
        Checked {
            card,
            seq: vec![0; sectors],
            written: 0,
            now: Nanos::ZERO,
            reads: 0,
            read_errors: 0,
            read_latency: Vec::new(),
        }
    }

    fn write(&mut self, lba: u64) -> Result<(), DeviceError> {
        let done = self
            .card
            .submit(self.now, IoKind::Write, lba * 4096, 4096)?;
        self.written += 1;
        self.seq[lba as usize] = self.written;
        self.now = done;
        Ok(())
    }

    /// Reads `lba`; panics on wrong data (silent corruption). Returns
    /// whether the read failed with an I/O error.
    fn read(&mut self, lba: u64) -> bool {
        let before = self.now;
        let r = self.card.submit(self.now, IoKind::Read, lba * 4096, 4096);
        self.reads += 1;
        match r {
            Ok(done) => {
                self.read_latency.push((before, (done - before).0));
                self.now = done;
                let want = (self.seq[lba as usize] > 0)
                    .then(|| content_tag(lba as u32, self.seq[lba as usize]));
                let got = self.card.member(0).read_content(lba).unwrap();
                assert_eq!(got, want, "sector {lba} read back wrong data");
                false
            }
            Err(DeviceError::Ftl(FtlError::Lost { done, .. })) => {
                self.now = done;
                self.read_errors += 1;
                true
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn one_die_killed_under_a_running_workload_loses_nothing() {
    let seed = 21;
    println!("seed {seed}");
    let mut cfg = small_card(10_000, 80);
    cfg.reliability.fail_dies = vec![DieFailure {
        member: 0,
        die: 25 + 4,
        at_ns: 200_000_000,
    }];
    let mut c = Checked::new(Card::new(cfg).unwrap());
    let reserve_before = c.card.health()[0].reserve_pct;
    let n = c.seq.len() as u64;
    for lba in 0..n {
        c.write(lba).unwrap();
    }
    let mut prng = Prng::from_seed(seed);
    while c.now < Nanos(3_000_000_000) {
        let lba = prng.below(n);
        if prng.below(10) < 7 {
            assert!(!c.read(lba), "sector {lba} was lost");
        } else {
            c.write(lba).unwrap();
        }
    }
    let m = &c.card.media()[0];
    println!("{m:?}");
    assert_eq!(m.stats.dies_failed, 1);
    assert_eq!(m.stats.dies_rebuilt, 1, "the rebuild finished");
    assert!(m.stats.degraded_sector_reads > 0);
    assert!(m.stats.rebuild_s > 0.0);
    assert_eq!(m.stats.lost_sectors, 0);
    assert!(m.lost_ranges.is_empty());
    assert_eq!(m.stats.silent_corruptions, 0);
    assert_eq!(c.read_errors, 0);
    // The die's spare blocks came out of the reserves.
    let h = &c.card.health()[0];
    assert!(h.reserve_pct < reserve_before, "{h:?}");
    assert!(h.retired_blocks > 0);
}

#[test]
fn two_dies_of_one_stripe_lose_exactly_the_reported_sectors() {
    let seed = 22;
    println!("seed {seed}");
    let mut cfg = small_card(10_000, 80);
    let at_ns = 300_000_000;
    cfg.reliability.fail_dies = [3, 19]
        .map(|die| DieFailure {
            member: 0,
            die,
            at_ns,
        })
        .to_vec();
    let mut c = Checked::new(Card::new(cfg).unwrap());
    let n = c.seq.len() as u64;
    for lba in 0..n {
        c.write(lba).unwrap();
    }
    let mut prng = Prng::from_seed(seed);
    while c.now < Nanos(1_000_000_000) {
        let lba = prng.below(n);
        if prng.below(10) < 7 {
            c.read(lba);
        } else {
            c.write(lba).unwrap();
        }
    }
    // Every sector still lost reads as an I/O error; every other one reads
    // back what was written (checked in `read`).
    let lost = c.card.member(0).lost_sectors();
    assert!(!lost.is_empty(), "two dies of one stripe lost nothing");
    for lba in 0..n {
        let failed = c.read(lba);
        assert_eq!(failed, lost.contains(&(lba as u32)), "sector {lba}");
    }
    let m = &c.card.media()[0];
    let reported: u64 = m.lost_ranges.iter().map(|r| r.1).sum();
    assert_eq!(reported, m.stats.lost_sectors);
    assert!(m.stats.lost_sectors >= lost.len() as u64);
    assert_eq!(m.stats.silent_corruptions, 0);
}

/// The wear-out run: a tiny card rated for 20 cycles, media errors on.
/// Its ECC corrects 1 bit per 512-byte codeword (an SLC-era Hamming code)
/// instead of the model's 8, so that a card worn out in seconds meets ECC
/// failures in its lifetime (with 8 bits they start only past the rated
/// cycles, where the health model has already made the card read-only).
fn wear_out(seed: u64, broken: bool) -> (Vec<(u64, f64, u64)>, Vec<HealthState>, u64) {
    println!("seed {seed} broken {broken}");
    let mut cfg = small_card(20, 60);
    cfg.reliability.media_errors = true;
    cfg.reliability.seed = seed;
    let mut m = MediaConfig::for_cells(20, seed);
    m.ecc_bits = 1;
    if broken {
        // A card without read retry or parity: errors beyond ECC come back
        // as wrong data.
        m.max_retries = 0;
    }
    cfg.reliability.media_override = Some(m);
    let mut card = Card::new(cfg).unwrap();
    if broken {
        card.member_mut(0).set_parity_rebuild(false);
    }
    let mut c = Checked::new(card);
    let n = c.seq.len() as u64;
    let mut prng = Prng::from_seed(seed);
    let mut states = vec![HealthState::Healthy];
    // (reads so far, corrected bits per read and retries in the last window);
    // windows of 5,000 reads, so that even a card that goes read-only early
    // (a few error-prone units retire) shows several.
    let mut windows = Vec::new();
    let (mut bits0, mut reads0, mut retries0) = (0u64, 0u64, 0u64);
    let mut i = 0u64;
    loop {
        i += 1;
        let lba = prng.below(n);
        if i.is_multiple_of(2) {
            c.read(lba);
        } else if let Err(e) = c.write(lba) {
            assert!(matches!(e, DeviceError::ReadOnly { .. }), "{e}");
            break;
        }
        let state = c.card.member(0).health_state();
        if *states.last().unwrap() != state {
            states.push(state);
        }
        if i.is_multiple_of(10_000) {
            let s = c.card.media()[0].stats;
            let per_read = (s.corrected_bits - bits0) as f64 / (c.reads - reads0).max(1) as f64;
            windows.push((c.reads, per_read, s.read_retries - retries0));
            bits0 = s.corrected_bits;
            reads0 = c.reads;
            retries0 = s.read_retries;
        }
        assert!(i < 3_000_000, "the card never wore out");
    }
    // Read-only: every sector still reads back what was acknowledged.
    for lba in 0..n {
        c.read(lba);
    }
    let m = &c.card.media()[0];
    let h = &c.card.health()[0];
    println!("{m:?}\n{h:?}");
    assert!(h.retired_blocks > 0, "blocks retired: {h:?}");
    assert_eq!(m.stats.silent_corruptions, 0);
    (windows, states, c.read_errors)
}

#[test]
fn wear_out_with_media_errors_never_returns_wrong_data() {
    let (windows, states, read_errors) = wear_out(23, false);
    println!("{windows:?} {states:?}");
    let first = windows.first().unwrap();
    let last = windows.last().unwrap();
    assert!(last.1 > 10.0 * first.1, "bit errors rise: {windows:?}");
    assert!(
        last.2 > 0 && last.2 > 10 * first.2,
        "retries rise: {windows:?}"
    );
    assert!(states.len() >= 3, "health moved through states: {states:?}");
    assert_eq!(*states.last().unwrap(), HealthState::ReadOnly);
    assert_eq!(read_errors, 0, "parity rebuilt every uncorrectable read");
}

#[test]
fn the_wear_out_check_catches_a_card_without_retry_or_parity() {
    let caught = std::panic::catch_unwind(|| wear_out(24, true));
    let msg = caught
        .err()
        .and_then(|e| e.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(
        msg.contains("read back wrong data"),
        "the check must catch the corruption: {msg}"
    );
}
