//! Issue 32: the systemd units of dist/systemd, as
//! scripts/install-service.sh installs them (vsl path filled in), pass
//! `systemd-analyze verify` with nothing to say about them; the script
//! refuses what it does not understand.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Straight to standard error, past the harness's capture.
fn loud(text: &str) {
    // SAFETY: writes a valid buffer to descriptor 2.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

fn install(units: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(repo().join("scripts/install-service.sh"))
        .args(args)
        .env("OPENVSL_UNIT_DIR", units)
        .env("OPENVSL_BIN", env!("CARGO_BIN_EXE_vsl"))
        .env("OPENVSL_NO_SYSTEMCTL", "1")
        .output()
        .expect("run scripts/install-service.sh")
}

#[test]
fn issue32_installed_units_pass_systemd_analyze_verify() {
    let test = "issue32_installed_units_pass_systemd_analyze_verify";
    let units = std::env::temp_dir().join(format!("openvsl-units-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&units);
    let out = install(&units, &["--enable", "/srv/card"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = env!("CARGO_BIN_EXE_vsl");
    let template = std::fs::read_to_string(units.join("openvsl@.service")).unwrap();
    let restore = std::fs::read_to_string(units.join("openvsl-restore.service")).unwrap();
    assert!(template.contains("Type=notify"), "{template}");
    assert!(
        template.contains(&format!("ExecStart={bin} attach --foreground --store %f")),
        "{template}"
    );
    assert!(
        restore.contains(&format!("ExecStart={bin} attach --restore")),
        "{restore}"
    );
    assert!(!template.contains("/usr/local/bin/vsl") && !restore.contains("/usr/local/bin/vsl"));
    if Command::new("systemd-escape")
        .arg("--version")
        .output()
        .is_ok()
    {
        assert!(
            text.contains("systemctl enable --now openvsl@srv-card.service"),
            "{text}"
        );
    }

    let bad = install(&units, &["--bogus"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("unknown argument '--bogus'"), "{err}");

    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        loud(&format!(
            "\n!!!!! SKIPPED {test}: systemd-analyze is not installed (apt-get install systemd): the units were not verified !!!!!\n"
        ));
        println!("SKIPPED {test}: no systemd-analyze");
        let _ = std::fs::remove_dir_all(&units);
        return;
    }
    // The instance of the template for the store /srv/card.
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(units.join("openvsl@srv-card.service"))
        .arg(units.join("openvsl-restore.service"))
        .current_dir(&units)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let about_ours: Vec<&str> = err.lines().filter(|l| l.contains("openvsl")).collect();
    assert!(
        out.status.success() && about_ours.is_empty(),
        "systemd-analyze verify: {err}"
    );
    // The check bites: a unit with a typo and a missing binary fails.
    let broken = units.join("openvsl-broken.service");
    std::fs::write(
        &broken,
        restore
            .replace(
                "RemainAfterExit=yes",
                "RemainAfterExit=yes\nRemaneAfterExit=yes",
            )
            .replace(bin, "/nonexistent/vsl"),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&broken)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a broken unit passed: {err}");
    assert!(
        err.contains("Remane") && err.contains("/nonexistent/vsl"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&units);
}
