//! GC victim policies as a user meets them (issue 28): `vsl policies`,
//! `--gc-policy` on `vsl run` and review targets, determinism of the
//! seeded d-choices, one-line errors.

mod common;
use common::{assert_one_line_error, vsl};

fn tmp(name: &str) -> std::path::PathBuf {
    common::shared_scratch("policies").join(name)
}

/// A short GC-heavy run of the card `card` (options) with `seed`: its JSON.
fn run_card(card: &[&str], seed: &str, name: &str) -> String {
    let json = tmp(name);
    let mut args = vec!["run"];
    args.extend_from_slice(card);
    args.extend([
        "--scale",
        "0.01",
        "--member",
        "0",
        "--precondition",
        "--profile",
        "4k-randwrite",
        "--duration",
        "3s",
        "--seed",
        seed,
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{card:?}: {err}");
    std::fs::read_to_string(&json).unwrap()
}

/// [`run_card`] of the default card with `--gc-policy policy`.
fn run_json(policy: &str, seed: &str, name: &str) -> String {
    run_card(&["--gc-policy", policy], seed, name)
}

fn summary(text: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["summary"].clone()
}

#[test]
fn policies_lists_every_policy_on_one_line_with_its_source() {
    let (code, out, err) = vsl(&["policies"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "greedy",
            "cost-benefit",
            "d-choices:D",
            "fifo",
            "windowed:W",
            "single",
            "hot-cold",
            "streams"
        ]
    );
    for l in &lines {
        assert!(l.ends_with(']') && l.contains(" ["), "no source: {l}");
    }
}

#[test]
fn every_policy_runs_and_the_json_names_it() {
    let mut was = Vec::new();
    for policy in [
        "greedy",
        "cost-benefit",
        "d-choices:4",
        "fifo",
        "windowed:8",
    ] {
        let text = run_json(policy, "1", &format!("{policy}.json"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["device"]["gc_policy"], policy);
        let s = &v["summary"];
        assert!(s["gc_runs"].as_u64().unwrap() > 50, "{policy}: {s}");
        was.push(s["write_amplification"].as_f64().unwrap());
    }
    // The policies choose differently: not every WA is the same.
    assert!(
        was.iter().any(|w| (w - was[0]).abs() > 1e-6),
        "every policy gave WA {was:?}"
    );
}

#[test]
fn d_choices_is_deterministic_per_seed() {
    let a = run_json("d-choices:2", "7", "d1.json");
    let b = run_json("d-choices:2", "7", "d2.json");
    assert_eq!(a, b, "same seed and options, different JSON");
    let c = run_json("d-choices:2", "8", "d3.json");
    assert_ne!(summary(&a), summary(&c), "the seed changes nothing");
}

#[test]
fn bad_policies_are_one_line_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--gc-policy", "lru"], "unknown GC policy 'lru'"),
        (&["run", "--gc-policy", "d-choices:0"], "d-choices:0"),
        (&["run", "--gc-policy", "windowed:0"], "windowed:0"),
        (&["run", "--gc-policy", "d-choices"], "needs a count"),
        (
            &["review", "--gc-policy", "fifo:2", "--target", "x"],
            "fifo:2",
        ),
        (
            &[
                "review",
                "--quick",
                "--target",
                "iodrive-duo-640-mlc:gc=windowed:0",
            ],
            "windowed:0",
        ),
        (&["run", "--target", "iodrive-duo-640-mlc:gc=nope"], "nope"),
    ];
    for (args, needle) in cases {
        assert_one_line_error(args, needle);
    }
}

/// `--target PRESET:gc=POLICY` on `vsl run` is the same card as
/// `--device PRESET --gc-policy POLICY`.
#[test]
fn a_target_may_name_its_policy() {
    let via_target = run_card(
        &["--target", "iodrive-duo-640-mlc:gc=windowed:8"],
        "1",
        "target.json",
    );
    let via_flag = run_json("windowed:8", "1", "flag.json");
    assert_eq!(via_target, via_flag);
}
