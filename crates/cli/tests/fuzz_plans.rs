//! Stable-Rust fuzzing of the sweep plan parsers and `vsl run` option
//! parsing (the cargo-fuzz targets `plan_toml`, `plan_json` and
//! `run_options` in `fuzz/`): random and mutated plans give `Ok` or one
//! clear error, never a panic. `FUZZ_CASES` (default 1000) and `FUZZ_SEED`
//! set the run; a failure prints its seed and input.

use sim::Prng;
use vsl_cli::sweep::{parse_run, Plan};

fn cases() -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x11ab)
}

const PLAN: &str = "scale = 0.01\nduration = \"2s\"\nprofile = \"4k-randwrite\"\n\
format = [\"stock\", \"hp\"]\nthreads = [1, 4]\n[[runs]]\nqd = 8\nbs = \"4k\"\n";
const JSON: &str = r#"{"scale": 0.01, "duration": "2s", "qd": [1, 2], "runs": [{"bs": "8k"}]}"#;

fn mutate(prng: &mut Prng, text: &str) -> String {
    let alphabet = b"[]{}=\"',:.0123456789abcdefghijklmnopqrstuvwxyz_-\n ";
    let mut s = text.as_bytes().to_vec();
    for _ in 0..1 + prng.below(5) {
        let at = prng.below(s.len() as u64 + 1) as usize;
        let c = if prng.below(10) == 0 {
            prng.below(256) as u8
        } else {
            alphabet[prng.below(alphabet.len() as u64) as usize]
        };
        match prng.below(4) {
            0 if at < s.len() => s[at] = c,
            1 => s.insert(at, c),
            2 if at < s.len() => {
                s.remove(at);
            }
            _ => s.truncate(at),
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn check(name: &str, text: &str, r: std::thread::Result<Result<Plan, anyhow::Error>>) -> bool {
    match r {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            let msg = format!("{e:#}");
            assert!(!msg.is_empty(), "{name}: empty error for {text:?}");
            false
        }
        Err(_) => panic!("{name} (FUZZ_SEED={}) panicked on {text:?}", seed()),
    }
}

#[test]
fn toml_plans() {
    let mut prng = Prng::from_seed(seed());
    let mut refused = 0;
    for _ in 0..cases() {
        let text = mutate(&mut prng, PLAN);
        let r = std::panic::catch_unwind(|| Plan::from_toml(&text, "plan.toml"));
        refused += !check("toml plan", &text, r) as u32;
    }
    assert!(refused > 0);
    assert!(Plan::from_toml(PLAN, "plan.toml").is_ok());
}

#[test]
fn json_plans() {
    let mut prng = Prng::from_seed(seed() ^ 1);
    for _ in 0..cases() {
        let text = mutate(&mut prng, JSON);
        let r = std::panic::catch_unwind(|| Plan::from_json(&text, "plan"));
        check("json plan", &text, r);
    }
    assert!(Plan::from_json(JSON, "plan").is_ok());
}

#[test]
fn run_options() {
    let mut prng = Prng::from_seed(seed() ^ 2);
    let words = [
        "--bs",
        "4k",
        "--bssplit",
        "4k/50:64k/50",
        "--scale",
        "0.01",
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--size",
        "1G",
        "--offset",
        "-1",
        "--format",
        "hp",
        "--qd",
        "0",
        "--threads",
        "99999999999",
        "--random-distribution",
        "zoned:60/10:40/90",
        "zipf:0",
        "--duration",
        "1e9h",
        "--capacity",
        "200G",
        "--overprovision",
        "101%",
        "--suspend",
    ];
    for _ in 0..cases() {
        let n = prng.below(8);
        let argv: Vec<String> = (0..n)
            .map(|_| {
                let w = words[prng.below(words.len() as u64) as usize];
                if prng.below(6) == 0 {
                    mutate(&mut prng, w)
                } else {
                    w.to_string()
                }
            })
            .collect();
        let r = std::panic::catch_unwind(|| parse_run(&argv).map(|_| ()));
        assert!(
            r.is_ok(),
            "run options (FUZZ_SEED={}) panicked on {argv:?}",
            seed()
        );
    }
}
