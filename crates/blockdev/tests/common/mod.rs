//! Shared helpers of the attach tests: environment checks (the tests need
//! root, /dev/fuse, loop devices and some tools, and skip loudly without
//! them), and driving the `vsl-blockdev` binary.

#![allow(dead_code)]

pub mod blocks;

/// A numeric test setting from the environment (e.g. `VSL_POWERCUTS`,
/// `VSL_TEST_SEED`), or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_vsl-blockdev");

/// The smallest card the presets allow: 24 erase units of 48 MiB.
pub const TINY_CARD: &[&str] = &[
    "--device",
    "iodrive-duo-320-slc",
    "--member",
    "0",
    "--scale",
    "0.001",
];

/// Why this machine cannot run the attach tests, if it cannot.
pub fn missing_prerequisite(tools: &[&str]) -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root".into());
    }
    for dev in ["/dev/fuse", "/dev/loop-control"] {
        if !Path::new(dev).exists() {
            return Some(format!("{dev} is absent"));
        }
    }
    for t in tools {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{t} is not installed (scripts/setup.sh installs it)"
            ));
        }
    }
    None
}

/// Writes straight to the process's standard error, past the test
/// harness's capture, so CI's log shows it even when the test passes.
pub fn loud(text: &str) {
    // SAFETY: writes a valid buffer to descriptor 2.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

/// Prints the loud skip line; returns true when the test must skip.
pub fn skip(test: &str, tools: &[&str]) -> bool {
    match missing_prerequisite(tools) {
        Some(why) => {
            loud(&format!("\n!!!!! SKIPPED {test}: {why} !!!!!\n"));
            println!("SKIPPED {test}: {why}");
            true
        }
        None => false,
    }
}

/// FUSE over io_uring for the tests that run over both transports: true
/// when the kernel offers it (switched on here, as root may); otherwise a
/// loud line saying the io_uring half of the test does not run.
pub fn uring_available(test: &str) -> bool {
    const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";
    let on = || std::fs::read_to_string(PARAM).is_ok_and(|s| s.trim() == "Y");
    if !on() {
        let _ = std::fs::write(PARAM, "Y");
    }
    let usable = blockdev::uring::usable();
    if on() && usable.is_ok() {
        return true;
    }
    let why = if let Err(e) = usable {
        e
    } else if Path::new(PARAM).exists() {
        format!("{PARAM} could not be switched on")
    } else {
        "this kernel has no FUSE over io_uring".to_string()
    };
    loud(&format!(
        "\n!!!!! {test}: FUSE over io_uring could not be enabled ({why}); only /dev/fuse is tested !!!!!\n"
    ));
    println!("SKIPPED io_uring half of {test}: {why}");
    false
}

/// The transports to test: `--fuse-uring` values, io_uring first when
/// available.
pub fn transports(test: &str) -> Vec<&'static str> {
    // VSL_TEST_TRANSPORTS=off (or on) runs one of them only.
    match std::env::var("VSL_TEST_TRANSPORTS").as_deref() {
        Ok("off") => return vec!["off"],
        Ok("on") => return vec!["on"],
        _ => {}
    }
    if uring_available(test) {
        vec!["on", "off"]
    } else {
        vec!["off"]
    }
}

/// A scratch run directory and store, cleaned up (and detached) on drop.
pub struct Rig {
    pub root: PathBuf,
    pub run_dir: PathBuf,
    pub store: PathBuf,
    pub mnt: PathBuf,
}

impl Rig {
    pub fn new(name: &str) -> Rig {
        let root = std::env::temp_dir().join(format!("openvsl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let r = Rig {
            run_dir: root.join("run"),
            store: root.join("store"),
            mnt: root.join("mnt"),
            root,
        };
        std::fs::create_dir_all(&r.mnt).unwrap();
        r
    }

    /// Where this rig's `--restore` records go (never /var/lib/openvsl).
    pub fn state_dir(&self) -> PathBuf {
        self.root.join("state")
    }

    pub fn vsl(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("OPENVSL_RUN_DIR", &self.run_dir)
            .env("OPENVSL_STATE_DIR", self.state_dir())
            .output()
            .expect("run vsl-blockdev")
    }

    /// Attaches with `extra` card options; returns the loop devices.
    pub fn attach(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["attach", "--store", self.store.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = self.vsl(&args);
        assert!(
            out.status.success(),
            "attach failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let devs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split('\t').next())
            .filter(|d| d.starts_with("/dev/loop"))
            .map(String::from)
            .collect();
        assert!(!devs.is_empty(), "attach printed no device");
        devs
    }

    pub fn detach_all(&self) {
        let out = self.vsl(&["detach", "--all"]);
        assert!(
            out.status.success(),
            "detach failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The pid of the daemon serving the store.
    pub fn daemon_pid(&self) -> u32 {
        let dir = std::fs::read_dir(&self.run_dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["pid"].as_u64().unwrap() as u32
    }

    /// Kills the daemon with SIGKILL and waits until it is gone (30 s at
    /// most); returns its pid.
    pub fn kill_daemon(&self) -> u32 {
        let pid = self.daemon_pid();
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let t = std::time::Instant::now();
        while blockdev::daemon::pid_alive(pid) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(30),
                "daemon {pid} survived SIGKILL"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        pid
    }

    /// The attachment's state file, as JSON.
    pub fn state(&self) -> serde_json::Value {
        let dir = std::fs::read_dir(&self.run_dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.path().join("state.json").exists())
            .expect("an attachment's state file");
        let text = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// How the attached daemon gets its requests ("io_uring (N queues)" or
    /// "/dev/fuse"), from its state file.
    pub fn transport(&self) -> String {
        self.state()["fuse_transport"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// Asserts the attachment serves through `mode`'s transport.
    pub fn assert_transport(&self, mode: &str) {
        let t = self.transport();
        match mode {
            "on" => assert!(t.starts_with("io_uring"), "asked for io_uring, got {t}"),
            _ => assert_eq!(t, "/dev/fuse"),
        }
    }

    /// Asserts that `vsl attach --store STORE OPTION VALUE` (on the tiny
    /// card) is refused with one line holding `--OPTION: 'VALUE'`, and
    /// makes no store.
    pub fn assert_attach_refused(&self, option: &str, value: &str) {
        let store = self.store.to_str().unwrap();
        let mut args = vec!["attach", "--store", store, option, value];
        args.extend_from_slice(TINY_CARD);
        let out = self.vsl(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{option} {value} attached");
        assert!(err.contains(&format!("{option}: '{value}'")), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!self.store.exists(), "a refused attach made the store");
    }

    pub fn status_json(&self) -> serde_json::Value {
        let out = self.vsl(&["status", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // VSL_TEST_KEEP=1 keeps a failed test's store for a post-mortem.
        if std::thread::panicking() && std::env::var_os("VSL_TEST_KEEP").is_some() {
            eprintln!("kept {} (VSL_TEST_KEEP)", self.root.display());
            return;
        }
        let _ = Command::new("umount").arg(&self.mnt).output();
        let _ = self.vsl(&["detach", "--all"]);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Runs a shell command; panics with its output when it fails.
pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
