//! `vsl status`, `vsl format` and `vsl erase` on a real attached card
//! (root, FUSE and loop devices; skipped loudly without them), and their
//! one-line errors on bad input.

mod common;

use common::{skip, TINY_CARD};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

struct Rig {
    root: PathBuf,
    store: PathBuf,
}

impl Rig {
    fn new(name: &str) -> Rig {
        let root = common::scratch(&format!("manage-{name}"));
        Rig {
            store: root.join("store"),
            root,
        }
    }

    fn vsl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_vsl"))
            .args(args)
            .env("OPENVSL_RUN_DIR", self.root.join("run"))
            .env("OPENVSL_STATE_DIR", self.root.join("state"))
            .stdin(Stdio::null())
            .output()
            .expect("run vsl")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.vsl(args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "vsl {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// Fails with exactly one line on stderr containing `want`.
    fn fails(&self, args: &[&str], want: &str) {
        let out = self.vsl(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "vsl {args:?} succeeded");
        assert!(err.contains(want), "vsl {args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "vsl {args:?}: {err}");
    }

    fn status(&self) -> serde_json::Value {
        let text = self.ok(&["status", self.store.to_str().unwrap(), "--json"]);
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.vsl(&["detach", "--all"]);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn dd_write(dev: &str, mib: u32) {
    let st = Command::new("dd")
        .args([
            "if=/dev/urandom",
            &format!("of={dev}"),
            "bs=1M",
            &format!("count={mib}"),
            "oflag=direct",
            "status=none",
        ])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn format_and_erase_keep_lifetime_and_refuse_when_they_must() {
    if skip(
        "format_and_erase_keep_lifetime_and_refuse_when_they_must",
        &["dd"],
    ) {
        return;
    }
    let rig = Rig::new("fmt");
    let store = rig.store.to_str().unwrap();
    let out = rig.ok(&[&["attach", "--store", store], TINY_CARD].concat());
    let dev = out.split('\t').next().unwrap().to_string();
    dd_write(&dev, 16);

    let st = rig.status();
    let d = &st["devices"][0];
    assert_eq!(d["state"], "attached");
    assert_eq!(d["block_device"], dev.as_str());
    assert!(d["lifetime"]["host_bytes_written"].as_u64().unwrap() >= 16 << 20);
    let stock_bytes = d["formatted_capacity_bytes"].as_u64().unwrap();

    rig.fails(
        &["format", store, "--overprovision", "50%", "-y"],
        "is attached as",
    );
    rig.fails(&["erase", store, "--clear", "-y"], "is attached as");
    rig.ok(&["detach", "--all"]);
    rig.fails(&["format", store, "--overprovision", "50%"], "without -y");

    rig.ok(&["format", store, "--overprovision", "50%", "-y"]);
    let d = &rig.status()["devices"][0];
    assert_eq!(d["state"], "detached");
    assert_eq!(d["format"], "op=50%");
    let op_bytes = d["formatted_capacity_bytes"].as_u64().unwrap();
    assert!(op_bytes < stock_bytes, "{op_bytes} vs {stock_bytes}");
    assert!(d["overprovision_pct"].as_f64().unwrap() > 50.0, "{d}");
    let written = d["lifetime"]["host_bytes_written"].as_u64().unwrap();
    assert!(
        written >= 16 << 20,
        "format lost the lifetime counters: {d}"
    );

    // The new format attaches with the new capacity; then erase keeps
    // the counters and the written data reads as zeros.
    let out = rig.ok(&["attach", "--store", store]);
    assert!(
        out.contains(&format!("{:.2} GB", op_bytes as f64 / 1e9)),
        "{out}"
    );
    let dev = out.split('\t').next().unwrap().to_string();
    dd_write(&dev, 4);
    rig.ok(&["detach", "--all"]);
    let before = rig.status()["devices"][0]["lifetime"].clone();
    rig.ok(&["erase", store, "--purge", "-y"]);
    let after = rig.status()["devices"][0].clone();
    assert_eq!(
        after["lifetime"]["host_bytes_written"],
        before["host_bytes_written"]
    );
    assert_eq!(
        after["lifetime"]["nand_bytes_programmed"],
        before["nand_bytes_programmed"]
    );
    assert!(
        after["health"]["erase_count_min"].as_u64().unwrap() >= 1,
        "{after}"
    );
    let out = rig.ok(&["attach", "--store", store]);
    let dev = out.split('\t').next().unwrap().to_string();
    let mut data = vec![0xffu8; 4 << 20];
    std::io::Read::read_exact(&mut std::fs::File::open(&dev).unwrap(), &mut data).unwrap();
    assert!(
        data.iter().all(|&b| b == 0),
        "erased data is still readable"
    );
    rig.ok(&["detach", "--all"]);
}

#[test]
fn management_bad_input_is_one_line() {
    let rig = Rig::new("bad");
    let store = rig.store.to_str().unwrap();
    rig.fails(&["status", "/nonexistent/store"], "unknown store");
    rig.fails(&["format", "/nonexistent/store", "-y"], "unknown store");
    rig.fails(
        &["erase", "/nonexistent/store", "--clear", "-y"],
        "unknown store",
    );
    if skip(
        "management_bad_input_is_one_line (format of a real store)",
        &[],
    ) {
        return;
    }
    let out = rig.ok(&[&["attach", "--store", store], TINY_CARD].concat());
    assert!(out.contains("/dev/loop"));
    rig.ok(&["detach", "--all"]);
    rig.fails(
        &["format", store, "--sector-size", "1000", "-y"],
        "1000 is not 512 or 4096",
    );
    rig.fails(
        &["format", store, "--overprovision", "0%", "-y"],
        "leaves no spare",
    );
    rig.fails(
        &["format", store, "--capacity", "100T", "-y"],
        "leaves no spare",
    );
    // Nothing was changed by the refused formats.
    assert_eq!(rig.status()["devices"][0]["format"], "stock");
}
