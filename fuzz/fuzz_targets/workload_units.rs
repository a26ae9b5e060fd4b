//! Sizes, durations and percentages (every `vsl run` option with units).
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let _ = workload::units::parse_size(s);
    let _ = workload::units::parse_duration_ns(s);
    if let Ok(p) = workload::units::parse_percent(s) {
        assert!(p.is_finite());
    }
});
