//! Stable-Rust fuzzing of the store's files (the cargo-fuzz targets
//! `store_header` and `state_file` in `fuzz/`): a corrupt or truncated
//! `store.json`, OOB map, trim floors, lifetime counters or `state.json`
//! gives a clear error (or is recovered from, for OOB records whose check
//! fails), never a panic, and changes no other file. Also the daemon's
//! control-socket requests (`control_message`): random and mutated lines
//! get one bounded error line or a request within its limits. `FUZZ_CASES` (default
//! 500) and `FUZZ_SEED` set the run; a failure prints its seed and input.

use blockdev::store::{CardSpec, Store, StoreHeader};
use sim::Prng;
use std::path::PathBuf;

fn cases() -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x11af)
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("openvsl-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `text` with random bytes replaced, inserted, removed, or cut short.
fn mutate(prng: &mut Prng, text: &[u8]) -> Vec<u8> {
    let mut s = text.to_vec();
    for _ in 0..1 + prng.below(4) {
        let at = prng.below(s.len() as u64 + 1) as usize;
        match prng.below(4) {
            0 if at < s.len() => s[at] = prng.below(256) as u8,
            1 => s.insert(at, b"{}[]\":,0123456789-e.aZ"[prng.below(22) as usize]),
            2 if at < s.len() => {
                s.remove(at);
            }
            _ => s.truncate(at),
        }
    }
    s
}

fn header() -> StoreHeader {
    StoreHeader {
        magic: "openvsl-store".into(),
        version: blockdev::store::STORE_VERSION,
        card: CardSpec::tiny(),
        members: vec![0],
        sector_bytes: 4096,
        user_sectors: 32,
        physical_slots: 64,
        slots_per_leb: 16,
        lebs: 4,
        geometry: "g".into(),
    }
}

#[test]
fn corrupt_store_headers_give_an_error_not_a_panic() {
    let dir = tmpdir("header");
    // A real header, as `Store::open` writes it.
    drop(Store::open(&dir, &header()).unwrap());
    let good = std::fs::read(dir.join("store.json")).unwrap();
    assert!(Store::read_header(&dir).unwrap().is_some());
    let data_before = std::fs::metadata(dir.join("member0.data"))
        .map(|m| m.len())
        .ok();
    let mut prng = Prng::from_seed(seed());
    let (mut ok, mut err) = (0, 0);
    for case in 0..cases() {
        let text = mutate(&mut prng, &good);
        std::fs::write(dir.join("store.json"), &text).unwrap();
        let r = std::panic::catch_unwind(|| match Store::read_header(&dir) {
            Ok(Some(found)) => {
                // The card it names must also parse or fail cleanly.
                let _ = blockdev::cli::card_config(&found.card);
                true
            }
            Ok(None) => panic!("store.json is there"),
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
                false
            }
        });
        match r {
            Ok(true) => ok += 1,
            Ok(false) => err += 1,
            Err(_) => panic!(
                "case {case} (FUZZ_SEED={}): store.json {:?}",
                seed(),
                String::from_utf8_lossy(&text)
            ),
        }
    }
    assert!(err > 0, "no mutation was refused ({ok} accepted)");
    // Reading headers touched nothing else.
    let data_after = std::fs::metadata(dir.join("member0.data"))
        .map(|m| m.len())
        .ok();
    assert_eq!(data_before, data_after);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_oob_records_and_counters_are_dropped_or_refused() {
    let dir = tmpdir("oob");
    let h = header();
    let store = match Store::open(&dir, &h) {
        Ok(s) => s,
        Err(e) => panic!("cannot create a test store: {e}"),
    };
    let m = &store.members[0];
    m.write_data(0, &[1u8; 4096 * 4]).unwrap();
    m.write_oob(0, &[(1, 1), (2, 2), (3, 3), (4, 4)]).unwrap();
    let oob_path = dir.join("member0.oob");
    let good = std::fs::read(&oob_path).unwrap();
    let mut prng = Prng::from_seed(seed() ^ 1);
    for case in 0..cases() / 5 {
        // Random bytes over the OOB map (same length: the file is mapped).
        let mut bytes = good.clone();
        for _ in 0..1 + prng.below(64) {
            let i = prng.below(bytes.len() as u64) as usize;
            bytes[i] = prng.below(256) as u8;
        }
        std::fs::write(&oob_path, &bytes).unwrap();
        let r = std::panic::catch_unwind(|| m.scan(h.user_sectors));
        match r {
            Ok(Ok(scan)) => {
                for rec in &scan.records {
                    assert!(
                        (rec.lba as u64) < h.user_sectors && (rec.psa as u64) < h.physical_slots,
                        "case {case}: record {rec:?} outside the device"
                    );
                }
            }
            Ok(Err(e)) => assert!(!e.to_string().is_empty()),
            Err(_) => panic!("case {case} (FUZZ_SEED={}): OOB scan panicked", seed()),
        }
    }
    std::fs::write(&oob_path, &good).unwrap();
    // Lifetime counters: corrupt JSON is a clear error.
    m.save_lifetime(&Default::default()).unwrap();
    let life = dir.join("member0.life.json");
    let good = std::fs::read(&life).unwrap();
    for case in 0..cases() / 5 {
        let text = mutate(&mut prng, &good);
        std::fs::write(&life, &text).unwrap();
        match std::panic::catch_unwind(|| m.load_lifetime()) {
            Ok(Ok(_)) | Ok(Err(_)) => {}
            Err(_) => panic!("case {case}: lifetime {:?}", String::from_utf8_lossy(&text)),
        }
    }
    std::fs::write(&life, b"{\"reads\": -1").unwrap();
    let e = m.load_lifetime().unwrap_err().to_string();
    assert!(e.contains("lifetime counters"), "{e}");
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_state_files_are_refused() {
    let good = br#"{"name":"x","pid":1,"store":"/s","device":"d","timing":"model","devices":[],"socket":"/s/c","mountpoint":"/m"}"#;
    let mut prng = Prng::from_seed(seed() ^ 2);
    for case in 0..cases() {
        let text = mutate(&mut prng, good);
        let r = std::panic::catch_unwind(|| {
            let _ = serde_json::from_slice::<blockdev::daemon::AttachState>(&text);
        });
        assert!(
            r.is_ok(),
            "case {case}: {:?}",
            String::from_utf8_lossy(&text)
        );
    }
}

/// Found by `bench/fuzz.sh` (FUZZ_SEED=1795446239, case 13607): a damaged
/// magic with a newline in it was echoed into the error, which must stay
/// one line.
#[test]
fn a_magic_with_a_newline_gives_a_one_line_error() {
    let dir = tmpdir("magic-newline");
    drop(Store::open(&dir, &header()).unwrap());
    let good = String::from_utf8(std::fs::read(dir.join("store.json")).unwrap()).unwrap();
    let bad = good.replacen("\"magic\": \"", "\"magic\": \"op\\n", 1);
    assert_ne!(good, bad);
    std::fs::write(dir.join("store.json"), bad).unwrap();
    let msg = Store::read_header(&dir).unwrap_err().to_string();
    assert!(msg.contains("magic") && !msg.contains('\n'), "{msg:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: the control socket's parser on random bytes and on mutations
/// of every kind of valid request (`blockdev::control::check_message`
/// panics if a promise is broken).
#[test]
fn control_messages_never_panic() {
    let seeds: [&[u8]; 5] = [
        b"status\n",
        b"detach\n",
        b"atomic {\"member\":0,\"writes\":[[0,4096],[8192,4096]],\"trims\":[[65536,4096]]}\nDATA",
        b"atomic {\"member\":1,\"writes\":[],\"trims\":[[0,18446744073709551615]]}\n",
        b"atomic {\"member\":0,\"writes\":[[0,67108864]],\"trims\":[]}\n",
    ];
    let mut prng = Prng::from_seed(seed() ^ 3);
    for case in 0..cases() * 4 {
        let text = if case % 4 == 0 {
            let len = prng.below(300) as usize;
            (0..len).map(|_| prng.below(256) as u8).collect()
        } else {
            let good = seeds[prng.below(seeds.len() as u64) as usize];
            mutate(&mut prng, good)
        };
        let r = std::panic::catch_unwind(|| blockdev::control::check_message(&text));
        assert!(
            r.is_ok(),
            "case {case} (FUZZ_SEED={}): {:?}",
            seed(),
            String::from_utf8_lossy(&text)
        );
    }
}
