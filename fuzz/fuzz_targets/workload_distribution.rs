//! fio's random_distribution.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let _ = workload::Distribution::parse(s);
});
