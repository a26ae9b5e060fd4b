//! Shared by the tests that attach a card: the smallest card, and the
//! loud skip when the machine cannot attach (root, FUSE, loop devices) or
//! lacks a tool.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// `vsl pts` options of a quick run: the smallest scale a modelled card
/// is run at, short rounds, few of them.
pub const PTS_QUICK: &[&str] = &[
    "--scale",
    "0.01",
    "--round-time",
    "20ms",
    "--max-rounds",
    "5",
];

/// `vsl attach` options of the smallest card: 24 erase units.
pub const TINY_CARD: &[&str] = &[
    "--device",
    "iodrive-duo-320-slc",
    "--member",
    "0",
    "--scale",
    "0.001",
];

/// Writes straight to the process's standard error, past the test
/// harness's capture (which keeps `eprintln!` of a passing test out of the
/// log), so CI's log shows a skip even when the test passes.
pub fn loud(text: &str) {
    // SAFETY: writes a valid buffer to descriptor 2.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

/// The loud line of a skipped test (or part of one), past the capture.
pub fn skipped(test: &str, why: &str) {
    loud(&format!("\n!!!!! SKIPPED {test}: {why} !!!!!\n"));
}

/// Prints the loud skip line and returns true when `test` cannot run here.
pub fn skip(test: &str, tools: &[&str]) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let why = if !root {
        Some("not running as root".to_string())
    } else if !Path::new("/dev/fuse").exists() || !Path::new("/dev/loop-control").exists() {
        Some("/dev/fuse or /dev/loop-control is absent".into())
    } else {
        tools
            .iter()
            .find(|t| Command::new(t).arg("--version").output().is_err())
            .map(|t| format!("{t} is not installed (scripts/setup.sh installs it)"))
    };
    if let Some(why) = &why {
        skipped(test, why);
        println!("SKIPPED {test}: {why}");
    }
    why.is_some()
}

/// Runs `vsl ARGS`: (exit code, stdout, stderr).
pub fn vsl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .output()
        .expect("run vsl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `vsl ARGS` and checks it fails as bad input should: exit 1, one
/// line on stderr naming `needle`, no panic.
pub fn assert_one_line_error(args: &[&str], needle: &str) {
    let (code, _, err) = vsl(args);
    assert_eq!(code, 1, "{args:?}: exit {code}, stderr {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.contains(needle), "{args:?}: '{err}' lacks '{needle}'");
}

/// Runs `vsl ARGS` with extra environment variables.
pub fn vsl_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run vsl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Kills (and reaps) a child process when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch directory with its own run and state directories; detaches
/// every card attached through it and removes it when dropped.
pub struct Rig {
    pub root: PathBuf,
}

/// A running `vsl serve`: its address (host:port) and the per-process
/// token from the file it names; killed when dropped.
pub struct Served {
    pub addr: String,
    pub token: String,
    _proc: Proc,
}

impl Rig {
    /// A fresh scratch directory `vsl-NAME-PID` under the temp dir.
    pub fn new(name: &str) -> Rig {
        Rig {
            root: scratch(name),
        }
    }

    /// [`Rig::new`] under `base` (e.g. a tmpfs) instead of the temp dir.
    pub fn new_in(name: &str, base: &Path) -> Rig {
        Rig {
            root: scratch_in(base, name),
        }
    }

    /// A long simulation in the background (4 h of virtual time, an
    /// interval every 2 s), publishing its intervals.
    pub fn background_run(&self) -> Proc {
        let args = [
            "run",
            "--scale",
            "0.05",
            "--duration",
            "4h",
            "--interval",
            "2s",
        ];
        let mut c = self.cmd(&args);
        c.arg("--quiet").stdout(std::process::Stdio::null());
        Proc(c.spawn().unwrap())
    }

    /// Starts `vsl serve --listen 127.0.0.1:0 EXTRA` and reads its address
    /// and token from the two lines it prints; the token file must be
    /// readable by its owner only.
    pub fn serve(&self, extra: &[&str]) -> Served {
        use std::io::BufRead;
        use std::os::unix::fs::PermissionsExt;
        let mut c = self.cmd(&[&["serve", "--listen", "127.0.0.1:0"], extra].concat());
        let mut child = c.stdout(std::process::Stdio::piped()).spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let proc = Proc(child);
        let first = lines.next().unwrap().unwrap();
        let second = lines.next().unwrap().unwrap();
        let addr = first.split("://").nth(1).unwrap().trim_end_matches('/');
        let token_path = second.split("in ").last().unwrap().trim_end_matches('>');
        let mode = std::fs::metadata(token_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the token file is readable by others");
        Served {
            addr: addr.to_string(),
            token: std::fs::read_to_string(token_path)
                .unwrap()
                .trim()
                .to_string(),
            _proc: proc,
        }
    }

    /// `vsl ARGS` with the rig's run and state directories.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_vsl"));
        c.args(args)
            .env("OPENVSL_RUN_DIR", self.root.join("run"))
            .env("OPENVSL_STATE_DIR", self.root.join("state"));
        c
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.cmd(&["detach", "--all"]).output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A fresh scratch directory `vsl-NAME-PID` in the temp dir. Those that
/// earlier test processes left under the same `vsl-NAME-` (their process
/// gone: a test that fails keeps its files, and a passing one may not
/// clean up) are removed first, so scratch does not pile up across runs.
pub fn scratch(name: &str) -> PathBuf {
    scratch_in(&std::env::temp_dir(), name)
}

/// [`scratch`] under `tmp` instead of the temp dir.
pub fn scratch_in(tmp: &Path, name: &str) -> PathBuf {
    let prefix = format!("vsl-{name}-");
    if let Ok(entries) = std::fs::read_dir(tmp) {
        for e in entries.flatten() {
            let file = e.file_name();
            let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
                continue;
            };
            let gone = pid
                .parse::<u32>()
                .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let root = tmp.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// The test process's one shared scratch directory, [`scratch`]`(name)`
/// made on first use; every test of the binary writes its files there.
pub fn shared_scratch(name: &str) -> &'static Path {
    static DIR: std::sync::OnceLock<(String, PathBuf)> = std::sync::OnceLock::new();
    let (made_as, dir) = DIR.get_or_init(|| (name.to_string(), scratch(name)));
    assert_eq!(
        made_as, name,
        "one shared scratch directory per test binary"
    );
    dir
}

/// Polls `f` every 200 ms for up to `secs`.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            t.elapsed() < Duration::from_secs(secs),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A preset file's text with the line `key = ...` (the first one) set to
/// `key = value`, whatever the built-in value is today.
#[allow(dead_code)]
pub fn set_field(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    let mut done = false;
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        if !done && l.starts_with(&prefix) {
            out.push(format!("{prefix}{value}"));
            done = true;
        } else {
            out.push(l.to_string());
        }
    }
    assert!(done, "no line `{prefix}...` in the preset");
    out.join("\n") + "\n"
}
