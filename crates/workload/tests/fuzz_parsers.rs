//! Stable-Rust fuzzing of every workload parser of user input (the same
//! targets as `fuzz/fuzz_targets/workload_*.rs` under cargo-fuzz): random
//! and mutated inputs must give `Ok` or one clear error, never a panic.
//! `FUZZ_CASES` (default 3000 per target) and `FUZZ_SEED` set the run;
//! `bench/fuzz.sh` runs many more. A failing case prints its seed.

use sim::Prng;
use workload::jobfile::{self, Context};
use workload::units::{parse_duration_ns, parse_percent, parse_size};
use workload::{BlockSizes, Distribution, Trace};

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
        .unwrap_or(0x11a5)
}

/// A random input: a valid seed string mutated (bytes replaced, inserted,
/// deleted, truncated, duplicated) with characters of the grammar and
/// arbitrary ones.
pub fn mutate(prng: &mut Prng, seeds: &[&str], alphabet: &[u8]) -> String {
    let mut s: Vec<u8> = seeds[prng.below(seeds.len() as u64) as usize]
        .as_bytes()
        .to_vec();
    for _ in 0..1 + prng.below(6) {
        let pick = |p: &mut Prng| -> u8 {
            if p.below(8) == 0 {
                p.below(256) as u8
            } else {
                alphabet[p.below(alphabet.len() as u64) as usize]
            }
        };
        let at = prng.below(s.len() as u64 + 1) as usize;
        match prng.below(6) {
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
            _ => s.extend((0..prng.below(12)).map(|_| pick(prng))),
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn run(name: &str, seeds: &[&str], alphabet: &[u8], check: impl Fn(&str)) {
    let seed = base_seed() ^ (name.len() as u64 * 0x9e37);
    let mut prng = Prng::from_seed(seed);
    for case in 0..cases() {
        let input = mutate(&mut prng, seeds, alphabet);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
        if r.is_err() {
            panic!(
                "{name}: case {case} (FUZZ_SEED={}) panicked on {input:?}",
                base_seed()
            );
        }
    }
}

const UNITS: &[u8] = b"0123456789.kKmMgGtTiIbBsSuUnhH%-+e ";

#[test]
fn sizes_durations_percents() {
    run(
        "units",
        &[
            "4k", "8G", "1.5M", "512", "90s", "6h", "20us", "36%", "0.5", "1e3k",
        ],
        UNITS,
        |s| {
            if let (Ok(a), Ok(b)) = (parse_size(s), parse_size(&s.to_uppercase())) {
                // Units are case-insensitive in fio's spelling.
                assert_eq!(a, b, "{s:?}");
            }
            let _ = parse_duration_ns(s);
            if let Ok(p) = parse_percent(s) {
                assert!(p.is_finite(), "{s:?} -> {p}");
            }
        },
    );
}

#[test]
fn bssplit() {
    run(
        "bssplit",
        &["512/10:4k/60:64k/30", "4k/50:64k/50", "4k:8k", "16k/100"],
        b"0123456789kKmM/:.%",
        |s| {
            if let Ok(BlockSizes::Split(v)) = BlockSizes::parse_split(s) {
                let total: f64 = v.iter().map(|e| e.1).sum();
                assert!((total - 1.0).abs() < 1e-6, "{s:?}: weights sum to {total}");
                assert!(v.iter().all(|e| e.0 > 0), "{s:?}: zero block size");
            }
        },
    );
}

#[test]
fn random_distribution() {
    run(
        "distribution",
        &[
            "random",
            "zipf:1.2",
            "zoned:60/10:40/90",
            "zoned:90/10:10/90",
        ],
        b"0123456789./:zipfonedrandm",
        |s| {
            if let Ok(Distribution::Zoned(z)) = Distribution::parse(s) {
                assert!(
                    z.iter().all(|(a, b)| a.is_finite() && b.is_finite()),
                    "{s:?}"
                );
            }
        },
    );
}

#[test]
fn msr_trace() {
    let good = "128166372003061629,hm,0,Write,383496192,32768,1331\n\
                128166372016382155,hm,0,Read,3805544448,4096,2210\n";
    run(
        "trace",
        &[good, "# comment\n\n", "1,a,0,Read,0,512,1"],
        b"0123456789,ReadWritehm#\n -",
        |s| {
            if let Ok(t) = Trace::parse_msr_csv("fuzz", s) {
                assert!(t.ios.len() <= s.lines().count(), "{s:?}");
            }
        },
    );
}

/// Issue 30: fio job files. Any text gives a parsed file whose jobs hold
/// the run options' invariants, or one one-line error with a line number
/// inside the text (or 0 for file-level errors).
#[test]
fn fio_job_file() {
    let seeds = [
        "[global]\nbs=4k\niodepth=8\ntime_based\nruntime=1s\n[a]\nrw=randrw\nrwmixread=70\n",
        "; c\n[a]\nrw=read:0\nbsrange=4k-64k\nsize=50%\noffset=10%\n[b]\nstonewall\nrw=write\n",
        "[j]\ninclude inc.fio\nrandom_distribution=zoned:50/5:30/15:20/\nnumjobs=$ncpus\n",
        "[j]\nbssplit=4k/50:64k/50\nrandom_distribution=zipf:1.2\nramp_time=2s\nrandseed=${SEED}\n",
        "[j]\nrw=randread\nsize=100m\nrandom_distribution=zoned_abs:60/20m:40/80m\n",
        "[j]\nrate_iops=100\nfrobnicate # x\nbs=4k,8k\n",
    ];
    let env = |k: &str| (k == "SEED").then(|| "42".to_string());
    let read = |p: &std::path::Path| {
        if p.ends_with("inc.fio") {
            Ok("bs=16k\niodepth=4\n".to_string())
        } else {
            Err("No such file".to_string())
        }
    };
    for lenient in [false, true] {
        let parsed = std::cell::Cell::new(0u64);
        let cx = Context {
            lenient,
            env: &env,
            ncpus: 4,
            read: &read,
        };
        run(
            if lenient { "jobfile-lenient" } else { "jobfile" },
            &seeds,
            b"[]=;#$:/%-_,\n global rw randreadwrite bs ize offset numjobs iodepth stonewall include 0123456789kmg",
            |s| match jobfile::parse(s, std::path::Path::new("fuzz.fio"), &cx) {
                Ok(f) => {
                    parsed.set(parsed.get() + 1);
                    assert!(!f.phases.is_empty(), "{s:?}");
                    for j in f.jobs() {
                        assert!(j.numjobs >= 1 && j.iodepth >= 1, "{s:?}");
                        assert!(j.numjobs as u64 * j.iodepth as u64 <= 65_536, "{s:?}");
                        assert!(j.spec.spec.block_sizes.sizes().iter().all(|&b| b > 0), "{s:?}");
                        let _ = j.spec.resolve(1 << 30, 4096);
                    }
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert_eq!(msg.lines().count(), 1, "{s:?}: {msg}");
                    assert!(e.line <= s.lines().count() + 2, "{s:?}: {msg}");
                }
            },
        );
        // The mutations keep enough files valid to reach the conversion.
        assert!(parsed.get() * 100 > cases(), "only {} parsed", parsed.get());
    }
}
