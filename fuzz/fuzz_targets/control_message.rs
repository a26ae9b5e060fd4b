//! A request on the attach daemon's control socket (`blockdev::control`):
//! never a panic, an accepted atomic request within its bounds, a refusal
//! one bounded `error` line.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    blockdev::control::check_message(data);
});
