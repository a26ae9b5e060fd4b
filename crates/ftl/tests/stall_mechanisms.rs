//! The mechanisms of issue 29, on in the ioMemory presets and off in the
//! comparables (docs/MODEL.md, "Mechanisms (issue 29)"):
//! a stall's runway, catch-up grooming after a stalled write phase, and a
//! read holding its bank for its data-out; and the groomer's yield after a
//! stall, off in every preset ("The groomer yields after a stall"). Each changes what it claims to
//! change when on, and nothing when off.

use ftl::fuzzing::{fill_and_overwrite, next_lba, scale_units, small_card};
use ftl::{FtlConfig, GcMode, Vsl};
use nand::{CellTiming, Geometry, NandArray, ReadPolicy};
use sim::Nanos;

fn geometry() -> Geometry {
    Geometry {
        channels: 5,
        parity_channels: 1,
        banks: 2,
        planes: 1,
        blocks_per_plane: 64,
        pages_per_block: 16,
        page_bytes: 4096,
    }
}

/// 4 data channels + 1 parity, 2 banks, 64 erase units of 16 pages; no
/// idle grooming (it would free space in the pauses these tests make).
fn card(runway: f64, catchup: f64) -> FtlConfig {
    let mut cfg = FtlConfig {
        geometry: geometry(),
        timing: CellTiming::MLC_2009,
        reserved_lebs: 2,
        gc_runway_lebs: runway,
        gc_catchup_lebs: catchup,
        gc_yield_ns: 0,
        wear_level_spread: 1_000,
        track_sequence: false,
        ..small_card(4096, GcMode::Paced)
    };
    cfg.buffer_bytes = 4 * cfg.geometry.write_unit_bytes();
    cfg.user_sectors = (cfg.max_user_sectors() as f64 * 0.85) as u64;
    cfg
}

/// What a write phase and the read after it saw.
#[derive(Debug, PartialEq)]
struct Seen {
    /// Longest single-write latency of the random overwrites.
    write_peak: Nanos,
    /// Latency of the first read after a pause, and of the one after it.
    read_after_pause: Nanos,
    second_read: Nanos,
    free_before_read: usize,
    free_after_read: usize,
}

/// Fills the card, overwrites it at random (a fixed LCG, one write at a
/// time, each issued when the last completed) until writes stall at the
/// low watermark, pauses 20 ms (past the 10 ms idle detection) and reads
/// twice.
fn run(runway: f64, catchup: f64, seed: u64) -> Seen {
    run_with(card(runway, catchup), seed)
}

fn run_with(cfg: FtlConfig, seed: u64) -> Seen {
    let n = cfg.user_sectors;
    let mut v = Vsl::new(cfg).unwrap();
    let (t, write_peak) = fill_and_overwrite(&mut v, n, 3, seed);
    let free_before_read = v.free_lebs();
    let at = v.busy_until().max(t) + Nanos(20_000_000);
    let first = v.read(at, 1, 1).unwrap() - at;
    let free_after_read = v.free_lebs();
    let at2 = v.busy_until().max(at + first);
    let second = v.read(at2, 2, 1).unwrap() - at2;
    v.check_consistency();
    Seen {
        write_peak,
        read_after_pause: first,
        second_read: second,
        free_before_read,
        free_after_read,
    }
}

#[test]
fn a_runway_makes_a_stall_longer() {
    for seed in [1u64, 2] {
        let off = run(0.0, 0.0, seed);
        let on = run(2.0, 0.0, seed);
        assert!(
            on.write_peak > off.write_peak,
            "seed {seed}: runway 2 peak {:?}, none {:?}",
            on.write_peak,
            off.write_peak
        );
        assert_eq!(off, run(0.0, 0.0, seed), "seed {seed}: not deterministic");
    }
}

/// A fraction of an erase unit of runway: the stall ends once it has
/// gained that much free space (in sectors) past the low watermark, so
/// its longest stall falls between those of no runway and a whole unit.
#[test]
fn a_fractional_runway_stalls_between_the_whole_ones() {
    for seed in [1u64, 2] {
        let none = run(0.0, 0.0, seed).write_peak;
        let half = run(0.5, 0.0, seed).write_peak;
        let one = run(1.0, 0.0, seed).write_peak;
        assert!(
            none < half && half < one,
            "seed {seed}: runway 0 / 0.5 / 1 peaks {none:?} / {half:?} / {one:?}"
        );
    }
}

/// Random overwrites one at a time after a fill; per write, whether it
/// stalled (GC moved more than a quarter of an erase unit while it ran: a
/// paced write moves at most one write unit per bank, 8 sectors here, and a
/// stall with a runway collects whole victims) or made paced moves. Returns
/// the paced writes (moves but no stall) issued within `window` after a
/// stall's write completed, and the stalls seen.
fn paced_moves_after_stalls(yield_for: Nanos, window: Nanos, seed: u64) -> (u64, u32) {
    let mut cfg = card(1.0, 0.0);
    cfg.gc_yield_ns = yield_for.0;
    let n = cfg.user_sectors;
    let unit = cfg.slots_per_leb() as u64;
    let mut v = Vsl::new(cfg).unwrap();
    let mut t = Nanos::ZERO;
    for lba in 0..n {
        t = v.write(t, lba, 1).unwrap();
    }
    let mut x = seed;
    let (mut paced, mut stalls) = (0u64, 0u32);
    let mut stall_done: Option<Nanos> = None;
    for _ in 0..3 * n {
        let before = v.gc_sectors_moved();
        let done = v.write(t, next_lba(&mut x, n), 1).unwrap();
        let moved = v.gc_sectors_moved() - before;
        if moved > unit / 4 {
            stalls += 1;
            stall_done = Some(done);
        } else if moved > 0 && stall_done.is_some_and(|s| t < s + window) {
            paced += 1;
        }
        t = done;
    }
    (paced, stalls)
}

#[test]
fn the_groomer_yields_after_a_stall() {
    let window = Nanos(20_000_000);
    for seed in [1u64, 2] {
        let (off, stalls_off) = paced_moves_after_stalls(Nanos::ZERO, window, seed);
        let (on, stalls_on) = paced_moves_after_stalls(Nanos(40_000_000), window, seed);
        assert!(
            stalls_off > 0 && stalls_on > 0,
            "seed {seed}: no stall ({stalls_off}, {stalls_on})"
        );
        assert!(
            off > 0,
            "seed {seed}: without a yield no paced move follows a stall: the check cannot fail"
        );
        assert_eq!(on, 0, "seed {seed}: {on} writes made paced moves within 20 ms of a stall despite a 40 ms yield");
    }
}

/// Random overwrites on `cfg` until it has stalled: units parked at the
/// end, with the block manager cross-checked.
fn parked_after_stalls(cfg: FtlConfig, seed: u64) -> usize {
    let n = cfg.user_sectors;
    let mut v = Vsl::new(cfg).unwrap();
    fill_and_overwrite(&mut v, n, 6, seed);
    v.check_consistency();
    v.parked_lebs()
}

#[test]
fn a_scaled_card_parks_what_its_stalling_pool_does_not_use() {
    // A card scaled 2-fold (each full-size unit is 2 small ones, a stall
    // frees a group of 2) with the groomer's stop-and-go: its pool sits
    // near the low watermark, below the allowance it was given up to the
    // high watermark, so it parks units (docs/MODEL.md "Scaling"). The
    // same card at full size has nothing to park.
    for seed in [1u64, 2] {
        let mut scaled = card(0.1, 0.0);
        scaled.gc_yield_ns = 5_000_000;
        scale_units(&mut scaled, 2);
        scaled.user_sectors = (scaled.max_user_sectors() as f64 * 0.8) as u64;
        let mut full = card(0.1, 0.0);
        full.gc_yield_ns = 5_000_000;
        let parked = parked_after_stalls(scaled, seed);
        assert!(
            parked > 0,
            "seed {seed}: a stalling scaled card parked nothing"
        );
        // Allowance 8 units, the pool at least the reserve's 4 less one
        // cohort on average: at most 6 (less one for the hysteresis).
        assert!(
            parked <= 6,
            "seed {seed}: {parked} units parked, more than the allowance leaves"
        );
        assert_eq!(
            parked_after_stalls(full, seed),
            0,
            "seed {seed}: a full-size card parked"
        );
    }
}

#[test]
fn a_runway_longer_than_the_spare_ends_early_instead_of_failing() {
    // 40 units of runway on a 64-unit card with about 10 spare: past the
    // low watermark the groomer collects what holds stale data and the
    // host resumes. It used to panic ("no closed erase unit to collect").
    for mode in [GcMode::Paced, GcMode::Legacy] {
        let mut cfg = card(40.0, 0.0);
        cfg.gc_mode = mode;
        let mut none = card(0.0, 0.0);
        none.gc_mode = mode;
        let long = run_with(cfg, 1);
        let short = run_with(none, 1);
        assert!(
            long.write_peak > short.write_peak,
            "{mode:?}: runway 40 peak {:?}, none {:?}",
            long.write_peak,
            short.write_peak
        );
    }
}

#[test]
fn catch_up_grooming_makes_the_read_after_a_stalled_phase_wait_once() {
    for seed in [1u64, 2] {
        let off = run(0.0, 0.0, seed);
        let on = run(0.0, 3.0, seed);
        // The write phases are the same; only the read after the pause
        // differs.
        assert_eq!(on.write_peak, off.write_peak, "seed {seed}");
        assert_eq!(off.free_after_read, off.free_before_read, "seed {seed}");
        assert!(
            on.free_after_read >= 2 + 3 && on.free_after_read > on.free_before_read,
            "seed {seed}: free units {} -> {} (catch-up target 5)",
            on.free_before_read,
            on.free_after_read
        );
        // A unit's collection (reads, programs, an erase) is milliseconds.
        assert!(
            on.read_after_pause > off.read_after_pause + Nanos(1_000_000),
            "seed {seed}: read after the pause {:?} with catch-up, {:?} without",
            on.read_after_pause,
            off.read_after_pause
        );
        // Catch-up runs once per stalled phase: the next read is quick.
        assert!(
            on.second_read < Nanos(1_000_000),
            "seed {seed}: second read {:?}",
            on.second_read
        );
    }
}

#[test]
fn a_read_holding_its_die_delays_the_next_read_on_its_bank() {
    let t = CellTiming::MLC_2009;
    let g = geometry();
    let bytes = 4096;
    let xfer = Nanos::for_bytes(bytes, t.bus_bytes_per_s * g.data_channels() as u64);
    let second_done = |hold_die: bool| {
        let mut a = NandArray::new(g, t);
        a.set_read_policy(ReadPolicy {
            hold_die,
            ..ReadPolicy::FIFO
        });
        let first = a.read_unit(Nanos::ZERO, 0, bytes);
        let second = a.read_unit(Nanos::ZERO, 0, bytes);
        (first, second)
    };
    let (f0, s0) = second_done(false);
    let (f1, s1) = second_done(true);
    // The first read is the same; the second starts after the first's
    // data-out instead of after its tR.
    assert_eq!(f0, f1);
    assert_eq!(f0, Nanos(t.read_ns) + xfer);
    assert_eq!(s1, s0 + xfer, "held {s1:?}, not held {s0:?}, xfer {xfer:?}");
}

/// The pace counting the victim's progress (`gc_pace_progress`): the free
/// space it works from does not jump by an erase unit when the victim is
/// erased, as the plain count does; and it is one unit below the plain
/// count when a victim has just been picked. Random overwrites one at a
/// time after a fill, with free space between the watermarks (no stall:
/// the writes are spaced so the groomer keeps up).
#[test]
fn the_pace_counting_progress_sees_no_jump_at_an_erase() {
    for seed in [1u64, 2, 3] {
        let mut jumps = [0.0f64; 2];
        for (i, on) in [false, true].into_iter().enumerate() {
            let mut cfg = card(0.0, 0.0);
            cfg.gc_pace_progress = on;
            let n = cfg.user_sectors;
            let mut v = Vsl::new(cfg).unwrap();
            let mut t = Nanos::ZERO;
            for lba in 0..n {
                t = v.write(t, lba, 1).unwrap();
            }
            let mut x = seed;
            let mut largest = 0.0f64;
            for _ in 0..3 * n {
                let before = v.pace_free_lebs();
                let done = v.write(t, next_lba(&mut x, n), 1).unwrap();
                largest = largest.max(v.pace_free_lebs() - before);
                // Space the writes well apart: the budget keeps up.
                t = done + Nanos(2_000_000);
            }
            jumps[i] = largest;
            v.check_consistency();
        }
        assert!(
            jumps[0] >= 0.9,
            "seed {seed}: the plain count's largest rise in one write {:.3}, expected an erase unit",
            jumps[0]
        );
        assert!(
            jumps[1] < 0.25,
            "seed {seed}: counting progress, the largest rise in one write {:.3}",
            jumps[1]
        );
    }
}

/// A fractional catch-up target moves that share of one more victim:
/// the read after the pause waits strictly between the whole targets'
/// waits, and the whole target's units were freed first.
#[test]
fn a_fractional_catch_up_target_waits_between_the_whole_ones() {
    for seed in [1u64, 2] {
        let two = run(0.0, 2.0, seed);
        let half = run(0.0, 2.5, seed);
        let three = run(0.0, 3.0, seed);
        assert!(
            two.read_after_pause < half.read_after_pause
                && half.read_after_pause < three.read_after_pause,
            "seed {seed}: read after the pause {:?} (2), {:?} (2.5), {:?} (3)",
            two.read_after_pause,
            half.read_after_pause,
            three.read_after_pause
        );
        // The whole units were freed; the part-collected victim's moves
        // may have opened one more frontier unit.
        assert!(
            half.free_after_read + 1 >= two.free_after_read,
            "seed {seed}: free units {} (2.5), {} (2)",
            half.free_after_read,
            two.free_after_read
        );
        assert!(
            half.second_read < Nanos(1_000_000),
            "seed {seed}: {:?}",
            half.second_read
        );
    }
}

/// Catch-up grooming waits `gc_catchup_after_ns` without host writes: a
/// read 20 ms after a stalled write phase finds it (the default 10 ms),
/// or does not (5 s), and a read after 5 s does.
#[test]
fn catch_up_waits_for_writes_to_have_stopped_that_long() {
    for seed in [1u64, 2] {
        let mut late = card(0.0, 3.0);
        late.gc_catchup_after_ns = 5_000_000_000;
        let soon = run(0.0, 3.0, seed);
        let pause = run_with(late.clone(), seed);
        assert!(
            soon.free_after_read > soon.free_before_read,
            "seed {seed}: no catch-up at 10 ms"
        );
        assert_eq!(
            pause.free_after_read, pause.free_before_read,
            "seed {seed}: catch-up ran 20 ms after the writes with a 5 s wait"
        );
        assert!(
            pause.read_after_pause < Nanos(1_000_000),
            "seed {seed}: {:?}",
            pause.read_after_pause
        );
        // After 5 s without writes it runs.
        let n = late.user_sectors;
        let mut v = Vsl::new(late).unwrap();
        let (t, _) = fill_and_overwrite(&mut v, n, 3, seed);
        let before = v.free_lebs();
        let at = v.busy_until().max(t) + Nanos(5_000_000_001);
        let wait = v.read(at, 1, 1).unwrap() - at;
        assert!(
            v.free_lebs() >= 2 + 3 && v.free_lebs() > before,
            "seed {seed}: {before} -> {}",
            v.free_lebs()
        );
        assert!(
            wait > Nanos(1_000_000),
            "seed {seed}: read after 5 s waited {wait:?}"
        );
    }
}

/// Host reads charged to the groomer's budget: random reads and writes
/// mixed 3:1 on a card whose groomer keeps up; with each read sector
/// costing the budget `charge` moves the groomer falls behind and host
/// writes stall at the low watermark, more the more a read costs.
fn stalls_under_a_mixed_load(charge: f64, seed: u64) -> u64 {
    let mut cfg = card(0.0, 0.0);
    cfg.gc_share = 0.6;
    cfg.gc_read_charge = charge;
    let n = cfg.user_sectors;
    let mut v = Vsl::new(cfg).unwrap();
    let (mut t, _) = fill_and_overwrite(&mut v, n, 1, seed);
    let fg0 = v.gc_foreground_moves();
    let mut x = seed ^ 0x9e37;
    for i in 0..4 * n {
        let lba = next_lba(&mut x, n);
        // Reads are issued as they complete, four of them per write; each
        // I/O starts 20 us after the last (the host's pace).
        t = if i % 4 == 3 {
            v.write(t, lba, 1).unwrap()
        } else {
            v.read(t, lba, 1).unwrap()
        }
        .max(t)
            + Nanos(20_000);
    }
    v.check_consistency();
    v.gc_foreground_moves() - fg0
}

#[test]
fn host_reads_charged_to_the_budget_make_a_mixed_load_stall() {
    for seed in [1u64, 2] {
        let none = stalls_under_a_mixed_load(0.0, seed);
        let one = stalls_under_a_mixed_load(1.0, seed);
        let two = stalls_under_a_mixed_load(2.0, seed);
        assert_eq!(
            none,
            stalls_under_a_mixed_load(0.0, seed),
            "seed {seed}: not deterministic"
        );
        assert!(
            none <= one && one <= two && two > 10 * none.max(1),
            "seed {seed}: moves in stalls with a read charge of 0 / 1 / 2: {none} / {one} / {two}"
        );
    }
}

/// The moves of each stall (a write that moved more than a quarter of an
/// erase unit) in random overwrites after a fill, runway 0, quantum `q`.
fn stall_moves(q: f64, seed: u64) -> Vec<u64> {
    let mut cfg = card(0.0, 0.0);
    cfg.gc_stall_quantum_lebs = q;
    let n = cfg.user_sectors;
    let unit = cfg.slots_per_leb() as u64;
    let mut v = Vsl::new(cfg).unwrap();
    let mut t = Nanos::ZERO;
    for lba in 0..n {
        t = v.write(t, lba, 1).unwrap();
    }
    let mut x = seed;
    let mut stalls = Vec::new();
    for _ in 0..3 * n {
        let before = v.gc_foreground_moves();
        t = v.write(t, next_lba(&mut x, n), 1).unwrap();
        let moved = v.gc_foreground_moves() - before;
        if moved > unit / 4 {
            stalls.push(moved);
        }
    }
    v.check_consistency();
    stalls
}

/// A stall's quantum: every stall moves at least that much, where without
/// it a stall that finds its victim nearly collected moves little; with
/// runway 0 a stall does not go past the quantum by more than a victim.
#[test]
fn a_stall_quantum_evens_out_the_stalls() {
    let unit = card(0.0, 0.0).slots_per_leb() as u64;
    for seed in [1u64, 2] {
        let off = stall_moves(0.0, seed);
        let on = stall_moves(0.8, seed);
        assert!(!off.is_empty() && !on.is_empty(), "seed {seed}: no stall");
        let q = (0.8 * unit as f64) as u64;
        assert!(
            off.iter().any(|&m| m < q),
            "seed {seed}: without a quantum every stall already moved {q} or more: {off:?}"
        );
        assert!(
            on.iter().all(|&m| m >= q && m < q + unit),
            "seed {seed}: stalls moved {on:?} with a quantum of {q} (a unit is {unit})"
        );
    }
}

/// Catch-up counted in work (`gc_catchup_moves_lebs`): the read after a
/// stalled write phase finds the groomer moving exactly that many erase
/// units' worth of slots, whatever the free space it gains; twice the work
/// makes the read wait longer, and the read after it does not wait.
#[test]
fn catch_up_counted_in_work_moves_its_target_and_no_more() {
    for seed in [1u64, 2] {
        let mut waits = Vec::new();
        for target in [1.5, 3.0] {
            let mut cfg = card(0.0, 0.0);
            cfg.gc_catchup_moves_lebs = target;
            let spl = cfg.slots_per_leb() as u64;
            let n = cfg.user_sectors;
            let mut v = Vsl::new(cfg).unwrap();
            let (t, _) = fill_and_overwrite(&mut v, n, 3, seed);
            let at = v.busy_until().max(t) + Nanos(20_000_000);
            let before = v.gc_foreground_moves();
            let first = v.read(at, 1, 1).unwrap() - at;
            let moved = v.gc_foreground_moves() - before;
            assert_eq!(
                moved,
                (target * spl as f64).round() as u64,
                "seed {seed}: catch-up of {target} units moved {moved} sectors ({spl} per unit)"
            );
            let at2 = v.busy_until().max(at + first);
            let before = v.gc_foreground_moves();
            let second = v.read(at2, 2, 1).unwrap() - at2;
            assert_eq!(
                v.gc_foreground_moves(),
                before,
                "seed {seed}: caught up twice"
            );
            assert!(
                second < Nanos(1_000_000),
                "seed {seed}: second read {second:?}"
            );
            v.check_consistency();
            waits.push(first);
        }
        assert!(
            waits[0] < waits[1],
            "seed {seed}: read after the pause {:?} (1.5 units of moves), {:?} (3)",
            waits[0],
            waits[1]
        );
    }
}

/// The most erases one host write made, and the erases in all, in three
/// sequential overwrites of the filled card (every victim holds nothing
/// valid), with stall quantum `q`.
fn sequential_erases(q: f64) -> (u64, u64) {
    let mut cfg = card(0.0, 0.0);
    cfg.gc_stall_quantum_lebs = q;
    let n = cfg.user_sectors;
    let mut v = Vsl::new(cfg).unwrap();
    let mut t = Nanos::ZERO;
    let mut most = 0;
    let start = v.media_counters().leb_erases;
    for pass in 0..4 {
        for lba in (0..n).step_by(8) {
            let before = v.media_counters().leb_erases;
            t = v.write(t, lba, 8.min(n - lba)).unwrap();
            if pass > 0 {
                most = most.max(v.media_counters().leb_erases - before);
            }
        }
    }
    v.check_consistency();
    (most, v.media_counters().leb_erases - start)
}

/// A stall's quantum counts moves: where victims hold nothing valid
/// (sequential overwrites) it adds no erases to a stall, which would
/// otherwise erase every such unit up to the high watermark at once (one
/// burst of erase power, issue 29's slot-power test). The erases in all
/// are the same.
#[test]
fn a_stall_quantum_adds_no_erases_where_victims_hold_nothing() {
    let (off, off_total) = sequential_erases(0.0);
    let (on, on_total) = sequential_erases(0.8);
    assert!(off >= 1, "the overwrites erased nothing in a write ({off})");
    assert!(
        on <= off,
        "with a quantum one write erased {on} units, without {off}"
    );
    let d = on_total.abs_diff(off_total);
    assert!(
        d <= 2,
        "erases in all: {on_total} with a quantum, {off_total} without"
    );
}
