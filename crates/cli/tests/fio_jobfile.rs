//! Issue 30: `vsl run JOB.fio`. A job file and the equivalent options give
//! byte-identical JSON; stonewalled jobs run in order on one card; bad
//! job files fail in one line naming the option or the line.

mod common;
use common::vsl;

fn dir() -> std::path::PathBuf {
    common::shared_scratch("fio").to_path_buf()
}

fn write(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn out(name: &str) -> String {
    dir().join(name).to_str().unwrap().to_string()
}

const CARD: &[&str] = &["--scale", "0.02", "--interval", "250ms", "-q"];

#[test]
fn issue_30_job_file_and_options_give_byte_identical_json() {
    // Every modelled option that changes the run, spread over [global],
    // an included file and the job, with ${VAR} from the environment.
    write(
        "shape.inc",
        "bssplit=4k/60:16k/30:64k/10 ; weighted\nrandom_distribution=zipf:1.2\n",
    );
    let job = write(
        "mix.fio",
        "# issue 30\n[global]\nioengine=libaio\ndirect=1\ntime_based\nruntime=1s\n\
         ramp_time=500ms\nrandseed=${VSL_TEST_SEED}\nnorandommap\n\n\
         [mix]\nrw=randrw\nrwmixwrite=30\ninclude shape.inc\nnumjobs=2\niodepth=8\n\
         size=50%\noffset=10%\nbuffer_compress_percentage=40\n",
    );
    let (a, b) = (out("job.json"), out("opts.json"));
    let mut args = vec!["run", job.as_str(), "--json", a.as_str()];
    args.extend(CARD);
    let (code, _, err) = common::vsl_env(&args, &[("VSL_TEST_SEED", "9")]);
    assert_eq!(code, 0, "{err}");
    let mut args = vec![
        "run",
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--bssplit",
        "4k/60:16k/30:64k/10",
        "--random-distribution",
        "zipf:1.2",
        "--threads",
        "2",
        "--qd",
        "8",
        "--duration",
        "1s",
        "--warmup",
        "500ms",
        "--seed",
        "9",
        "--size",
        "50%",
        "--offset",
        "10%",
        "--buffer-compress-percentage",
        "40",
        "--json",
        b.as_str(),
    ];
    args.extend(CARD);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let (ja, jb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(ja == jb, "job file and options differ");
    let v: serde_json::Value = serde_json::from_slice(&ja).unwrap();
    // The run really is the job: 2 threads x QD 8, 70 % reads, a zipf mix.
    assert_eq!(v["options"]["threads"], 2);
    assert_eq!(v["options"]["queue_depth"], 8);
    assert_eq!(v["options"]["seed"], 9);
    assert_eq!(v["workload"]["read_fraction"], 0.7);
    assert_eq!(v["workload"]["distribution"]["zipf"], 1.2);
    assert!(v["summary"]["ios"].as_u64().unwrap() > 1000);
    assert!(v.get("ignored_options").is_none());
}

#[test]
fn issue_30_stonewalled_jobs_run_in_order_on_one_card() {
    let job = write(
        "phases.fio",
        "[global]\nbs=64k\niodepth=4\ntime_based\nruntime=500ms\nsize=25%\n\
         [fill]\nrw=write\n[check]\nstonewall\nrw=randread\nbs=4k\nnumjobs=2\n",
    );
    let j = out("phases.json");
    let mut args = vec!["run", job.as_str(), "--json", j.as_str()];
    args.extend(CARD);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let runs = v.as_array().expect("several jobs: an array of reports");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["job"], "fill");
    assert_eq!(runs[0]["workload"]["pattern"], "sequential");
    assert_eq!(runs[0]["summary"]["reads"], 0);
    assert_eq!(runs[1]["job"], "check");
    assert_eq!(runs[1]["options"]["threads"], 2);
    assert_eq!(runs[1]["summary"]["writes"], 0);
    // The second job starts where the first ended on the same card: its
    // lead-in is zero, and its device is the same.
    assert_eq!(runs[1]["summary"]["precondition_s"], 0.0);
    assert_eq!(runs[0]["device"], runs[1]["device"]);
}

/// Runs `vsl run FILE` on a small card; returns (exit code, stderr).
fn refused(file: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["run", file, "--duration", "200ms"];
    args.extend(CARD);
    args.extend(extra);
    let (code, _, err) = vsl(&args);
    (code, err)
}

fn assert_one_line(err: &str, want: &str) {
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(want), "{want:?} not in {err}");
}

#[test]
fn issue_30_bad_job_files_fail_in_one_line() {
    let cases = [
        (
            "unknown.fio",
            "[j]\nrw=read\nfrobnicate=3\n",
            ":3: unknown fio option 'frobnicate'",
        ),
        (
            "syntax.fio",
            "[j]\nrw=read\n[broken\n",
            ":3: section header '[broken' has no closing ]",
        ),
        (
            "rate.fio",
            "[j]\nrate_iops=fast\n",
            ":2: rate_iops: 'fast' is not a positive whole number of IOPS",
        ),
        (
            "pareto.fio",
            "[j]\nrw=randread\nrandom_distribution=pareto:0.9\n",
            "pareto",
        ),
        ("skip.fio", "[j]\nrw=read:64k\n", "'read:64k'"),
        ("value.fio", "[j]\nbs=huge\n", ":2: bs: invalid size 'huge'"),
        (
            "concurrent.fio",
            "[a]\nrw=read\n[b]\nrw=write\n",
            ":3: job 'b' runs concurrently with 'a'",
        ),
        (
            "toobig.fio",
            "[big]\nrw=randread\nsize=100t\n",
            "job 'big' (",
        ),
    ];
    for (name, text, want) in cases {
        let f = write(name, text);
        let (code, err) = refused(&f, &[]);
        assert_ne!(code, 0, "{name} ran");
        assert_one_line(&err, want);
    }
    let (code, err) = refused(&out("missing.fio"), &[]);
    assert_ne!(code, 0);
    assert_one_line(&err, "missing.fio: cannot read the job file");
}

#[test]
fn issue_30_lenient_ignores_and_lists() {
    let f = write(
        "lenient.fio",
        "[j]\nrw=randwrite\nthinktime_spin=10\nfrobnicate=3\ntime_based\nruntime=300ms\n",
    );
    let j = out("lenient.json");
    let (code, err) = refused(&f, &["--lenient", "--json", &j]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(
        v["ignored_options"],
        serde_json::json!(["thinktime_spin=10", "frobnicate=3"])
    );
    assert_eq!(v["options"]["duration_ns"], 300_000_000);
}

#[test]
fn issue_30_option_listing_is_the_table() {
    let (code, stdout, _) = vsl(&["run", "--list-fio-options"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), workload::jobfile::OPTIONS.len() + 1);
    for o in workload::jobfile::OPTIONS {
        assert!(
            lines.iter().any(|l| l.starts_with(o.name)),
            "{} not listed",
            o.name
        );
    }
    // A job file excludes the workload flags it replaces.
    let f = write("x.fio", "[j]\n");
    let (code, _, err) = vsl(&["run", &f, "--rw", "read"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn issue_30_job_file_runs_on_a_real_file_target() {
    // The write job runs 2 s, not 300 ms: on a loaded machine the first
    // O_DIRECT writes into a new sparse file can take longer than 300 ms
    // (block allocation waits for the journal), and a completion after the
    // runtime is not counted. The job's own runtime= overrides [global]'s.
    let job = write(
        "real.fio",
        "[global]\nfilename=ignored\ntime_based\nruntime=300ms\nbs=4k\n\
         [w]\nrw=randwrite\niodepth=4\nruntime=2s\n[r]\nstonewall\nrw=randread\nnumjobs=2\n",
    );
    let (j, img) = (out("real.json"), out("real.img"));
    let target = format!("file:{img}:16M");
    let (code, _, err) = vsl(&["run", &job, "--target", &target, "-q", "--json", &j]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["workload"]["size"], 16 << 20);
    assert_eq!(
        runs[0]["options"]["duration_ns"], 2_000_000_000u64,
        "{}",
        runs[0]["options"]
    );
    assert!(
        runs[0]["summary"]["writes"].as_u64().unwrap() > 0,
        "{}",
        runs[0]["summary"]
    );
    assert_eq!(runs[1]["summary"]["writes"], 0);
    assert!(runs[1]["summary"]["reads"].as_u64().unwrap() > 0);
    assert_eq!(runs[1]["options"]["threads"], 2);
}
