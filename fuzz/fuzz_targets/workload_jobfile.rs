//! fio job files (issue 30), with nothing from outside (no environment, no
//! includes): a parsed file's jobs keep the run options' invariants; an
//! error is one line. `fuzz_parsers::fio_job_file` adds includes and
//! variables on stable Rust.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    for lenient in [false, true] {
        match workload::jobfile::parse_isolated(s, lenient) {
            Ok(f) => {
                for j in f.jobs() {
                    assert!(j.numjobs as u64 * j.iodepth as u64 <= 65_536);
                    let _ = j.spec.resolve(1 << 30, 4096);
                }
            }
            Err(e) => assert_eq!(e.to_string().lines().count(), 1),
        }
    }
});
