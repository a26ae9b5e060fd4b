//! Writes the demo report (synthetic numbers) so it can be looked at:
//! `cargo run -p report --example demo [OUT_DIR]`, by default into
//! `target/report-demo/` at the workspace root.

use std::path::PathBuf;

fn main() {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
            root.canonicalize()
                .unwrap_or(root)
                .join("target/report-demo")
        });
    match report::render(&report::demo_review(), &out) {
        Ok(rendered) => println!(
            "wrote {} files; open {}",
            rendered.files.len(),
            rendered.index_html.display()
        ),
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::exit(1);
        }
    }
}
