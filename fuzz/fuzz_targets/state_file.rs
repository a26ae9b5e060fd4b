//! An attachment's `state.json`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<blockdev::daemon::AttachState>(data);
});
