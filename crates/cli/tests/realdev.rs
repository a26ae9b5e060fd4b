//! Issue 33: `vsl run` on a real target lays a new file out before reading
//! it, reports what reached the device (`disk_util`, `measured_on_device`)
//! and refuses bad targets in one line, leaving no file behind.

mod common;
use common::vsl;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    common::shared_scratch("realdev").join(name)
}

fn read_run(target: &str, json: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec![
        "run",
        "--target",
        target,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--threads",
        "1",
        "--qd",
        "4",
        "--duration",
        "300ms",
        "--interval",
        "300ms",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ];
    args.extend(extra);
    let (code, _, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let v = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (v, err)
}

/// A new file read without layout used to be all unwritten extents: the
/// kernel answered with zeros and the device saw nothing. Now it is laid
/// out first, and the device counters are in the JSON.
#[test]
fn issue_33_new_file_is_laid_out_and_device_counters_are_in_json() {
    let path = tmp("new");
    let _ = std::fs::remove_file(&path);
    let target = format!("file:{}:16M", path.display());
    let (v, err) = read_run(&target, &tmp("laid.json"), &[]);
    assert!(err.contains("laid out"), "{err}");
    assert_eq!(v["layout"]["laid_out_bytes"], 16 << 20, "{}", v["layout"]);
    let reads = v["summary"]["reads"].as_u64().unwrap();
    assert!(reads > 0);
    let verdict = &v["measured_on_device"];
    let disks = v["disk_util"].as_array().unwrap();
    match disks.iter().find(|d| d["kind"] == "disk") {
        Some(disk) => {
            // O_DIRECT reads of written blocks all reach the disk (others'
            // I/O on a shared disk can only add to its count).
            assert!(disk["read_ios"].as_u64().unwrap() >= reads, "{disk}");
            for f in [
                "name",
                "read_ios",
                "write_ios",
                "read_merges",
                "write_merges",
                "read_ticks",
                "write_ticks",
                "in_queue",
                "util",
            ] {
                assert!(!disk[f].is_null(), "{f} missing: {disk}");
            }
            assert_eq!(verdict["measured"], true, "{verdict}");
        }
        None => {
            eprintln!("{} is on no block device here: {verdict}", path.display());
            assert_eq!(verdict["measured"], false, "{verdict}");
        }
    }
    assert!(verdict["words"]
        .as_str()
        .unwrap()
        .contains("measured on the device"));
    std::fs::remove_file(&path).unwrap();

    // --layout skip: nothing written, and the result says so in words.
    let (v, err) = read_run(&target, &tmp("skip.json"), &["--layout", "skip"]);
    assert_eq!(v["layout"]["laid_out_bytes"], 0);
    assert_eq!(v["measured_on_device"]["measured"], false);
    let words = v["measured_on_device"]["words"].as_str().unwrap();
    assert!(words.starts_with("not measured on the device"), "{words}");
    assert!(err.contains("warning: not measured on the device"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

fn mount(fstype: &str, dir: &Path) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    Command::new("mount")
        .args(["-t", fstype, fstype, dir.to_str().unwrap()])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn one_line_error(args: &[&str]) -> String {
    let (code, _, err) = vsl(args);
    assert_eq!(
        (code, err.trim().lines().count()),
        (1, 1),
        "{args:?}: {err}"
    );
    err
}

/// ramfs has no O_DIRECT: one line, exit 1, no file left; with --direct 0
/// the user asked for buffered I/O, and the result is not measured on a
/// device (there is none).
#[test]
fn issue_33_filesystem_without_o_direct_is_refused() {
    let mnt = tmp("ramfs");
    if !mount("ramfs", &mnt) {
        eprintln!("SKIPPED issue_33_filesystem_without_o_direct_is_refused: cannot mount ramfs (not root?)");
        return;
    }
    let file = mnt.join("t");
    let target = format!("file:{}:1M", file.display());
    let err = one_line_error(&["run", "--target", &target, "--duration", "100ms", "-q"]);
    let exists = file.exists();
    let (v, _) = read_run(&target, &tmp("ramfs.json"), &["--direct", "0"]);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(err.contains("O_DIRECT is not supported"), "{err}");
    assert!(!exists, "a partial file was left behind");
    assert_eq!(v["device"]["direct"], false);
    assert_eq!(v["measured_on_device"]["measured"], false);
}

/// A mounted device and a size beyond the free space: one line each, no
/// file left.
#[test]
fn issue_33_mounted_device_and_too_large_file_are_refused() {
    let big = tmp("big");
    let target = format!("file:{}:1000T", big.display());
    let err = one_line_error(&["run", "--target", &target, "--duration", "100ms", "-q"]);
    assert!(err.contains("filesystem is full"), "{err}");
    assert!(!big.exists());
    // The device of the root filesystem, if it is a plain block device.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let dev = mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (dev, at) = (f.next()?, f.next()?);
        (at == "/" && dev.starts_with("/dev/")).then(|| dev.to_string())
    });
    let Some(dev) = dev.filter(|d| Path::new(d).exists()) else {
        eprintln!("SKIPPED mounted-device part: / is not on a /dev block device here");
        return;
    };
    let err = one_line_error(&[
        "run",
        "--target",
        &format!("blockdev:{dev}"),
        "--rw",
        "randread",
        "--duration",
        "100ms",
        "-q",
    ]);
    assert!(err.contains("device is mounted at /"), "{err}");
}

/// Issue 33: the I/O buffers' memory is a choice (`--mem`, fio's `mem=`),
/// said in the JSON; huge pages back each buffer with one 2 MiB page (or
/// the run says they could not), and a bad value is one line.
#[test]
fn issue_33_io_memory_is_chosen_and_reported() {
    let path = tmp("mem");
    let target = format!("file:{}:8M", path.display());
    let (v, _) = read_run(&target, &tmp("mem-pages.json"), &["--bs", "64k"]);
    assert_eq!(v["device"]["io_memory"], "pages", "{}", v["device"]);
    let (v, err) = read_run(
        &target,
        &tmp("mem-huge.json"),
        &["--bs", "64k", "--mem", "huge"],
    );
    let got = v["device"]["io_memory"].as_str().unwrap().to_string();
    assert!(
        ["hugetlb", "thp", "thp_partial"].contains(&got.as_str()),
        "{got}"
    );
    if got == "thp_partial" {
        // Only when the kernel has neither hugetlbfs pages nor THP: said.
        assert!(err.contains("--mem huge"), "{err}");
    }
    let e = one_line_error(&[
        "run",
        "--target",
        &target,
        "--mem",
        "big",
        "--duration",
        "100ms",
    ]);
    assert!(
        e.contains("--mem") && e.contains("expected pages or huge"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}
