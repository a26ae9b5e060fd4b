//! Issue 30: open-loop load. `--rate-iops`/`rate_iops` arrivals on a
//! modelled card: below saturation the card does what is offered, above it
//! latency grows; a job file and the equivalent flags give byte-identical
//! JSON; `--rate-sweep` writes its table, JSON, CSV and chart.

mod common;
use common::vsl;
use serde_json::Value;

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vsl-rate-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
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

fn run_json(extra: &[&str], name: &str) -> Value {
    let j = out(name);
    let mut args = BASE.to_vec();
    args.extend(extra);
    args.extend(["--json", j.as_str()]);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap()
}

fn closed_loop_iops() -> f64 {
    let v = run_json(&["--threads", "4", "--qd", "16"], "closed.json");
    v["summary"]["iops"].as_f64().unwrap()
}

#[test]
fn below_saturation_the_card_does_what_is_offered_above_it_latency_grows() {
    let max = closed_loop_iops();
    println!("closed loop 4x16: {max:.0} IOPS");
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
    let with = |extra: &[&'static str]| {
        let mut v = BASE.to_vec();
        v.extend(extra);
        v
    };
    common::assert_one_line_error(&with(&["--rate-iops", "0"]), "--rate-iops");
    common::assert_one_line_error(&with(&["--rate-iops", "lots"]), "--rate-iops");
    common::assert_one_line_error(&with(&["--rate", "0"]), "--rate");
    common::assert_one_line_error(
        &with(&["--rate-iops", "100", "--rate-process", "bursty"]),
        "--rate-process",
    );
    common::assert_one_line_error(&with(&["--rate-sweep", "10k,abc"]), "--rate-sweep");
    // (--output-format of open-loop runs: tests/fio_output_openloop.rs.)
    let f = out("real.img");
    let t = format!("file:{f}:16M");
    let mut v: Vec<&str> = with(&["--rate-iops", "100", "--target"]);
    v.push(&t);
    common::assert_one_line_error(&v, "modelled card");
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
    let with = |extra: &[&'static str]| {
        let mut v = BASE.to_vec();
        v.extend(extra);
        v
    };
    common::assert_one_line_error(&with(&["--thinktime", "soon"]), "--thinktime");
    common::assert_one_line_error(&with(&["--thinktime-blocks", "4"]), "--thinktime");
    common::assert_one_line_error(
        &with(&["--thinktime", "10us", "--rate-iops", "100"]),
        "not modelled",
    );
}
