//! `vsl sweep` as a user meets it: a grid on the local pool, resuming,
//! failed runs keeping the finished ones, bad plans as one clear line.

use std::path::{Path, PathBuf};

mod common;
use common::vsl;

fn dir(name: &str) -> PathBuf {
    common::scratch(&format!("sweep-{name}"))
}

const BASE: &str = "scale = 0.01\nduration = \"2s\"\ninterval = \"500ms\"\nprofile = \"4k-randwrite\"\nprecondition = true\n";

fn sweep(d: &Path, plan: &str, extra: &[&str]) -> (i32, String, String) {
    let p = d.join("plan.toml");
    std::fs::write(&p, plan).unwrap();
    let out = d.join("out");
    let mut args = vec!["sweep", p.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend(extra);
    vsl(&args)
}

fn runs(d: &Path) -> Vec<(String, String)> {
    let mut v: Vec<_> = std::fs::read_dir(d.join("out/runs"))
        .map(|r| r.map(|e| e.unwrap()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn grid_sweep_writes_every_run_a_table_and_a_page_and_resumes() {
    let d = dir("grid");
    let plan = format!("{BASE}format = [\"stock\", \"hp\"]\nseed = [1, 2]\n");
    let (code, out, err) = sweep(&d, &plan, &["--workers", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("4 runs (4 run now, 0 already done, 0 failed)"),
        "{out}"
    );
    let first = runs(&d);
    assert_eq!(first.len(), 4);
    let csv = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(
        lines[0].starts_with("key,duration,format,interval,precondition,profile,scale,seed,iops,")
    );
    assert!(lines[0].ends_with("steady_iops,steady_write_amplification"));
    let html = std::fs::read_to_string(d.join("out/index.html")).unwrap();
    for chart in ["format-iops", "format-wa", "seed-iops", "seed-wa"] {
        assert!(html.contains(&format!("charts/{chart}.svg")), "{chart}");
        assert!(d.join(format!("out/charts/{chart}.svg")).exists());
    }
    // Each run's JSON is what `vsl run --json` writes for the same options.
    let (_, text) = &first[0];
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let seed = v["sweep"]["params"]["seed"].as_str().unwrap().to_string();
    let format = v["sweep"]["params"]["format"].as_str().unwrap().to_string();
    let single = d.join("single.json");
    let (code, _, err) = vsl(&[
        "run",
        "--scale",
        "0.01",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--profile",
        "4k-randwrite",
        "--precondition",
        "--format",
        &format,
        "--seed",
        &seed,
        "-q",
        "--json",
        single.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // Byte for byte: the same text, with the sweep's key and options added.
    let single = std::fs::read_to_string(&single).unwrap();
    let head = single.strip_suffix("\n}\n").unwrap();
    assert!(
        text.starts_with(&format!("{head},\n  \"sweep\": {{")),
        "{text}"
    );
    // Resume: nothing is run again, nothing changes.
    let (code, out, err) = sweep(&d, &plan, &["--workers", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("(0 run now, 4 already done, 0 failed)"),
        "{out}"
    );
    assert_eq!(runs(&d), first);
    // Growing the grid runs only the new runs.
    let bigger = format!("{BASE}format = [\"stock\", \"hp\"]\nseed = [1, 2, 3]\n");
    let (code, out, err) = sweep(&d, &bigger, &["--workers", "2", "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    assert_eq!(runs(&d).len(), 6);
    assert!(first.iter().all(|r| runs(&d).contains(r)));
}

#[test]
fn a_failed_run_is_one_line_and_the_finished_ones_are_kept() {
    let d = dir("failed");
    // The second run asks for a region larger than the card: it fails when
    // it starts; the first finishes and is kept.
    let plan = format!("{BASE}[[runs]]\nseed = 1\n[[runs]]\nsize = \"1T\"\n");
    let (code, _, err) = sweep(&d, &plan, &["-q"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("1 of 2 runs failed (finished results kept)"),
        "{err}"
    );
    assert_eq!(runs(&d).len(), 1);
    let csv = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
}

#[test]
fn bad_plans_are_one_clear_line_and_keep_finished_results() {
    let d = dir("bad");
    let (code, _, err) = sweep(&d, BASE, &["-q"]);
    assert_eq!(code, 0, "{err}");
    let kept = runs(&d);
    assert_eq!(kept.len(), 1);
    for (plan, needle) in [
        (format!("{BASE}colour = \"red\"\n"), "unknown key 'colour'"),
        (format!("{BASE}format = []\n"), "'format' is an empty list"),
        (format!("{BASE}qd = [1, \"x\"]\n"), "invalid value 'x'"),
    ] {
        let (code, out, err) = sweep(&d, &plan, &[]);
        assert_eq!(code, 1, "{plan}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("vsl: error: ") && err.contains(needle),
            "{err}"
        );
        assert_eq!(runs(&d), kept);
    }
    let (code, _, err) = sweep(&d, BASE, &["--engine", "spark"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown --engine 'spark'"), "{err}");
    let (code, _, err) = sweep(&d, BASE, &["--engine", "ray"]);
    assert_eq!(code, 1);
    assert!(err.contains("--engine ray needs --address"), "{err}");
    let (code, _, err) = sweep(
        &d,
        BASE,
        &[
            "--engine",
            "ray",
            "--address",
            "auto",
            "--python",
            "/bin/false",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("needs the openvsl Python package in /bin/false"),
        "{err}"
    );
    assert_eq!(runs(&d), kept);
}
