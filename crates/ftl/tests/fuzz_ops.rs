//! Stable-Rust fuzzing of the FTL targets (`ftl::fuzzing`, also the
//! cargo-fuzz targets `ftl_ops` and `power_cuts` in `fuzz/`): random byte
//! strings. `FUZZ_CASES` (default 1000 and 200) and `FUZZ_SEED` set the run;
//! `bench/fuzz.sh` runs many more. A failure prints its seed and input.

use sim::Prng;

fn run(name: &str, default: u64, len: u64, target: fn(&[u8])) {
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x11a7u64);
    let mut prng = Prng::from_seed(seed);
    for case in 0..cases {
        let n = prng.below(len);
        let data: Vec<u8> = (0..n).map(|_| prng.below(256) as u8).collect();
        let r = std::panic::catch_unwind(|| target(&data));
        if r.is_err() {
            panic!("{name}: case {case} (FUZZ_SEED={seed}) failed on {data:?}");
        }
    }
}

#[test]
fn ftl_operation_sequences_match_the_reference() {
    run("ftl_ops", 1000, 2000, ftl::fuzzing::ftl_ops);
}

#[test]
fn short_power_cut_campaigns_lose_nothing() {
    run("power_cuts", 200, 16, ftl::fuzzing::power_cuts);
}

/// Found by `bench/fuzz.sh` (FUZZ_SEED=1795445760, case 10734): the GC
/// that finishes a recovery moved a sector into the write buffer and
/// erased its old unit; the checker read only programmed slots and called
/// the buffered sector lost. The device serves it from the buffer (and the
/// next cut drains it), so the checker must too.
#[test]
fn a_sector_moved_into_the_buffer_by_recovery_gc_reads_back() {
    ftl::fuzzing::power_cuts(&[
        57, 185, 141, 13, 37, 40, 201, 125, 190, 17, 121, 69, 82, 78, 185,
    ]);
}
