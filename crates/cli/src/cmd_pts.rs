//! `vsl pts`: the SNIA Solid State Storage Performance Test Specification
//! (PTS-E 1.1 / PTS-C) on modelled cards (virtual time) and real files or
//! block devices (wall time), several targets on the same axes. The tests
//! are in `lab::pts`; the pages in [`crate::pts_report`].

use crate::pts_real::{confirm_purge, RealPts};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use ftl::GcMode;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::pts::{preflight, run_test, ModelPts, PtsClass, PtsPlan, PtsTarget, PtsTest, TestResult};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use workload::units::{parse_duration_ns, parse_size};

/// `vsl pts`: run SNIA PTS tests and write a report per test.
#[derive(Args, Debug, Clone)]
#[command(
    long_about = "Runs the SNIA Solid State Storage Performance Test Specification (PTS-E 1.1, or PTS-C \
with --class client) on one or more targets and writes OUT/index.html (set-up sheet and a page per test), \
OUT/results.json and CSV of every number. Modelled targets run in virtual time, file:/blockdev: targets in \
wall time. Every test purges the target first: a modelled card is re-formatted, a file has its blocks \
punched out, a block device gets blkdiscard --secure, else TRIM, else an overwrite (a mounted or in-use \
device is refused; confirmation is asked, -y off a terminal). Spec durations are scaled by \
--round-time / 60 s (see docs/PTS.md)."
)]
pub struct PtsArgs {
    /// Tests: iops, throughput, latency, wsat, hir, xsr, dirth, ecw, or all (comma-separated).
    #[arg(long, default_value = "all")]
    pub test: String,
    /// A target (repeatable): PRESET[:FORMAT][:512][:gc=POLICY], file:PATH:SIZE or blockdev:/dev/NAME.
    #[arg(
        long = "target",
        value_name = "TARGET",
        required_unless_present = "render"
    )]
    pub targets: Vec<String>,
    /// Output directory.
    #[arg(long, default_value = "pts")]
    pub out: PathBuf,
    /// enterprise (PTS-E: whole LBA range, write cache off) or client (PTS-C: 75 % active range, cache on).
    #[arg(long, default_value = "enterprise")]
    pub class: String,
    /// One test point of one round (the spec: 60s). Spec durations (WSAT's 24 h, HIR's bursts
    /// and waits, XSR's groups, DIRTH's histograms) scale by round-time / 60 s.
    #[arg(long, default_value = "1s")]
    pub round_time: String,
    /// Override the duration scale (default: round-time / 60 s).
    #[arg(long)]
    pub time_factor: Option<f64>,
    /// At most this many rounds to steady state (the spec: 25).
    #[arg(long, default_value_t = 25)]
    pub max_rounds: usize,
    /// Threads of the IOPS, throughput, WSAT, HIR and XSR stimulus.
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Queue depth per thread of that stimulus.
    #[arg(long, default_value_t = 32)]
    pub qd: u32,
    /// IOPS matrix block sizes, comma-separated (default: the spec's 1024k..0.5k, less sizes below the sector).
    #[arg(long)]
    pub block_sizes: Option<String>,
    /// WSAT stops at this many capacities written (the spec: 4).
    #[arg(long, default_value_t = 4.0)]
    pub wsat_capacity: f64,
    /// HIR access/idle cycles per wait state (the spec: 360).
    #[arg(long, default_value_t = 360)]
    pub hir_cycles: u32,
    /// DIRTH/ECW thread counts, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16,32")]
    pub dirth_threads: String,
    /// DIRTH/ECW queue depths, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16,32")]
    pub dirth_qd: String,
    /// DIRTH/ECW latency ceiling on the 99.99th percentile (e.g. 5ms, 500us).
    #[arg(long, default_value = "5ms")]
    pub latency_ceiling: String,
    /// Fraction of the card modelled targets keep (1 = full size).
    #[arg(long, default_value = "1")]
    pub scale: String,
    /// GC mode of modelled targets: paced (default) or legacy.
    #[arg(long, default_value = "paced")]
    pub gc_mode: String,
    /// GC victim policy and placement of modelled targets.
    #[command(flatten)]
    pub policy: device::PolicyArgs,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: the machine's CPUs). A modelled target's
    /// tests are independent (each starts with a purge) and run as jobs of
    /// their own, on a fresh card each, in any order; a real target's tests
    /// run one after another in one job. The results are the same whatever
    /// the number of jobs.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Purge block devices without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Real targets: what the I/O buffers are made of, pages (fio's
    /// default) or huge (2 MiB pages; fio --mem=shmhuge). See vsl run --help.
    #[arg(long, default_value = "pages", value_name = "pages|huge")]
    pub mem: String,
    /// Print the results (the results.json document) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also print every page to OUT/<test>.pdf with headless Chromium.
    #[arg(long)]
    pub pdf: bool,
    /// No progress or summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run nothing: write DIR's pages and CSV again from DIR/results.json
    /// (after a change to the report's code; --pdf prints them too).
    #[arg(long, value_name = "DIR", conflicts_with = "targets")]
    pub render: Option<PathBuf>,
}

/// The set-up sheet: what ran, where, with what.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SetupSheet {
    pub tool: String,
    pub command: String,
    pub date_utc: String,
    pub os: String,
    pub kernel: String,
    pub cpu: String,
    pub machine_load: String,
    pub fio: String,
    pub blkdiscard: String,
    pub targets: Vec<TargetSheet>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct TargetSheet {
    pub label: String,
    pub description: String,
    pub time: String,
    pub capacity_bytes: u64,
    pub sector_bytes: u32,
    pub wall_s: f64,
}

#[derive(Serialize)]
pub struct PtsResults<'a> {
    pub setup: &'a SetupSheet,
    pub plan: &'a PtsPlan,
    pub tests: Vec<&'a str>,
    pub results: &'a [TestResult],
}

/// results.json read back (`--render`).
#[derive(Deserialize)]
struct PtsDoc {
    setup: SetupSheet,
    plan: PtsPlan,
    tests: Vec<String>,
    results: Vec<TestResult>,
}

/// `--render DIR`: the pages and CSV of DIR again from DIR/results.json.
fn render_again(dir: &Path, pdf: bool) -> Result<()> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let doc: PtsDoc = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{}: not a vsl pts results.json: {e}", path.display()))?;
    let tests = PtsTest::parse_list(&doc.tests.join(","))
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    crate::pts_report::write_csv(dir, &doc.results)?;
    let pages = crate::pts_report::render(dir, &doc.setup, &doc.plan, &tests, &doc.results)?;
    if pdf {
        crate::pts_report::print_pdfs(dir, &pages)?;
    }
    Ok(())
}

fn list<T: std::str::FromStr>(name: &str, s: &str) -> Result<Vec<T>> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|_| anyhow!("--{name}: '{p}' is not a whole number"))
        })
        .collect()
}

pub fn plan_from_args(a: &PtsArgs) -> Result<PtsPlan> {
    let class = PtsClass::parse(&a.class).map_err(|e| anyhow!("--class: {e}"))?;
    let round_ns = parse_duration_ns(&a.round_time).map_err(|e| anyhow!("--round-time: {e}"))?;
    if round_ns < 1_000_000 {
        bail!("--round-time: '{}' must be at least 1ms", a.round_time);
    }
    let block_sizes = match &a.block_sizes {
        Some(s) => Some(
            s.split(',')
                .map(|b| parse_size(b.trim()).map_err(|e| anyhow!("--block-sizes: {e}")))
                .collect::<Result<Vec<u64>>>()?,
        ),
        None => None,
    };
    let ceiling = parse_duration_ns(&a.latency_ceiling)
        .map_err(|e| anyhow!("--latency-ceiling: {e}"))? as f64
        / 1e3;
    let plan = PtsPlan {
        class,
        seed: a.seed,
        round_ns,
        time_factor: a.time_factor.unwrap_or(round_ns as f64 / 60e9),
        max_rounds: a.max_rounds,
        threads: a.threads,
        qd: a.qd,
        block_sizes,
        wsat_capacity_multiple: a.wsat_capacity,
        hir_cycles: a.hir_cycles,
        dirth_threads: list("dirth-threads", &a.dirth_threads)?,
        dirth_qd: list("dirth-qd", &a.dirth_qd)?,
        latency_ceiling_us: ceiling,
        ..PtsPlan::default()
    };
    plan.validate().map_err(|e| anyhow!("{e}"))?;
    Ok(plan)
}

fn open_target(spec: &str, a: &PtsArgs, scale: f64) -> Result<Box<dyn PtsTarget>> {
    if realtime::Target::is_real(spec) {
        let mem = realtime::IoMem::parse(&a.mem).map_err(|e| anyhow!("--mem: {e}"))?;
        return Ok(Box::new(RealPts::open(spec, mem)?));
    }
    let mut cfg = crate::cmd_review::model_config(spec, scale, a.policy.gc_policy()?)?;
    cfg.placement = a.policy.placement()?;
    cfg.gc_seed = a.seed;
    cfg.gc_mode = a
        .gc_mode
        .parse::<GcMode>()
        .map_err(|e| anyhow!("--gc-mode: {e}"))?;
    Ok(Box::new(
        ModelPts::new(spec, cfg).map_err(|e| anyhow!("{e}"))?,
    ))
}

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "not installed".into())
}

fn read_first(path: &str, key: Option<&str>) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match key {
        None => text.lines().next().unwrap_or("").trim().to_string(),
        Some(k) => text
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_once(['=', ':']))
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
            .unwrap_or_default(),
    }
}

pub fn setup_sheet(targets: Vec<TargetSheet>) -> SetupSheet {
    SetupSheet {
        tool: format!("openvsl vsl {}", env!("CARGO_PKG_VERSION")),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        date_utc: sh("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]),
        os: read_first("/etc/os-release", Some("PRETTY_NAME")),
        kernel: read_first("/proc/sys/kernel/osrelease", None),
        cpu: format!(
            "{} ({} CPUs)",
            read_first("/proc/cpuinfo", Some("model name")),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        machine_load: format!(
            "load average {} (shared machine)",
            read_first("/proc/loadavg", None)
        ),
        fio: sh("fio", &["--version"]),
        blkdiscard: sh("blkdiscard", &["--version"]),
        targets,
    }
}

pub fn pts(a: PtsArgs) -> Result<()> {
    if let Some(dir) = &a.render {
        return render_again(dir, a.pdf);
    }
    let tests = PtsTest::parse_list(&a.test).map_err(|e| anyhow!("--test: {e}"))?;
    let plan = plan_from_args(&a)?;
    let scale: f64 = a
        .scale
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v <= 1.0)
        .ok_or_else(|| anyhow!("--scale: '{}' must be a number in (0, 1]", a.scale))?;
    let jobs = crate::output::jobs(a.jobs).map_err(|e| anyhow!("--jobs: {e}"))?;
    // Open and check every target before anything is purged. A modelled
    // target is opened again for each of its tests (a fresh card each, so
    // its tests can run at once); only real targets are kept open.
    let mut targets = Vec::new();
    for spec in &a.targets {
        let t = open_target(spec, &a, scale)?;
        preflight(&plan, &tests, t.as_ref()).map_err(|e| anyhow!("{e}"))?;
        let sheet = TargetSheet {
            label: t.label().to_string(),
            description: t.description(),
            time: if t.is_virtual() { "virtual" } else { "wall" }.into(),
            capacity_bytes: t.capacity_bytes(),
            sector_bytes: t.sector_bytes(),
            wall_s: 0.0,
        };
        let kept = (!t.is_virtual()).then_some(t);
        targets.push((spec.clone(), sheet, Mutex::new(kept)));
    }
    let blockdevs: Vec<String> = a
        .targets
        .iter()
        .filter(|t| t.starts_with("blockdev:"))
        .cloned()
        .collect();
    confirm_purge(&blockdevs, a.yes)?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;

    let multi = MultiProgress::with_draw_target(if a.quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let style = ProgressStyle::with_template(
        "{prefix:<30} [{bar:16}] {pos}/{len} tests {elapsed_precise} {wide_msg}",
    )
    .expect("valid template")
    .progress_chars("=> ");
    let bars: Vec<ProgressBar> = targets
        .iter()
        .map(|(_, sheet, _)| {
            let bar = multi.add(ProgressBar::new(tests.len() as u64));
            bar.set_style(style.clone());
            bar.set_prefix(sheet.label.clone());
            bar
        })
        .collect();
    let wall = std::time::Instant::now();
    // Off a terminal the bars are hidden: one plain line per step instead,
    // stamped with the wall time since the start, for a log to tail.
    let plain = !a.quiet && !std::io::stderr().is_terminal();
    let work = job_list(&targets, &tests);
    let next = AtomicUsize::new(0);
    // (target, first test index, results, wall seconds) per job done.
    type Done = (usize, usize, Vec<TestResult>, f64);
    let done: Vec<Done> = std::thread::scope(|s| -> Result<Vec<Done>> {
        let workers: Vec<_> = (0..jobs.min(work.len()).max(1))
            .map(|_| {
                let (work, next, targets, bars) = (&work, &next, &targets, &bars);
                let (plan, tests, a) = (&plan, &tests, &a);
                s.spawn(move || -> Result<Vec<Done>> {
                    let mut out = Vec::new();
                    loop {
                        let j = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(ti, ref range)) = work.get(j) else {
                            return Ok(out);
                        };
                        let (spec, sheet, kept) = &targets[ti];
                        let mut target = match kept.lock().expect("target lock").take() {
                            Some(t) => t,
                            None => open_target(spec, a, scale)?,
                        };
                        let label = sheet.label.as_str();
                        let bar = &bars[ti];
                        let line = |m: &str| {
                            if plain {
                                eprintln!("{:>9.1} s  {label}: {m}", wall.elapsed().as_secs_f64());
                            }
                        };
                        let start = std::time::Instant::now();
                        let mut results = Vec::new();
                        for &test in &tests[range.clone()] {
                            let r = run_test(target.as_mut(), plan, test, &mut |m| {
                                line(m);
                                bar.set_message(m.to_string())
                            });
                            line(&format!(
                                "{} done: {} I/Os, {:.1} s target time{}",
                                test.name(),
                                r.ios,
                                r.target_s,
                                r.error
                                    .as_deref()
                                    .map(|e| format!(", error: {e}"))
                                    .unwrap_or_default()
                            ));
                            bar.inc(1);
                            results.push(r);
                        }
                        if bar.position() == tests.len() as u64 {
                            bar.finish_with_message("done");
                        }
                        out.push((ti, range.start, results, start.elapsed().as_secs_f64()));
                    }
                })
            })
            .collect();
        let mut all = Vec::new();
        for w in workers {
            all.extend(w.join().expect("pts worker panicked")?);
        }
        Ok(all)
    })?;
    // The results in the order of a sequential run: target by target, each
    // target's tests in the order asked for.
    let mut slots: Vec<Vec<Option<TestResult>>> =
        targets.iter().map(|_| vec![None; tests.len()]).collect();
    let mut per_target: Vec<TargetSheet> = targets.iter().map(|t| t.1.clone()).collect();
    for (ti, first, results, secs) in done {
        per_target[ti].wall_s += secs;
        for (k, r) in results.into_iter().enumerate() {
            slots[ti][first + k] = Some(r);
        }
    }
    let per_target: Vec<(TargetSheet, Vec<TestResult>)> = per_target
        .into_iter()
        .zip(slots)
        .map(|(sheet, rs)| {
            let rs = rs.into_iter().map(|r| r.expect("every job ran")).collect();
            (sheet, rs)
        })
        .collect();
    let wall_s = wall.elapsed().as_secs_f64();
    let mut sheets = Vec::new();
    let mut results = Vec::new();
    for (sh, r) in per_target {
        sheets.push(sh);
        results.extend(r);
    }
    let setup = setup_sheet(sheets);
    let doc = PtsResults {
        setup: &setup,
        plan: &plan,
        tests: tests.iter().map(|t| t.name()).collect(),
        results: &results,
    };
    crate::output::write_json(&a.out.join("results.json"), &doc)?;
    crate::pts_report::write_csv(&a.out, &results)?;
    let pages = crate::pts_report::render(&a.out, &setup, &plan, &tests, &results)?;
    if a.pdf {
        crate::pts_report::print_pdfs(&a.out, &pages)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if !a.quiet {
        print_summary(&results, &a.out, wall_s);
    }
    let failed: Vec<&str> = results.iter().filter_map(|r| r.error.as_deref()).collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} tests failed (the others' results are in {}): {}",
            failed.len(),
            results.len(),
            a.out.display(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// A target as the run knows it: its spec, its set-up sheet row and, for
/// a real target, the device opened by the preflight (taken by its job).
type Opened = (String, TargetSheet, Mutex<Option<Box<dyn PtsTarget>>>);

/// The jobs of a run, as (target, range of test indices): one per test of
/// a modelled target, one for all the tests of a real target (they share
/// the device). Ordered for the pool, longest first as the modelled runs
/// measured them (bench/RESULTS.md), so that no long job starts last; the
/// order changes no result.
fn job_list(targets: &[Opened], tests: &[PtsTest]) -> Vec<(usize, Range<usize>)> {
    let cost = |t: PtsTest| match t {
        PtsTest::Hir => 0,
        PtsTest::Wsat => 1,
        PtsTest::Iops => 2,
        PtsTest::Ecw => 3,
        PtsTest::Dirth => 4,
        PtsTest::Xsr => 5,
        PtsTest::Throughput => 6,
        PtsTest::Latency => 7,
    };
    let mut work: Vec<(usize, Range<usize>)> = Vec::new();
    for (ti, (_, sheet, _)) in targets.iter().enumerate() {
        if sheet.time == "wall" {
            work.push((ti, 0..tests.len()));
        }
    }
    let mut order: Vec<usize> = (0..tests.len()).collect();
    order.sort_by_key(|&k| cost(tests[k]));
    for k in order {
        for (ti, (_, sheet, _)) in targets.iter().enumerate() {
            if sheet.time == "virtual" {
                work.push((ti, k..k + 1));
            }
        }
    }
    work
}

fn print_summary(results: &[TestResult], out: &Path, wall_s: f64) {
    for r in results {
        let steady = r
            .steady
            .iter()
            .map(|s| match s.converged_round {
                Some(n) => format!("{}: steady at round {n}", s.variable),
                None => format!("{}: not steady in {} rounds", s.variable, s.rounds_run),
            })
            .collect::<Vec<_>>()
            .join("; ");
        println!(
            "{:<12} {:<34} {:>9.1} s target time  {}",
            r.test, r.target, r.target_s, steady
        );
    }
    println!(
        "report: {}  ({:.1} s wall)",
        out.join("index.html").display(),
        wall_s
    );
}
