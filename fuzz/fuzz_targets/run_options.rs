//! `vsl run` options (NUL-separated words), as a plan's runs spell them.
#![no_main]
libfuzzer_sys::fuzz_target!(|s: &str| {
    let argv: Vec<String> = s.split('\0').map(String::from).collect();
    let _ = vsl_cli::sweep::parse_run(&argv);
});
