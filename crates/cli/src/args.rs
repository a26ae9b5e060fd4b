use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "vsl",
    args_override_self = true,
    version,
    about = "openvsl: a modelled Fusion-io style PCIe flash card and its benchmark lab",
    long_about = "openvsl models a Fusion-io style ioMemory card (NAND + the host-resident VSL flash \
translation layer) in deterministic virtual time. `vsl run` drives it with a fio-style workload \
and reports throughput, latency statistics and write amplification per interval; `vsl review` \
runs a whole enterprise SSD review and writes it as a report. With `--target file:PATH:SIZE` or \
`--target blockdev:/dev/NAME` both run the same methodology on a real file or block device in \
wall time. `vsl attach` serves the modelled card as a real Linux block device."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workload on a modelled card (virtual time) or a real file or block device (--target, wall time).
    Run(Box<RunArgs>),
    /// List the device presets with their geometry and data-sheet figures.
    Devices(DevicesArgs),
    /// List the named workload profiles.
    Profiles,
    /// List the GC victim policies (--gc-policy) and placement policies
    /// (--placement), one line each with its source.
    Policies,
    /// Run the SYSTEM.md §4 validation table: model vs measured.
    Validate(ValidateArgs),
    /// Run a whole enterprise SSD review on one or more targets and write a report.
    Review(ReviewArgs),
    /// Run a plan of many runs (a grid or list of `vsl run` options) on a local pool or a Ray cluster.
    Sweep(SweepArgs),
    /// Serve a modelled card as Linux block devices (FUSE + loop), or --list them.
    #[cfg(feature = "attach")]
    Attach(Box<blockdev::cli::AttachArgs>),
    /// Flush, detach and stop an attached card.
    #[cfg(feature = "attach")]
    Detach(blockdev::cli::DetachArgs),
    /// Apply writes (--write OFFSET:FILE) and trims (--trim OFFSET:LEN) to an attached card all-or-nothing.
    #[cfg(feature = "attach")]
    Atomic(blockdev::atomic::AtomicArgs),
    /// Capture the requests an attached card serves as fio iolog and blkparse text (start DIR, stop, status).
    #[cfg(feature = "attach")]
    Trace(blockdev::trace_cli::TraceArgs),
    /// Status of a store, every attached card and every running simulation (-a: every field, --json).
    #[cfg(feature = "attach")]
    Status(blockdev::manage::StatusArgs),
    /// Low-level format a (detached) card's store: capacity / over-provisioning, sector size.
    #[cfg(feature = "attach")]
    Format(blockdev::manage::FormatArgs),
    /// Secure-erase a (detached) card's store; lifetime counters and wear are kept.
    #[cfg(feature = "attach")]
    Erase(blockdev::manage::EraseArgs),
    /// Live web dashboard of attached cards and running simulations (127.0.0.1:8080).
    #[cfg(feature = "serve")]
    Serve(web::ServeArgs),
    /// Power-cut campaign: cut power at random NAND operation boundaries, recover, check every acknowledged write.
    Torture(TortureArgs),
    /// Fit a preset's free parameters to measured figures (a table or a review's results.json) and write the fitted preset.
    Fit(Box<crate::cmd_fit::FitArgs>),
    /// Replay a block trace (fio iolog, blkparse, MSR, SNIA IOTTA, MQSim) on modelled cards in virtual time.
    Replay(Box<crate::cmd_replay::ReplayArgs>),
    /// Run the SNIA PTS (IOPS, throughput, latency, WSAT, HIR, XSR, DIRTH, ECW) on modelled cards and real devices.
    Pts(Box<crate::cmd_pts::PtsArgs>),
}

/// `vsl torture`: a randomized, deterministic power-cut campaign in virtual
/// time on ioMemory device 0 of a (scaled) card.
#[derive(Args, Debug, Clone)]
pub struct TortureArgs {
    /// Number of power cuts.
    #[arg(long, default_value_t = 1000)]
    pub power_cuts: u64,
    /// Seed: the same seed and options give the same campaign.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Device preset (see `vsl devices`).
    #[arg(long, default_value = "iodrive-duo-640-mlc")]
    pub device: String,
    /// Low-level format: stock, hp, improved-write or max-write.
    #[arg(long, default_value = "stock")]
    pub format: String,
    /// Fraction of the card modelled (every cut rebuilds the whole map, so keep it small).
    #[arg(long, default_value = "0.001", allow_hyphen_values = true)]
    pub scale: String,
    /// Logical sector size: 512 or 4096.
    #[arg(long, default_value = "4096")]
    pub sector_size: String,
    /// GC mode: paced or legacy.
    #[arg(long, default_value = "paced")]
    pub gc_mode: String,
    /// Erase units opened between map checkpoints (default: 1/16 of the log; 0: only at format and after recovery).
    #[arg(long)]
    pub checkpoint_lebs: Option<u32>,
    /// Host calls (writes, trims, atomic writes) between two cuts: uniform in 1..=N.
    #[arg(long, default_value_t = 200)]
    pub max_calls: u32,
    /// Break a protection mechanism on purpose (none, skip-drain, skip-scan, keep-incomplete-groups): the campaign must then fail.
    #[arg(long, default_value = "none", hide = true)]
    pub fault: String,
    /// Run the same host calls without cuts, recovery or checks, and report their wall-clock rate (the baseline of bench/torture.sh).
    #[arg(long)]
    pub baseline: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Progress as a line on stderr every 1000 cuts (for logs, instead of the bar).
    #[arg(long)]
    pub progress_lines: bool,
}

/// The card and how it is formatted.
#[derive(Args, Debug, Clone)]
pub struct CardArgs {
    #[command(flatten)]
    pub spec: device::CardSpecArgs,
    /// RAID 0 chunk size across members.
    #[arg(long, default_value = "512k")]
    pub chunk: String,
    /// When GC runs: paced (grooming interleaved with host writes at a pace
    /// set by free space) or legacy (idle time plus stop-the-world).
    #[arg(long, default_value = "paced")]
    pub gc_mode: String,
    /// Reads overtake queued programs and erases in the bank queues: on,
    /// off, or preset (the preset's `vsl.read_priority`: off for the
    /// ioMemory cards, FIFO per bank as calibrated, on for the comparables).
    #[arg(long, default_value = "preset")]
    pub read_priority: String,
    /// Program/erase suspend for reads, with its latency (e.g. 20us), off,
    /// or preset (the preset's `vsl.suspend_ns`; the built-in presets' NAND,
    /// 2008-2012, has none).
    #[arg(long, default_value = "preset", allow_hyphen_values = true)]
    pub suspend: String,
    /// How compressible the written data is, in percent (fio's
    /// buffer_compress_percentage; 0: incompressible, fio's default). Only
    /// compressing controllers (SandForce presets) gain from it.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub buffer_compress_percentage: String,
    /// Air temperature at the card, °C (thermal model).
    #[arg(long, default_value = "25", allow_hyphen_values = true)]
    pub ambient_temp: String,
    /// Airflow over the card, linear feet per minute (0: still air).
    #[arg(long, default_value = "300", allow_hyphen_values = true)]
    pub airflow: String,
    /// A Duo's external power cable: on, or off (writes throttled to the slot's 24.75 W).
    #[arg(long, default_value = "on")]
    pub external_power: String,
    #[command(flatten)]
    pub reliability: device::ReliabilityArgs,
}

/// The workload, spelled as fio spells it.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Named profile (see `vsl profiles`); other workload options override it.
    #[arg(long)]
    pub profile: Option<String>,
    /// read, write, randread, randwrite, rw or randrw.
    #[arg(long)]
    pub rw: Option<String>,
    /// Percentage of reads in a mixed workload.
    #[arg(long, allow_hyphen_values = true)]
    pub rwmixread: Option<String>,
    /// Block size, e.g. 4k.
    #[arg(long, conflicts_with = "bssplit")]
    pub bs: Option<String>,
    /// Block size mix, e.g. 512/10:4k/60:64k/30.
    #[arg(long)]
    pub bssplit: Option<String>,
    /// random, zipf:THETA or zoned:ACCESS%/SIZE%:...
    #[arg(long)]
    pub random_distribution: Option<String>,
    /// Length of the target region, or a share of the device (50%) (default: the whole device).
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Start of the target region, or a share of the device (25%).
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub offset: String,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A fio job file to run instead of the workload options: its jobs run
    /// one after another on one card (or --target); a job without runtime=
    /// runs --duration, one without randseed= uses --seed.
    #[arg(
        value_name = "JOB.fio",
        conflicts_with_all = ["profile", "rw", "rwmixread", "bs", "bssplit", "random_distribution",
            "size", "offset", "threads", "qd", "warmup", "rate_iops", "rate", "thinktime"]
    )]
    pub job_file: Option<std::path::PathBuf>,
    /// With a job file: ignore options vsl cannot model or does not know
    /// (listed on stderr and as `ignored_options` in --json) and run
    /// concurrent jobs one after another, instead of refusing them.
    #[arg(long, requires = "job_file")]
    pub lenient: bool,
    /// List the fio job-file options vsl reads (type, default, range, support, help) and exit.
    #[arg(long)]
    pub list_fio_options: bool,
    /// Instead of --device/--format: PRESET[:FORMAT] (a modelled card, virtual
    /// time) or file:PATH:SIZE / blockdev:/dev/NAME (a real target, wall time,
    /// O_DIRECT).
    #[arg(long)]
    pub target: Option<String>,
    #[command(flatten)]
    pub card: CardArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Threads (jobs), each with --qd I/Os outstanding.
    #[arg(long, default_value_t = 16)]
    pub threads: u32,
    /// Queue depth per thread.
    #[arg(long, default_value_t = 16)]
    pub qd: u32,
    /// Time to run, e.g. 90s, 6h (virtual time; wall time on a real --target).
    #[arg(long, default_value = "60s", allow_hyphen_values = true)]
    pub duration: String,
    /// Reporting interval (virtual time; wall time on a real --target).
    #[arg(long, default_value = "1s", allow_hyphen_values = true)]
    pub interval: String,
    /// Seed of every random choice; on a modelled card the same seed and options give identical output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fill the device sequentially first, as the reviews do.
    #[arg(long)]
    pub precondition: bool,
    /// Real file target: before a run that reads, write the parts of the
    /// file not yet written, once, sequentially (`auto`, as fio lays out a
    /// file), or not (`skip`: reads of unwritten space never reach the
    /// device, and the result is marked "not measured on the device").
    #[arg(long, default_value = "auto", value_name = "auto|skip")]
    pub layout: String,
    /// Data the layout and --precondition write on a real target: random
    /// (incompressible), zeros, or compress=PCT (PCT % of every 4 KiB zeros).
    #[arg(long, default_value = "random", value_name = "PATTERN")]
    pub fill_pattern: String,
    /// Real target: 1 = O_DIRECT, an error where the filesystem has none;
    /// 0 = buffered I/O through the page cache (fio's --direct).
    #[arg(long, default_value = "1", value_name = "1|0")]
    pub direct: String,
    /// Real target: what the I/O buffers are made of (fio's --mem).
    /// pages = ordinary 4 KiB pages, fio's default; huge = 2 MiB pages
    /// (hugetlbfs if vm.nr_hugepages has some, else transparent huge
    /// pages), so each buffer is one contiguous segment for the device.
    /// Large blocks on some devices are faster with huge (compare with
    /// fio --mem=shmhuge).
    #[arg(long, default_value = "pages", value_name = "pages|huge")]
    pub mem: String,
    /// Run the workload for this long before measuring (after
    /// --precondition; virtual time, or wall time on a real --target); not reported.
    #[arg(long, allow_hyphen_values = true)]
    pub warmup: Option<String>,
    /// Write the summary and intervals as JSON.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Write the intervals as CSV.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// Open loop: I/Os arrive at this rate per thread (fio's rate_iops;
    /// 10k = 10,000), at most --threads x --qd in flight, later arrivals
    /// queue; latency counts from arrival (fio's JSON: from issue, as fio).
    /// A modelled card or a real --target.
    #[arg(long, value_name = "IOPS", allow_hyphen_values = true)]
    pub rate_iops: Option<String>,
    /// Open loop at this bandwidth per thread (fio's rate; 100m = 100 MiB/s):
    /// arrivals at rate / mean block size.
    #[arg(
        long,
        value_name = "BYTES/s",
        conflicts_with = "rate_iops",
        allow_hyphen_values = true
    )]
    pub rate: Option<String>,
    /// Arrival process of --rate-iops, --rate and --rate-sweep: linear
    /// (evenly spaced) or poisson (exponential gaps, same mean).
    #[arg(long, default_value = "linear", value_name = "linear|poisson")]
    pub rate_process: String,
    /// Closed loop with a pause: a thread waits this long (e.g. 100us)
    /// after every --thinktime-blocks of its I/Os complete (fio's
    /// thinktime). Modelled card only (on a real --target only as bursts
    /// of a rate, --thinktime-iotime).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub thinktime: Option<String>,
    /// I/Os between two think times (fio's thinktime_blocks; default 1,
    /// none with --thinktime-iotime alone).
    #[arg(long)]
    pub thinktime_blocks: Option<u32>,
    /// Bursts: issue for this long, then pause --thinktime, again and
    /// again (fio's thinktime_iotime, e.g. 900ms). With --rate-iops/--rate:
    /// the rate's arrivals during a pause go out at once when it ends (fio's
    /// catch-up), or are skipped with --rate-ignore-thinktime.
    #[arg(
        long,
        value_name = "TIME",
        requires = "thinktime",
        allow_hyphen_values = true
    )]
    pub thinktime_iotime: Option<String>,
    /// With --rate-iops/--rate and --thinktime-iotime: after a pause, resume
    /// the rate without catching up on the arrivals it skipped (fio's
    /// rate_ignore_thinktime; default: catch up at once, a burst).
    #[arg(long, requires = "thinktime_iotime")]
    pub rate_ignore_thinktime: bool,
    /// Latency against offered load: one open-loop run per total offered
    /// rate (comma-separated, e.g. 10k,20k,40k), or `auto` (10 % to 110 % of
    /// a closed-loop run's IOPS), each on a fresh card (or on the real
    /// --target); prints a table, --json/--csv write it, --chart draws it.
    #[arg(long, value_name = "IOPS,...|auto")]
    pub rate_sweep: Option<String>,
    /// With --rate-sweep: an SVG chart of latency percentiles against offered IOPS.
    #[arg(long, requires = "rate_sweep")]
    pub chart: Option<std::path::PathBuf>,
    /// Print the results on stdout in fio 3.33's format instead of the
    /// summary: json, json+ (with clat_ns bins) or normal (fio's text).
    #[arg(long, value_name = "json|json+|normal")]
    pub output_format: Option<String>,
    /// No progress bar or table (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list the preset files (*.toml) of this directory, each checked.
    #[arg(long, value_name = "DIR")]
    pub device_dir: Option<std::path::PathBuf>,
    /// Print one preset (a name, or a file PATH.toml) as a preset file, to copy and edit.
    #[arg(long, value_name = "PRESET", conflicts_with = "json")]
    pub show: Option<String>,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Fraction of the card modelled (each erase unit keeps this share of its pages; 1 = the full 640 GB card).
    #[arg(long, default_value = "0.05", allow_hyphen_values = true)]
    pub scale: String,
    /// Virtual time of each steady-state measurement window. The fresh-card tests (a filled card, then a short run) measure at most 2 s × --scale (at least 100 ms): 2 s of the full card's spare.
    #[arg(long, default_value = "120s")]
    pub window: String,
    /// Write the table as JSON.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Instead of the SYSTEM.md §4 review table of the 640 GB MLC: check
    /// the data-sheet figures of these presets (comma-separated, or `all`),
    /// each row marked calibrated or predicted.
    #[arg(long, value_name = "PRESETS")]
    pub datasheet: Option<String>,
    /// Which table: stock (SYSTEM.md §4), hp (§4b, the high-performance
    /// format) or both.
    #[arg(long, default_value = "both", value_parser = ["stock", "hp", "both"])]
    pub format: String,
    /// The card: the built-in iodrive-duo-640-mlc or a preset file (PATH.toml)
    /// fitted to it.
    #[arg(long, default_value = "iodrive-duo-640-mlc")]
    pub device: String,
    /// Only the rows whose name contains this text (e.g. "8K 70/30"), and
    /// the tests they need: a quicker look at a few rows.
    #[arg(long, value_name = "TEXT")]
    pub rows: Option<String>,
    /// Threads (default: the machine's CPUs): with 2 or more, the stock and
    /// hp tables run at once, each on its own cards. The rows are the same
    /// whatever the number.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Start each steady-state test (4K write and the read after it, 8K
    /// 70/30, File Server, Web Server) from a purged and filled card, as
    /// `vsl review` does, instead of carrying one card through them (the
    /// calibration's protocol); a test then runs only for its own rows.
    #[arg(long)]
    pub purge: bool,
    /// Device capacities of a test's own writes before its preconditioning
    /// may be called steady (1: the SNIA minimum; the reviews' "hours" are
    /// 2-4 on this card); still capped at 6 h of the full card.
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub min_capacities: f64,
}

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// A target to review (repeatable): PRESET[:FORMAT][:512][:gc=POLICY]
    /// (FORMAT: stock, hp, improved-write, max-write, op=PCT, capacity=SIZE;
    /// gc= last, e.g. :gc=d-choices:8), file:PATH:SIZE or blockdev:/dev/NAME.
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// A TOML review plan (every key with its default: docs/review-plan.toml).
    #[arg(long)]
    pub plan: Option<std::path::PathBuf>,
    /// Shorten every phase (scaled card, short rounds and windows) for a first look.
    #[arg(long)]
    pub quick: bool,
    /// Output directory for index.html, results.json, charts and CSV.
    #[arg(long, default_value = "review")]
    pub out: std::path::PathBuf,
    /// Seed of every random choice.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fraction of the card modelled targets keep (overrides the plan).
    #[arg(long, allow_hyphen_values = true)]
    pub scale: Option<String>,
    /// GC victim policy and placement of every modelled target.
    #[command(flatten)]
    pub policy: device::PolicyArgs,
    /// No progress or summary (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// Add the application-level results of bench/pgbench.sh (the JSON file
    /// it writes to JSON_OUT) to the report.
    #[arg(long, value_name = "FILE")]
    pub pgbench: Option<std::path::PathBuf>,
    /// Add application-level results measured on the attached card
    /// (repeatable): the JSON of bench/pgbench.sh, bench/pg_insert.sh or
    /// bench/sysbench_oltp.sh, recognised by its "tool" key.
    #[arg(long = "app", value_name = "FILE")]
    pub apps: Vec<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// A TOML sweep plan: `vsl run` options as keys; a list value is swept
    /// (the grid is the product of every list); `[[runs]]` tables add
    /// explicit runs. Example: docs/sweep-plan.toml.
    pub plan: std::path::PathBuf,
    /// Output directory: runs/<key>.json, results.csv, index.html. Runs
    /// already finished there are not run again.
    #[arg(long, default_value = "sweep")]
    pub out: std::path::PathBuf,
    /// Where runs execute: local (a pool of worker threads) or ray.
    #[arg(long, default_value = "local")]
    pub engine: String,
    /// Worker threads of the local pool (default: one per core).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Address of the Ray cluster (--engine ray), e.g. ray://head:10001 or auto.
    #[arg(long)]
    pub address: Option<String>,
    /// Python interpreter with the openvsl package and Ray (--engine ray).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// No progress bar or summary (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}
