//! Issue 11 on an attached card: `vsl attach --fail-die`. One failed die:
//! everything written reads back intact (Flashback rebuilds its reads).
//! Two dies of one stripe: reads of the sectors they shared fail with EIO.

mod common;
use common::{sh, skip, Rig, TINY_CARD};
use std::process::Command;
use std::time::Duration;

#[test]
fn attach_fail_die_rebuilds_one_die_and_reports_eio_for_two() {
    if skip(
        "attach_fail_die_rebuilds_one_die_and_reports_eio_for_two",
        &["losetup", "dd", "cmp"],
    ) {
        return;
    }
    let rig = Rig::new("fd");
    let data = rig.root.join("data");
    let back = rig.root.join("back");
    sh(&format!(
        "dd if=/dev/urandom of={} bs=1M count=8 status=none",
        data.display()
    ));
    // Die 3 (bank 0, channel 3) fails 2 s after the attach.
    let mut args = TINY_CARD.to_vec();
    args.extend(["--fail-die", "3@2s"]);
    let devs = rig.attach(&args);
    let dev = &devs[0];
    sh(&format!(
        "dd if={} of={dev} bs=1M oflag=direct status=none",
        data.display()
    ));
    std::thread::sleep(Duration::from_millis(2500));
    sh(&format!(
        "dd if={dev} of={} bs=1M count=8 iflag=direct status=none",
        back.display()
    ));
    sh(&format!("cmp {} {}", data.display(), back.display()));
    rig.detach_all();

    // Re-attached, dies 3 and 7 (both of bank 0) fail together after 1 s:
    // the sectors on them are lost; reads of them fail with EIO.
    let devs = rig.attach(&["--fail-die", "3@1s", "--fail-die", "7@1s"]);
    let dev = &devs[0];
    std::thread::sleep(Duration::from_millis(1500));
    let out = Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=4k",
            "count=2048",
            "iflag=direct",
            "conv=noerror",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Input/output error"), "no EIO: {err}");
    let st = rig.status_json();
    assert!(st[0]["members"][0]["errors"].as_u64().unwrap() > 0, "{st}");
    rig.detach_all();
}
