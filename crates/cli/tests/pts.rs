//! `vsl pts`: bad input (one line, non-zero exit, nothing written),
//! determinism of modelled runs, a real file target with its punch-hole
//! purge, and the purge refusals on a block device (loop device; a loud
//! SKIP where the machine has none).

mod common;

use common::PTS_QUICK;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn vsl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run vsl")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsl-pts-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Exit non-zero with exactly one line on stderr containing `want`, and
/// no output directory.
fn fails_in_one_line(args: &[&str], want: &str, out: &Path) {
    let o = vsl(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(want), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "nothing written to {}", out.display());
}

/// `--test all`, in the order a run reports them.
const ALL_TESTS: [&str; 8] = [
    "iops",
    "throughput",
    "latency",
    "wsat",
    "hir",
    "xsr",
    "dirth",
    "ecw",
];

/// The quick run's options, with few HIR cycles and no progress.
fn quick() -> Vec<&'static str> {
    [PTS_QUICK, &["--hir-cycles", "3", "-q"]].concat()
}

#[test]
fn unknown_test_is_one_line() {
    let out = tmp("nosuch");
    let o = out.to_str().unwrap();
    fails_in_one_line(
        &[
            "pts",
            "--test",
            "nosuch",
            "--target",
            "iodrive-duo-640-mlc:stock",
            "--out",
            o,
        ],
        "--test: unknown test 'nosuch'",
        &out,
    );
}

#[test]
fn block_size_the_device_rejects_is_one_line_before_any_io() {
    let out = tmp("bs");
    let o = out.to_str().unwrap();
    let mut args = vec![
        "pts",
        "--test",
        "iops",
        "--target",
        "iodrive-duo-640-mlc:stock",
        "--block-sizes",
        "4k,512",
        "--out",
        o,
    ];
    args.extend(quick());
    fails_in_one_line(
        &args,
        "block size 512 bytes is not a multiple of the target's 4096-byte sector",
        &out,
    );
    // Other bad values.
    for (flag, value, want) in [
        ("--class", "nosuch", "--class: unknown class 'nosuch'"),
        ("--round-time", "0s", "--round-time"),
        ("--dirth-qd", "1,x", "--dirth-qd: 'x' is not a whole number"),
        ("--scale", "2", "--scale: '2' must be a number in (0, 1]"),
        ("--jobs", "0", "--jobs: must be at least 1"),
    ] {
        fails_in_one_line(
            &[
                "pts",
                "--target",
                "iodrive-duo-640-mlc:stock",
                flag,
                value,
                "--out",
                o,
            ],
            want,
            &out,
        );
    }
    fails_in_one_line(
        &["pts", "--target", "nosuch-card", "--out", o],
        "unknown target 'nosuch-card'",
        &out,
    );
}

fn results_of(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["results"].clone()
}

/// A pool of workers over (target, test) runs every test on a fresh card
/// of its own: one worker or three, the results and every CSV are the
/// same bytes, in the same order (target by target, tests as asked).
#[test]
fn results_do_not_depend_on_the_number_of_jobs() {
    let (a, b) = (tmp("jobs-1"), tmp("jobs-3"));
    for (out, jobs) in [(&a, "1"), (&b, "3")] {
        let mut args = vec![
            "pts",
            "--test",
            "all",
            "--target",
            "iodrive-duo-640-mlc:stock",
            "--target",
            "iodrive-duo-640-mlc:hp",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(quick());
        let o = vsl(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let read = |d: &Path, f: &str| std::fs::read(d.join(f)).unwrap();
    let (ra, rb) = (results_of(&a), results_of(&b));
    assert!(ra == rb, "--jobs 1 and --jobs 3 give other results");
    let order: Vec<(String, String)> = ra
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["target"].as_str().unwrap().into(),
                r["test"].as_str().unwrap().into(),
            )
        })
        .collect();
    let tests = ALL_TESTS;
    let want: Vec<(String, String)> = ["iodrive-duo-640-mlc:stock", "iodrive-duo-640-mlc:hp"]
        .iter()
        .flat_map(|t| tests.iter().map(move |x| (t.to_string(), x.to_string())))
        .collect();
    assert_eq!(order, want, "a sequential run's order");
    for f in ["rounds.csv", "window.csv", "timeline.csv", "steady.csv"] {
        let f = format!("csv-all/{f}");
        assert!(read(&a, &f) == read(&b, &f), "{f} differs");
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn modelled_runs_are_deterministic_and_written_out() {
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    for out in [&a, &b] {
        let mut args = vec![
            "pts",
            "--test",
            "latency,hir",
            "--target",
            "iodrive-duo-640-mlc:stock:512",
            "--target",
            "iodrive-duo-640-mlc:hp",
            "--seed",
            "7",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(quick());
        let o = vsl(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (ra, rb) = (results_of(&a), results_of(&b));
    assert_eq!(ra, rb, "same seed and plan, same results");
    let r = ra.as_array().unwrap();
    assert_eq!(r.len(), 4, "2 tests x 2 targets");
    // The 512-byte format runs the 0.5 KiB latency points, the 4 KiB one leaves them out.
    assert_eq!(r[0]["window"].as_array().unwrap().len(), 9);
    assert_eq!(r[2]["window"].as_array().unwrap().len(), 6);
    for f in [
        "index.html",
        "latency/index.html",
        "hir/index.html",
        "csv-all/rounds.csv",
        "csv-all/window.csv",
        "csv-all/timeline.csv",
        "csv-all/steady.csv",
    ] {
        assert!(a.join(f).exists(), "{f}");
    }
    let page = std::fs::read_to_string(a.join("latency/index.html")).unwrap();
    assert!(page.contains("Measurement window") && page.contains("Test set-up sheet"));
    // --render writes the same pages, charts and CSV again from results.json.
    let files = |d: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v = Vec::new();
        let mut stack = vec![d.to_path_buf()];
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap().path();
                if e.is_dir() {
                    stack.push(e);
                } else {
                    v.push((
                        e.strip_prefix(d).unwrap().into(),
                        std::fs::read(&e).unwrap(),
                    ));
                }
            }
        }
        v.sort();
        v
    };
    let before = files(&a);
    std::fs::remove_dir_all(a.join("latency")).unwrap();
    std::fs::remove_dir_all(a.join("csv-all")).unwrap();
    let o = vsl(&["pts", "--render", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = files(&a);
    assert_eq!(before.len(), after.len());
    for (x, y) in before.iter().zip(&after) {
        assert!(x == y, "{} differs after --render", x.0.display());
    }
    // Not a results.json: one line, non-zero exit.
    std::fs::write(b.join("results.json"), "{}").unwrap();
    let o = vsl(&["pts", "--render", b.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("not a vsl pts results.json"), "{err}");
    let csv = std::fs::read_to_string(a.join("csv-all/window.csv")).unwrap();
    // 9 + 6 latency points, and HIR's preconditioning point per target.
    assert_eq!(csv.lines().count(), 1 + 9 + 6 + 2);
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn progress_off_a_terminal_is_one_stamped_line_per_step() {
    let out = tmp("progress");
    let latency_run = |quiet: bool| {
        let mut args = vec![
            "pts",
            "--test",
            "latency",
            "--target",
            "iodrive-duo-640-mlc:stock",
        ];
        // The quick run's card and rounds, without its HIR cycles and -q.
        args.extend_from_slice(PTS_QUICK);
        args.extend(["--out", out.to_str().unwrap()]);
        if quiet {
            args.push("-q");
        }
        vsl(&args)
    };
    let o = latency_run(false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    // Every line: wall seconds, then the target and its step.
    for l in &lines {
        let (secs, rest) = l.trim_start().split_once(" s  ").expect(l);
        assert!(secs.parse::<f64>().is_ok(), "{l}");
        assert!(rest.starts_with("iodrive-duo-640-mlc:stock: "), "{l}");
    }
    assert!(lines.iter().any(|l| l.ends_with("latency: purge")), "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("latency: round 5, 0/100 4KiB")),
        "{err}"
    );
    let done = lines.last().unwrap();
    assert!(
        done.contains(": latency done: ") && done.contains(" I/Os, "),
        "{done}"
    );
    // -q: nothing on stderr.
    let q = latency_run(true);
    assert!(q.status.success());
    assert!(
        q.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&q.stderr)
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn file_target_is_purged_by_punch_hole() {
    let dir = tmp("file");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("target");
    let out = dir.join("out");
    let spec = format!("file:{}:64M", path.display());
    let o = vsl(&[
        "pts",
        "--test",
        "latency",
        "--target",
        &spec,
        "--round-time",
        "50ms",
        "--max-rounds",
        "5",
        "--wsat-capacity",
        "1",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("O_DIRECT") {
        common::skipped("file_target_is_purged_by_punch_hole", &err);
        return;
    }
    assert!(o.status.success(), "{err}");
    let r = results_of(&out);
    let t = &r[0];
    assert!(t["error"].is_null(), "{t}");
    assert!(
        t["purge"][0].as_str().unwrap().contains("punch-hole"),
        "{t}"
    );
    assert!(t["wipc_bytes"].as_u64().unwrap() >= 2 * 64 * 1024 * 1024);
    assert!(!t["window"].as_array().unwrap().is_empty());
    // The purge itself: every block of a written file deallocated.
    use std::os::unix::fs::MetadataExt;
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    assert!(std::fs::metadata(&path).unwrap().blocks() > 0);
    let what = vsl_cli::pts_real::punch_hole(&path, 1 << 20).unwrap();
    assert!(what.contains("punch-hole"));
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (m.len(), m.blocks()),
        (1 << 20, 0),
        "size kept, blocks freed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A loop device over a fresh file; `None` (after a loud SKIP) when the
/// machine cannot make one.
fn loop_device(dir: &Path, test: &str) -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let why = if !root {
        Some("not root")
    } else if !Path::new("/dev/loop-control").exists() || !have("losetup") {
        Some("no loop devices or losetup")
    } else if !Command::new("mkfs.ext4")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        // (mkfs.ext4 has no --version: -V.)
        Some("no mkfs.ext4")
    } else {
        None
    };
    if let Some(why) = why {
        common::skipped(test, why);
        return None;
    }
    std::fs::create_dir_all(dir).unwrap();
    let img = dir.join("img");
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(96 << 20).unwrap();
    let o = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    if !o.status.success() {
        common::skipped(
            test,
            &format!("losetup failed: {}", String::from_utf8_lossy(&o.stderr)),
        );
        return None;
    }
    Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
fn purge_refuses_a_mounted_device_and_asks_off_a_terminal() {
    let dir = tmp("loop");
    let Some(dev) = loop_device(&dir, "purge_refuses_a_mounted_device") else {
        return;
    };
    let out = dir.join("out");
    let target = format!("blockdev:{dev}");
    let o = out.to_str().unwrap();
    // Not mounted, no -y, stdin not a terminal: refused before any I/O.
    fails_in_one_line(
        &["pts", "--test", "latency", "--target", &target, "--out", o],
        "pass -y to confirm when not on a terminal",
        &out,
    );
    // Mounted: refused even with -y.
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev])
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("mount")
            .arg(&dev)
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        std::fs::write(mnt.join("keep"), b"data that must survive").unwrap();
        fails_in_one_line(
            &[
                "pts", "--test", "latency", "--target", &target, "-y", "--out", o,
            ],
            "is mounted on",
            &out,
        );
        assert_eq!(
            std::fs::read(mnt.join("keep")).unwrap(),
            b"data that must survive"
        );
        let _ = Command::new("umount").arg(&mnt).status();
    } else {
        common::skipped("the mounted case", "mkfs.ext4 or mount failed");
    }
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real block device with 4096-byte logical sectors (a loop device made
/// with `losetup --sector-size 4096`): a 512-byte block size is refused in
/// one line before the purge, and the device's bytes are left as they were.
#[test]
fn real_4k_sector_device_refuses_512_byte_blocks_before_any_io() {
    let test = "real_4k_sector_device_refuses_512_byte_blocks";
    let dir = tmp("loop4k");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if !root || !Path::new("/dev/loop-control").exists() || !have("losetup") {
        common::skipped(test, "not root, or no loop devices or losetup");
        return;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let img = dir.join("img");
    // A recognisable pattern the purge would destroy.
    let pattern: Vec<u8> = (0..(96u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&img, &pattern).unwrap();
    let o = Command::new("losetup")
        .args(["-f", "--show", "--sector-size", "4096"])
        .arg(&img)
        .output()
        .unwrap();
    if !o.status.success() {
        common::skipped(
            test,
            &format!(
                "losetup --sector-size 4096 failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        );
        return;
    }
    let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let sector = std::fs::read_to_string(format!(
        "/sys/class/block/{}/queue/logical_block_size",
        dev.trim_start_matches("/dev/")
    ))
    .unwrap_or_default();
    let out = dir.join("out");
    let target = format!("blockdev:{dev}");
    let result = std::panic::catch_unwind(|| {
        assert_eq!(sector.trim(), "4096", "{dev}: logical block size");
        fails_in_one_line(
            &[
                "pts",
                "--test",
                "iops",
                "--target",
                &target,
                "--block-sizes",
                "4k,512",
                "-y",
                "--out",
                out.to_str().unwrap(),
            ],
            "block size 512 bytes is not a multiple of the target's 4096-byte sector",
            &out,
        );
    });
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    let after = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    assert!(after == pattern, "the device was written to");
}

/// `--test all` end to end on a real file (wall time, short): every test
/// runs without error, each records the purge that ran (punch-hole), and
/// the set-up sheet names the kernel and the tool versions.
#[test]
fn all_tests_on_a_real_file_record_their_purge_and_set_up() {
    let dir = tmp("all");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!("file:{}:64M", dir.join("target").display());
    let out = dir.join("out");
    let o = vsl(&[
        "pts",
        "--test",
        "all",
        "--target",
        &spec,
        "--round-time",
        "20ms",
        "--max-rounds",
        "2",
        "--time-factor",
        "0.00005",
        "--hir-cycles",
        "1",
        "--dirth-threads",
        "1,4",
        "--dirth-qd",
        "1,8",
        "--wsat-capacity",
        "1",
        "--block-sizes",
        "4k,128k",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("O_DIRECT") {
        common::skipped("all_tests_on_a_real_file", &err);
        return;
    }
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let names: Vec<&str> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(names, ALL_TESTS);
    for r in doc["results"].as_array().unwrap() {
        assert!(r["error"].is_null(), "{}: {}", r["test"], r["error"]);
        let purge = r["purge"].as_array().unwrap();
        assert!(
            !purge.is_empty()
                && purge
                    .iter()
                    .all(|p| p.as_str().unwrap().contains("punch-hole")),
            "{}: purge {purge:?}",
            r["test"]
        );
        let page =
            std::fs::read_to_string(out.join(r["test"].as_str().unwrap()).join("index.html"))
                .unwrap();
        assert!(
            page.contains("punch-hole"),
            "{}: purge not on the page",
            r["test"]
        );
    }
    let setup = &doc["setup"];
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(setup["kernel"].as_str().unwrap(), kernel.trim());
    for k in ["fio", "blkdiscard", "os", "cpu", "machine_load", "command"] {
        assert!(
            !setup[k].as_str().unwrap().is_empty(),
            "set-up sheet: {k} empty"
        );
    }
    assert_eq!(setup["targets"][0]["time"], "wall");
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("Test set-up sheet") && index.contains(kernel.trim()));
    let _ = std::fs::remove_dir_all(&dir);
}
