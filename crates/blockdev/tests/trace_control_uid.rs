//! Issue 30: `vsl trace start|stop` go over the attached card's control
//! socket (owner-only 0600, and the daemon checks the peer's uid with
//! SO_PEERCRED). Another user (uid 65534, through `setpriv` or `runuser`)
//! can neither stop nor start a capture: through `vsl trace` it gets one
//! error line and a non-zero exit; writing forged `trace-stop` and
//! `trace-start` requests straight into the socket — with the socket's
//! file permissions opened up, so that only the daemon's peer check stands
//! in the way — it gets one `error permission denied` line. The capture's
//! state is unchanged every time.

mod common;
use common::{loud, skip, Rig, BIN, TINY_CARD};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: u32 = 65534;
/// The system's Python (a pyenv shim under /root is not uid 65534's).
const PYTHON: &str = "/usr/bin/python3";

/// A command that runs `program` as uid/gid 65534 with no groups.
fn as_nobody(program: &str) -> Option<Command> {
    if common::missing_prerequisite(&["setpriv"]).is_none() {
        let mut c = Command::new("setpriv");
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            program,
        ]);
        return Some(c);
    }
    if common::missing_prerequisite(&["runuser"]).is_none()
        && Command::new("id")
            .arg("nobody")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--", program]);
        return Some(c);
    }
    None
}

fn trace_state(rig: &Rig) -> serde_json::Value {
    let out = rig.vsl(&["trace", "status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // What a refused request must not change (records move with udev's
    // probes of the loop device).
    serde_json::json!({"state": v["state"], "dir": v["dir"], "files": v["files"]})
}

fn one_line_refusal(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{what} succeeded as uid {NOBODY}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: not one line: {err}");
    err
}

/// Sends `request` to the socket at `sock` as uid 65534; the reply line.
fn forged(sock: &Path, request: &str) -> String {
    let script = "import socket,sys\n\
        s=socket.socket(socket.AF_UNIX)\n\
        s.connect(sys.argv[1])\n\
        s.sendall(sys.argv[2].encode()+b'\\n')\n\
        s.shutdown(socket.SHUT_WR)\n\
        sys.stdout.write(s.makefile().read())\n";
    let out = as_nobody(PYTHON)
        .unwrap()
        .args(["-c", script])
        .arg(sock)
        .arg(request)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the forger could not connect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Opens `path` to everyone (mode | bits) and returns its old mode.
fn open_up(path: &Path, bits: u32) -> u32 {
    let old = std::fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(old | bits)).unwrap();
    old
}

#[test]
fn issue30_another_user_cannot_start_or_stop_a_trace() {
    let name = "issue30_another_user_cannot_start_or_stop_a_trace";
    if skip(name, &["losetup"]) {
        return;
    }
    if !Path::new(PYTHON).exists() {
        let why = format!("{PYTHON} is absent (the forger of socket requests)");
        loud(&format!("\n!!!!! SKIPPED {name}: {why} !!!!!\n"));
        println!("SKIPPED {name}: {why}");
        return;
    }
    if as_nobody(BIN).is_none() {
        let why = "neither setpriv nor runuser (with a user nobody) to run as another uid";
        loud(&format!("\n!!!!! SKIPPED {name}: {why} !!!!!\n"));
        println!("SKIPPED {name}: {why}");
        return;
    }
    let rig = Rig::new("traceuid");
    let dir = rig.root.join("trace");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    rig.attach(&[TINY_CARD, &["--trace", d]].concat());
    let capturing = trace_state(&rig);
    assert_eq!(capturing["state"], "capturing", "{capturing}");

    // Through the CLI, as uid 65534 (the run directory's state files name
    // the socket; the directory and the socket are root's).
    let nobody_vsl = |args: &[&str]| {
        as_nobody(BIN)
            .unwrap()
            .args(args)
            .env("OPENVSL_RUN_DIR", &rig.run_dir)
            .env("OPENVSL_STATE_DIR", rig.state_dir())
            .output()
            .unwrap()
    };
    let e = one_line_refusal(&nobody_vsl(&["trace", "stop"]), "trace stop");
    println!("vsl trace stop as uid {NOBODY}: {}", e.trim());
    assert!(e.contains("permission denied"), "{e}");
    assert_eq!(
        trace_state(&rig),
        capturing,
        "a refused stop changed nothing"
    );
    let other = rig.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    open_up(&other, 0o777);
    let e = one_line_refusal(
        &nobody_vsl(&["trace", "start", other.to_str().unwrap()]),
        "trace start",
    );
    println!("vsl trace start as uid {NOBODY}: {}", e.trim());
    assert!(e.contains("permission denied"), "{e}");
    assert_eq!(trace_state(&rig), capturing);

    // Forged requests with the file permissions out of the way: only the
    // daemon's SO_PEERCRED check refuses them.
    let att = std::fs::read_dir(&rig.run_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().join("state.json").exists())
        .expect("an attachment's state file")
        .path();
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(att.join("state.json")).unwrap()).unwrap();
    let sock = PathBuf::from(st["socket"].as_str().unwrap());
    let mut opened: Vec<(PathBuf, u32)> = Vec::new();
    for p in sock.ancestors().skip(1) {
        if p.starts_with(&rig.root) || p == rig.root {
            opened.push((p.to_path_buf(), open_up(p, 0o005)));
        }
    }
    opened.push((sock.clone(), open_up(&sock, 0o666)));
    let refused = |reply: &str, what: &str| {
        assert_eq!(reply.trim().lines().count(), 1, "{what}: {reply}");
        assert!(
            reply.starts_with(&format!("error permission denied: uid {NOBODY}")),
            "{what}: {reply}"
        );
        println!("forged {what} as uid {NOBODY}: {}", reply.trim());
    };
    refused(&forged(&sock, "trace-stop"), "trace-stop");
    assert_eq!(
        trace_state(&rig),
        capturing,
        "a forged stop changed nothing"
    );

    // Stopped by root, a forged start does not start it.
    let out = rig.vsl(&["trace", "stop"]);
    assert!(out.status.success());
    let stopped = trace_state(&rig);
    assert_eq!(stopped["state"], "off", "{stopped}");
    let start = format!(
        "trace-start {{\"dir\":{:?},\"rotate_bytes\":268435456,\"format\":\"both\"}}",
        other.to_str().unwrap()
    );
    refused(&forged(&sock, &start), "trace-start");
    assert_eq!(trace_state(&rig), stopped, "a forged start changed nothing");
    assert_eq!(
        std::fs::read_dir(&other).unwrap().count(),
        0,
        "no trace file was created for the forger"
    );
    for (p, mode) in opened.iter().rev() {
        let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(*mode));
    }
}
