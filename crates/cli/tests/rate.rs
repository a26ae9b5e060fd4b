//! Issue 30: open-loop load. `--rate-iops`/`rate_iops` arrivals on a
//! modelled card: below saturation the card does what is offered, above it
//! latency grows; a job file and the equivalent flags give byte-identical
//! JSON; `--rate-sweep` writes its table, JSON, CSV and chart. Bursts,
//! fio's way: `thinktime` with `thinktime_iotime` on a rate, with and
//! without `rate_ignore_thinktime`, from flags and from a job file: the
//! per-interval IOPS alternate as configured. On a real `--target` the
//! realtime engine issues at the offered rate, latency from the scheduled
//! arrival in the report and from the issue in fio's JSON.

mod common;
use common::vsl;
use serde_json::Value;

fn dir() -> std::path::PathBuf {
    common::shared_scratch("rate").to_path_buf()
}

fn out(name: &str) -> String {
    dir().join(name).to_str().unwrap().to_string()
}

/// A small card, 4 KiB random reads of a written region.
const BASE: &[&str] = &[
    "run",
    "--rw",
    "randrw",
    "--rwmixread",
    "70",
    "--bs",
    "4k",
    "--scale",
    "0.01",
    "--interval",
    "100ms",
    "--duration",
    "1s",
    "-q",
];

/// `vsl ARGS --json FILE`: the report's text.
fn report_text(args: Vec<&str>, name: &str) -> String {
    let j = out(name);
    let mut args = args;
    args.extend(["--json", j.as_str()]);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    std::fs::read_to_string(&j).unwrap()
}

/// `vsl ARGS --json FILE`: the report.
fn report(args: Vec<&str>, name: &str) -> Value {
    serde_json::from_str(&report_text(args, name)).unwrap()
}

/// [`BASE`] and `extra`.
fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = BASE.to_vec();
    v.extend(extra);
    v
}

fn run_json(extra: &[&str], name: &str) -> Value {
    report(with(extra), name)
}

/// A report's per-interval IOPS.
fn interval_iops(v: &Value) -> Vec<f64> {
    v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["iops"].as_f64().unwrap())
        .collect()
}

/// The card's own limit at 64 I/Os in flight: a closed loop of 16
/// threads x QD 4, so that no thread's CPU time (`host.thread_ns`, at most
/// 51 K IOPS a thread) binds first; the open loop has no threads' CPU.
fn closed_loop_iops() -> f64 {
    let v = run_json(&["--threads", "16", "--qd", "4"], "closed.json");
    v["summary"]["iops"].as_f64().unwrap()
}

#[test]
fn below_saturation_the_card_does_what_is_offered_above_it_latency_grows() {
    let max = closed_loop_iops();
    println!("closed loop 16x4: {max:.0} IOPS");
    assert!(max > 1000.0, "{max}");
    let mut lat = Vec::new();
    for (share, process) in [(0.3, "linear"), (0.5, "poisson"), (1.5, "poisson")] {
        let offered = (max * share).round();
        let per_thread = format!("{}", offered / 4.0);
        let v = run_json(
            &[
                "--threads",
                "4",
                "--qd",
                "16",
                "--rate-iops",
                &per_thread,
                "--rate-process",
                process,
            ],
            &format!("open-{share}.json"),
        );
        assert_eq!(v["open_loop"]["process"], process);
        assert!((v["open_loop"]["offered_iops"].as_f64().unwrap() - offered).abs() < 1e-6);
        let achieved = v["summary"]["iops"].as_f64().unwrap();
        let mean = v["summary"]["lat_avg_us"].as_f64().unwrap();
        println!("offered {offered:.0} ({share} of max, {process}): achieved {achieved:.0}, mean {mean:.1} us");
        if share < 1.0 {
            let err = (achieved - offered).abs() / offered;
            assert!(
                err <= 0.02,
                "below saturation: achieved {achieved} of {offered}"
            );
        } else {
            assert!(
                achieved < offered * 0.9,
                "above saturation: {achieved} of {offered}"
            );
        }
        lat.push(mean);
    }
    assert!(
        lat[2] > 5.0 * lat[1],
        "above saturation the latency from arrival grows: {lat:?}"
    );
}

#[test]
fn a_job_file_with_rate_iops_gives_the_same_bytes_as_the_flags() {
    let job = dir().join("rate.fio");
    std::fs::write(
        &job,
        "[global]\ntime_based\nruntime=1s\nrandseed=5\n\
         [open]\nrw=randrw\nrwmixread=70\nbs=4k\nnumjobs=2\niodepth=8\n\
         rate_iops=3000\nrate_process=poisson\n",
    )
    .unwrap();
    let a = out("job.json");
    let (code, _, err) = vsl(&[
        "run",
        job.to_str().unwrap(),
        "--scale",
        "0.01",
        "--interval",
        "100ms",
        "-q",
        "--json",
        &a,
    ]);
    assert_eq!(code, 0, "{err}");
    let b = run_json(
        &[
            "--threads",
            "2",
            "--qd",
            "8",
            "--seed",
            "5",
            "--rate-iops",
            "3000",
            "--rate-process",
            "poisson",
        ],
        "flags.json",
    );
    let _ = b;
    let ja = std::fs::read_to_string(&a).unwrap();
    let jb = std::fs::read_to_string(out("flags.json")).unwrap();
    assert!(ja == jb, "job file and flags differ");
    let v: Value = serde_json::from_str(&ja).unwrap();
    assert_eq!(
        v["open_loop"]["offered_iops"], 6000.0,
        "rate_iops is per job"
    );
    let ios = v["summary"]["ios"].as_u64().unwrap();
    assert!(
        (5700..=6300).contains(&ios),
        "{ios} I/Os in 1 s at 6000 IOPS"
    );
}

#[test]
fn rate_sweep_writes_table_json_csv_and_chart() {
    let (j, c, s) = (out("sweep.json"), out("sweep.csv"), out("sweep.svg"));
    let mut args = BASE.to_vec();
    args.retain(|a| *a != "-q");
    args.extend([
        "--threads",
        "2",
        "--qd",
        "8",
        "--duration",
        "300ms",
        "--rate-sweep",
        "2k,8k,1M",
        "--json",
        &j,
        "--csv",
        &c,
        "--chart",
        &s,
    ]);
    let (code, table, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("offered") && table.contains("p99.9 us"),
        "{table}"
    );
    assert_eq!(
        table.lines().count(),
        5,
        "device line, header, 3 rates:\n{table}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("offered")).count(),
        3,
        "progress: {err}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let p = v["points"].as_array().unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(p[0]["offered_iops"], 2000.0);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.starts_with("offered_iops,achieved_iops"));
    let svg = std::fs::read_to_string(&s).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("p99.9"),
        "an SVG chart"
    );
    // 1M IOPS is far above what 2x8 can do: achieved well below offered and
    // the latency far above the 2k point's.
    let (lo, hi) = (&p[0], &p[2]);
    assert!(hi["achieved_iops"].as_f64().unwrap() < 0.5e6);
    assert!(hi["lat_p99_us"].as_f64().unwrap() > 5.0 * lo["lat_p99_us"].as_f64().unwrap());
}

#[test]
fn bad_rates_are_one_line() {
    common::assert_one_line_error(&with(&["--rate-iops", "0"]), "--rate-iops");
    common::assert_one_line_error(&with(&["--rate-iops", "lots"]), "--rate-iops");
    common::assert_one_line_error(&with(&["--rate", "0"]), "--rate");
    common::assert_one_line_error(
        &with(&["--rate-iops", "100", "--rate-process", "bursty"]),
        "--rate-process",
    );
    common::assert_one_line_error(&with(&["--rate-sweep", "10k,abc"]), "--rate-sweep");
    // (--output-format of open-loop runs: tests/fio_output.rs.)
}

#[test]
fn a_job_file_with_thinktime_gives_the_same_bytes_as_the_flags() {
    let job = dir().join("think.fio");
    std::fs::write(
        &job,
        "[think]\nrw=randrw\nrwmixread=70\nbs=4k\nnumjobs=2\niodepth=1\n\
         thinktime=200\nthinktime_blocks=2\ntime_based\nruntime=1s\n",
    )
    .unwrap();
    let a = out("think-job.json");
    let (code, _, err) = vsl(&[
        "run",
        job.to_str().unwrap(),
        "--scale",
        "0.01",
        "--interval",
        "100ms",
        "-q",
        "--json",
        &a,
    ]);
    assert_eq!(code, 0, "{err}");
    let b = run_json(
        &[
            "--threads",
            "2",
            "--qd",
            "1",
            "--thinktime",
            "200us",
            "--thinktime-blocks",
            "2",
        ],
        "think-flags.json",
    );
    let ja = std::fs::read_to_string(&a).unwrap();
    let jb = std::fs::read_to_string(out("think-flags.json")).unwrap();
    assert!(ja == jb, "job file and flags differ");
    // 2 threads at QD 1, each pausing 200 us after every 2 I/Os: per
    // thread 2 I/Os take 2 service times + 200 us; the service time is what
    // the same run without thinking gives.
    let ios = b["summary"]["ios"].as_u64().unwrap() as f64;
    let free = run_json(&["--threads", "2", "--qd", "1"], "think-free.json");
    let free_ios = free["summary"]["ios"].as_u64().unwrap() as f64;
    let service_s = 2.0 / free_ios;
    let expect = 2.0 * 2.0 / (2.0 * service_s + 200e-6);
    println!("with thinktime {ios} I/Os (expected {expect:.0}), without {free_ios}");
    assert!((ios - expect).abs() / expect < 0.03, "{ios} vs {expect}");
    common::assert_one_line_error(&with(&["--thinktime", "soon"]), "--thinktime");
    common::assert_one_line_error(&with(&["--thinktime-blocks", "4"]), "--thinktime");
    common::assert_one_line_error(
        &with(&["--thinktime", "10us", "--rate-iops", "100"]),
        "not modelled",
    );
}

const SEED: &str = "7";

/// `vsl run` with 100 ms on / 100 ms off at 20,000 IOPS (one thread), 100 ms
/// intervals over 800 ms: the report's intervals' IOPS, and the report.
fn intervals(tag: &str, extra: &[&str]) -> (Vec<f64>, String) {
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
    ];
    args.extend(extra);
    let text = report_text(args, &format!("bursts-{tag}.json"));
    (interval_iops(&serde_json::from_str(&text).unwrap()), text)
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
    let job = dir().join("bursts.fio");
    std::fs::write(
        &job,
        format!(
            "[b]\nrw=randread\nbs=4k\niodepth=16\nruntime=800ms\nrandseed={SEED}\n\
             rate_iops=20000\nthinktime=100ms\nthinktime_iotime=100ms\nrate_ignore_thinktime=1\n"
        ),
    )
    .unwrap();
    let v = report(
        vec![
            "run",
            job.to_str().unwrap(),
            "--scale",
            "0.01",
            "--interval",
            "100ms",
            "-q",
        ],
        "bursts-job.json",
    );
    let from_job = interval_iops(&v);
    let (from_flags, _) = intervals("jobflags", &["--rate-ignore-thinktime"]);
    assert_eq!(from_job, from_flags);
}

#[test]
fn a_rate_with_a_pause_per_block_is_refused_in_one_line() {
    common::assert_one_line_error(
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
    common::assert_one_line_error(
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

/// A real file in /var/tmp (O_DIRECT needs a disk filesystem) as a target.
fn real_target(tag: &str) -> (std::path::PathBuf, String) {
    let d =
        std::path::PathBuf::from("/var/tmp").join(format!("vsl-rate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let t = format!("file:{}:64M", d.join("data").display());
    (d, t)
}

#[test]
fn a_real_target_runs_open_loop_at_the_offered_rate() {
    let (d, t) = real_target("open");
    let j = d.join("r.json");
    let (code, fio, err) = vsl(&[
        "run",
        "--target",
        &t,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--threads",
        "2",
        "--qd",
        "8",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--rate-iops",
        "1000",
        "--rate-process",
        "poisson",
        "-q",
        "--output-format",
        "json",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let fio: Value = serde_json::from_str(&fio).unwrap();
    std::fs::remove_dir_all(&d).ok();
    assert_eq!(
        r["open_loop"]["offered_iops"], 2000.0,
        "rate_iops is per thread"
    );
    assert_eq!(r["open_loop"]["process"], "poisson");
    assert_eq!(r["open_loop"]["max_outstanding"], 16);
    // Far below what a disk file does: what arrives completes (Poisson
    // counts over 2 s: 4,000 ± 63).
    let ios = r["summary"]["ios"].as_u64().unwrap();
    println!("real target, 2,000 IOPS offered for 2 s: {ios} I/Os");
    assert!(
        (3700..=4300).contains(&ios),
        "{ios} I/Os in 2 s at 2,000 IOPS"
    );
    // fio's counts are the run's; its latency counts from the issue, the
    // run's from the scheduled arrival, never less.
    let x = &fio["jobs"][0]["read"];
    assert_eq!(x["total_ios"].as_u64().unwrap(), ios);
    let clat_us = x["clat_ns"]["mean"].as_f64().unwrap() / 1e3;
    let lat_us = r["summary"]["lat_avg_us"].as_f64().unwrap();
    println!("mean latency from issue {clat_us:.1} us, from arrival {lat_us:.1} us");
    assert!(
        clat_us > 0.0 && clat_us <= lat_us + 0.01,
        "{clat_us} > {lat_us}"
    );
    let depth = fio["jobs"][0]["iodepth_level"].as_object().unwrap();
    let sum: f64 = depth.values().map(|x| x.as_f64().unwrap()).sum();
    assert!((sum - 100.0).abs() < 0.01, "{depth:?}");
}

#[test]
fn a_rate_sweep_runs_on_a_real_target() {
    let (d, t) = real_target("sweep");
    let j = d.join("s.json");
    let (code, table, err) = vsl(&[
        "run",
        "--target",
        &t,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--threads",
        "1",
        "--qd",
        "4",
        "--duration",
        "1s",
        "--interval",
        "500ms",
        "--rate-sweep",
        "500,1000",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    std::fs::remove_dir_all(&d).ok();
    assert!(table.contains("ach/off"), "{table}");
    let p = v["points"].as_array().unwrap();
    assert_eq!(p.len(), 2);
    for (pt, offered) in p.iter().zip([500.0, 1000.0]) {
        let achieved = pt["achieved_iops"].as_f64().unwrap();
        println!("real target: offered {offered}, achieved {achieved:.0}");
        assert!(
            (achieved - offered).abs() / offered < 0.1,
            "{achieved} of {offered}"
        );
    }
    common::assert_one_line_error(
        &[
            "run",
            "--target",
            &t,
            "--duration",
            "1s",
            "--thinktime",
            "1ms",
        ],
        "thinktime",
    );
}
