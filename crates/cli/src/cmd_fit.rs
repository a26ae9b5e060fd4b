//! `vsl fit` (issue 29): fit a preset's free parameters to measured
//! figures (a TOML/CSV table, or a `vsl review` results.json of a real
//! device) and write the fitted preset file. The search and the objective
//! are `lab::fit`; this is the command: progress, the checkpoint that makes
//! a rerun resume, the report and the output files.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use device::Preset;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::fit::{self, Figure, FitRun, ParamDef, FAILED_COST};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct FitArgs {
    /// Measured figures: a .toml table (`[[figure]]` with test, format,
    /// threads, qd, statistic, value, tolerance, and optionally
    /// `range = [low, high]` for a figure measured as a range), a .csv
    /// with those columns (optionally low,high), or a `vsl review`
    /// results.json of a real device.
    #[arg(value_name = "FIGURES", required_unless_present = "list_params")]
    pub figures: Option<PathBuf>,
    /// Base preset (a name or PATH.toml): every parameter not fitted keeps its value.
    #[arg(long, default_value = "iodrive-duo-640-mlc")]
    pub device: String,
    /// Free parameters, comma-separated (see --list-params); default:
    /// host.read_ns,host.write_ns,vsl.reserved_fraction,vsl.gc_share,vsl.gc_background_lebs.
    #[arg(long, value_name = "A,B,C")]
    pub free: Option<String>,
    /// Fitted preset file to write.
    #[arg(
        long,
        value_name = "PATH.toml",
        required_unless_present = "list_params"
    )]
    pub out: Option<PathBuf>,
    /// Name of the fitted preset (default: the base's name with -fit).
    #[arg(long)]
    pub name: Option<String>,
    /// Fraction of the card each evaluation models (short runs on a scaled card).
    #[arg(long, default_value = "0.02", allow_hyphen_values = true)]
    pub scale: String,
    /// Seed of the runs and of the search's initial simplex.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Preconditioning round of each evaluation's review (virtual time).
    #[arg(long, default_value = "10s")]
    pub round: String,
    /// Measurement window of each figure's matrix point.
    #[arg(long, default_value = "5s")]
    pub window: String,
    /// Preconditioning cap per test.
    #[arg(long, default_value = "300s")]
    pub max_precondition: String,
    /// ioMemory device(s) modelled: all, or one member (figures measured on
    /// one attached loop device of a Duo are one member's).
    #[arg(long, default_value = "all")]
    pub member: String,
    /// After the fit, predict every figure's test at this format too
    /// (stock, hp, improved-write, max-write, op=PCT, capacity=SIZE).
    #[arg(long, value_name = "FORMAT")]
    pub predict: Option<String>,
    /// Nelder-Mead iterations (0: no search; the base preset is evaluated
    /// against the figures, and at --predict, as it is).
    #[arg(long, default_value_t = 30)]
    pub max_iters: u64,
    /// Stop the search once this many evaluations in a row have not lowered
    /// the best cost by --progress of it (a model's objective is noisy; 0:
    /// search until the simplex shrinks or --max-iters runs out). The 640
    /// MLC's fit of four parameters first gained at its 26th-28th
    /// evaluation: keep it well above the evaluations a search needs to
    /// find its way.
    #[arg(long, default_value_t = 40)]
    pub patience: usize,
    /// The share of the best cost a new point must gain to count as
    /// progress for --patience. Keep it within the objective's noise: on
    /// the 640 MLC's fit, points within 0.1 % of every range of the best
    /// cost 70-125.
    #[arg(long, default_value_t = fit::PROGRESS)]
    pub progress: f64,
    /// Initial simplex step, as a share of each parameter's range.
    #[arg(long, default_value_t = 0.25)]
    pub step: f64,
    /// Also refit without each figure and report the model's value of that
    /// figure at the refit's parameters (leave-one-out: a prediction by a
    /// fit that did not see it).
    #[arg(long)]
    pub loo: bool,
    /// How each leave-one-out refit searches: `surrogate` (default) on a
    /// quadratic surface fitted to every point the search evaluated and
    /// anchored at the fit (the refit's point: the fit moved by what
    /// leaving the figure out moves the surface's optimum), then one model
    /// evaluation at the refit's point. A refit point where the model fits
    /// the other figures worse than at the fit, by more than the
    /// objective's noise, is the surface's error, not a refit: it is
    /// replaced by the model's own refit (a search as `search`'s, from the
    /// point evaluated so far that fits the other figures best), reported
    /// as `loo_surface_rejected`. `search` on the model itself, as the
    /// main search (one search per figure: hours for a table of both
    /// formats).
    #[arg(long, default_value = "surrogate", value_parser = ["surrogate", "search"])]
    pub loo_method: String,
    /// Nelder-Mead iterations of each leave-one-out refit with
    /// `--loo-method search` (default: --max-iters); each starts at the
    /// fitted point.
    #[arg(long)]
    pub loo_iters: Option<u64>,
    /// `--loo-method surrogate`: rounds of refits. Each round after the
    /// first fits the surface again to every point evaluated so far (the
    /// previous round's refit points included: model values, never a
    /// left-out measurement) and refits every figure on it; the last
    /// round's predictions are reported. At most one evaluation per
    /// figure and round.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub loo_rounds: u32,
    /// After the search, evaluate the fitted preset once more on a card
    /// scaled by this (1: the full card) and report those figures too: the
    /// search runs on scaled cards, the confirmation says what the full
    /// card does. Its --round and --max-precondition grow with the card
    /// (SCALE / --scale times), so it reaches the same steady state.
    #[arg(long, value_name = "SCALE")]
    pub confirm: Option<String>,
    /// After the search, evaluate the fitted point with each free parameter
    /// moved across its range, the others as fitted (its bounds and the
    /// quarters between: up to five evaluations per parameter). Where the
    /// cost rises by less than the objective's noise (the largest of 1, one
    /// figure off by its tolerance; --progress of the best cost; and the
    /// spread of the costs of the points the search evaluated within 1 % of
    /// every range of the fit), the figures do not tell that point from the
    /// fit. These probes are slices; the points the search itself evaluated
    /// whose cost is within the noise of the fit's are counted too (they
    /// follow a valley across the axes where the search went), and
    /// --profile-iters refits the others at each probe. A parameter is
    /// pinned when every point not told apart lies within a quarter of its
    /// range of the fitted value. With --predict, each prediction is also
    /// made at the probes not told apart and at the evaluated points that
    /// reach furthest along each parameter, and the report gives the range.
    #[arg(long)]
    pub sensitivity: bool,
    /// With --sensitivity: at each probe, refit the other free parameters
    /// by a Nelder-Mead search of at most this many iterations from their
    /// fitted values (a profile, which follows one parameter making up for
    /// another; about n + 2 × N more evaluations per probe). 0: slices, the
    /// others as fitted.
    #[arg(long, default_value_t = 0, requires = "sensitivity")]
    pub profile_iters: u64,
    /// A review results.json input: the format the device was measured at.
    #[arg(long, default_value = "stock")]
    pub review_format: String,
    /// A review results.json input: relative tolerance of every figure.
    #[arg(long, default_value_t = 0.1)]
    pub review_tolerance: f64,
    /// A review results.json input: also fit each test's first
    /// preconditioning round (IOPS at 16T/16Q right after the review's
    /// purge and fill: the device's burst, or the host path's cap where
    /// that is lower; statistic first_round_iops). Free host.thread_ns
    /// with it to fit a host path that holds the device back (an attached
    /// card's FUSE and loop path). The device must start the review freshly
    /// formatted, as the model does.
    #[arg(long)]
    pub review_first_round: bool,
    /// Checkpoint of evaluated points (default: OUT with .checkpoint.jsonl);
    /// a rerun with the same inputs continues from it.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Write the report (figures, parameters, leave-one-out) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Threads per evaluation (default: the machine's CPUs, at most 2):
    /// with 2, a figures table of both formats runs its stock and hp tests
    /// at once. The figures are the same whatever the number.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// List the free parameters with their ranges and exit.
    #[arg(long)]
    pub list_params: bool,
    /// No progress bar or table.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A surface's leave-one-out refit that the model did not bear out.
#[derive(Clone, Serialize)]
struct LooRejected {
    /// The surface's refit point, one value per free parameter.
    surface_point: Vec<f64>,
    /// The held-in figures' cost on the model there, and at the fit.
    held_in_cost: f64,
    fit_held_in_cost: f64,
    /// The held-in cost where the model's own refit started (the best
    /// point evaluated so far for them) and where it ended.
    start_cost: f64,
    end_cost: f64,
}

#[derive(Serialize)]
struct FigureReport {
    figure: String,
    measured: f64,
    /// The figure was measured as this range; the errors are to its nearer
    /// end (0 inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_range: Option<[f64; 2]>,
    tolerance: f64,
    fitted: f64,
    error_pct: f64,
    within_tolerance: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_predicted: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_error_pct: Option<f64>,
    /// `--loo`: where the refit without this figure ended, one value per
    /// free parameter in the order of `parameters` (absent where no refit
    /// ran: a figure the free parameters never moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_point: Option<Vec<f64>>,
    /// `--loo-method surrogate`: the surface's refit point was rejected
    /// (the model fits the held-in figures worse there than at the fit,
    /// beyond the objective's noise) and `loo_point` is the model's own
    /// refit instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_surface_rejected: Option<LooRejected>,
    /// `--confirm SCALE`: the fitted preset's value on that card.
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmed: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmed_error_pct: Option<f64>,
}

#[derive(Serialize)]
struct ParamReport {
    name: &'static str,
    lo: f64,
    hi: f64,
    base: f64,
    fitted: f64,
    at_bound: Option<&'static str>,
    why: &'static str,
    /// `--sensitivity`: the fitted point with this parameter moved across
    /// its range.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    probes: Vec<Probe>,
    /// `--sensitivity`: true when every point the figures do not tell from
    /// the fit (probe or evaluated) lies within a quarter of the range of
    /// the fitted value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned: Option<bool>,
    /// `--sensitivity`: the lowest and highest value among the fitted one,
    /// the probes and the evaluated points the figures do not tell from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_told_apart: Option<[f64; 2]>,
    /// `--sensitivity`: the lowest and highest value among the points
    /// evaluated (search, refits and probes) whose cost is within the
    /// noise of the fit's.
    #[serde(skip_serializing_if = "Option::is_none")]
    evaluated_within_noise: Option<[f64; 2]>,
}

/// `--sensitivity`: the fitted point with one free parameter moved.
#[derive(Serialize, Clone)]
struct Probe {
    value: f64,
    /// Every free parameter's value at the probe (the others as fitted, or
    /// as refitted with `--profile-iters`).
    at: Vec<f64>,
    /// The objective there (1e9: the card failed to build or run).
    cost: f64,
    /// The card failed to build or run there (e.g. a reserve its raw
    /// capacity cannot hold): pinned, as no card.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    failed: bool,
    /// Its rise over the fitted point's cost.
    rise: f64,
    /// `--profile-iters`: the rise with the others as fitted, before the
    /// refit.
    #[serde(skip_serializing_if = "Option::is_none")]
    slice_rise: Option<f64>,
    /// The rise is at least the noise: the figures tell this point from
    /// the fit.
    pinned: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    tool: &'static str,
    base: &'a str,
    out: String,
    run: &'a FitRun,
    cost_before: f64,
    cost: f64,
    evaluations: usize,
    /// How the search ended: `converged` (the simplex shrank, or
    /// `--max-iters` ran out) or `stalled` (`--patience` evaluations
    /// without a gain of `--progress`).
    search_end: fit::SearchEnd,
    /// `--patience`: evaluations without a gain of `progress` (a share of
    /// the best cost) that end the search.
    patience: usize,
    progress: f64,
    figures: Vec<FigureReport>,
    parameters: Vec<ParamReport>,
    /// `--predict FORMAT`: the fitted preset's value of every figure's test there.
    predictions: Vec<Prediction>,
    /// Wall time of the search and of the leave-one-out refits, seconds.
    search_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_s: Option<f64>,
    /// `--loo`: how the refits searched ("surrogate" or "search").
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_method: Option<String>,
    /// `--loo-method surrogate`: the surface the refits searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_surface: Option<LooSurface>,
    /// `--sensitivity`: the cost rise below which a probe is not told from
    /// the fit: the largest of 1, --progress × cost and the spread of the
    /// costs of the `noise_points` (when there are three or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    noise: Option<f64>,
    /// `--loo-method surrogate`: the same noise, of the search's points
    /// alone: a refit point whose held-in cost exceeds the fit's by more
    /// is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    loo_noise: Option<f64>,
    /// `--sensitivity`: how many evaluated points lay within 1 % of every
    /// range of the fitted one, whose spread of costs is part of the noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_points: Option<usize>,
    /// `--sensitivity`: how many evaluated points cost less than the fit's
    /// cost plus the noise (the fitted one included).
    #[serde(skip_serializing_if = "Option::is_none")]
    points_within_noise: Option<usize>,
    /// `--profile-iters`: the refit's iterations at each probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile_iters: Option<u64>,
    /// `--confirm SCALE` and its wall time, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    confirm_scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirm_s: Option<f64>,
}

/// The response surface leave-one-out refits searched: fitted to how many
/// evaluated points, quadratic or (too few points) linear.
#[derive(Serialize)]
struct LooSurface {
    points: usize,
    quadratic: bool,
    /// `--loo-rounds`: the surface of the last round.
    rounds: u32,
    /// Where the surface, anchored at the fitted point, has its optimum
    /// with every figure (one value per free parameter, in its units):
    /// each refit's point is the fitted one moved by its refit's distance
    /// from this.
    optimum: Vec<f64>,
}

#[derive(Serialize)]
struct Prediction {
    figure: String,
    predicted: f64,
    /// `--sensitivity`: the lowest and highest prediction over the fitted
    /// point, the probes the figures do not tell from it and the evaluated
    /// points within the noise that reach furthest along each parameter.
    #[serde(skip_serializing_if = "Option::is_none")]
    spread: Option<[f64; 2]>,
    /// Those points: a probe as `parameter=value`, an evaluated point as
    /// `evaluated:parameter=value,...`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    spread_from: Vec<String>,
}

/// First line of a checkpoint: what the points were evaluated for.
#[derive(Serialize, Deserialize, PartialEq)]
struct Header {
    base: String,
    free: Vec<String>,
    figures: Vec<Figure>,
    scale: f64,
    seed: u64,
    round: String,
    window: String,
    max_precondition: String,
    member: String,
}

#[derive(Serialize, Deserialize)]
struct Point {
    values: Vec<f64>,
    /// The model's value of every figure; None when the card failed.
    model: Option<Vec<f64>>,
}

/// Evaluated points, remembered in memory and in the checkpoint file.
struct Evaluator<'a> {
    base: &'static Preset,
    free: &'a [&'static ParamDef],
    figures: &'a [Figure],
    run: &'a FitRun,
    cache: HashMap<String, Option<Vec<f64>>>,
    /// The points this run asked for (from the cache or not): a resumed
    /// run asks for the same ones, so what is built from them (the
    /// leave-one-out surface) is the same as an uninterrupted run's.
    asked: HashSet<String>,
    file: std::fs::File,
    bar: ProgressBar,
    evaluated: usize,
}

fn key(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.6e}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Evaluator<'_> {
    fn values(&self, x: &[f64]) -> Vec<f64> {
        self.free
            .iter()
            .zip(x)
            .map(|(d, &x)| fit::denormalise(d, x))
            .collect()
    }

    /// The model's figures at normalised point `x`.
    fn model(&mut self, x: &[f64]) -> Option<Vec<f64>> {
        let values = self.values(x);
        let k = key(&values);
        self.asked.insert(k.clone());
        if let Some(m) = self.cache.get(&k) {
            return m.clone();
        }
        let p = fit::apply(self.base, self.free, &values);
        let m = if p.vsl.check("fit").is_ok() {
            let p: &'static Preset = Box::leak(Box::new(p));
            fit::evaluate(p, self.figures, self.run).ok()
        } else {
            None
        };
        let line = serde_json::to_string(&Point {
            values,
            model: m.clone(),
        })
        .expect("serialisable");
        // The checkpoint is what makes an interrupted fit resumable: a
        // point is on disk before the search moves on.
        let _ = writeln!(self.file, "{line}");
        let _ = self.file.flush();
        self.cache.insert(k, m.clone());
        self.evaluated += 1;
        self.bar.inc(1);
        m
    }

    /// Every point this run asked for so far (from the checkpoint or run)
    /// whose card built: normalised parameters and the model's figures
    /// there. Points of the checkpoint this run has not asked for (an
    /// earlier run's leave-one-out) are left out.
    fn points(&self) -> Vec<(Vec<f64>, Vec<f64>)> {
        let mut v: Vec<(Vec<f64>, Vec<f64>)> = self
            .cache
            .iter()
            .filter(|(k, _)| self.asked.contains(*k))
            .filter_map(|(k, m)| {
                let values: Vec<f64> = k
                    .split(',')
                    .map(|v| v.parse().ok())
                    .collect::<Option<_>>()?;
                let x = self
                    .free
                    .iter()
                    .zip(&values)
                    .map(|(d, v)| ((v - d.lo) / (d.hi - d.lo)).clamp(0.0, 1.0))
                    .collect();
                Some((x, m.clone()?))
            })
            .collect();
        // The cache is a hash map: sort, so the surface is the same each run.
        v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        v
    }

    /// True when figure `j` was `value` at every point evaluated so far
    /// (more than one).
    fn constant(&self, j: usize, value: f64) -> bool {
        let points: Vec<&Vec<f64>> = self.cache.values().flatten().collect();
        points.len() > 1
            && points
                .iter()
                .all(|m| (m[j] - value).abs() <= 1e-9 * value.abs().max(1e-12))
    }

    fn cost(&mut self, x: &[f64], use_fig: &[bool]) -> f64 {
        match self.model(x) {
            Some(m) => fit::cost(self.figures, &m, use_fig),
            None => FAILED_COST,
        }
    }
}

fn list_params() {
    println!("{:<24} {:>10} {:>10}  why", "parameter", "low", "high");
    for p in fit::PARAMS {
        println!("{:<24} {:>10} {:>10}  {}", p.name, p.lo, p.hi, p.why);
    }
    println!(
        "\ndefault free set: {}\nstatistics: {}",
        fit::DEFAULT_FREE.join(","),
        fit::STATISTICS
            .iter()
            .map(|(s, _)| *s)
            .collect::<Vec<_>>()
            .join(", ")
    );
}

pub fn fit(a: FitArgs) -> Result<()> {
    if a.list_params {
        list_params();
        return Ok(());
    }
    // Every input is checked before anything is written.
    let out = a.out.clone().expect("clap requires --out");
    let figures_path = a.figures.clone().expect("clap requires FIGURES");
    if out.extension().is_none_or(|e| e != "toml") {
        bail!("--out: {} must end in .toml (a preset file)", out.display());
    }
    if !(a.progress > 0.0 && a.progress < 1.0) {
        bail!(
            "--progress: {} must be above 0 and below 1 (a share of the best cost)",
            a.progress
        );
    }
    if a.review_tolerance.is_nan() || a.review_tolerance <= 0.0 {
        bail!("--review-tolerance: {} must be > 0", a.review_tolerance);
    }
    fit::parse_format(&a.review_format).map_err(|e| anyhow!("--review-format: {e}"))?;
    if a.review_first_round && figures_path.extension().and_then(|e| e.to_str()) != Some("json") {
        bail!(
            "--review-first-round: {} is not a review results.json (a figures table names first_round_iops itself)",
            figures_path.display()
        );
    }
    let review = fit::ReviewInput {
        format: a.review_format.clone(),
        tolerance: a.review_tolerance,
        first_round: a.review_first_round,
    };
    let figures = fit::load_figures(&figures_path, &review).map_err(|e| anyhow!("{e}"))?;
    let base = Preset::resolve(&a.device).map_err(|e| anyhow!("--device: {e}"))?;
    let free_names: Vec<String> = match &a.free {
        Some(f) => f.split(',').map(|s| s.trim().to_string()).collect(),
        None => fit::DEFAULT_FREE.iter().map(|s| s.to_string()).collect(),
    };
    let free: Vec<&'static ParamDef> = free_names
        .iter()
        .map(|n| fit::param(n).map_err(|e| anyhow!("--free: {e}")))
        .collect::<Result<_>>()?;
    if free.is_empty() {
        bail!("--free: no parameters");
    }
    let scale: f64 = a
        .scale
        .parse()
        .ok()
        .filter(|v: &f64| *v > 0.0 && *v <= 1.0)
        .ok_or_else(|| anyhow!("--scale: '{}' must be a number in (0, 1]", a.scale))?;
    let confirm_scale = a
        .confirm
        .as_ref()
        .map(|c| {
            c.parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && *v <= 1.0)
                .ok_or_else(|| anyhow!("--confirm: '{c}' must be a number in (0, 1]"))
        })
        .transpose()?;
    if !(a.step > 0.0 && a.step <= 0.5) {
        bail!("--step: {} must be in (0, 0.5]", a.step);
    }
    let run = FitRun {
        scale,
        seed: a.seed,
        round: a.round.clone(),
        window: a.window.clone(),
        max_precondition: a.max_precondition.clone(),
        member: device::MemberSel::parse(&a.member).map_err(|e| anyhow!("--member: {e}"))?,
        jobs: crate::output::jobs(a.jobs).map_err(|e| anyhow!("--jobs: {e}"))?,
    };
    if let Some(p) = &a.predict {
        fit::parse_format(p).map_err(|e| anyhow!("--predict: {e}"))?;
    }
    lab::review::ReviewPlan {
        round: run.round.clone(),
        window: run.window.clone(),
        max_precondition: run.max_precondition.clone(),
        ..Default::default()
    }
    .timing(false)
    .map_err(|e| anyhow!("{e}"))?;

    // The checkpoint: its header must be this fit's, else refuse.
    let ck_path = a.checkpoint.clone().unwrap_or_else(|| {
        let mut p = out.clone().into_os_string();
        p.push(".checkpoint.jsonl");
        PathBuf::from(p)
    });
    let header = Header {
        base: serde_json::to_string(&device::preset_file::PresetFile::of(base))?,
        free: free_names.clone(),
        figures: figures.clone(),
        scale,
        seed: a.seed,
        round: a.round.clone(),
        window: a.window.clone(),
        max_precondition: a.max_precondition.clone(),
        member: a.member.clone(),
    };
    let cache = read_checkpoint(&ck_path, &header)?;
    let resumed = cache.len();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ck_path)
        .with_context(|| format!("cannot write the checkpoint {}", ck_path.display()))?;
    if resumed == 0 {
        file.set_len(0)?;
        writeln!(file, "{}", serde_json::to_string(&header)?)?;
    } else if !std::fs::read(&ck_path)?.ends_with(b"\n") {
        // The last line was torn by an interruption: end it, so the next
        // point starts a line of its own.
        writeln!(file)?;
    }

    let n = free.len() as u64;
    let surrogate_loo = a.loo_method == "surrogate";
    let loo_searches = if a.loo { figures.len() as u64 } else { 0 };
    // Nelder-Mead evaluates about n + 1 points to start and 1-2 per
    // iteration (n more on a shrink): an estimate for the bar and ETA. A
    // surrogate refit costs at most one evaluation.
    let per_loo = if surrogate_loo {
        a.loo_rounds as u64
    } else {
        n + 1 + 2 * a.loo_iters.unwrap_or(a.max_iters)
    };
    let probes = if a.sensitivity {
        // A profile's refit: a simplex of n - 1 + 1 points and 1-2 per
        // iteration.
        let refit = if a.profile_iters > 0 && n > 1 {
            n + 2 * a.profile_iters
        } else {
            0
        };
        SENSITIVITY_AT.len() as u64 * n * (1 + refit)
    } else {
        0
    };
    let estimate = (n + 1 + 2 * a.max_iters) + loo_searches * per_loo + probes;
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(estimate), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "fit [{bar:30}] {pos}/~{len} evaluations, {elapsed} elapsed, eta {eta} {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b
    };
    if resumed > 0 && !a.quiet {
        bar.println(format!(
            "resuming: {resumed} evaluated points from {}",
            ck_path.display()
        ));
    }
    let mut ev = Evaluator {
        base,
        free: &free,
        figures: &figures,
        run: &run,
        cache,
        asked: HashSet::new(),
        file,
        bar: bar.clone(),
        evaluated: 0,
    };
    let started = std::time::Instant::now();
    let all = vec![true; figures.len()];
    let x0: Vec<f64> = free.iter().map(|d| fit::normalise(d, base)).collect();
    let cost_before = ev.cost(&x0, &all);
    bar.set_message("search");
    let (best, cost, search_end) = if a.max_iters == 0 {
        (x0.clone(), cost_before, fit::SearchEnd::None)
    } else {
        fit::nelder_mead(
            &x0,
            a.step,
            a.seed,
            a.max_iters,
            a.patience,
            a.progress,
            &mut |x| ev.cost(x, &all),
        )
        .map_err(|e| anyhow!("search: {e}"))?
    };
    let (best, cost) = if cost_before <= cost {
        (x0.clone(), cost_before)
    } else {
        (best, cost)
    };
    let fitted_model = ev
        .model(&best)
        .ok_or_else(|| anyhow!("the best point's card failed to build"))?;

    let search_s = started.elapsed().as_secs_f64();
    let mut loo = vec![None; figures.len()];
    let mut loo_points: Vec<Option<Vec<f64>>> = vec![None; figures.len()];
    let mut loo_surface = None;
    let mut loo_rejected: Vec<Option<LooRejected>> = vec![None; figures.len()];
    // A surface's refit is checked against the fit within the objective's
    // noise as the search saw it (before any refit's point).
    let (loo_noise, _) = fit::objective_noise(&figures, &ev.points(), &best, cost, a.progress);
    // Refit rounds: none without --loo, one on the model, --loo-rounds on
    // a surface.
    let rounds = match (a.loo, surrogate_loo) {
        (false, _) => 0,
        (true, false) => 1,
        (true, true) => a.loo_rounds,
    };
    for round in 1..=rounds {
        // A figure the free parameters never moved (the same value at
        // every point evaluated so far) changes the objective by a
        // constant: the search without it is the search with it.
        let refit: Vec<bool> = (0..figures.len())
            .map(|j| !ev.constant(j, fitted_model[j]))
            .collect();
        // On a surface: every refit's point at once (no model run).
        let surface_points = if surrogate_loo {
            let points = ev.points();
            let s = fit::Surrogate::fit(&points).ok_or_else(|| {
                anyhow!(
                    "leave-one-out: {} evaluated points are too few for a surface \
                     over {n} parameters (raise --max-iters, or --loo-method search)",
                    points.len()
                )
            })?;
            let quadratic = s.is_quadratic();
            // On the 640 MLC's fit of 2026-12-07 the surface's own optimum
            // had the move hold at 0.20 against the fit's 0.27: each refit
            // is the fit moved by its distance from that optimum.
            let (optimum, pts) = fit::surface_refits(
                s,
                &figures,
                &best,
                &fitted_model,
                &refit,
                a.step / 2.0,
                a.seed,
            )
            .map_err(|e| anyhow!("leave-one-out search: {e}"))?;
            loo_surface = Some(LooSurface {
                points: points.len(),
                quadratic,
                rounds: round,
                optimum: ev.values(&optimum),
            });
            Some(pts)
        } else {
            None
        };
        let of_rounds = if rounds > 1 {
            format!(", round {round}/{rounds}")
        } else {
            String::new()
        };
        for j in 0..figures.len() {
            if !refit[j] {
                loo[j] = Some(fitted_model[j]);
                continue;
            }
            bar.set_message(format!(
                "leave-one-out {}/{}{of_rounds}",
                j + 1,
                figures.len()
            ));
            // The refit's point on the surface, or a search of the model.
            let bj = match &surface_points {
                Some(pts) => pts[j].clone().expect("a refit for every figure asked"),
                None => {
                    let mut use_fig = all.clone();
                    use_fig[j] = false;
                    let iters = a.loo_iters.unwrap_or(a.max_iters);
                    fit::nelder_mead(
                        &best,
                        a.step / 2.0,
                        a.seed,
                        iters,
                        a.patience,
                        a.progress,
                        &mut |x| ev.cost(x, &use_fig),
                    )
                    .map_err(|e| anyhow!("leave-one-out search: {e}"))?
                    .0
                }
            };
            // The surface's point, checked on the model in the last round:
            // where the model fits the held-in figures worse there than at
            // the fit, the model's own refit replaces it.
            let bj = if surface_points.is_some() && round == rounds {
                let points = ev.points();
                let iters = a.loo_iters.unwrap_or(a.max_iters);
                // The first call is the check; a second starts the model's
                // refit: the bar grows by a search's estimate then.
                let mut calls = 0;
                let (p, rejected) = fit::checked_refit(
                    &figures,
                    j,
                    bj,
                    &fitted_model,
                    &points,
                    loo_noise,
                    &fit::RefitSearch {
                        step: a.step / 2.0,
                        seed: a.seed,
                        max_iters: iters,
                        patience: a.patience,
                        progress: a.progress,
                    },
                    &mut |x| {
                        calls += 1;
                        if calls == 2 {
                            ev.bar.inc_length(n + 1 + 2 * iters);
                            ev.bar.set_message(format!(
                                "leave-one-out {}/{}: the surface's refit rejected, refitting on the model",
                                j + 1,
                                figures.len()
                            ));
                        }
                        ev.model(x)
                    },
                )
                .map_err(|e| anyhow!("leave-one-out search: {e}"))?;
                loo_rejected[j] = rejected.map(|r| LooRejected {
                    surface_point: ev.values(&r.surface_point),
                    held_in_cost: r.held_in_cost,
                    fit_held_in_cost: r.fit_held_in_cost,
                    start_cost: r.start_cost,
                    end_cost: r.end_cost,
                });
                p
            } else {
                bj
            };
            // What is reported is the model's value at the refit's point.
            loo[j] = ev.model(&bj).map(|m| m[j]);
            loo_points[j] = Some(ev.values(&bj));
        }
    }
    // After the refits, so that the surface they search is the same with
    // or without the probes.
    let mut probes: Vec<Vec<(Probe, Vec<f64>)>> = vec![Vec::new(); free.len()];
    // The objective's noise as this fit saw it: how far apart the costs
    // of the points evaluated around the fitted one (within 1 % of every
    // range) lie. A nearby run's stalls fall differently, so a probe whose
    // rise is within that spread is not told apart from the fit.
    let (noise, near) = fit::objective_noise(&figures, &ev.points(), &best, cost, a.progress);
    if a.sensitivity {
        for (i, d) in free.iter().enumerate() {
            for xi in SENSITIVITY_AT {
                if (best[i] - xi).abs() < 1e-9 {
                    continue;
                }
                let value = fit::denormalise(d, xi);
                bar.set_message(format!("sensitivity: {} at {value}", d.name));
                let mut x = best.clone();
                x[i] = xi;
                let slice = ev.cost(&x, &all);
                let mut c = slice;
                if a.profile_iters > 0 && free.len() > 1 {
                    // The others refitted with this one held: the search
                    // moves only them.
                    let others: Vec<usize> = (0..free.len()).filter(|&j| j != i).collect();
                    let start: Vec<f64> = others.iter().map(|&j| x[j]).collect();
                    let at = |y: &[f64]| {
                        let mut z = x.clone();
                        for (&j, &v) in others.iter().zip(y) {
                            z[j] = v;
                        }
                        z
                    };
                    let (y, _, _) = fit::nelder_mead(
                        &start,
                        a.step / 2.0,
                        a.seed,
                        a.profile_iters,
                        0,
                        a.progress,
                        &mut |y| ev.cost(&at(y), &all),
                    )
                    .map_err(|e| anyhow!("--profile-iters: {e}"))?;
                    let z = at(&y);
                    let refit = ev.cost(&z, &all);
                    if refit < slice {
                        (x, c) = (z, refit);
                    }
                }
                let failed = c >= FAILED_COST;
                let rise = c - cost;
                probes[i].push((
                    Probe {
                        value,
                        at: ev.values(&x),
                        cost: c,
                        rise,
                        slice_rise: (a.profile_iters > 0).then_some(slice - cost),
                        failed,
                        pinned: failed || rise >= noise,
                    },
                    x,
                ));
            }
        }
    }
    // Every point evaluated (search, refits, probes) the figures do not
    // tell from the fit: where the search went along a valley, slices or
    // not.
    let within: Vec<Vec<f64>> = if a.sensitivity {
        ev.points()
            .into_iter()
            .filter(|(_, m)| fit::cost(&figures, m, &all) < cost + noise)
            .map(|(x, _)| x)
            .collect()
    } else {
        Vec::new()
    };
    // For each parameter, the evaluated points within the noise furthest
    // below and above the fit along it.
    let reach: Vec<[Option<&Vec<f64>>; 2]> = (0..free.len())
        .map(|i| {
            let lo = within
                .iter()
                .filter(|x| x[i] < best[i])
                .min_by(|a, b| a[i].total_cmp(&b[i]));
            let hi = within
                .iter()
                .filter(|x| x[i] > best[i])
                .max_by(|a, b| a[i].total_cmp(&b[i]));
            [lo, hi]
        })
        .collect();
    bar.finish_and_clear();

    let values = ev.values(&best);
    let mut fitted = fit::apply(base, &free, &values);
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-fit", base.name));
    fitted.name = Box::leak(name.into_boxed_str());
    fitted.description = Box::leak(
        format!(
            "{} fitted by vsl fit to {} figures of {} ({})",
            base.name,
            figures.len(),
            figures_path.display(),
            free_names.join(", ")
        )
        .into_boxed_str(),
    );
    let text = device::preset_file::to_toml(&fitted);
    // The written file must load back.
    device::preset_file::parse(&text, &out.display().to_string())
        .map_err(|e| anyhow!("fitted preset does not check: {e}"))?;
    std::fs::write(&out, &text).with_context(|| format!("cannot write {}", out.display()))?;

    let figs: Vec<FigureReport> = figures
        .iter()
        .zip(&fitted_model)
        .zip(&loo)
        .zip(loo_points)
        .zip(loo_rejected)
        .map(
            |((((f, &m), l), loo_point), loo_surface_rejected)| FigureReport {
                figure: f.label(),
                measured: f.value,
                measured_range: f.range,
                tolerance: f.tolerance,
                fitted: m,
                error_pct: fit::relative_error(f, m) * 100.0,
                within_tolerance: fit::error(f, m).abs() <= 1.0,
                loo_predicted: *l,
                loo_error_pct: l.map(|l| fit::relative_error(f, l) * 100.0),
                loo_point,
                loo_surface_rejected,
                confirmed: None,
                confirmed_error_pct: None,
            },
        )
        .collect();
    let mut params: Vec<ParamReport> = free
        .iter()
        .zip(&best)
        .zip(&values)
        .zip(&x0)
        .zip(&probes)
        .map(|((((d, &x), &v), &x0), pr)| ParamReport {
            name: d.name,
            lo: d.lo,
            hi: d.hi,
            base: fit::denormalise(d, x0),
            fitted: v,
            at_bound: if x <= 0.005 {
                Some("low")
            } else if x >= 0.995 {
                Some("high")
            } else {
                None
            },
            why: d.why,
            probes: pr.iter().map(|(p, _)| p.clone()).collect(),
            pinned: None,
            not_told_apart: None,
            evaluated_within_noise: None,
        })
        .collect();
    if a.sensitivity {
        for (i, (p, pr)) in params.iter_mut().zip(&probes).enumerate() {
            let d = free[i];
            // Normalised: the fitted point, the probes not told apart and
            // the evaluated points within the noise.
            let [elo, ehi] = reach[i].map(|x| x.map_or(best[i], |x| x[i]));
            let (lo, hi) = pr
                .iter()
                .filter(|(q, _)| !q.pinned)
                .fold((elo, ehi), |(lo, hi), (_, x)| (lo.min(x[i]), hi.max(x[i])));
            p.evaluated_within_noise = Some([fit::denormalise(d, elo), fit::denormalise(d, ehi)]);
            p.not_told_apart = Some([fit::denormalise(d, lo), fit::denormalise(d, hi)]);
            p.pinned = Some(best[i] - lo < PINNED_WITHIN && hi - best[i] < PINNED_WITHIN);
        }
    }
    let report = Report {
        tool: "openvsl-fit",
        base: base.name,
        out: out.display().to_string(),
        run: &run,
        cost_before,
        cost,
        evaluations: ev.cache.len(),
        search_end,
        patience: a.patience,
        progress: a.progress,
        figures: figs,
        parameters: params,
        predictions: Vec::new(),
        search_s: 0.0,
        loo_s: None,
        loo_method: a.loo.then(|| a.loo_method.clone()),
        loo_surface,
        noise: a.sensitivity.then_some(noise),
        loo_noise: (a.loo && surrogate_loo).then_some(loo_noise),
        noise_points: a.sensitivity.then_some(near),
        points_within_noise: a.sensitivity.then_some(within.len()),
        profile_iters: (a.sensitivity && a.profile_iters > 0).then_some(a.profile_iters),
        confirm_scale: None,
        confirm_s: None,
    };
    let mut report = report;
    report.search_s = search_s;
    report.loo_s = a.loo.then(|| started.elapsed().as_secs_f64() - search_s);
    if let Some(c) = confirm_scale {
        let confirm_started = std::time::Instant::now();
        let leaked: &'static Preset = Box::leak(Box::new(fitted.clone()));
        // A card c / scale times the size takes that much longer to write
        // through, so its preconditioning rounds and cap stretch by the
        // same factor (as `vsl validate`'s do): the confirmation measures
        // the same steady state. The measurement window stays.
        let stretch = |what: &str, d: &str| -> Result<String> {
            let ns = workload::units::parse_duration_ns(d).map_err(|e| anyhow!("{what}: {e}"))?;
            Ok(format!("{}ns", (ns as f64 * c / scale).round() as u64))
        };
        let full = FitRun {
            scale: c,
            round: stretch("--round", &run.round)?,
            max_precondition: stretch("--max-precondition", &run.max_precondition)?,
            ..run.clone()
        };
        let m = fit::evaluate(leaked, &figures, &full).map_err(|e| anyhow!("--confirm: {e}"))?;
        for ((r, f), v) in report.figures.iter_mut().zip(&figures).zip(m) {
            r.confirmed = Some(v);
            r.confirmed_error_pct = Some(fit::relative_error(f, v) * 100.0);
        }
        report.confirm_scale = Some(c);
        report.confirm_s = Some(confirm_started.elapsed().as_secs_f64());
    }
    if let Some(fmt) = &a.predict {
        // A `vsl validate` row is measured at its own table's format.
        let preds: Vec<Figure> = figures
            .iter()
            .filter(|f| !f.is_row())
            .map(|f| Figure {
                format: fmt.clone(),
                ..f.clone()
            })
            .collect();
        let leaked: &'static Preset = Box::leak(Box::new(fitted.clone()));
        let m = fit::evaluate(leaked, &preds, &run).map_err(|e| anyhow!("--predict: {e}"))?;
        report.predictions = preds
            .iter()
            .zip(m)
            .map(|(f, v)| Prediction {
                figure: f.label(),
                predicted: v,
                spread: a.sensitivity.then_some([v, v]),
                spread_from: Vec::new(),
            })
            .collect();
        // The same predictions at every probe the figures do not tell from
        // the fit, and at the evaluated points within the noise that reach
        // furthest along each parameter.
        let mut at: Vec<(String, &Vec<f64>)> = Vec::new();
        for (d, pr) in free.iter().zip(&probes) {
            for (p, x) in pr.iter().filter(|(p, _)| !p.pinned) {
                at.push((format!("{}={}", d.name, p.value), x));
            }
        }
        for x in reach.iter().flatten().flatten() {
            let label = free
                .iter()
                .zip(ev.values(x))
                .map(|(d, v)| format!("{}={}", d.name, num(v)))
                .collect::<Vec<_>>()
                .join(",");
            at.push((format!("evaluated:{label}"), x));
        }
        // Each point once; the fit's own prediction is made above.
        let mut done: HashSet<String> = HashSet::from([key(&best)]);
        for (label, x) in at {
            if !done.insert(key(x)) {
                continue;
            }
            let p = fit::apply(base, &free, &ev.values(x));
            let p: &'static Preset = Box::leak(Box::new(p));
            let m =
                fit::evaluate(p, &preds, &run).map_err(|e| anyhow!("--predict at {label}: {e}"))?;
            for (r, v) in report.predictions.iter_mut().zip(m) {
                if let Some(s) = r.spread.as_mut() {
                    s[0] = s[0].min(v);
                    s[1] = s[1].max(v);
                }
                r.spread_from.push(label.clone());
            }
        }
    }
    if let Some(j) = &a.json {
        crate::output::write_json(j, &report)?;
    }
    if !a.quiet {
        print_report(&report, resumed, ev.evaluated);
    }
    Ok(())
}

/// A parameter's value for the report: whole above 100, else up to four
/// decimals.
fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// `--sensitivity`: where each free parameter is probed, as a share of its
/// range (the others as fitted).
const SENSITIVITY_AT: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// `--sensitivity`: a parameter is pinned when every point the figures do
/// not tell from the fit lies within this share of its range of the fitted
/// value (the probes' spacing).
const PINNED_WITHIN: f64 = 0.25;

fn read_checkpoint(path: &Path, header: &Header) -> Result<HashMap<String, Option<Vec<f64>>>> {
    let mut cache = HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(cache);
    };
    let mut lines = text.lines();
    let Some(first) = lines.next() else {
        return Ok(cache);
    };
    let h: Header = serde_json::from_str(first).map_err(|_| {
        anyhow!(
            "{}: not a vsl fit checkpoint; remove it or give another --checkpoint",
            path.display()
        )
    })?;
    if h != *header {
        bail!(
            "{}: the checkpoint of another fit (other figures, base, free parameters or run options); remove it or give another --checkpoint",
            path.display()
        );
    }
    for l in lines {
        // A line cut short by an interruption is dropped (re-evaluated).
        if let Ok(p) = serde_json::from_str::<Point>(l) {
            cache.insert(key(&p.values), p.model);
        }
    }
    Ok(cache)
}

fn print_report(r: &Report, resumed: usize, evaluated: usize) {
    println!(
        "vsl fit: {} evaluations ({} from the checkpoint, {} run), cost {:.3} -> {:.3}{}",
        resumed + evaluated,
        resumed,
        evaluated,
        r.cost_before,
        r.cost,
        match r.search_end {
            fit::SearchEnd::Converged => String::new(),
            fit::SearchEnd::None => " (--max-iters 0: the base preset, no search)".into(),
            fit::SearchEnd::Stalled => format!(
                " (the search stopped after {} evaluations without a {} % gain, --patience)",
                r.patience,
                r.progress * 100.0
            ),
        }
    );
    // The leave-one-out and confirmation columns only where they were run.
    let optional = |loo: String, confirmed: String| {
        let mut cols = String::new();
        if r.loo_s.is_some() {
            cols += &format!(" {loo:>10}");
        }
        if r.confirm_scale.is_some() {
            cols += &format!(" {confirmed:>12}");
        }
        cols
    };
    println!(
        "\n{:<60} {:>12} {:>12} {:>8} {:>6}{}",
        "figure",
        "measured",
        "fitted",
        "error",
        "tol",
        optional(
            "LOO error".into(),
            r.confirm_scale
                .map(|c| format!("scale {c}"))
                .unwrap_or_default()
        )
    );
    let pct = |e: Option<f64>| e.map(|e| format!("{e:.1}%")).unwrap_or_else(|| "-".into());
    for f in &r.figures {
        println!(
            "{:<60} {:>12} {:>12.1} {:>7.1}% {:>5.0}%{}",
            f.figure,
            match f.measured_range {
                Some([lo, hi]) => format!("{lo}-{hi}"),
                None => format!("{:.1}", f.measured),
            },
            f.fitted,
            f.error_pct,
            f.tolerance * 100.0,
            optional(pct(f.loo_error_pct), pct(f.confirmed_error_pct))
        );
    }
    println!(
        "search {:.0} s{}{}",
        r.search_s,
        r.loo_s
            .map(|l| format!(
                ", leave-one-out {l:.0} s ({})",
                match &r.loo_surface {
                    Some(s) => format!(
                        "refits on a {} surface of {} evaluated points{}, each refit's point on the model",
                        if s.quadratic { "quadratic" } else { "linear" },
                        s.points,
                        if s.rounds > 1 {
                            format!(" in round {}", s.rounds)
                        } else {
                            String::new()
                        }
                    ),
                    None => "refits on the model".into(),
                }
            ))
            .unwrap_or_default(),
        r.confirm_s
            .map(|c| format!(", confirmation {c:.0} s"))
            .unwrap_or_default()
    );
    println!(
        "\n{:<24} {:>12} {:>12} {:>12} {:>12}  bound",
        "parameter", "low", "high", "base", "fitted"
    );
    for p in &r.parameters {
        println!(
            "{:<24} {:>12} {:>12} {:>12.4} {:>12.4}  {}",
            p.name,
            p.lo,
            p.hi,
            p.base,
            p.fitted,
            p.at_bound.unwrap_or("-")
        );
    }
    if r.figures.iter().any(|f| f.loo_point.is_some()) {
        // Where each refit went: a figure held out that pulls the others'
        // fit somewhere else shows here, with the parameters it moved.
        print!("\n{:<60}", "leave-one-out refit's point (held-out figure)");
        for p in &r.parameters {
            print!(" {:>12}", short_name(p.name));
        }
        println!();
        let row = |name: &str, point: &[f64]| {
            print!("{name:<60}");
            for v in point {
                print!(" {v:>12.4}");
            }
            println!();
        };
        for f in &r.figures {
            if let Some(point) = &f.loo_point {
                row(&f.figure, point);
            }
        }
        if let Some(s) = &r.loo_surface {
            // Each refit's point is the fitted one moved by its refit's
            // distance from this.
            row(
                "(the anchored surface's own optimum, every figure)",
                &s.optimum,
            );
        }
        // Surface refits the model did not bear out, and what replaced
        // them.
        for f in &r.figures {
            if let Some(x) = &f.loo_surface_rejected {
                println!(
                    "{}: the surface's refit point was rejected (the other figures' cost on the model {:.2} there, {:.2} at the fit, noise {:.2}); the model's own refit from the best point evaluated for them ({:.2}) ended at {:.2}",
                    f.figure,
                    x.held_in_cost,
                    x.fit_held_in_cost,
                    r.loo_noise.unwrap_or(0.0),
                    x.start_cost,
                    x.end_cost
                );
            }
        }
    }
    if let Some(noise) = r.noise {
        println!(
            "\nsensitivity: each parameter moved across its range, {}; the cost at the fit {:.3}; a rise below {noise:.3}, the noise (at least 1, or the spread of the costs of the {} points evaluated within 1 % of the fit), is a point the figures do not tell apart from it; {} evaluated points are within it",
            match r.profile_iters {
                Some(n) => format!("the others refitted ({n} iterations: a profile)"),
                None => "the others as fitted (slices)".into(),
            },
            r.cost,
            r.noise_points.unwrap_or(0),
            r.points_within_noise.unwrap_or(0)
        );
        for p in &r.parameters {
            let span = match (p.pinned, p.not_told_apart) {
                (Some(false), Some([lo, hi])) => {
                    format!("NOT PINNED over {}-{}", num(lo), num(hi))
                }
                _ => "pinned".into(),
            };
            let seen = p
                .evaluated_within_noise
                .map(|[lo, hi]| {
                    format!(
                        " (evaluated points within the noise: {}-{})",
                        num(lo),
                        num(hi)
                    )
                })
                .unwrap_or_default();
            println!("  {:<24} {span}{seen}", p.name);
            for q in &p.probes {
                println!(
                    "    {:>12}  {:>14}{}{}",
                    num(q.value),
                    if q.failed {
                        "no card".to_string()
                    } else {
                        format!("{:+.3}", q.rise)
                    },
                    match q.slice_rise {
                        Some(s) if !q.failed && s != q.rise => format!(
                            "  (as fitted {s:+.3}; refitted at {})",
                            q.at.iter().map(|v| num(*v)).collect::<Vec<_>>().join(", ")
                        ),
                        _ => String::new(),
                    },
                    if q.pinned { "" } else { "  not told apart" },
                );
            }
        }
    }
    for p in &r.predictions {
        match p.spread {
            Some([lo, hi]) if !p.spread_from.is_empty() => println!(
                "predicted: {:<44} {:>12.1}   {lo:.1}-{hi:.1} over the fit and {} points not told apart from it",
                p.figure,
                p.predicted,
                p.spread_from.len()
            ),
            _ => println!("predicted: {:<44} {:>12.1}", p.figure, p.predicted),
        }
    }
    println!("\nwrote {}", r.out);
}

/// A parameter's name without its table (`vsl.gc_share` -> `gc_share`),
/// cut to a column's width.
fn short_name(name: &str) -> String {
    let n = name.rsplit('.').next().unwrap_or(name);
    n.chars().take(12).collect()
}
