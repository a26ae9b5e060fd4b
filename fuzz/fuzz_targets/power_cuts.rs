//! Short power-cut campaigns (seed and settings from the input): no loss.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ftl::fuzzing::power_cuts(data));
