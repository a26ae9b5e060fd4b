//! fio's bssplit.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    if let Ok(workload::BlockSizes::Split(v)) = workload::BlockSizes::parse_split(s) {
        let total: f64 = v.iter().map(|e| e.1).sum();
        assert!((total - 1.0).abs() < 1e-6 && v.iter().all(|e| e.0 > 0));
    }
});
