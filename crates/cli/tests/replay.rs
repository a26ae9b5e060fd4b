//! `vsl replay`: every trace format end to end, determinism, several
//! targets, remapping, and bad input (one line, exit 1, never a panic).

mod common;
use common::{assert_one_line_error, vsl, TINY_CARD as CARD};
use std::path::PathBuf;

fn write(name: &str, text: &str) -> String {
    let dir = common::shared_scratch("replay");
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn replay(trace: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["replay", trace];
    args.extend_from_slice(CARD);
    args.extend_from_slice(extra);
    vsl(&args)
}

fn json(trace: &str, extra: &[&str]) -> serde_json::Value {
    let mut e = vec!["--json"];
    e.extend_from_slice(extra);
    let (code, out, err) = replay(trace, &e);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// An iolog v3 of `n` requests, 100 µs apart, 4 KiB at offsets below `span`.
fn iolog(n: u64, span: u64) -> String {
    let mut s = String::from("fio version 3 iolog\n0 /dev/x add\n");
    for i in 0..n {
        let op = if i % 3 == 0 { "write" } else { "read" };
        let off = (i * 7919 * 4096) % span / 4096 * 4096;
        s += &format!("{} /dev/x {op} {off} 4096\n", i * 100);
    }
    s
}

#[test]
fn every_format_replays() {
    let traces = [
        ("iolog-v2", "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf wait 100\nf read 0 4096\nf sync 0 0\nf trim 8192 8192\n", 4),
        ("iolog-v3", "fio version 3 iolog\n0 f add\n5 f write 0 4096\n105 f read 0 4096\n", 2),
        ("blkparse", "  8,0 1 1 0.000000000 9 Q W 0 + 8 [a]\n  8,0 1 2 0.000050000 0 C W 0 + 8 [0]\n  8,0 1 3 0.000100000 9 Q R 0 + 8 [a]\n  8,0 1 4 0.000200000 9 Q FN [a]\n", 3),
        ("msr", "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,usr,0,Read,4096,4096,1331\n128166372003071629,usr,0,Write,0,512,1020\n", 2),
        ("snia-tencent", "Timestamp,Offset,Size,IOType,VolumeID\n1538323200,8,8,0,3\n1538323200,16,8,1,3\n", 2),
        ("snia-fiu", "1000 1 p 8 8 R 6 0 ab\n2000 1 p 16 8 W 6 0 cd\n", 2),
        ("mqsim", "0 0 8 8 1\n1000 0 16 8 0\n", 2),
    ];
    for (format, text, n) in traces {
        let p = write(&format!("{format}.trace"), text);
        let v = json(&p, &[]);
        assert_eq!(v["trace_format"], format, "{format}");
        let run = &v["runs"][0];
        assert_eq!(run["trace"]["records"], n, "{format}: {run}");
        assert_eq!(run["issued"], n, "{format}");
        let ops: u64 = run["by_op"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["ios"].as_u64().unwrap())
            .sum();
        assert_eq!(ops, n, "{format}: every request completes and is counted");
        // Forcing the detected format gives the same result.
        let forced = json(&p, &["--trace-format", format]);
        assert_eq!(forced["runs"], v["runs"], "{format}");
    }
    // The 512-byte MSR write is widened to a 4 KiB sector of the card.
    let v = json(&write("msr.trace", "1,h,0,Write,512,512,1\n"), &[]);
    assert_eq!(v["runs"][0]["trace"]["widened"], 1);
    assert_eq!(v["runs"][0]["summary"]["bytes"], 4096);
}

#[test]
fn same_trace_same_bytes_and_speed() {
    let p = write("det.log", &iolog(5000, 1 << 26));
    let a = replay(&p, &["--json", "--interval", "100ms"]);
    let b = replay(&p, &["--json", "--interval", "100ms"]);
    assert_eq!(a.0, 0, "{}", a.2);
    assert_eq!(a.1, b.1, "same trace and options: identical JSON");
    let v: serde_json::Value = serde_json::from_str(&a.1).unwrap();
    // 5000 arrivals 100 µs apart: 0.4999 s plus the last service time.
    let t = v["runs"][0]["summary"]["virtual_s"].as_f64().unwrap();
    assert!((0.4999..0.51).contains(&t), "{t}");
    assert_eq!(v["runs"][0]["intervals"].as_array().unwrap().len(), 5);
    let fast = json(&p, &["--speed", "2x"]);
    let t2 = fast["runs"][0]["summary"]["virtual_s"].as_f64().unwrap();
    assert!((0.2499..0.26).contains(&t2), "{t2}");
    let afap = json(&p, &["--afap", "--qd", "16"]);
    assert!(afap["runs"][0]["summary"]["virtual_s"].as_f64().unwrap() < 0.2);
}

#[test]
fn several_targets_are_compared() {
    let p = write("cmp.log", &iolog(2000, 1 << 26));
    let (code, out, err) = replay(
        &p,
        &[
            "--target",
            "iodrive-duo-320-slc",
            "--target",
            "iodrive-duo-320-slc:hp",
            "-q",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("comparison"), "{out}");
    assert!(out.matches("iodrive-duo-320-slc").count() >= 3, "{out}");
    let v = json(
        &p,
        &[
            "--target",
            "iodrive-duo-320-slc",
            "--target",
            "iodrive-duo-320-slc:hp",
        ],
    );
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_ne!(
        v["runs"][0]["device"]["format"],
        v["runs"][1]["device"]["format"]
    );
}

#[test]
fn remap_beyond_the_card() {
    // Offsets up to 1 TiB on a card of a few hundred MB.
    let p = write("big.log", &iolog(1000, 1 << 40));
    assert_one_line_error(
        &[
            "replay", &p, CARD[0], CARD[1], CARD[2], CARD[3], CARD[4], CARD[5],
        ],
        "use --remap wrap or --remap scale",
    );
    let (code, _, err) = replay(&p, &["-q"]);
    assert_eq!(code, 1);
    assert!(err.contains("line "), "{err}");
    for remap in ["wrap", "scale"] {
        let v = json(&p, &["--remap", remap]);
        let run = &v["runs"][0];
        assert_eq!(run["issued"], 1000, "{remap}");
        assert!(
            run["trace"]["remapped"].as_u64().unwrap() > 900,
            "{remap}: {run}"
        );
    }
    // stdin cannot be scanned twice.
    assert_one_line_error(
        &[
            "replay", "-", "--remap", "scale", CARD[0], CARD[1], CARD[2], CARD[3], CARD[4], CARD[5],
        ],
        "--trace-span",
    );
}

#[test]
fn bad_input_is_one_line() {
    let card = |v: &mut Vec<&str>| v.extend_from_slice(CARD);
    let trunc = write(
        "trunc.log",
        "fio version 3 iolog\n0 f add\n5 f write 0 4096\n10 f read 40",
    );
    let garbage = write("garbage.txt", "hello world\nthis is not a trace\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["replay", &trunc],
            "line 4: 'read' needs an offset and a length",
        ),
        (vec!["replay", &garbage], "use --trace-format"),
        (
            vec!["replay", &garbage, "--trace-format", "qqq"],
            "unknown trace format 'qqq'",
        ),
        (
            vec!["replay", &garbage, "--trace-format", "mqsim"],
            "line 1:",
        ),
        (vec!["replay", "/nonexistent/trace.log"], "cannot open"),
        (vec!["replay", &trunc, "--remap", "fold"], "--remap: 'fold'"),
        (vec!["replay", &trunc, "--speed", "fast"], "--speed: 'fast'"),
        (vec!["replay", &trunc, "--qd", "0"], "queue depth"),
        (
            vec!["replay", &trunc, "--target", "no-such-card"],
            "unknown target",
        ),
    ];
    for (mut args, needle) in cases {
        card(&mut args);
        assert_one_line_error(&args, needle);
    }
}
