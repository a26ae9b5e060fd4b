//! fio job files (issue 30): a parsed file's jobs keep the run options'
//! invariants; an error is one line.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let env = |k: &str| (k == "SEED").then(|| "42".to_string());
    let read = |p: &std::path::Path| {
        if p.ends_with("inc.fio") {
            Ok("bs=16k\niodepth=4\n".to_string())
        } else {
            Err("No such file".to_string())
        }
    };
    for lenient in [false, true] {
        let cx = workload::jobfile::Context {
            lenient,
            env: &env,
            ncpus: 4,
            read: &read,
        };
        match workload::jobfile::parse(s, std::path::Path::new("fuzz.fio"), &cx) {
            Ok(f) => {
                assert!(!f.phases.is_empty());
                for j in f.jobs() {
                    assert!(j.numjobs >= 1 && j.iodepth >= 1);
                    assert!(j.numjobs as u64 * j.iodepth as u64 <= 65_536);
                    assert!(j.spec.spec.block_sizes.sizes().iter().all(|&b| b > 0));
                    let _ = j.spec.resolve(1 << 30, 4096);
                }
            }
            Err(e) => assert_eq!(e.to_string().lines().count(), 1),
        }
    }
});
