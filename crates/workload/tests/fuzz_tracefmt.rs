//! Stable-Rust fuzzing of the streaming trace readers (the same target as
//! `fuzz/fuzz_targets/workload_tracefmt.rs` under cargo-fuzz): mutated and
//! truncated traces of every format, read with the format forced and
//! auto-detected, must give records or one error naming a line, never a
//! panic. `FUZZ_CASES` (default 3000 per format) and `FUZZ_SEED` set the
//! run; a failing case prints its seed.

use sim::Prng;
use std::io::BufRead;
use workload::tracefmt::{TraceFormat, TraceReader};
use workload::OpKind;

fn cases() -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn base_seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7ace)
}

const SEEDS: &[(TraceFormat, &str)] = &[
    (
        TraceFormat::IologV2,
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 4096 8192\n/dev/sdb wait 1500\n/dev/sdb read 0 4096\n/dev/sdb trim 0 512\n/dev/sdb sync 0 0\n/dev/sdb close\n",
    ),
    (
        TraceFormat::IologV3,
        "fio version 3 iolog\n0 /dev/x add\n1 /dev/x open\n10 /dev/x read 0 4096\n2510 /dev/x write 8192 4096\n2600 /dev/x datasync 0 0\n",
    ),
    (
        TraceFormat::Blkparse,
        "  8,0    1        1     0.000000000   123  Q   W 1234 + 8 [fio]\n  8,0    1        2     0.000002000   123  D   W 1234 + 8 [fio]\n  8,0    0        3     0.000010000   124  Q  RS 99 + 16 [pg]\n  8,0    1        4     0.000100000     0  C   W 1234 + 8 [0]\n  8,0    0        5     0.000200000   124  Q  FN [kworker]\n  8,0    0        6     0.000300000   124  Q FWFS 50 + 8 [jbd2]\nCPU0 (8,0):\n Reads Queued: 1, 8KiB\n",
    ),
    (
        TraceFormat::Blkparse,
        "8,16 0 1 1.5 0 D R 8 + 8 [a]\n8,16 0 2 1.6 0 C R 8 + 8 [0]\n8,16 0 3 2.5 0 D W 16 + 8 [a]\n",
    ),
    (
        TraceFormat::Msr,
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,usr,0,Read,3154152960,4096,1331\n128166372016382155,usr,0,Write,3154152960,8192,1020\n",
    ),
    (
        TraceFormat::SniaTencent,
        "Timestamp,Offset,Size,IOType,VolumeID\n1538323200,1024,8,0,1063\n1538323201,2048,16,1,1063\n",
    ),
    (
        TraceFormat::SniaFiu,
        "89966527403848 4930 syslogd 37383904 8 W 6 0 9f3d2b7d2fa1e4a0\n89966527503848 4931 nfsd 100 8 R 6 1 00ff\n",
    ),
    (TraceFormat::Mqsim, "1000 0 64 8 1\n5000 0 128 16 0\n9000 1 0 8 1\n"),
];

const ALPHABET: &[u8] = b"0123456789 ,.+:\n\t-[]()RWDFNSQCabcdefghijklmnopqrstuvwxyz#";

fn mutate(prng: &mut Prng, seed: &str) -> Vec<u8> {
    let mut s = seed.as_bytes().to_vec();
    for _ in 0..1 + prng.below(6) {
        let pick = |p: &mut Prng| -> u8 {
            if p.below(8) == 0 {
                p.below(256) as u8
            } else {
                ALPHABET[p.below(ALPHABET.len() as u64) as usize]
            }
        };
        let at = prng.below(s.len() as u64 + 1) as usize;
        match prng.below(7) {
            0 if at < s.len() => s[at] = pick(prng),
            1 => s.insert(at, pick(prng)),
            2 if at < s.len() => {
                s.remove(at);
            }
            3 => s.truncate(at),
            4 => {
                let dup = s[at..].to_vec();
                s.extend_from_slice(&dup);
            }
            5 => {
                // A huge number somewhere.
                let big = b"99999999999999999999999";
                s.splice(at..at, big.iter().copied());
            }
            _ => s.extend((0..prng.below(12)).map(|_| pick(prng))),
        }
    }
    s
}

fn check(bytes: &[u8], format: Option<TraceFormat>, seed: u64) {
    let lines = bytes.split(|&b| b == b'\n').count() as u64;
    let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(bytes.to_vec()));
    let reader = match TraceReader::new("fuzz", input, format) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.line <= lines, "seed {seed}: {e}");
            return;
        }
    };
    let mut n = 0u64;
    for r in reader {
        match r {
            Ok(r) => {
                n += 1;
                assert!(r.line >= 1 && r.line <= lines, "seed {seed}: {r:?}");
                assert!(
                    r.op == OpKind::Flush || r.len > 0,
                    "seed {seed}: empty request {r:?}"
                );
                if let Some(c) = r.completion_ns {
                    assert!(c >= r.arrival_ns || r.arrival_ns == 0, "seed {seed}: {r:?}");
                }
            }
            Err(e) => {
                assert!(e.line <= lines, "seed {seed}: {e}");
                assert!(!e.message.is_empty(), "seed {seed}");
                assert!(e.to_string().starts_with("trace fuzz"), "seed {seed}: {e}");
                break;
            }
        }
        assert!(n <= lines * 2, "seed {seed}: more records than lines");
    }
}

#[test]
fn mutated_traces_never_panic() {
    let base = base_seed();
    println!("FUZZ_SEED={base} FUZZ_CASES={}", cases());
    for (i, (format, text)) in SEEDS.iter().enumerate() {
        for c in 0..cases() {
            let seed = base ^ ((i as u64) << 32) ^ c;
            let mut prng = Prng::from_seed(seed);
            let bytes = mutate(&mut prng, text);
            let r = std::panic::catch_unwind(|| {
                check(&bytes, Some(*format), seed);
                check(&bytes, None, seed);
            });
            if r.is_err() {
                panic!(
                    "seed {seed} ({format}) panicked on {:?}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let base = base_seed();
    println!("FUZZ_SEED={base}");
    for c in 0..cases() {
        let seed = base.wrapping_mul(31) ^ c;
        let mut prng = Prng::from_seed(seed);
        let len = prng.below(400) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| ALPHABET[prng.below(ALPHABET.len() as u64) as usize])
            .collect();
        for f in [
            None,
            Some(TraceFormat::IologV3),
            Some(TraceFormat::Blkparse),
            Some(TraceFormat::Msr),
            Some(TraceFormat::SniaFiu),
        ] {
            check(&bytes, f, seed);
        }
    }
}

/// Every seed is a valid trace of its format, detected as such.
#[test]
fn seeds_are_valid() {
    for (format, text) in SEEDS {
        let input: Box<dyn BufRead + Send> =
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        let r = TraceReader::new("seed", input, None).unwrap();
        assert_eq!(r.format(), *format);
        let recs: Vec<_> = r.collect::<Result<_, _>>().unwrap();
        assert!(!recs.is_empty());
    }
}
