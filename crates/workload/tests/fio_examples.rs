//! Issue 30: every job file of fio's own `examples/` either parses or is
//! refused in one line that names the option (or the job) on the line it
//! points at. Reads fio's repository as a git directory: `FIO_GIT_DIR`,
//! else the fetched mirror `/work/.mirror/axboe+fio/repo`; skips loudly
//! when neither is there. `bench/fio_examples.sh` prints the counts
//! (bench/RESULTS.md records them).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use workload::jobfile::{self, Context, JobFileError};

fn git_dir() -> Option<String> {
    let d =
        std::env::var("FIO_GIT_DIR").unwrap_or_else(|_| "/work/.mirror/axboe+fio/repo".to_string());
    Path::new(&d).exists().then_some(d)
}

fn git(dir: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg(format!("--git-dir={dir}"))
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The option or section name a line of a job file holds.
fn subject(line: &str) -> String {
    let l = line[..line.find([';', '#']).unwrap_or(line.len())].trim();
    if let Some(s) = l.strip_prefix('[') {
        return s.trim_end_matches(']').trim().to_string();
    }
    l.split('=').next().unwrap_or(l).trim().to_string()
}

/// What a refusal names, for the tally: the option, or its kind of error.
fn reason(e: &JobFileError, text: &str) -> String {
    if e.message.contains("runs concurrently") {
        return "concurrent jobs (no stonewall)".into();
    }
    match text.lines().nth(e.line.wrapping_sub(1)) {
        Some(l) => subject(l),
        None => e.message.clone(),
    }
}

#[test]
fn issue_30_fio_examples_parse_or_are_refused_naming_the_option() {
    let Some(dir) = git_dir() else {
        eprintln!("\n!!!!! SKIPPED fio examples: no fio repository (set FIO_GIT_DIR) !!!!!\n");
        println!("SKIPPED fio examples: no fio repository");
        return;
    };
    let list = git(&dir, &["ls-tree", "--name-only", "HEAD", "examples/"]).expect("ls-tree");
    let files: Vec<&str> = list.lines().filter(|f| f.ends_with(".fio")).collect();
    assert!(files.len() > 50, "only {} examples", files.len());
    let read = |p: &Path| {
        git(&dir, &["show", &format!("HEAD:{}", p.display())])
            .ok_or_else(|| "not in the repository".to_string())
    };
    let env = |_: &str| None;
    let (mut parsed, mut lenient_parsed) = (Vec::new(), 0);
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let text = read(Path::new(f)).expect("example");
        let cx = |lenient| Context {
            lenient,
            env: &env,
            ncpus: 4,
            read: &read,
        };
        match jobfile::parse(&text, Path::new(f), &cx(false)) {
            Ok(jf) => {
                // A parsed file's jobs resolve on a 1 TiB device.
                for j in jf.jobs() {
                    let r = j.spec.resolve(1 << 40, 512);
                    assert!(r.is_ok(), "{f}: job {}: {r:?}", j.name);
                }
                parsed.push(*f);
            }
            Err(e) => {
                assert_eq!(e.to_string().lines().count(), 1, "{e}");
                assert!(e.line > 0, "{f}: error without a line: {e}");
                if e.file == *f {
                    // The refusal names what is on the line it points at.
                    let l = text.lines().nth(e.line - 1).expect("line in file");
                    let s = subject(l);
                    assert!(e.message.contains(&s), "{f}: '{s}' not in: {e}");
                }
                if std::env::var("FIO_EXAMPLES_VERBOSE").is_ok() {
                    println!("refused: {e}");
                }
                refused
                    .entry(reason(&e, &text))
                    .or_default()
                    .push(f.to_string());
            }
        }
        if jobfile::parse(&text, Path::new(f), &cx(true)).is_ok() {
            lenient_parsed += 1;
        }
    }
    let n_refused: usize = refused.values().map(Vec::len).sum();
    println!(
        "fio examples: {} job files, {} parsed, {} refused; {} parse with --lenient",
        files.len(),
        parsed.len(),
        n_refused,
        lenient_parsed
    );
    println!("parsed: {}", parsed.join(" "));
    let mut by_count: Vec<_> = refused.iter().collect();
    by_count.sort_by_key(|(k, v)| (std::cmp::Reverse(v.len()), k.to_string()));
    for (why, fs) in by_count {
        println!("refused for {why}: {}", fs.len());
    }
    // The block-device examples that use only modelled options run
    // (fio-rand-read and friends ask for direct=0: refused).
    for must in [
        "examples/ssd-test.fio",
        "examples/fio-seq-read.fio",
        "examples/zipf.fio",
        "examples/rand-zones.fio",
        "examples/tiobench-example.fio",
    ] {
        assert!(parsed.contains(&must), "{must} refused");
    }
}
