//! Sweep plans (TOML).
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let _ = vsl_cli::sweep::Plan::from_toml(s, "plan.toml");
});
