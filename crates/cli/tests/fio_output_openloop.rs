//! Issue 30: `vsl run --rate-iops ... --output-format json|json+|normal`
//! (open-loop runs) in fio 3.33's schema, as fio reports rate-limited jobs:
//! the same keys as a closed-loop run, IOPS at the offered rate, the
//! latencies from issue (fio's clat/lat leave out the wait for the rate).

mod common;
use common::vsl;
use serde_json::Value;

/// 2 threads × 5,000 IOPS each for 600 ms, 100 ms intervals.
const OPEN: &[&str] = &[
    "run",
    "--rw",
    "randrw",
    "--bs",
    "4k",
    "--threads",
    "2",
    "--qd",
    "4",
    "--duration",
    "600ms",
    "--interval",
    "100ms",
    "--scale",
    "0.01",
    "--rate-iops",
    "5k",
    "-q",
];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&'a str> = OPEN.to_vec();
    v.extend(extra);
    v
}

#[test]
fn open_loop_json_plus_is_fio_schema_at_the_offered_rate() {
    let (c1, a, e1) = vsl(&with(&["--output-format", "json+"]));
    assert_eq!(c1, 0, "{e1}");
    let (c2, b, e2) = vsl(&with(&["--output-format", "json+"]));
    assert_eq!(c2, 0, "{e2}");
    assert_eq!(a, b, "same seed and options: byte-identical fio JSON");
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["fio version"], "fio-3.33");
    let j = &v["jobs"][0];
    assert_eq!(j["job options"]["rate_iops"], "5k");
    assert_eq!(j["job options"]["rate_process"], "linear");
    let mut total = 0.0;
    for d in ["read", "write"] {
        let x = &j[d];
        let n = x["total_ios"].as_u64().unwrap();
        assert!(n > 100, "{d}: {n} I/Os");
        let clat = &x["clat_ns"];
        assert_eq!(clat["N"].as_u64().unwrap(), n);
        assert_eq!(x["lat_ns"]["N"].as_u64().unwrap(), n);
        let bins: u64 = clat["bins"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(bins, n, "{d}: bins hold every I/O");
        let (min, max) = (clat["min"].as_u64().unwrap(), clat["max"].as_u64().unwrap());
        let mean = clat["mean"].as_f64().unwrap();
        assert!(min as f64 <= mean && mean <= max as f64);
        assert_eq!(x["runtime"].as_u64().unwrap(), 600);
        assert_eq!(x["io_bytes"].as_u64().unwrap(), n * 4096);
        assert_eq!(
            x["bw_samples"].as_u64().unwrap(),
            6,
            "one per 100 ms interval"
        );
        // Each 100 ms sample carries its share of the offered rate.
        let (lo, hi) = (
            x["iops_min"].as_u64().unwrap(),
            x["iops_max"].as_u64().unwrap(),
        );
        assert!(lo > 0 && hi < 10_000, "{d}: samples {lo}..{hi} IOPS");
        total += x["iops"].as_f64().unwrap();
    }
    // Offered: 2 threads × 5,000 IOPS; a linear process well below the
    // card's saturation completes what arrives (less the last I/Os in
    // flight at the end).
    assert!(
        (total - 10_000.0).abs() / 10_000.0 < 0.02,
        "read + write IOPS {total}, offered 10,000"
    );
    // Far below saturation most I/Os are issued with few others in flight
    // (the closed loop reports 100 % at its depth).
    let depth = j["iodepth_level"].as_object().unwrap();
    let sum: f64 = depth.values().map(|x| x.as_f64().unwrap()).sum();
    assert!((sum - 100.0).abs() < 0.01, "{depth:?}");
    assert!(depth["1"].as_f64().unwrap() > 50.0, "{depth:?}");
    let pct: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| j[k].as_object().unwrap().values())
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((pct - 100.0).abs() < 0.5, "latency buckets sum to {pct} %");
}

#[test]
fn open_loop_json_counts_match_the_vsl_report() {
    let dir = std::env::temp_dir().join(format!("vsl-fioout-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rep = dir.join("r.json");
    let (code, text, err) = vsl(&with(&[
        "--output-format",
        "json",
        "--json",
        rep.to_str().unwrap(),
        "--rate-process",
        "poisson",
    ]));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["job options"]["rate_process"], "poisson");
    let fio_ios =
        j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap();
    let ios = r["summary"]["ios"].as_u64().unwrap();
    assert_eq!(fio_ios, ios, "fio's counts are the run's");
    assert!(
        r["open_loop"]["offered_iops"].as_f64().unwrap() > 0.0,
        "{}",
        r["open_loop"]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn open_loop_normal_output() {
    let (code, text, err) = vsl(&with(&["--output-format", "normal"]));
    assert_eq!(code, 0, "{err}");
    for needle in [
        "read: IOPS=",
        "write: IOPS=",
        "clat percentiles (usec)",
        "Run status group 0",
    ] {
        assert!(
            text.contains(needle),
            "normal output lacks '{needle}':\n{text}"
        );
    }
}
