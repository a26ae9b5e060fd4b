//! Placement policies as a user meets them (issue 28): `--placement` and
//! `--stream` on `vsl run`, the JSON naming the placement, hot/cold
//! separation lowering write amplification under skewed traffic,
//! determinism, one-line errors.

mod common;
use common::{assert_one_line_error, vsl};

fn tmp(name: &str) -> std::path::PathBuf {
    common::shared_scratch("placement").join(name)
}

/// A GC-heavy run of one member at scale 0.01 under 90/10 zoned 4K random
/// writes with the extra card options `card`: its JSON.
fn run(card: &[&str], seed: &str, name: &str) -> serde_json::Value {
    let json = tmp(name);
    let mut args = vec!["run"];
    args.extend_from_slice(card);
    args.extend([
        "--scale",
        "0.01",
        "--member",
        "0",
        "--format",
        "max-write",
        "--precondition",
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--random-distribution",
        "zoned:90/10:10/90",
        "--duration",
        "20s",
        "--seed",
        seed,
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{card:?}: {err}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn wa(v: &serde_json::Value) -> f64 {
    v["summary"]["write_amplification"].as_f64().unwrap()
}

#[test]
fn hot_cold_and_streams_separate_skewed_traffic() {
    let single = run(&[], "1", "single.json");
    assert!(
        single["device"].get("placement").is_none(),
        "single is the default and unnamed"
    );
    let hc = run(&["--placement", "hot-cold"], "1", "hc.json");
    assert_eq!(hc["device"]["placement"], "hot-cold");
    let capacity = single["device"]["capacity_bytes"].as_u64().unwrap();
    // The hot zone: the first 10 % of the device, on a 4 KiB boundary.
    let hot_end = capacity / 10 / 4096 * 4096;
    let stream = format!("0-{hot_end}");
    let st = run(
        &["--placement", "streams", "--stream", &stream],
        "1",
        "st.json",
    );
    assert_eq!(st["device"]["placement"], "streams");
    let (ws, wh, wt) = (wa(&single), wa(&hc), wa(&st));
    println!("WA single {ws:.3} hot-cold {wh:.3} streams {wt:.3}");
    assert!(wh < 0.9 * ws, "hot-cold WA {wh} not below single's {ws}");
    assert!(wt < 0.9 * ws, "streams WA {wt} not below single's {ws}");
}

#[test]
fn hot_cold_is_deterministic() {
    let a = run(&["--placement", "hot-cold"], "3", "d1.json");
    let b = run(&["--placement", "hot-cold"], "3", "d2.json");
    assert_eq!(a, b, "same seed and options, different JSON");
}

/// Overlapping and out-of-range streams, unknown names and `d-choices:0`
/// on every command: `policy_errors.rs`.
#[test]
fn bad_placements_are_one_line_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--placement", "warm"], "unknown placement 'warm'"),
        (&["run", "--placement", "streams"], "at least one --stream"),
        (
            &[
                "run",
                "--placement",
                "streams",
                "--stream",
                "0-1536K",
                "--scale",
                "0.01",
            ],
            "stripe",
        ),
        (
            &["run", "--placement", "streams", "--stream", "5G"],
            "START-END",
        ),
        (
            &["run", "--placement", "hot-cold", "--stream", "0-1G"],
            "--stream is for",
        ),
        (
            &[
                "run",
                "--placement",
                "hot-cold",
                "--fail-die",
                "3",
                "--scale",
                "0.01",
            ],
            "Flashback",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(args, needle);
    }
}
