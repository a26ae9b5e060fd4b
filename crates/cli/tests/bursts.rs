//! Issue 30: bursts of open-loop load, fio's way: `thinktime` with
//! `thinktime_iotime` on a rate-limited job (`--rate-iops`), with and
//! without `rate_ignore_thinktime`, from flags and from a job file, in
//! virtual time: the per-interval IOPS alternate as configured and the
//! output is byte-identical from run to run.

mod common;
use common::{assert_one_line_error, vsl};
use serde_json::Value;

const SEED: &str = "7";

fn dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vsl-bursts-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `vsl run` with 100 ms on / 100 ms off at 20,000 IOPS (one thread), 100 ms
/// intervals over 800 ms; the report's intervals' IOPS.
fn intervals(tag: &str, extra: &[&str]) -> (Vec<f64>, String) {
    let d = dir(tag);
    let out = d.join("r.json");
    let mut args = vec![
        "run",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--scale",
        "0.01",
        "--threads",
        "1",
        "--qd",
        "16",
        "--duration",
        "800ms",
        "--interval",
        "100ms",
        "--seed",
        SEED,
        "--rate-iops",
        "20k",
        "--thinktime",
        "100ms",
        "--thinktime-iotime",
        "100ms",
        "-q",
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_dir_all(&d).ok();
    let v: Value = serde_json::from_str(&text).unwrap();
    let iops = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["iops"].as_f64().unwrap())
        .collect();
    (iops, text)
}

#[test]
fn ignore_thinktime_alternates_rate_and_silence() {
    println!("seed {SEED}");
    let (iops, a) = intervals("ign", &["--rate-ignore-thinktime"]);
    let (_, b) = intervals("ign2", &["--rate-ignore-thinktime"]);
    assert_eq!(a, b, "same seed and options: byte-identical report");
    assert_eq!(iops.len(), 8, "{iops:?}");
    for (k, x) in iops.iter().enumerate() {
        if k % 2 == 0 {
            assert!(
                (x - 20_000.0).abs() / 20_000.0 < 0.02,
                "on interval {k}: {iops:?}"
            );
        } else {
            // Only what was in flight when the window closed (QD 16 at most).
            assert!(*x <= 16.0 / 0.1, "off interval {k}: {iops:?}");
        }
    }
}

#[test]
fn catch_up_bursts_the_missed_arrivals() {
    println!("seed {SEED}");
    let (iops, _) = intervals("catch", &[]);
    assert_eq!(iops.len(), 8, "{iops:?}");
    // fio's default: the arrivals of each pause go out when it ends, so an
    // on window carries two windows' worth (the first has nothing to catch
    // up on).
    assert!((iops[0] - 20_000.0).abs() / 20_000.0 < 0.02, "{iops:?}");
    for k in [2, 4, 6] {
        assert!(
            (iops[k] - 40_000.0).abs() / 40_000.0 < 0.02,
            "on interval {k}: {iops:?}"
        );
    }
    for k in [1, 3, 5, 7] {
        assert!(iops[k] <= 16.0 / 0.1, "off interval {k}: {iops:?}");
    }
}

#[test]
fn job_file_bursts_match_the_flags() {
    let d = dir("job");
    let job = d.join("b.fio");
    std::fs::write(
        &job,
        format!(
            "[b]\nrw=randread\nbs=4k\niodepth=16\nruntime=800ms\nrandseed={SEED}\n\
             rate_iops=20000\nthinktime=100ms\nthinktime_iotime=100ms\nrate_ignore_thinktime=1\n"
        ),
    )
    .unwrap();
    let out = d.join("r.json");
    let (code, _, err) = vsl(&[
        "run",
        job.to_str().unwrap(),
        "--scale",
        "0.01",
        "--interval",
        "100ms",
        "-q",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_dir_all(&d).ok();
    let from_job: Vec<f64> = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["iops"].as_f64().unwrap())
        .collect();
    let (from_flags, _) = intervals("jobflags", &["--rate-ignore-thinktime"]);
    assert_eq!(from_job, from_flags);
}

#[test]
fn a_rate_with_a_pause_per_block_is_refused_in_one_line() {
    assert_one_line_error(
        &[
            "run",
            "--scale",
            "0.01",
            "--duration",
            "100ms",
            "--rate-iops",
            "1k",
            "--thinktime",
            "1ms",
        ],
        "thinktime_iotime",
    );
    assert_one_line_error(
        &[
            "run",
            "--scale",
            "0.01",
            "--duration",
            "100ms",
            "--thinktime",
            "1ms",
            "--thinktime-iotime",
            "0",
        ],
        "--thinktime-iotime",
    );
}
