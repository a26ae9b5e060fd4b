//! Sweep plans (JSON, as the Python package passes them).
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let _ = vsl_cli::sweep::Plan::from_json(s, "plan");
});
