//! The Python package's native module links the model and the lab, not the
//! attached card's FUSE serving, the dashboard's web server nor the
//! real-time engine's io_uring (issue 28): neither the crate as the
//! workspace builds it nor the wheel (`extension-module`, what maturin
//! builds), counting build dependencies.

#[test]
fn the_python_package_links_no_fuse_and_no_web_server() {
    check_tree(&[]);
}

#[test]
fn the_wheel_links_no_fuse_and_no_web_server() {
    let tree = check_tree(&["--features", "extension-module"]);
    assert!(tree.contains(&"pyo3".to_string()), "the wheel lacks pyo3");
}

/// The crates `openvsl-py` depends on with `features`, checked; returned.
/// Not `--offline`: the wheel's tree names pyo3, which a workspace build
/// never downloads, so a clean checkout must fetch it (CI does).
fn check_tree(features: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "openvsl-py",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        crates.contains(&"vsl".to_string()),
        "the tree lacks the CLI library:\n{tree}"
    );
    assert!(
        crates.contains(&"lab".to_string()),
        "the tree lacks the lab:\n{tree}"
    );
    for banned in [
        "fuser", "tokio", "axum", "hyper", "blockdev", "web", "io-uring",
    ] {
        assert!(
            !crates.iter().any(|c| c == banned),
            "openvsl-py {features:?} depends on {banned}:\n{tree}"
        );
    }
    crates
}
