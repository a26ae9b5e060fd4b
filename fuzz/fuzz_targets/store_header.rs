//! A store's `store.json`, then the card it names.
#![no_main]
use std::sync::OnceLock;

fn dir() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("openvsl-fuzz-store-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    std::fs::write(dir().join("store.json"), data).unwrap();
    if let Ok(Some(h)) = blockdev::store::Store::read_header(dir()) {
        let _ = blockdev::cli::card_config(&h.card);
    }
});
