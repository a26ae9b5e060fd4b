//! Issue 30, trace capture on the attached card: `vsl attach --trace DIR`
//! records what dd (O_DIRECT) and blkdiscard do through the loop device,
//! in fio iolog v3 and blkparse text, rotated; `vsl trace stop` stops and
//! `start` resumes into new files; fio `--read_iolog` replays a captured
//! file; a bad `--trace` is one line and a non-zero exit.

mod common;
use common::{sh, skip, Rig};
use std::path::{Path, PathBuf};

/// The trace files of `dir` with extension `ext`, in order.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Every iolog I/O line of `paths`: (timestamp µs, device, action, offset, length).
fn iolog_ios(paths: &[PathBuf]) -> Vec<(u64, String, String, u64, u64)> {
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("fio version 3 iolog"), "{}", p.display());
        let mut last = 0;
        for l in lines {
            let f: Vec<&str> = l.split(' ').collect();
            let ts: u64 = f[0].parse().unwrap_or_else(|_| panic!("{l}"));
            assert!(ts >= last, "{}: time went back at {l}", p.display());
            last = ts;
            match f.len() {
                3 => assert!(["add", "open", "close"].contains(&f[2]), "{l}"),
                5 => out.push((
                    ts,
                    f[1].to_string(),
                    f[2].to_string(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                )),
                _ => panic!("{}: malformed line {l}", p.display()),
            }
        }
    }
    out
}

/// Every blkparse line of `paths`: (action, rwbs, sector, sectors).
fn blkparse_events(paths: &[PathBuf]) -> Vec<(String, String, u64, u64)> {
    let mut out = Vec::new();
    for p in paths {
        for l in std::fs::read_to_string(p).unwrap().lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(f[0].contains(','), "{l}");
            assert!(f[3].contains('.'), "{l}");
            let (act, rwbs) = (f[5].to_string(), f[6].to_string());
            let (sector, n) = if f.len() >= 10 && f[8] == "+" {
                (f[7].parse().unwrap(), f[9].parse().unwrap())
            } else {
                (0, 0)
            };
            out.push((act, rwbs, sector, n));
        }
    }
    out
}

fn vsl_ok(rig: &Rig, args: &[&str]) -> String {
    let out = rig.vsl(args);
    assert!(
        out.status.success(),
        "vsl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn one_line_failure(rig: &Rig, args: &[&str], want: &str) {
    let out = rig.vsl(args);
    assert!(!out.status.success(), "vsl {args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(want), "{err} (wanted {want:?})");
}

#[test]
fn issue30_trace_capture_records_dd_and_blkdiscard_in_both_formats() {
    let name = "issue30_trace_capture_records_dd_and_blkdiscard_in_both_formats";
    if skip(name, &["fio", "dd", "blkdiscard", "losetup"]) {
        return;
    }
    let rig = Rig::new("trace");
    let dir = rig.root.join("trace");
    std::fs::create_dir_all(&dir).unwrap();
    let store = rig.store.to_str().unwrap();

    // Bad input: one line, non-zero, nothing attached.
    let missing = rig.root.join("missing");
    fn with_trace<'a>(store: &'a str, t: &'a str) -> Vec<&'a str> {
        [
            &["attach", "--store", store, "--trace", t][..],
            common::TINY_CARD,
        ]
        .concat()
    }
    let a = |t| with_trace(store, t);
    one_line_failure(
        &rig,
        &a(missing.to_str().unwrap()),
        "No such file or directory",
    );
    let file = rig.root.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    one_line_failure(&rig, &a(file.to_str().unwrap()), "not a directory");
    let d = dir.to_str().unwrap();
    one_line_failure(
        &rig,
        &[a(d), vec!["--trace-rotate", "10"]].concat(),
        "at least 4096",
    );
    one_line_failure(
        &rig,
        &[a(d), vec!["--trace-format", "csv"]].concat(),
        "expected iolog, blkparse or both",
    );
    assert!(files(&dir, "iolog").is_empty());

    let devs = rig.attach(&[&a(d)[3..], &["--trace-rotate", "16k"]].concat());
    let dev = &devs[0];
    // 600 writes of 4 KiB from block 100, then 3 reads of 8 KiB from
    // block 10 (byte 40960), then a 64 KiB discard at 1 MiB.
    sh(&format!(
        "dd if=/dev/urandom of={dev} bs=4k count=600 seek=100 oflag=direct status=none"
    ));
    sh(&format!(
        "dd if={dev} of=/dev/null bs=8k count=3 skip=5 iflag=direct status=none"
    ));
    sh(&format!("blkdiscard -o 1048576 -l 65536 {dev}"));
    let st: serde_json::Value =
        serde_json::from_str(&vsl_ok(&rig, &["trace", "status", "--json"])).unwrap();
    assert_eq!(st["state"], "capturing", "{st}");
    assert_eq!(st["dropped"], 0, "{st}");
    vsl_ok(&rig, &["trace", "stop"]);
    one_line_failure(&rig, &["trace", "stop"], "not capturing");

    let iologs = files(&dir, "iolog");
    let blks = files(&dir, "blkparse");
    assert!(iologs.len() >= 2, "no rotation at 16k: {iologs:?}");
    assert!(blks.len() >= 2, "no rotation at 16k: {blks:?}");
    for p in iologs.iter().chain(&blks) {
        // A file is closed at the first line past 16 KiB (and the iolog's
        // close lines).
        assert!(
            std::fs::metadata(p).unwrap().len() < 17 << 10,
            "{}",
            p.display()
        );
    }
    let ios = iolog_ios(&iologs);
    assert!(ios.iter().all(|io| &io.1 == dev), "every line names {dev}");
    let writes: Vec<_> = ios.iter().filter(|io| io.2 == "write").collect();
    assert_eq!(writes.len(), 600, "writes captured");
    for (i, w) in writes.iter().enumerate() {
        assert_eq!((w.3, w.4), ((100 + i as u64) * 4096, 4096), "write {i}");
    }
    // dd's reads (udev's probes read too, elsewhere or in other sizes).
    for o in [40960u64, 49152, 57344] {
        let n = ios
            .iter()
            .filter(|io| io.2 == "read" && io.3 == o && io.4 == 8192)
            .count();
        assert!(n >= 1, "dd's 8 KiB read at {o} is missing");
    }
    let trims: Vec<_> = ios.iter().filter(|io| io.2 == "trim").collect();
    assert_eq!(trims.len(), 1, "{trims:?}");
    assert_eq!((trims[0].3, trims[0].4), (1 << 20, 65536));

    let ev = blkparse_events(&blks);
    let q = |rwbs: &str, sector: u64, n: u64| {
        ev.iter()
            .filter(|e| e.0 == "Q" && e.1 == rwbs && e.2 == sector && e.3 == n)
            .count()
    };
    let c = |rwbs: &str, sector: u64, n: u64| {
        ev.iter()
            .filter(|e| e.0 == "C" && e.1 == rwbs && e.2 == sector && e.3 == n)
            .count()
    };
    for i in 0..600u64 {
        assert_eq!(q("W", (100 + i) * 8, 8), 1, "Q of write {i}");
        assert_eq!(c("W", (100 + i) * 8, 8), 1, "C of write {i}");
    }
    assert!(q("R", 80, 16) >= 1);
    assert!(c("R", 112, 16) >= 1);
    assert_eq!(q("D", 2048, 128), 1);
    assert_eq!(c("D", 2048, 128), 1);
    let nq = ev.iter().filter(|e| e.0 == "Q").count();
    assert_eq!(nq, ev.len() - nq, "one Q and one C per request");

    // Stopped: not captured. Resumed: into new files after the old ones.
    sh(&format!(
        "dd if=/dev/urandom of={dev} bs=4k count=1 seek=5000 oflag=direct status=none"
    ));
    vsl_ok(&rig, &["trace", "start", d, "--rotate", "16k"]);
    one_line_failure(&rig, &["trace", "start", d], "already capturing");
    sh(&format!(
        "dd if=/dev/urandom of={dev} bs=4k count=1 seek=6000 oflag=direct status=none"
    ));
    vsl_ok(&rig, &["trace", "stop"]);
    let all = iolog_ios(&files(&dir, "iolog"));
    assert!(
        !all.iter().any(|io| io.3 == 5000 * 4096),
        "captured while stopped"
    );
    let new: Vec<_> = files(&dir, "iolog")
        .into_iter()
        .filter(|p| !iologs.contains(p))
        .collect();
    assert!(!new.is_empty(), "resumed capture wrote no new file");
    let resumed = iolog_ios(&new);
    assert!(
        resumed
            .iter()
            .any(|io| io.2 == "write" && io.3 == 6000 * 4096),
        "the write after start is not in {new:?}"
    );

    // fio replays a captured file against a scratch file.
    let target = rig.root.join("replay.img");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let first = iologs
        .iter()
        .find(|p| {
            iolog_ios(std::slice::from_ref(*p))
                .iter()
                .any(|io| io.2 == "write")
        })
        .unwrap();
    let want = iolog_ios(std::slice::from_ref(first));
    let out = sh(&format!(
        "fio --name=replay --read_iolog={} --replay_redirect={} --ioengine=psync --output-format=json",
        first.display(),
        target.display()
    ));
    let json = &out[out.find('{').expect("fio JSON")..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["error"], 0, "{out}");
    let n = |op: &str| want.iter().filter(|io| io.2 == op).count() as u64;
    assert_eq!(
        job["read"]["total_ios"].as_u64().unwrap(),
        n("read"),
        "{out}"
    );
    assert_eq!(
        job["write"]["total_ios"].as_u64().unwrap(),
        n("write"),
        "{out}"
    );
    assert!(n("write") > 0, "the first file holds writes");

    // The capture shows in `status`, and ends with the detach.
    let st: serde_json::Value =
        serde_json::from_str(&vsl_ok(&rig, &["trace", "status", "--json"])).unwrap();
    assert_eq!(st["state"], "off", "{st}");
    assert_eq!(st["dropped"], 0, "{st}");
    assert!(st["records"].as_u64().unwrap() >= 604, "{st}");
    rig.detach_all();
}
