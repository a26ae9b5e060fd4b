//! `vsl torture` as a user meets it: a short campaign passes with its
//! figures (text and JSON), a deliberately broken drain makes it fail with
//! one line and a non-zero exit, and bad options are one clear line.

mod common;
use common::vsl;

const CARD: &[&str] = &[
    "--device",
    "iodrive-duo-320-slc",
    "--scale",
    "0.001",
    "--max-calls",
    "10",
    "--quiet",
];

fn torture(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["torture"];
    args.extend_from_slice(CARD);
    args.extend_from_slice(extra);
    vsl(&args)
}

#[test]
fn a_short_campaign_passes_and_reports() {
    let (rc, out, err) = torture(&["--power-cuts", "30", "--seed", "5"]);
    assert_eq!(rc, 0, "{out}{err}");
    for row in [
        "power cuts              30",
        "recovery min/avg/max",
        "lost                    0",
    ] {
        assert!(out.contains(row), "missing '{row}' in:\n{out}");
    }
    let (rc, out, err) = torture(&["--power-cuts", "30", "--seed", "5", "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["report"]["cuts"], 30);
    assert_eq!(v["report"]["lost"], 0);
    assert!(v["report"]["recovery"]["avg_ns"].as_f64().unwrap() > 0.0);
    // Same seed, same figures.
    let (_, again, _) = torture(&["--power-cuts", "30", "--seed", "5", "--json"]);
    let w: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(v["report"], w["report"]);
}

#[test]
fn a_broken_drain_fails_the_campaign() {
    let (rc, out, err) = torture(&["--power-cuts", "30", "--fault", "skip-drain"]);
    assert_ne!(rc, 0, "{out}");
    assert!(err.contains("power-cut campaign failed (seed 1)"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn bad_options_are_one_clear_line() {
    for (args, want) in [
        (&["--power-cuts", "0"][..], "--power-cuts"),
        (&["--scale", "1"][..], "too large a card"),
        (&["--scale", "x"][..], "--scale"),
        (&["--fault", "nope"][..], "--fault"),
        (&["--gc-mode", "nope"][..], "--gc-mode"),
    ] {
        let mut a = vec!["torture", "--quiet"];
        a.extend_from_slice(args);
        let (rc, _, err) = vsl(&a);
        assert_ne!(rc, 0, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
