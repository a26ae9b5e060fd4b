//! The Python package's native module links the model and the lab, not the
//! attached card's FUSE serving, the dashboard's web server nor the
//! real-time engine's io_uring (issue 28).

#[test]
fn the_python_package_links_no_fuse_and_no_web_server() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "openvsl-py",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.contains(&"vsl"),
        "the tree lacks the CLI library:\n{tree}"
    );
    assert!(crates.contains(&"lab"), "the tree lacks the lab:\n{tree}");
    for banned in [
        "fuser", "tokio", "axum", "hyper", "blockdev", "web", "io-uring",
    ] {
        assert!(
            !crates.contains(&banned),
            "openvsl-py depends on {banned}:\n{tree}"
        );
    }
}
