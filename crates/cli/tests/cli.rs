//! The `vsl` binary as a user meets it: runs, JSON/CSV output, determinism
//! and one-line errors on bad input.

use std::process::Command;

fn vsl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .output()
        .expect("run vsl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vsl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const QUICK: &[&str] = &[
    "run",
    "--scale",
    "0.01",
    "--duration",
    "2s",
    "--interval",
    "500ms",
    "-q",
];

#[test]
fn run_writes_json_with_every_interval_field() {
    let json = tmp("a.json");
    let csv = tmp("a.csv");
    let mut args = QUICK.to_vec();
    args.extend([
        "--profile",
        "4k-randwrite",
        "--precondition",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let intervals = v["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 4);
    for field in [
        "t_s",
        "iops",
        "read_iops",
        "write_iops",
        "mb_per_s",
        "lat_avg_us",
        "lat_max_us",
        "lat_stddev_us",
        "lat_p50_us",
        "lat_p99_us",
        "lat_p999_us",
        "lat_p9999_us",
        "write_amplification",
        "gc_pages_moved",
    ] {
        assert!(intervals[0][field].is_number(), "missing {field}");
    }
    assert!(v["summary"]["iops"].as_f64().unwrap() > 1000.0);
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), 5);
    assert!(csv_text.starts_with("t_s,ios,iops"));
}

#[test]
fn same_seed_gives_byte_identical_json() {
    let run = |name: &str, seed: &str| {
        let p = tmp(name);
        let mut args = QUICK.to_vec();
        args.extend([
            "--profile",
            "fileserver",
            "--seed",
            seed,
            "--json",
            p.to_str().unwrap(),
        ]);
        let (code, _, err) = vsl(&args);
        assert_eq!(code, 0, "{err}");
        std::fs::read(p).unwrap()
    };
    assert_eq!(run("s1.json", "5"), run("s2.json", "5"));
    assert_ne!(run("s1.json", "5"), run("s3.json", "6"));
}

#[test]
fn fio_style_options_work() {
    let mut args: Vec<&str> = QUICK.iter().copied().filter(|a| *a != "-q").collect();
    args.extend([
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--bssplit",
        "4k/50:16k/50",
        "--random-distribution",
        "zipf:1.2",
        "--size",
        "256M",
        "--offset",
        "256M",
        "--sector-size",
        "512",
        "--member",
        "1",
        "--format",
        "max-write",
    ]);
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("randrw 70% read"), "{out}");
}

#[test]
fn devices_lists_every_preset() {
    let (code, out, _) = vsl(&["devices"]);
    assert_eq!(code, 0);
    for p in [
        "iodrive-duo-320-slc",
        "iodrive-duo-640-slc",
        "iodrive-duo-640-mlc",
        "iodrive-duo-1280-mlc",
        "iodrive2-duo-2400-mlc",
        "iodrive-160-slc",
    ] {
        assert!(out.contains(p), "missing {p}");
    }
    let (code, out, _) = vsl(&["devices", "--json"]);
    assert_eq!(code, 0);
    assert!(
        serde_json::from_str::<serde_json::Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
            >= 6
    );
}

/// Each bad input: exit code 1, one line on stderr naming the problem, no panic.
#[test]
fn bad_input_is_one_clear_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["--device", "iodrive-9000"], "unknown device"),
        (&["--profile", "nope"], "unknown profile"),
        (&["--size", "0"], "--size"),
        (&["--size", "-5G"], "--size"),
        (&["--bs", "0"], "--bs"),
        (&["--qd", "0"], "queue depth"),
        (&["--threads", "0"], "threads"),
        (&["--overprovision", "0%"], "no spare"),
        (&["--overprovision", "150%"], "--overprovision"),
        (&["--bs", "6000"], "not a multiple"),
        (&["--sector-size", "512", "--bs", "700"], "not a multiple"),
        (&["--sector-size", "1024"], "sector-size"),
        (&["--warmup", "-1s"], "--warmup"),
        (&["--member", "7"], "member 7 does not exist"),
        (&["--capacity", "10T"], "no spare"),
        (&["--offset", "100T"], "beyond"),
        (&["--scale", "2"], "--scale"),
        (&["--rw", "sideways"], "unknown rw"),
        (&["--random-distribution", "zipf:abc"], "zipf"),
        (&["--gc-policy", "lru"], "GC policy"),
    ];
    for (extra, needle) in cases {
        let mut args = QUICK.to_vec();
        args.extend_from_slice(extra);
        let (code, _, err) = vsl(&args);
        assert_eq!(code, 1, "{extra:?}: exit {code}, stderr {err}");
        assert!(!err.contains("panicked"), "{extra:?} panicked: {err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{extra:?}: not one line: {err}"
        );
        assert!(
            err.contains(needle),
            "{extra:?}: '{err}' does not mention '{needle}'"
        );
    }
}
