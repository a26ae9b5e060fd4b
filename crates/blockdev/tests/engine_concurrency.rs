//! The engine under concurrent writers with heavy garbage collection: host
//! writes store their data outside the device lock while other writers'
//! GC copies and erases units, so a copy of a slot whose data is still in
//! flight, or an erase under a write, would lose data. Four threads write
//! and read back their own ranges of a tiny card (each range checked
//! against a reference), then the store is reopened and every sector is
//! checked again after map recovery. Needs no root: no FUSE, no loop.

use blockdev::cli::card_config;
use blockdev::engine::{Engine, Timing};
use blockdev::store::{CardSpec, Store, StoreHeader};
use device::{Card, MemberSel};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const THREADS: u64 = 4;

fn open(dir: &Path) -> (Store, Engine) {
    let spec = CardSpec::tiny();
    let card = card_config(&spec).unwrap();
    let mut one = card.clone();
    one.member = MemberSel::One(0);
    let probe = Card::new(one.clone()).unwrap();
    let m = probe.member(0);
    let header = StoreHeader::new(spec, vec![0], m.config(), m.physical_slots());
    let mut store = Store::open(dir, &header).unwrap();
    let ms = store.members.remove(0);
    let engine = Engine::open(one, ms, Instant::now(), Timing::None).unwrap();
    (store, engine)
}

/// Sector content: every 8 bytes carry (lba, generation) mixed.
fn fill(buf: &mut [u8], lba: u64, gen: u64) {
    for (i, w) in buf.chunks_exact_mut(8).enumerate() {
        let v = lba
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(gen.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .wrapping_add(i as u64);
        w.copy_from_slice(&v.to_le_bytes());
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn check(engine: &Engine, lba: u64, gen: u64, seed: u64, when: &str) {
    let s = engine.sector_bytes() as u64;
    let mut out = Vec::new();
    engine.read(lba * s, s, &mut out).unwrap();
    let mut want = vec![0u8; s as usize];
    if gen > 0 {
        fill(&mut want, lba, gen);
    }
    assert!(
        out == want,
        "sector {lba} does not hold generation {gen} {when} (VSL_TEST_SEED={seed})"
    );
}

/// Checks every sector of every thread's range.
fn check_all(engine: &Engine, gens: &[Vec<u64>], per: u64, seed: u64, when: &str) {
    for (t, g) in gens.iter().enumerate() {
        for (i, &gen) in g.iter().enumerate() {
            check(engine, t as u64 * per + i as u64, gen, seed, when);
        }
    }
}

#[test]
fn concurrent_writers_and_gc_lose_nothing_across_reopen() {
    let seed = std::env::var("VSL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0123_4567_u64);
    let dir: PathBuf = std::env::temp_dir().join(format!("openvsl-conc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (store, engine) = open(&dir);
    let engine = Arc::new(engine);
    let sector = engine.sector_bytes() as u64;
    let sectors = engine.capacity_bytes() / sector;
    let per = sectors / THREADS;
    // Twice the capacity in random writes: the card fills and GC runs
    // throughout; then as many to the hot sets.
    let writes_per_thread = 2 * sectors / THREADS;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let base = t * per;
                let mut gens = vec![0u64; per as usize];
                let mut rng = Rng(seed ^ (t + 1).wrapping_mul(0xA076_1D64_78BD_642F));
                let mut buf = vec![0u8; (8 * sector) as usize];
                let mut done = 0;
                while done < 2 * writes_per_thread {
                    let r = rng.next();
                    let n = if r.is_multiple_of(8) {
                        1 + (r >> 8) % 8
                    } else {
                        1
                    };
                    // Second half: a hot set of 64 sectors per thread.
                    let span = if done < writes_per_thread { per } else { 64 };
                    let first = (r >> 16) % (span - n + 1);
                    for k in 0..n {
                        let i = (first + k) as usize;
                        gens[i] += 1;
                        let at = (k * sector) as usize;
                        fill(&mut buf[at..at + sector as usize], base + i as u64, gens[i]);
                    }
                    engine
                        .write((base + first) * sector, &buf[..(n * sector) as usize])
                        .unwrap();
                    done += n;
                    if r.is_multiple_of(3) {
                        let i = (r >> 40) % span;
                        check(&engine, base + i, gens[i as usize], seed, "while writing");
                    }
                }
                gens
            })
        })
        .collect();
    // Flushes from two more threads meanwhile, as the FUSE threads send them.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flushers: Vec<_> = (0..2)
        .map(|_| {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    engine.flush().unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let gens: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for f in flushers {
        assert!(f.join().unwrap() > 0);
    }
    let (_, ftl) = engine.model_stats();
    assert!(
        ftl.gc_sectors_moved > sectors / 4,
        "GC moved only {} sectors: the test did not exercise it",
        ftl.gc_sectors_moved
    );
    check_all(&engine, &gens, per, seed, "after the writers");
    // As the daemon does on detach: counters saved, then a flush (a flush
    // alone does not save them; the daemon does every second).
    engine.save_counters().unwrap();
    engine.flush().unwrap();
    let before = engine.lifetime();
    let sectors_written: u64 = gens.iter().flatten().sum();
    assert_eq!(before.host_bytes_written, sector * sectors_written);
    drop(engine);
    drop(store);
    let (_store, engine) = open(&dir);
    // Lifetime counters carry over the reopen.
    let after = engine.lifetime();
    assert_eq!(after.host_bytes_written, before.host_bytes_written);
    assert_eq!(after.erases, before.erases);
    assert_eq!(after.gc_sectors_moved, before.gc_sectors_moved);
    assert!(after.erases > 0);
    check_all(&engine, &gens, per, seed, "after reopening");
    std::fs::remove_dir_all(&dir).unwrap();
}
