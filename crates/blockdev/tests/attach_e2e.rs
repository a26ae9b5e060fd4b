//! Issue 4, end to end as a new user would: attach a scaled card, mkfs.ext4,
//! mount, fio with crc32c verification on random writes (enough to make GC
//! move data), unmount, detach, attach again, verify again. Also the bad
//! inputs: a second attach of the same store, another geometry, detaching a
//! mounted device, not being root.

mod common;
use common::{sh, skip, Rig};

/// fio on files of `dir`: global options first, then the job(s) in `jobs`.
fn fio(dir: &str, jobs: &str) -> String {
    sh(&format!(
        "fio --directory={dir} --bs=4k --direct=1 --ioengine=libaio --iodepth=16 \
         --verify=crc32c --verify_fatal=1 --randseed=7 --verify_state_save=0 \
         --output-format=terse {jobs}"
    ))
}

const FILL: &str = "--name=fill --filename=fill --size=300m --rw=write";
const RAND: &str = "--name=rand --filename=rand --size=450m --rw=randwrite";

/// fio's terse lines (one per job): field 5 is the error count.
fn assert_fio_ok(out: &str, jobs: usize) {
    let lines: Vec<_> = out.lines().filter(|l| l.starts_with("3;")).collect();
    assert_eq!(lines.len(), jobs, "fio terse lines: {out}");
    for line in lines {
        let err = line.split(';').nth(4).unwrap();
        assert_eq!(err, "0", "fio reported errors: {out}");
    }
}

#[test]
fn issue4_ext4_fio_verify_survives_detach_and_reattach() {
    if skip(
        "issue4_ext4_fio_verify_survives_detach_and_reattach",
        &["fio", "mkfs.ext4", "losetup", "mount"],
    ) {
        return;
    }
    // Over FUSE over io_uring, then over /dev/fuse reads (issue 13).
    for mode in common::transports("issue4_ext4_fio_verify_survives_detach_and_reattach") {
        eprintln!("ext4 end to end, --fuse-uring {mode}");
        ext4_fio_verify(mode);
    }
}

fn ext4_fio_verify(mode: &str) {
    let rig = Rig::new(&format!("e2e-{mode}"));
    let devs = rig.attach(&[common::TINY_CARD, &["--fuse-uring", mode]].concat());
    rig.assert_transport(mode);
    let dev = &devs[0];
    let mnt = rig.mnt.to_str().unwrap();
    sh(&format!("mkfs.ext4 -q -F {dev}"));
    sh(&format!("mount {dev} {mnt}"));

    // Mounted: detach must refuse, with one clear line.
    let out = rig.vsl(&["detach", dev]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is mounted on"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    // ~1.2 GB of writes on a card with ~1 GB of NAND: GC must run. The
    // first pass writes both files at once, so their blocks share erase
    // units; rewriting `rand` then leaves units half valid, and GC has to
    // move `fill`'s blocks, which the verification after re-attach reads.
    assert_fio_ok(&fio(mnt, &format!("{FILL} {RAND}")), 2);
    assert_fio_ok(&fio(mnt, RAND), 1);
    let st = rig.status_json();
    let m = &st[0]["members"][0];
    assert!(
        m["gc_sectors_moved"].as_u64().unwrap() > 0,
        "GC never moved data, the test proves less than it should: {m}"
    );
    assert_eq!(m["errors"].as_u64().unwrap(), 0);

    sh(&format!("umount {mnt}"));
    rig.detach_all();

    let devs = rig.attach(&["--fuse-uring", mode]);
    rig.assert_transport(mode);
    let dev = &devs[0];
    sh(&format!("mount {dev} {mnt}"));
    assert_fio_ok(&fio(mnt, &format!("{FILL} --verify_only")), 1);
    assert_fio_ok(&fio(mnt, &format!("{RAND} --verify_only")), 1);
    sh(&format!("umount {mnt}"));
    rig.detach_all();
}

#[test]
fn issue4_bad_input_is_one_clear_line() {
    if skip(
        "issue4_bad_input_is_one_clear_line",
        &["losetup", "setpriv"],
    ) {
        return;
    }
    let rig = Rig::new("bad");
    let store = rig.store.to_str().unwrap();
    rig.attach(common::TINY_CARD);
    let one_line_error = |args: &[&str], want: &str| {
        let out = rig.vsl(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    };
    one_line_error(&["attach", "--store", store], "already attached");
    rig.detach_all();
    let mut other = vec!["attach", "--store", store];
    other.extend_from_slice(&[
        "--device",
        "iodrive-duo-320-slc",
        "--member",
        "0",
        "--scale",
        "0.01",
    ]);
    one_line_error(&other, "holds a different card");
    one_line_error(
        &["detach", "/dev/loop999"],
        "not an attached openvsl device",
    );
    one_line_error(
        &[
            "attach",
            "--store",
            store,
            "--scale",
            "1",
            "--device",
            "iodrive-duo-1280-mlc",
            "--member",
            "0",
        ],
        "holds a different card",
    );
    // A store whose filesystem is far too small for the card's NAND.
    let small = rig.root.join("small");
    std::fs::create_dir_all(&small).unwrap();
    sh(&format!(
        "mount -t tmpfs -o size=64m tmpfs {}",
        small.display()
    ));
    let small_store = small.join("store");
    let out = rig.vsl(&[
        "attach",
        "--store",
        small_store.to_str().unwrap(),
        "--member",
        "0",
        "--scale",
        "0.01",
    ]);
    sh(&format!("umount {}", small.display()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("too small"), "{err}");
    // Not root.
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            common::BIN,
        ])
        .args(["attach", "--store", "/tmp/openvsl-nobody"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("needs root"), "{err}");
}

/// True once sysfs names no backing file for loop device `dev`, waiting up
/// to 10 s: the loop driver releases a device asynchronously, when its
/// last opener closes it.
/// True once `dev` no longer serves a file under `root` (this test's rig):
/// unbound, or already taken by another test running beside this one for
/// a file of its own (`losetup -f` hands out the lowest free device).
fn loop_free(dev: &str, root: &std::path::Path) -> bool {
    let name = dev.trim_start_matches("/dev/");
    let bound = std::path::PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
    for _ in 0..1000 {
        match std::fs::read_to_string(&bound) {
            Err(_) => return true,
            Ok(file) if !file.trim().starts_with(&*root.to_string_lossy()) => return true,
            Ok(_) => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// True while `pid` exists and is not a zombie (the daemon's parent, init
/// here, may reap it late).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next());
    state.is_some_and(|s| s != "Z" && s != "X")
}

/// Waits up to 5 s for `pid` to end.
fn wait_gone(pid: u32) {
    for _ in 0..500 {
        if !running(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn mounted_openvsl(run_dir: &std::path::Path) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("openvsl:") && l.contains(run_dir.to_str().unwrap()))
}

#[test]
fn issue4_detach_finds_an_attachment_whose_state_file_was_deleted() {
    if skip(
        "issue4_detach_finds_an_attachment_whose_state_file_was_deleted",
        &["losetup"],
    ) {
        return;
    }
    let rig = Rig::new("orphan");
    let forget_state = || {
        for e in std::fs::read_dir(&rig.run_dir).unwrap() {
            let d = e.unwrap().path();
            std::fs::remove_file(d.join("state.json")).unwrap();
            let _ = std::fs::remove_file(d.join("control.sock"));
        }
    };

    // The daemon still runs: detach signals it and it shuts down as usual.
    let devs = rig.attach(&[common::TINY_CARD, &["--timing", "none"]].concat());
    let pid = rig.daemon_pid();
    forget_state();
    let out = rig.vsl(&["attach", "--list"]);
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(list.contains("orphaned attachment"), "{list}");
    assert!(list.contains(&devs[0]), "{list}");
    let out = rig.vsl(&["status"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lost its state file"), "{err}");
    let out = rig.vsl(&["detach", &devs[0]]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("orphaned attachment"), "{said}");
    assert!(!running(pid), "daemon {pid} still runs");
    assert!(loop_free(&devs[0], &rig.root), "{} still bound", devs[0]);
    assert!(!mounted_openvsl(&rig.run_dir), "FUSE mount left behind");

    // The daemon was killed too: detach frees the loop device and the mount.
    let devs = rig.attach(&[]);
    let pid = rig.daemon_pid();
    sh(&format!("kill -9 {pid}"));
    wait_gone(pid);
    forget_state();
    let out = rig.vsl(&["detach", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(loop_free(&devs[0], &rig.root), "{} still bound", devs[0]);
    assert!(!mounted_openvsl(&rig.run_dir), "FUSE mount left behind");
    // The store attaches again.
    rig.attach(&[]);
    rig.detach_all();
}

#[test]
fn issue4_store_lost_under_the_daemon_is_reported_and_cleaned_up() {
    if skip(
        "issue4_store_lost_under_the_daemon_is_reported_and_cleaned_up",
        &["losetup", "dd"],
    ) {
        return;
    }
    let rig = Rig::new("sigbus");
    let devs = rig.attach(&[common::TINY_CARD, &["--timing", "none"]].concat());
    let dev = &devs[0];
    sh(&format!(
        "dd if=/dev/urandom of={dev} bs=1M count=8 oflag=direct status=none"
    ));
    let pid = rig.daemon_pid();
    let run = std::fs::read_dir(&rig.run_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The store's data file cut short behind the daemon's back: as a media
    // error would, reading it through the mapping raises SIGBUS.
    sh(&format!(
        "truncate -s 0 {}",
        rig.store.join("member0.data").display()
    ));
    let out = std::process::Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=1M",
            "count=8",
            "iflag=direct",
            "status=none",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the read succeeded");
    wait_gone(pid);
    assert!(!running(pid), "daemon {pid} still runs");
    let log = std::fs::read_to_string(run.join("daemon.log")).unwrap();
    assert!(
        log.contains("SIGBUS reading the store"),
        "daemon.log: {log}"
    );

    let out = rig.vsl(&["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is gone (crashed?)"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let out = rig.vsl(&["detach", "--all"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("had died"), "{said}");
    assert!(loop_free(dev, &rig.root), "{dev} still bound");
    assert!(!mounted_openvsl(&rig.run_dir), "FUSE mount left behind");
    // The damaged store is refused, not silently refilled with zeros.
    let out = rig.vsl(&["attach", "--store", rig.store.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the truncated store attached");
    assert!(
        err.contains("member0.data") && err.contains("damaged"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `--path-trim` (issue 13): while reads flow at the model's timing, the
/// daemon moves the reads' lead from the loop device's own statistics and
/// reports it; with `--path-trim off` the lead stays the probe's.
#[test]
fn issue13_the_reads_lead_is_trimmed_while_reads_flow() {
    if skip(
        "issue13_the_reads_lead_is_trimmed_while_reads_flow",
        &["fio", "losetup"],
    ) {
        return;
    }
    let rig = Rig::new("trim");
    let lead = |trim: &str| {
        let devs = rig.attach(&[common::TINY_CARD, &["--path-trim", trim]].concat());
        let dev = &devs[0];
        sh(&format!(
            "fio --name=w --filename={dev} --rw=write --bs=1m --size=64m --direct=1 \
             --ioengine=libaio --iodepth=8 --output-format=terse"
        ));
        // Reads at 4 jobs x QD 4 for 3 s: 30 windows of the trimmer.
        let out = sh(&format!(
            "fio --name=r --filename={dev} --rw=randread --bs=16k --size=64m --direct=1 \
             --ioengine=libaio --iodepth=4 --numjobs=4 --group_reporting --time_based \
             --runtime=3 --output-format=terse"
        ));
        assert_fio_ok(&out, 1);
        let st = rig.status_json();
        let m = st[0]["members"][0].clone();
        rig.detach_all();
        assert!(m["reads"].as_u64().unwrap() > 1000, "{m}");
        m["lead_trim_read_us"]
            .as_f64()
            .expect("lead_trim_read_us in status")
    };
    let on = lead("on");
    assert!(
        on != 0.0,
        "reads flowed for 3 s and the lead was never trimmed"
    );
    assert!(on.abs() <= 1000.0, "extra lead {on} µs beyond its bound");
    assert_eq!(lead("off"), 0.0, "--path-trim off trimmed the lead");
}

/// Issue 13: while attached with model timing, the card's loop devices
/// complete requests on the submitting CPU (`rq_affinity` 2); with
/// `--timing none` they have the kernel's default (1), even when a killed
/// daemon left them at 2; detach puts the default back for the loop
/// device's next user.
#[test]
fn issue13_loop_devices_complete_on_the_submitting_cpu_while_attached() {
    if skip(
        "issue13_loop_devices_complete_on_the_submitting_cpu_while_attached",
        &["losetup"],
    ) {
        return;
    }
    let path = |dev: &str| {
        format!(
            "/sys/block/{}/queue/rq_affinity",
            dev.trim_start_matches("/dev/")
        )
    };
    let read = |dev: &str| {
        std::fs::read_to_string(path(dev))
            .unwrap()
            .trim()
            .to_string()
    };
    for (timing, want) in [("model", "2"), ("none", "1")] {
        // Every free loop device at the other value first (as a daemon
        // killed while attached would leave them at 2), so the check
        // fails unless the attach writes its own.
        free_loops_rq_affinity(if want == "2" { "1" } else { "2" });
        let rig = Rig::new(&format!("rqaff-{timing}"));
        let mut args = common::TINY_CARD.to_vec();
        args.extend(["--timing", timing]);
        let devs = rig.attach(&args);
        for dev in &devs {
            assert_eq!(read(dev), want, "{dev} while attached, timing {timing}");
        }
        rig.detach_all();
        for dev in &devs {
            // Tests run in parallel, and another test's attach (or its
            // daemon's kernel-path probe) may take the freed loop device
            // at once and set its own value: check only a device that is
            // still free before and after the read.
            let name = dev.trim_start_matches("/dev/");
            if loop_is_bound(name) {
                continue;
            }
            let value = read(dev);
            if !loop_is_bound(name) {
                assert_eq!(value, "1", "{dev} after detach, timing {timing}");
            }
        }
    }
    free_loops_rq_affinity("1");
}

/// Whether loop device `name` (e.g. `loop0`) is bound to a file.
fn loop_is_bound(name: &str) -> bool {
    std::path::Path::new(&format!("/sys/block/{name}/loop/backing_file")).exists()
}

/// Writes `value` to the `rq_affinity` of every loop device not bound to
/// a file.
fn free_loops_rq_affinity(value: &str) {
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("loop") && !loop_is_bound(&name) {
            let _ = std::fs::write(e.path().join("queue/rq_affinity"), format!("{value}\n"));
        }
    }
}
