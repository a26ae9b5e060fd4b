//! Issue 11, data protection under faults, on the attached card: "SIGKILL
//! during verified writes with atomic writes in flight never shows a
//! partial atomic write".
//!
//! Three threads submit atomic writes ([`blockdev::atomic::atomic_write`])
//! while four others write verified blocks with O_DIRECT to the loop
//! device, and the daemon is killed with SIGKILL at random moments. Each of
//! 64 groups owns four non-contiguous ranges it writes and a fifth range it
//! writes in even generations and trims in odd ones; an atomic write moves
//! a group to its next generation. After each cut the card is re-attached
//! and every group must be wholly at one generation, the last acknowledged
//! one or the one in flight, and every plain block at its last
//! acknowledged version or the one in flight. 20 cuts here
//! (`VSL_POWERCUTS` to change; bench/powercut.sh runs 100), seeded by
//! `VSL_TEST_SEED`.

mod common;
use blockdev::atomic::{atomic_write, AtomicOp};
use common::blocks::{self, open_direct, Aligned, Known, BLOCK};
use common::{skip, Rig};
use sim::Prng;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Plain verified blocks: 64 MiB from block 0.
const PLAIN: u64 = 16384;
const PLAIN_WRITERS: u64 = 4;
const GROUPS: u64 = 64;
const ATOMIC_WORKERS: u64 = 3;
/// Ranges per group; the last is the one written or trimmed by turns.
const RANGES: u64 = 5;
/// Blocks per cell; range `r` of group `g` starts cell `r × GROUPS + g`
/// after the plain blocks, so a group's ranges are far apart.
const CELL: u64 = 8;
const MAGIC: &[u8; 8] = b"VSLATM11";

fn fill(buf: &mut [u8], block: u64, gen: u64) {
    blocks::fill(buf, MAGIC, block, gen)
}

fn decode(buf: &[u8], block: u64) -> Option<u64> {
    blocks::decode(buf, MAGIC, block)
}

/// The blocks of range `r` of group `g`.
fn range(g: u64, r: u64) -> std::ops::Range<u64> {
    let start = PLAIN + (r * GROUPS + g) * CELL;
    start..start + 1 + (g + r) % 4
}

/// The ops moving group `g` to generation `gen`.
fn group_ops(g: u64, gen: u64) -> Vec<AtomicOp> {
    let mut a = vec![0u8; BLOCK];
    (0..RANGES)
        .map(|r| {
            let blocks = range(g, r);
            let offset = blocks.start * BLOCK as u64;
            if r == RANGES - 1 && gen % 2 == 1 {
                let len = (blocks.end - blocks.start) * BLOCK as u64;
                return AtomicOp::Trim { offset, len };
            }
            let mut data = Vec::with_capacity(blocks.clone().count() * BLOCK);
            for b in blocks {
                fill(&mut a, b, gen);
                data.extend_from_slice(&a);
            }
            AtomicOp::Write { offset, data }
        })
        .collect()
}

/// The generation group `g` is wholly at, or a description of how it is
/// torn.
fn group_state(f: &File, g: u64) -> Result<u64, String> {
    let mut a = Aligned::new();
    let mut seen: Vec<(u64, Option<u64>)> = Vec::new();
    for r in 0..RANGES {
        for b in range(g, r) {
            f.read_exact_at(a.buf(), b * BLOCK as u64)
                .map_err(|e| format!("read block {b}: {e}"))?;
            seen.push((r, decode(a.buf(), b)));
        }
    }
    let gen = seen[0].1.ok_or("block of range 0 is damaged")?;
    let expect = |r: u64| {
        if r == RANGES - 1 && gen % 2 == 1 {
            0
        } else {
            gen
        }
    };
    if seen.iter().all(|&(r, v)| v == Some(expect(r))) {
        Ok(gen)
    } else {
        Err(format!("torn: (range, generation) per block {seen:?}"))
    }
}

#[derive(Default)]
struct Tally {
    checks: u64,
    inflight: u64,
    landed: u64,
    acked: u64,
}

/// Checks every group and plain block after a cut; afterwards what was
/// observed is what is acknowledged.
fn verify(
    dev: &str,
    groups: &mut [Known],
    plain: &mut [Known],
    cut: u32,
    seed: u64,
    t: &mut Tally,
) {
    let f = open_direct(dev);
    let again = format!("seed {seed}; rerun with VSL_TEST_SEED={seed}");
    for (g, k) in groups.iter_mut().enumerate() {
        let got = group_state(&f, g as u64).unwrap_or_else(|e| {
            panic!("PARTIAL atomic write: group {g} after cut {cut}: {e} ({again})")
        });
        assert!(
            got == k.acked || Some(got) == k.inflight,
            "group {g} after cut {cut} is at generation {got}; last acknowledged {}, in flight {:?} ({again})",
            k.acked,
            k.inflight
        );
        t.checks += 1;
        if let Some(i) = k.inflight {
            t.inflight += 1;
            t.landed += u64::from(got == i);
        }
        *k = Known {
            acked: got,
            inflight: None,
        };
    }
    let mut a = Aligned::new();
    for (b, k) in plain.iter_mut().enumerate() {
        let b = b as u64;
        f.read_exact_at(a.buf(), b * BLOCK as u64)
            .unwrap_or_else(|e| panic!("read block {b} after cut {cut}: {e} ({again})"));
        let got = decode(a.buf(), b);
        assert!(
            got == Some(k.acked) || (got.is_some() && got == k.inflight),
            "block {b} after cut {cut}: holds {got:?}, last acknowledged {}, in flight {:?} ({again})",
            k.acked,
            k.inflight
        );
        *k = Known {
            acked: got.unwrap(),
            inflight: None,
        };
    }
}

/// Moves random groups of its own (`g % ATOMIC_WORKERS == id`) to their
/// next generation until the daemon stops answering.
fn atomic_worker(socket: PathBuf, id: u64, mut mine: Vec<Known>, seed: u64) -> (Vec<Known>, u64) {
    let mut prng = Prng::from_seed(seed);
    let mut acked = 0;
    loop {
        let i = prng.below(mine.len() as u64) as usize;
        let g = i as u64 * ATOMIC_WORKERS + id;
        let gen = mine[i].acked + 1;
        mine[i].inflight = Some(gen);
        if atomic_write(&socket, 0, &group_ops(g, gen)).is_err() {
            return (mine, acked);
        }
        mine[i] = Known {
            acked: gen,
            inflight: None,
        };
        acked += 1;
    }
}

/// Writes random plain blocks of its stripe until the device fails.
fn plain_writer(
    dev: String,
    id: u64,
    mut mine: Vec<Known>,
    mut gen: u64,
    seed: u64,
) -> (Vec<Known>, u64, u64) {
    let f = open_direct(&dev);
    let mut prng = Prng::from_seed(seed);
    let mut a = Aligned::new();
    let mut acked = 0;
    loop {
        let i = prng.below(mine.len() as u64) as usize;
        let block = i as u64 * PLAIN_WRITERS + id;
        gen += 1;
        fill(a.buf(), block, gen);
        mine[i].inflight = Some(gen);
        if f.write_all_at(a.buf(), block * BLOCK as u64).is_err() {
            return (mine, gen, acked);
        }
        mine[i] = Known {
            acked: gen,
            inflight: None,
        };
        acked += 1;
    }
}

/// Every `n`th element of `v` from `id`.
fn stripe(v: &[Known], id: u64, n: u64) -> Vec<Known> {
    v.iter()
        .skip(id as usize)
        .step_by(n as usize)
        .copied()
        .collect()
}

fn unstripe(v: &mut [Known], id: u64, n: u64, part: Vec<Known>) {
    for (i, k) in part.into_iter().enumerate() {
        v[i * n as usize + id as usize] = k;
    }
}

fn control_socket(rig: &Rig) -> PathBuf {
    let dir = std::fs::read_dir(&rig.run_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    PathBuf::from(v["socket"].as_str().unwrap())
}

/// Refusals are one clear line, and change nothing.
fn bad_input_is_refused(socket: &Path) {
    let w = |offset: u64, len: usize| AtomicOp::Write {
        offset,
        data: vec![7u8; len],
    };
    let cases: [(Vec<AtomicOp>, &str); 5] = [
        (vec![w(1, BLOCK)], "not aligned"),
        (vec![w(1 << 40, BLOCK)], "beyond the device"),
        (vec![w(0, 2 * BLOCK), w(BLOCK as u64, BLOCK)], "overlap"),
        (vec![w(0, 8 << 20)], "buffer"),
        (vec![], "at least one"),
    ];
    for (ops, want) in cases {
        let e = atomic_write(socket, 0, &ops).expect_err(want).to_string();
        assert!(e.contains(want), "expected '{want}' in: {e}");
        assert!(!e.contains('\n'), "not one line: {e}");
    }
    let many: Vec<AtomicOp> = (0..2000)
        .map(|i| AtomicOp::Trim {
            offset: i * BLOCK as u64,
            len: BLOCK as u64,
        })
        .collect();
    let e = atomic_write(socket, 0, &many).unwrap_err().to_string();
    assert!(e.contains("at most"), "{e}");
    let e = atomic_write(socket, 3, &[w(0, BLOCK)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not served"), "{e}");
}

#[test]
fn issue11_sigkill_never_shows_a_partial_atomic_write() {
    if skip(
        "issue11_sigkill_never_shows_a_partial_atomic_write",
        &["losetup"],
    ) {
        return;
    }
    let cuts: u32 = common::env_or("VSL_POWERCUTS", 20);
    let seed: u64 = common::env_or("VSL_TEST_SEED", 11);
    eprintln!("atomic power-cut test: {cuts} cuts, seed {seed}");
    let rig = Rig::new("atomic-powercut");
    let mut prng = Prng::from_seed(seed);
    let card = [common::TINY_CARD, &["--timing", "none"]].concat();
    let mut groups = vec![Known::default(); GROUPS as usize];
    let mut plain = vec![Known::default(); PLAIN as usize];
    let mut gens = vec![0u64; PLAIN_WRITERS as usize];
    let mut tally = Tally::default();
    let mut plain_acked = 0;
    let mut gc_moved = 0;
    // The cuts alternate between FUSE over io_uring and /dev/fuse (issue 13).
    let modes = common::transports("issue11_sigkill_never_shows_a_partial_atomic_write");
    for cut in 0..=cuts {
        let mode = modes[cut as usize % modes.len()];
        eprintln!("cut {cut} of {cuts}: --fuse-uring {mode}");
        let opts = if cut == 0 {
            card.clone()
        } else {
            vec!["--timing", "none"]
        };
        let dev = rig.attach(&[opts.as_slice(), &["--fuse-uring", mode]].concat())[0].clone();
        rig.assert_transport(mode);
        verify(&dev, &mut groups, &mut plain, cut, seed, &mut tally);
        let socket = control_socket(&rig);
        if cut == 0 {
            bad_input_is_refused(&socket);
        }
        if cut == cuts {
            break;
        }
        let atomics: Vec<_> = (0..ATOMIC_WORKERS)
            .map(|id| {
                let (mine, s, sock) = (
                    stripe(&groups, id, ATOMIC_WORKERS),
                    prng.next_u64(),
                    socket.clone(),
                );
                std::thread::spawn(move || atomic_worker(sock, id, mine, s))
            })
            .collect();
        let plains: Vec<_> = (0..PLAIN_WRITERS)
            .map(|id| {
                let (mine, g, s, d) = (
                    stripe(&plain, id, PLAIN_WRITERS),
                    gens[id as usize],
                    prng.next_u64(),
                    dev.clone(),
                );
                std::thread::spawn(move || plain_writer(d, id, mine, g, s))
            })
            .collect();
        let delay = Duration::from_millis(50 + prng.below(950));
        std::thread::sleep(delay / 2);
        gc_moved += rig.status_json()[0]["members"][0]["gc_sectors_moved"]
            .as_u64()
            .unwrap();
        std::thread::sleep(delay / 2);
        rig.kill_daemon();
        for (id, h) in atomics.into_iter().enumerate() {
            let (mine, acked) = h.join().unwrap();
            tally.acked += acked;
            unstripe(&mut groups, id as u64, ATOMIC_WORKERS, mine);
        }
        for (id, h) in plains.into_iter().enumerate() {
            let (mine, g, acked) = h.join().unwrap();
            gens[id] = g;
            plain_acked += acked;
            unstripe(&mut plain, id as u64, PLAIN_WRITERS, mine);
        }
    }
    rig.detach_all();
    eprintln!(
        "atomic power-cut test: {cuts} cuts, seed {seed}: {} atomic writes acknowledged, {} group checks, \
         {} groups in flight at a cut ({} landed whole, {} rolled back whole), 0 partial; \
         {plain_acked} plain writes acknowledged, all present; GC moved at least {gc_moved} sectors",
        tally.acked,
        tally.checks,
        tally.inflight,
        tally.landed,
        tally.inflight - tally.landed
    );
    assert!(
        tally.acked > cuts as u64 * 5,
        "too few atomic writes to mean anything: {}",
        tally.acked
    );
    assert!(
        plain_acked > cuts as u64 * 10,
        "too few plain writes: {plain_acked}"
    );
    assert!(
        tally.inflight * 2 >= cuts as u64,
        "atomic writes were in flight at only {} of {cuts} cuts",
        tally.inflight
    );
}
