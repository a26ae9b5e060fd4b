use crate::args::{CardArgs, RunArgs, WorkloadArgs};
use crate::health_series::{self, HealthPoint, Sampled};
use crate::output;
use anyhow::{anyhow, bail, Context, Result};
use device::{Card, CardConfig, VirtualDevice};
use lab::{precondition_fill, RunOptions};
use realtime::{FillPattern, LayoutMode};
use sim::Nanos;
use workload::jobfile::{Job, JobFile};
use workload::units::{parse_duration_ns, parse_percent, parse_size};
use workload::{BlockSizes, Distribution, Extent, PlannedSpec, Profile, WorkloadSpec};

/// Builds the card configuration from the command line (the same parsing
/// `vsl attach` uses, so both spell a card the same way).
pub fn card_config(a: &CardArgs) -> Result<CardConfig> {
    let spec = a.spec.spec();
    let mut c = device::card_config(&spec)?;
    // Virtual-time runs carry no data: no per-slot sequence numbers.
    c.track_sequence = false;
    c.gc_mode = a.gc_mode.parse().map_err(|e| anyhow!("--gc-mode: {e}"))?;
    c.read_priority = match a.read_priority.as_str() {
        "on" => true,
        "off" => false,
        "preset" => c.read_priority,
        o => {
            return Err(anyhow!(
                "--read-priority: '{o}' (expected on, off or preset)"
            ))
        }
    };
    let pct = parse_percent(&a.buffer_compress_percentage)
        .map_err(|e| anyhow!("--buffer-compress-percentage: {e}"))?;
    if pct >= 1.0 {
        return Err(anyhow!(
            "--buffer-compress-percentage: {}% leaves no data (expected 0 to 99)",
            pct * 100.0
        ));
    }
    c.data_compressibility = 1.0 - pct;
    c.suspend_ns = match a.suspend.as_str() {
        "off" => None,
        "preset" => c.suspend_ns,
        d => Some(parse_duration_ns(d).map_err(|e| anyhow!("--suspend: {e}"))?),
    };
    c.chunk_bytes = parse_size(&a.chunk).map_err(|e| anyhow!("--chunk: {e}"))?;
    c.environment.ambient_c = a
        .ambient_temp
        .parse()
        .ok()
        .filter(|t: &f64| (-40.0..=80.0).contains(t))
        .ok_or_else(|| {
            anyhow!(
                "--ambient-temp: '{}' is not a temperature in °C from -40 to 80",
                a.ambient_temp
            )
        })?;
    c.environment.airflow_lfm = a
        .airflow
        .parse()
        .ok()
        .filter(|f: &f64| (0.0..=5000.0).contains(f))
        .ok_or_else(|| {
            anyhow!(
                "--airflow: '{}' is not an airflow in LFM from 0 to 5000",
                a.airflow
            )
        })?;
    c.environment.external_power = match a.external_power.as_str() {
        "on" => true,
        "off" => false,
        s => bail!("--external-power: '{s}' (expected on or off)"),
    };
    a.reliability.apply(&mut c)?;
    Ok(c)
}

/// Builds the workload from a profile and fio-style overrides.
pub fn workload_spec(a: &WorkloadArgs) -> Result<PlannedSpec> {
    let mix = a
        .rwmixread
        .as_deref()
        .map(parse_percent)
        .transpose()
        .map_err(|e| anyhow!("--rwmixread: {e}"))?;
    let mut spec = match &a.profile {
        Some(p) => Profile::by_name(p)
            .ok_or_else(|| {
                let names: Vec<_> = Profile::all().iter().map(|p| p.name).collect();
                anyhow!("unknown profile '{p}' (known: {})", names.join(", "))
            })?
            .spec(),
        None => WorkloadSpec::from_rw(a.rw.as_deref().unwrap_or("randwrite"), mix)?,
    };
    if a.profile.is_some() {
        if let Some(rw) = &a.rw {
            let s = WorkloadSpec::from_rw(rw, mix.or(Some(spec.read_fraction)))?;
            spec.pattern = s.pattern;
            spec.read_fraction = s.read_fraction;
        } else if let Some(m) = mix {
            spec.read_fraction = m;
        }
    }
    if let Some(bs) = &a.bs {
        spec.block_sizes = BlockSizes::Fixed(parse_size(bs).map_err(|e| anyhow!("--bs: {e}"))?);
        spec.round_to_sector = false;
    }
    if let Some(split) = &a.bssplit {
        spec.block_sizes = BlockSizes::parse_split(split).context("--bssplit")?;
        spec.round_to_sector = false;
    }
    if let Some(d) = &a.random_distribution {
        spec.distribution = Distribution::parse(d).context("--random-distribution")?;
    }
    let size = a
        .size
        .as_deref()
        .map(Extent::parse)
        .transpose()
        .map_err(|e| anyhow!("--size: {e}"))?;
    let offset = Extent::parse_start(&a.offset).map_err(|e| anyhow!("--offset: {e}"))?;
    Ok(PlannedSpec {
        spec,
        offset: Some(offset),
        size,
    })
}

/// Receives a run's progress: phase messages and each finished interval.
pub trait Observer {
    fn message(&self, m: &str);
    fn interval(&self, iv: &lab::IntervalStats);
    /// A real target's layout: `done` of `total` bytes written.
    fn layout(&self, _done: u64, _total: u64) {}
    /// A step of a sequence (a job of a job file) starts.
    fn step(&self, _label: &str, _duration_ns: u64) {}
}

impl Observer for output::Progress {
    fn message(&self, m: &str) {
        output::Progress::message(self, m)
    }
    fn interval(&self, iv: &lab::IntervalStats) {
        output::Progress::interval(self, iv)
    }
    fn layout(&self, done: u64, total: u64) {
        output::Progress::layout(self, done, total)
    }
    fn step(&self, label: &str, duration_ns: u64) {
        output::Progress::step(self, label, duration_ns)
    }
}

/// Reports nothing.
pub struct Silent;

impl Observer for Silent {
    fn message(&self, _: &str) {}
    fn interval(&self, _: &lab::IntervalStats) {}
}

/// Parses `a`'s time options into the lab's run options.
fn run_options(a: &RunArgs) -> Result<(RunOptions, Option<u64>)> {
    let duration_ns = parse_duration_ns(&a.duration).map_err(|e| anyhow!("--duration: {e}"))?;
    let interval_ns = parse_duration_ns(&a.interval).map_err(|e| anyhow!("--interval: {e}"))?;
    let warmup_ns = a
        .warmup
        .as_deref()
        .map(|w| parse_duration_ns(w).map_err(|e| anyhow!("--warmup: {e}")))
        .transpose()?;
    let opts = RunOptions {
        threads: a.threads,
        queue_depth: a.qd,
        duration_ns,
        interval_ns: interval_ns.min(duration_ns),
        seed: a.seed,
    };
    opts.validate()?;
    Ok((opts, warmup_ns))
}

/// One measured run of a sequence on one target: what `vsl run` options
/// give once, and a job file once per job.
#[derive(Clone)]
pub struct Step {
    pub spec: PlannedSpec,
    pub opts: RunOptions,
    pub warmup_ns: Option<u64>,
    /// For the live label and the progress bar.
    pub label: String,
    /// Which job of a job file, for errors: "job 'x' (file:line)".
    pub job: Option<String>,
    /// Open loop at this rate (fio's rate_iops/rate); `None`: closed loop.
    pub rate: Option<crate::cmd_rate::RateSpec>,
    /// fio's thinktime (closed loop only).
    pub think: Option<lab::Think>,
}

impl Step {
    /// The step's workload on a device, its errors naming the job.
    fn resolve(&self, capacity: u64, sector: u32) -> Result<WorkloadSpec> {
        let r = self.spec.resolve(capacity, sector);
        match &self.job {
            Some(j) => r.with_context(|| j.clone()),
            None => Ok(r?),
        }
    }
}

/// Runs what `vsl run` options describe, reporting to `obs`, and returns
/// the result; writes nothing. `vsl run`, `vsl sweep` and the Python
/// package all come through here.
pub fn execute(a: &RunArgs, obs: &dyn Observer) -> Result<Done> {
    if let Some(p) = &a.job_file {
        bail!(
            "job file {}: run job files with `vsl run` (execute_job_file)",
            p.display()
        );
    }
    let step = flag_step(a)?;
    let done = run_steps(a, None, vec![step], obs)?;
    Ok(done.into_iter().next().expect("one step, one result"))
}

/// The step `vsl run`'s workload, time and rate options describe.
pub fn flag_step(a: &RunArgs) -> Result<Step> {
    let spec = workload_spec(&a.workload)?;
    let (opts, warmup_ns) = run_options(a)?;
    let label = a
        .workload
        .profile
        .as_deref()
        .or(a.workload.rw.as_deref())
        .unwrap_or("randwrite")
        .to_string();
    Ok(Step {
        spec,
        opts,
        warmup_ns,
        label,
        job: None,
        rate: crate::cmd_rate::of_flags(a)?,
        think: crate::cmd_rate::think_of_flags(a)?,
    })
}

/// Runs `steps` on a fresh modelled card as `a` describes it, or on its
/// real --target, silently.
pub fn run_steps_silent(a: &RunArgs, steps: &[Step]) -> Result<Vec<Done>> {
    run_steps(a, None, steps.to_vec(), &Silent)
}

/// The step a fio job describes: its own numjobs, iodepth, runtime,
/// ramp_time and randseed, else `a`'s --duration and --seed.
pub fn job_step(a: &RunArgs, job: &Job) -> Result<Step> {
    let duration_ns = match job.runtime_ns {
        Some(r) => r,
        None => parse_duration_ns(&a.duration).map_err(|e| anyhow!("--duration: {e}"))?,
    };
    let interval_ns = parse_duration_ns(&a.interval).map_err(|e| anyhow!("--interval: {e}"))?;
    let opts = RunOptions {
        threads: job.numjobs,
        queue_depth: job.iodepth,
        duration_ns,
        interval_ns: interval_ns.min(duration_ns),
        seed: job.seed.unwrap_or(a.seed),
    };
    opts.validate()
        .with_context(|| format!("job '{}' ({})", job.name, job.at))?;
    let think = job.thinktime_ns.map(|ns| {
        crate::cmd_rate::think_of(
            ns,
            job.thinktime_blocks_set.then_some(job.thinktime_blocks),
            job.thinktime_iotime_ns,
        )
    });
    if let (Some(t), Some(_)) = (&think, crate::cmd_rate::RateSpec::of_job(job)) {
        if let Err(e) = crate::cmd_rate::check_rate_think(t) {
            bail!(
                "job '{}' ({}): thinktime with rate_iops/rate: {e}",
                job.name,
                job.at
            );
        }
    }
    Ok(Step {
        spec: job.spec.clone(),
        opts,
        warmup_ns: job.ramp_ns,
        label: format!("fio job {}", job.name),
        job: Some(format!("job '{}' ({})", job.name, job.at)),
        rate: crate::cmd_rate::RateSpec::of_job(job),
        think,
    })
}

/// Runs every job of a parsed job file in order on one card (or the
/// --target), as `vsl run JOB.fio` does; one [`Done`] per job, naming its
/// job when the file has several.
pub fn execute_job_file(a: &RunArgs, file: &JobFile, obs: &dyn Observer) -> Result<Vec<Done>> {
    let jobs: Vec<&Job> = file.jobs().collect();
    let compress = jobs[0].compress;
    if let Some(j) = jobs.iter().find(|j| j.compress != compress) {
        bail!(
            "job '{}' ({}): buffer_compress_percentage differs from job '{}': a card has one \
             (set it in [global])",
            j.name,
            j.at,
            jobs[0].name
        );
    }
    let steps = jobs
        .iter()
        .map(|j| job_step(a, j))
        .collect::<Result<Vec<_>>>()?;
    let mut done = run_steps(a, compress, steps, obs)?;
    for (d, j) in done.iter_mut().zip(&jobs) {
        d.ignored = j.ignored.clone();
        if jobs.len() > 1 {
            d.job = Some(j.name.clone());
        }
    }
    Ok(done)
}

/// Runs steps one after another on the target `a` names; a modelled card
/// is built once and keeps its state from one step to the next.
fn run_steps(
    a: &RunArgs,
    compress: Option<f64>,
    steps: Vec<Step>,
    obs: &dyn Observer,
) -> Result<Vec<Done>> {
    match &a.target {
        Some(t)
            if realtime::Target::is_real(t)
                && steps.iter().any(|s| s.think.is_some() && s.rate.is_none()) =>
        {
            bail!("thinktime (--thinktime) without a rate: runs on a modelled card; not on a real --target {t}")
        }
        Some(t) if realtime::Target::is_real(t) => steps
            .iter()
            .map(|s| {
                obs.step(&s.label, s.opts.duration_ns);
                run_real(t, a, s, obs)
            })
            .collect(),
        _ => run_model(a, compress, &steps, obs),
    }
}

/// The virtual duration of the measured part of a run, for progress bars.
pub fn duration_ns(a: &RunArgs) -> Result<u64> {
    Ok(run_options(a)?.0.duration_ns)
}

pub fn run(a: RunArgs) -> Result<()> {
    if a.list_fio_options {
        print!("{}", workload::jobfile::options_table());
        return Ok(());
    }
    if let Some(list) = &a.rate_sweep {
        return crate::cmd_rate::sweep(&a, list);
    }
    if let Some(path) = &a.job_file {
        return run_job_file(&a, path);
    }
    let fio_format = a
        .output_format
        .as_deref()
        .map(crate::fio_output::Format::parse)
        .transpose()?;
    let duration_ns = duration_ns(&a)?;
    let progress = output::Progress::new(a.quiet, duration_ns);
    let done = execute(&a, &progress)?;
    progress.finish();
    if let Some(f) = fio_format {
        let jobs = [crate::fio_output::FioJob {
            name: crate::fio_output::job_name(&a),
            options: crate::fio_output::flag_options(&a),
            done: &done,
        }];
        print_fio(f, &jobs, &[])?;
    }
    let report = done.report();
    if let Some(path) = &a.json {
        output::write_json(path, &report)?;
    }
    if let Some(path) = &a.csv {
        output::write_csv(path, &done.result.intervals)?;
    }
    if !a.quiet && fio_format.is_none() {
        output::print_summary(&report, &done.device_line, done.wall_s);
    }
    Ok(())
}

/// Prints `jobs` on stdout in fio's format `f`.
fn print_fio(
    f: crate::fio_output::Format,
    jobs: &[crate::fio_output::FioJob],
    globals: &[(String, String)],
) -> Result<()> {
    use crate::fio_output::{json, normal, Format};
    let text = match f {
        Format::Json => json(jobs, globals, false)?,
        Format::JsonPlus => json(jobs, globals, true)?,
        Format::Normal => normal(jobs)?,
    };
    print!("{text}");
    Ok(())
}

/// `vsl run JOB.fio`: notes on stderr, one summary per job; --json writes
/// one report for a one-job file (what the equivalent options write), an
/// array of reports naming their jobs otherwise.
fn run_job_file(a: &RunArgs, path: &std::path::Path) -> Result<()> {
    let fio_format = a
        .output_format
        .as_deref()
        .map(crate::fio_output::Format::parse)
        .transpose()?;
    let file = workload::jobfile::read(path, a.lenient)?;
    let n = file.jobs().count();
    if a.csv.is_some() && n > 1 {
        bail!(
            "--csv takes one job's intervals; {} has {n} jobs (use --json)",
            path.display()
        );
    }
    let progress = output::Progress::new(a.quiet, 0);
    let done = execute_job_file(a, &file, &progress)?;
    progress.finish();
    // After the run, so that a run that fails says so in one line.
    if !a.quiet {
        for j in file.jobs() {
            for note in &j.notes {
                eprintln!("vsl: note: job '{}': {note}", j.name);
            }
            if !j.ignored.is_empty() {
                eprintln!(
                    "vsl: note: job '{}': ignored (--lenient): {}",
                    j.name,
                    j.ignored.join(" ")
                );
            }
        }
    }
    let reports: Vec<_> = done.iter().map(Done::report).collect();
    if let Some(p) = &a.json {
        match reports.as_slice() {
            [one] => output::write_json(p, one)?,
            all => output::write_json(p, &all)?,
        }
    }
    if let Some(p) = &a.csv {
        output::write_csv(p, &done[0].result.intervals)?;
    }
    if let Some(f) = fio_format {
        let jobs: Vec<_> = done
            .iter()
            .zip(file.jobs())
            .map(|(d, j)| crate::fio_output::FioJob {
                name: j.name.clone(),
                options: j.options.clone(),
                done: d,
            })
            .collect();
        let globals = file
            .jobs()
            .next()
            .map(|j| j.global_options.clone())
            .unwrap_or_default();
        print_fio(f, &jobs, &globals)?;
        return Ok(());
    }
    if !a.quiet {
        for (d, (r, j)) in done.iter().zip(reports.iter().zip(file.jobs())) {
            if n > 1 {
                println!("job       {} ({})", j.name, j.at);
            }
            output::print_summary(r, &d.device_line, d.wall_s);
        }
    }
    Ok(())
}

/// What one run produced, whatever the target.
pub struct Done {
    pub device: serde_json::Value,
    pub device_line: String,
    pub workload: WorkloadSpec,
    pub options: RunOptions,
    pub result: lab::RunResult,
    /// Temperature, power and endurance used per interval (modelled runs).
    pub health: Option<Vec<HealthPoint>>,
    /// Die-failure and media-error counters of the members that model
    /// them (modelled runs with --fail-die or --media-errors on).
    pub media: Option<Vec<device::MediaReport>>,
    /// Wall time of the measured part (not in the report: not deterministic).
    pub wall_s: f64,
    /// The fio job this run is, when it came from a job file of several.
    pub job: Option<String>,
    /// Job-file options ignored under --lenient.
    pub ignored: Vec<String>,
    /// Real targets: the layout and what reached the device.
    pub real: Option<RealDone>,
    /// Per direction, as fio accounts it (for --output-format).
    pub fio: Option<lab::FioStats>,
    /// The process's CPU use over the measured run (real targets).
    pub cpu: Option<crate::fio_output::Cpu>,
    /// Open-loop runs: what was offered.
    pub open_loop: Option<crate::cmd_rate::OpenLoopInfo>,
}

/// What a run on a real target adds: the layout before it and the device
/// counters around it.
pub struct RealDone {
    pub layout: realtime::Prepared,
    pub device: realtime::DeviceReport,
}

impl Done {
    /// What `vsl run --json` writes.
    pub fn report(&self) -> output::Report<'_> {
        output::Report {
            tool: "openvsl",
            version: env!("CARGO_PKG_VERSION"),
            device: self.device.clone(),
            workload: &self.workload,
            options: &self.options,
            summary: &self.result.summary,
            intervals: &self.result.intervals,
            health: self.health.as_deref(),
            media: self.media.as_deref(),
            layout: self.real.as_ref().map(|r| &r.layout),
            disk_util: self.real.as_ref().map(|r| r.device.disk_util.as_slice()),
            measured_on_device: self.real.as_ref().map(|r| &r.device.measured_on_device),
            job: self.job.as_deref(),
            ignored_options: (!self.ignored.is_empty()).then_some(&self.ignored[..]),
            open_loop: self.open_loop.as_ref(),
        }
    }
}

fn run_model(
    a: &RunArgs,
    compress: Option<f64>,
    steps: &[Step],
    progress: &dyn Observer,
) -> Result<Vec<Done>> {
    let mut cfg = card_config(&a.card)?;
    if let Some(p) = compress {
        // As card_config does with --buffer-compress-percentage.
        cfg.data_compressibility = 1.0 - p;
    }
    if let Some(t) = &a.target {
        let m = crate::cmd_review::model_config(t, cfg.scale, cfg.gc_policy)?;
        cfg.preset = m.preset;
        cfg.format = m.format;
        cfg.sector_bytes = m.sector_bytes;
        cfg.gc_policy = m.gc_policy;
    }
    cfg.reliability.seed = steps[0].opts.seed;
    cfg.gc_seed = steps[0].opts.seed;
    // --fail-die times count from the start of the measured run.
    cfg.reliability.defer_failures = true;
    let mut card = Card::new(cfg)?;
    // Every region is checked before anything runs.
    let resolved = steps
        .iter()
        .map(|s| s.resolve(card.capacity_bytes(), card.sector_bytes()))
        .collect::<Result<Vec<_>>>()?;
    let mut start = Nanos::ZERO;
    if a.precondition {
        progress.message("preconditioning: sequential fill of the whole device");
        start = precondition_fill(&mut card, start)?;
    }
    let mut out = Vec::with_capacity(steps.len());
    for (i, (step, spec)) in steps.iter().zip(resolved).enumerate() {
        progress.step(&step.label, step.opts.duration_ns);
        let began = if i == 0 { Nanos::ZERO } else { start };
        let (done, end) = model_step(&mut card, step, spec, start, began, i == 0, progress)?;
        out.push(done);
        start = end;
    }
    Ok(out)
}

/// One step on a card already built (and preconditioned): warmup, then
/// the measured run from `start`. `began` is when the step's lead-in
/// (precondition, warmup) began.
fn model_step(
    card: &mut Card,
    step: &Step,
    resolved: WorkloadSpec,
    mut start: Nanos,
    began: Nanos,
    first: bool,
    progress: &dyn Observer,
) -> Result<(Done, Nanos)> {
    let opts = step.opts.clone();
    if let Some(warm_ns) = step.warmup_ns {
        progress.message("warming up");
        let warm = RunOptions {
            duration_ns: warm_ns,
            interval_ns: warm_ns,
            ..opts.clone()
        };
        start = crate::cmd_rate::run_any(
            card,
            &resolved,
            &warm,
            (step.rate.as_ref(), step.think),
            start,
            &mut |_| {},
            None,
        )?
        .0
        .end;
    }
    if first {
        card.arm_die_failures(start)?;
    }
    let measured = std::time::Instant::now();
    let label = format!("vsl run {} {}", cfg_label(card), step.label);
    let mut publisher = rundir::live::Publisher::new("run", &label);
    let mut sampled = Sampled::new(card, start, opts.interval_ns);
    let series = sampled.series.clone();
    let mut fio = lab::FioStats::default();
    let (mut result, open_loop) = crate::cmd_rate::run_any(
        &mut sampled,
        &resolved,
        &opts,
        (step.rate.as_ref(), step.think),
        start,
        &mut |iv| {
            progress.interval(iv);
            health_series::publish(&mut publisher, iv, &series);
        },
        Some(&mut fio),
    )?;
    sampled.finish(result.end);
    drop(sampled);
    result.summary.precondition_s = (start - began).as_secs_f64();
    let health = std::mem::take(&mut series.borrow_mut().points);
    let info = output::DeviceInfo::new(card);
    let media = card.media();
    let end = result.end;
    Ok((
        Done {
            media: (!media.is_empty()).then_some(media),
            device_line: info.line(),
            device: serde_json::to_value(&info)?,
            workload: resolved,
            options: opts,
            result,
            health: Some(health),
            wall_s: measured.elapsed().as_secs_f64(),
            job: None,
            ignored: Vec::new(),
            real: None,
            fio: Some(fio),
            cpu: None,
            open_loop,
        },
        end,
    ))
}

/// Device and format of a card, for the live label.
fn cfg_label(card: &Card) -> String {
    format!("{} {}", card.config.preset.name, card.config.format.label())
}

/// The real-target options of `vsl run`.
fn real_options(
    a: &RunArgs,
) -> Result<(
    realtime::DirectMode,
    LayoutMode,
    FillPattern,
    realtime::IoMem,
)> {
    let direct = match a.direct.as_str() {
        "1" => realtime::DirectMode::Require,
        "0" => realtime::DirectMode::Off,
        d => bail!("--direct: '{d}' (expected 1 for O_DIRECT or 0 for buffered I/O)"),
    };
    let layout = LayoutMode::parse(&a.layout).map_err(|e| anyhow!("--layout: {e}"))?;
    let pattern =
        FillPattern::parse(&a.fill_pattern).map_err(|e| anyhow!("--fill-pattern: {e}"))?;
    let mem = realtime::IoMem::parse(&a.mem).map_err(|e| anyhow!("--mem: {e}"))?;
    Ok((direct, layout, pattern, mem))
}

fn run_real(t: &str, a: &RunArgs, step: &Step, progress: &dyn Observer) -> Result<Done> {
    use realtime::{EngineOptions, RealTarget, Target};
    let (opts, warmup_ns) = (step.opts.clone(), step.warmup_ns);
    let (direct, layout_mode, pattern, mem) = real_options(a)?;
    let target = Target::parse(t)?;
    let rt = RealTarget::open(&target, direct)?;
    let resolved = step.resolve(rt.capacity_bytes(), rt.sector_bytes())?;
    let engine = EngineOptions {
        mem,
        ..EngineOptions::default()
    };
    let open = step
        .rate
        .as_ref()
        .map(|r| crate::cmd_rate::real_open(r, step.think, &resolved, &opts))
        .transpose()?;
    let run_any = |o: &RunOptions, on: &mut dyn FnMut(&lab::IntervalStats)| match &open {
        Some((rate, _)) => rt.run_open(&resolved, o, &engine, rate, on),
        None => rt.run(&resolved, o, &engine, on),
    };
    let mut pre_s = 0.0;
    let layout = if a.precondition {
        progress.message("preconditioning: sequential fill of the whole target");
        let fill = rt.fill(pattern, &mut |d, n| progress.layout(d, n))?;
        pre_s += fill.wall_s;
        rt.prepare(false, layout_mode, pattern, &mut |_, _| {})?
    } else {
        let reads = resolved.read_fraction > 0.0;
        let p = rt.prepare(reads, layout_mode, pattern, &mut |d, n| {
            progress.layout(d, n)
        })?;
        pre_s += p.wall_s;
        p
    };
    for note in &layout.notes {
        eprintln!("vsl: note: {note}");
    }
    if let Some(warm_ns) = warmup_ns {
        progress.message("warming up");
        let warm = RunOptions {
            duration_ns: warm_ns,
            interval_ns: warm_ns,
            ..opts.clone()
        };
        pre_s += run_any(&warm, &mut |_| {})?.info.wall_s;
    }
    let cpu0 = crate::fio_output::Cpu::now();
    let mut run = run_any(&opts, &mut |iv| progress.interval(iv))?;
    let cpu = crate::fio_output::Cpu::now().since(&cpu0);
    let fio = std::mem::take(&mut run.fio);
    run.result.summary.precondition_s = pre_s;
    run.device.set_unwritten_share(layout.unwritten_share());
    for note in &run.info.notes {
        eprintln!("vsl: note: {note}");
    }
    if !run.device.measured_on_device.measured {
        eprintln!("vsl: warning: {}", run.device.measured_on_device.words);
    }
    let device_line = format!(
        "target    {} (real, wall time) {:.1} GB, {} B sectors, {}, engine {:?}, buffers in {}",
        t,
        run.info.capacity_bytes as f64 / 1e9,
        run.info.sector_bytes,
        if run.info.direct {
            "O_DIRECT"
        } else {
            "buffered"
        },
        run.info.engine,
        run.info.io_memory.describe()
    );
    Ok(Done {
        device: serde_json::to_value(&run.info)?,
        device_line,
        workload: resolved,
        options: opts,
        wall_s: run.info.wall_s,
        result: run.result,
        health: None,
        media: None,
        real: Some(RealDone {
            layout,
            device: run.device,
        }),
        job: None,
        ignored: Vec::new(),
        fio: Some(fio),
        cpu: Some(cpu),
        open_loop: open.map(|(_, info)| info),
    })
}
