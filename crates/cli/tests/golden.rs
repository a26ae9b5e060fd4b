//! Golden runs (issue 28): `vsl run --json` of short, GC-heavy runs must
//! stay byte-identical to the files in `tests/golden/`, which were written
//! by the binary of commit 542b2b7, before GC victim selection moved behind
//! the `VictimPolicy` trait. A refactor of the FTL that changes any number
//! here changed a result.
//!
//! The cases: three presets × both GC modes with the default greedy
//! policy, and cost-benefit on one preset in both modes, each a card scaled
//! to 2 %, preconditioned, then 20 s of 4 KiB random writes (seed 1).
//! To re-bless after an intended change of results (say why in the
//! commit): `GOLDEN_BLESS=1 cargo test --release -p vsl --test golden`.

mod common;
use common::vsl;
use std::path::PathBuf;

/// (preset, GC mode, GC policy).
const CASES: &[(&str, &str, &str)] = &[
    ("iodrive-duo-640-mlc", "paced", "greedy"),
    ("iodrive-duo-640-mlc", "legacy", "greedy"),
    ("iodrive-duo-1280-mlc", "paced", "greedy"),
    ("iodrive-duo-1280-mlc", "legacy", "greedy"),
    ("iodrive2-duo-2400-mlc", "paced", "greedy"),
    ("iodrive2-duo-2400-mlc", "legacy", "greedy"),
    ("iodrive-duo-640-mlc", "paced", "cost-benefit"),
    ("iodrive-duo-640-mlc", "legacy", "cost-benefit"),
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Runs one case and returns its JSON bytes.
fn run_case(preset: &str, mode: &str, policy: &str) -> Vec<u8> {
    let dir = common::shared_scratch("golden");
    let json = dir.join(format!("{preset}-{mode}-{policy}.json"));
    let mut args = vec![
        "run",
        "--device",
        preset,
        "--scale",
        "0.02",
        "--precondition",
        "--duration",
        "20s",
        "--profile",
        "4k-randwrite",
        "--gc-mode",
        mode,
        "--seed",
        "1",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    // The default policy is left unspelled: the golden files are what the
    // defaults give.
    if policy != "greedy" {
        args.extend(["--gc-policy", policy]);
    }
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{preset} {mode} {policy}: {err}");
    let bytes = std::fs::read(&json).unwrap();
    std::fs::remove_file(&json).unwrap();
    bytes
}

/// First line where two JSON texts differ, for a readable failure.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let (w, g) = (String::from_utf8_lossy(want), String::from_utf8_lossy(got));
    for (n, (a, b)) in w.lines().zip(g.lines()).enumerate() {
        if a != b {
            return format!("line {}: golden `{a}`, now `{b}`", n + 1);
        }
    }
    format!(
        "golden {} lines, now {} lines",
        w.lines().count(),
        g.lines().count()
    )
}

#[test]
fn issue_28_run_json_is_byte_identical_to_golden() {
    let bless = std::env::var_os("GOLDEN_BLESS").is_some();
    let mut failures = Vec::new();
    // Every case runs before any assert, so one failure shows them all.
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = CASES
            .iter()
            .map(|&(p, m, g)| s.spawn(move || (p, m, g, run_case(p, m, g))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (preset, mode, policy, got) in results {
        let path = golden_dir().join(format!("{preset}-{mode}-{policy}.json"));
        if bless {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (GOLDEN_BLESS=1 writes it)", path.display()));
        assert!(got.len() > 1000, "{preset} {mode} {policy}: JSON too short");
        if want != got {
            failures.push(format!(
                "{preset} --gc-mode {mode} --gc-policy {policy}: {}",
                first_difference(&want, &got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "vsl run --json changed:\n{}",
        failures.join("\n")
    );
}

/// The golden files themselves say GC ran: a golden run without GC would
/// not guard the victim policy.
#[test]
fn issue_28_golden_runs_exercise_gc() {
    for &(preset, mode, policy) in CASES {
        let path = golden_dir().join(format!("{preset}-{mode}-{policy}.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let s = &v["summary"];
        let wa = s["write_amplification"].as_f64().unwrap();
        let runs = s["gc_runs"].as_u64().unwrap();
        assert!(wa > 1.5, "{preset} {mode} {policy}: WA {wa}");
        assert!(runs > 100, "{preset} {mode} {policy}: {runs} GC runs");
        assert_eq!(v["device"]["gc_policy"], policy, "{}", path.display());
    }
}
