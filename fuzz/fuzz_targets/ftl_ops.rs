//! FTL operation sequences against the reference model.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ftl::fuzzing::ftl_ops(data));
