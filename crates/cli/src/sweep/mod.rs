//! `vsl sweep`: many runs from one plan ([`Plan`]), on a local pool of
//! worker threads ([`run_local`]) or on a Ray cluster (`--engine ray`, which
//! hands the plan to the Python package's `openvsl.ray_sweep`).
//!
//! The local pool runs threads that call [`crate::cmd_run::execute`], not
//! `vsl` child processes: a run is CPU-bound Rust with no shared state, so
//! threads scale across cores like processes do, while the Python package
//! can run the same pool without locating a `vsl` binary, and one progress
//! bar sees every interval of every run. A panic in one run is caught and
//! reported as that run's failure.
//!
//! Output directory: `runs/<key>.json` (what `vsl run --json` writes plus a
//! `sweep` object with the key and the plan's options), written atomically
//! as each run finishes (a run whose file exists is not run again);
//! `results.csv` (one row per finished run); `index.html` with one chart per
//! swept option ([`summary`]).

mod plan;
pub mod summary;

pub use plan::{parse_run, Plan, PlannedRun};

use crate::args::SweepArgs;
use crate::cmd_run::Observer;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub fn cli(a: SweepArgs) -> Result<()> {
    let plan = Plan::load(&a.plan)?;
    match a.engine.as_str() {
        "local" => {
            if a.address.is_some() {
                bail!("--address is for --engine ray");
            }
            let workers = a.workers.unwrap_or_else(default_workers);
            let outcome = run_local(&plan, &a.out, workers, a.quiet)?;
            finish(&plan, &a.out, &outcome, a.quiet)
        }
        "ray" => ray(&a),
        e => bail!("unknown --engine '{e}' (known: local, ray)"),
    }
}

/// One worker per core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What a sweep did this time.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Runs already finished in the output directory, not run again.
    pub skipped: usize,
    pub ran: usize,
    /// (key, one-line error) of each run that failed.
    pub failed: Vec<(String, String)>,
}

/// The file a finished run's JSON lives in.
pub fn run_path(out: &Path, key: &str) -> PathBuf {
    out.join("runs").join(format!("{key}.json"))
}

/// True if `key`'s result is already in `out` (a complete, readable JSON).
pub fn is_done(out: &Path, key: &str) -> bool {
    std::fs::read_to_string(run_path(out, key))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some()
}

/// Runs one planned run and returns its JSON text (what `runs/<key>.json`
/// holds). Deterministic: the same run gives the same bytes anywhere.
pub fn run_one(run: &PlannedRun, obs: &dyn Observer) -> Result<String> {
    let args = run.args()?;
    let done = crate::cmd_run::execute(&args, obs)?;
    #[derive(serde::Serialize)]
    struct Stored<'a> {
        #[serde(flatten)]
        report: crate::output::Report<'a>,
        sweep: serde_json::Value,
    }
    let v = Stored {
        report: done.report(),
        sweep: serde_json::json!({ "key": run.key, "params": run.params }),
    };
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// Stores a finished run's JSON atomically (write, then rename), so that an
/// interrupted sweep never leaves a half-written result that looks done.
pub fn store(out: &Path, key: &str, json: &str) -> Result<()> {
    let path = run_path(out, key);
    let dir = path.parent().expect("runs/ has a parent");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(".{key}.json.tmp"));
    std::fs::write(&tmp, json).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// Runs every unfinished run of `plan` on `workers` threads, storing each
/// result as it finishes. A failed run does not stop the others.
pub fn run_local(plan: &Plan, out: &Path, workers: usize, quiet: bool) -> Result<Outcome> {
    if workers == 0 {
        bail!("--workers must be at least 1");
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let pending: Vec<&PlannedRun> = plan.runs.iter().filter(|r| !is_done(out, &r.key)).collect();
    let mut outcome = Outcome {
        skipped: plan.runs.len() - pending.len(),
        ..Outcome::default()
    };
    let total_ms: u64 = pending
        .iter()
        .map(|r| Ok(crate::cmd_run::duration_ns(&r.args()?)? / 1_000_000))
        .sum::<Result<u64>>()?;
    let bar = SweepBar::new(quiet, total_ms, pending.len());
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.min(pending.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(run) = pending.get(i) else { break };
                let duration_ms = run
                    .args()
                    .and_then(|a| crate::cmd_run::duration_ns(&a))
                    .map_or(0, |ns| ns / 1_000_000);
                let obs = RunObserver {
                    bar: &bar,
                    last_ms: Mutex::new(0),
                    duration_ms,
                };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_one(run, &obs).and_then(|json| store(out, &run.key, &json))
                }))
                .unwrap_or_else(|p| Err(anyhow!("panicked: {}", panic_text(&p))));
                if let Err(e) = result {
                    failed
                        .lock()
                        .expect("no poisoning")
                        .push((run.key.clone(), format!("{e:#}")));
                }
                bar.run_done(&obs);
            });
        }
    });
    bar.finish();
    outcome.failed = failed.into_inner().expect("no poisoning");
    outcome.ran = pending.len() - outcome.failed.len();
    Ok(outcome)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Writes the table and page over every finished run, prints a summary and
/// fails (after writing) if any run failed.
pub fn finish(plan: &Plan, out: &Path, outcome: &Outcome, quiet: bool) -> Result<()> {
    let written = summary::write(plan, out)?;
    if !quiet {
        println!(
            "sweep: {} runs ({} run now, {} already done, {} failed); {} finished in {}",
            plan.runs.len(),
            outcome.ran,
            outcome.skipped,
            outcome.failed.len(),
            written.finished,
            out.display()
        );
        println!("results: {}", written.csv.display());
        println!("report:  {}", written.html.display());
    }
    if let Some((key, e)) = outcome.failed.first() {
        bail!(
            "{} of {} runs failed (finished results kept); first: run {key}: {e}",
            outcome.failed.len(),
            plan.runs.len()
        );
    }
    Ok(())
}

/// One progress bar over the virtual time of every pending run.
struct SweepBar {
    bar: ProgressBar,
    runs_total: usize,
    runs_done: AtomicUsize,
}

impl SweepBar {
    fn new(quiet: bool, total_ms: u64, runs: usize) -> SweepBar {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(Some(total_ms), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} sweep {msg} [{bar:30}] {percent}% elapsed {elapsed} eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        };
        let s = SweepBar {
            bar,
            runs_total: runs,
            runs_done: AtomicUsize::new(0),
        };
        s.show_runs();
        s
    }

    fn show_runs(&self) {
        let done = self.runs_done.load(Ordering::Relaxed);
        self.bar
            .set_message(format!("{done}/{} runs", self.runs_total));
    }

    fn run_done(&self, obs: &RunObserver) {
        // A run that failed early still counts its whole duration as done.
        let seen_ms = *obs.last_ms.lock().expect("no poisoning");
        self.bar.inc(obs.duration_ms.saturating_sub(seen_ms));
        self.runs_done.fetch_add(1, Ordering::Relaxed);
        self.show_runs();
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Forwards one run's intervals to the sweep's bar as virtual time done.
struct RunObserver<'a> {
    bar: &'a SweepBar,
    last_ms: Mutex<u64>,
    duration_ms: u64,
}

impl Observer for RunObserver<'_> {
    fn message(&self, _: &str) {}

    fn interval(&self, iv: &lab::IntervalStats) {
        let now_ms = (iv.t_s * 1000.0) as u64;
        let mut last = self.last_ms.lock().expect("no poisoning");
        self.bar.bar.inc(now_ms.saturating_sub(*last));
        *last = now_ms;
    }
}

/// `--engine ray`: the Python package drives the cluster (Ray's client is
/// Python); it plans, skips finished runs and stores results through the
/// same functions as the local pool.
fn ray(a: &SweepArgs) -> Result<()> {
    let address = a.address.as_deref().ok_or_else(|| {
        anyhow!("--engine ray needs --address ADDR (e.g. auto, or ray://HOST:10001)")
    })?;
    let found = std::process::Command::new(&a.python)
        .args(["-c", "import openvsl.ray_sweep"])
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| anyhow!("cannot start {} for --engine ray: {e}", a.python))?;
    if !found.success() {
        bail!(
            "--engine ray needs the openvsl Python package in {} (pip install the wheel: see README)",
            a.python
        );
    }
    let mut cmd = std::process::Command::new(&a.python);
    cmd.args(["-m", "openvsl.ray_sweep"])
        .arg(&a.plan)
        .arg("--out")
        .arg(&a.out)
        .args(["--address", address]);
    if a.quiet {
        cmd.arg("--quiet");
    }
    let status = cmd
        .status()
        .map_err(|e| anyhow!("cannot start {} for --engine ray: {e}", a.python))?;
    if !status.success() {
        // openvsl.ray_sweep has printed its one-line error.
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
