//! MSR Cambridge trace files.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    if let Ok(t) = workload::Trace::parse_msr_csv("fuzz", s) {
        assert!(t.ios.len() <= s.lines().count());
    }
});
