//! fio job files: `[global]` and job sections, `include`, `${VAR}` and
//! `$ncpus`, comments — read into [`JobFile`]: phases (separated by
//! `stonewall`) of [`Job`]s, each a [`PlannedSpec`] plus the run options
//! `vsl run`'s flags give (threads = `numjobs`, queue depth = `iodepth`,
//! duration = `runtime`, warmup = `ramp_time`, seed = `randseed`).
//!
//! Every option vsl knows is one row of [`OPTIONS`]: its name and aliases,
//! type, fio's default, range, help and whether the model honours it
//! ([`Support`]). The same table drives parsing, the refusals and
//! `vsl run --list-fio-options`. Options fio has that vsl cannot model
//! (open-loop rates, think time, steady-state termination, buffered I/O)
//! and options not in the table are refused in one line naming them;
//! with `lenient` they are ignored and listed in [`Job::ignored`].
//!
//! Semantics follow fio's HOWTO.rst and init.c: `[global]` options apply
//! to the job sections after it; a later `[global]` changes the defaults
//! of the jobs that follow it only; `include FILE` (inside a section, no
//! sections in the included file) is looked up as given, then next to the
//! including file; `;` and `#` start a comment anywhere on a line; an
//! unset `${VAR}` is empty (an error about the value then names it).
//! fio's other keywords (`$pagesize`, `$mb_memory`) and arithmetic in
//! values are not supported: such a value is refused.

use crate::spec::{BlockSizes, Distribution, Extent, PlannedSpec, WorkloadSpec};
use crate::units::{parse_duration_ns, parse_percent, parse_size};
use std::fmt;
use std::path::{Path, PathBuf};

/// What a value looks like.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `0` or `1`; the bare option name means 1.
    Bool,
    Int,
    /// Bytes: `4k`, `8G`.
    Size,
    /// Bytes or a share of the device: `8G`, `50%`.
    SizeOrPercent,
    /// A duration; a bare number is seconds.
    Time,
    /// 0..=100.
    Percent,
    /// Free text or a keyword list.
    Text,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Size => "size",
            Kind::SizeOrPercent => "size|%",
            Kind::Time => "time",
            Kind::Percent => "percent",
            Kind::Text => "text",
        }
    }
}

/// What vsl does with an option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Changes the workload or the run as in fio.
    Modelled,
    /// Accepted; it changes nothing that vsl measures (names, engines,
    /// logging).
    NoEffect,
    /// fio's option, but the engine cannot model it: refused, or ignored
    /// and listed with `lenient`.
    NotModelled,
}

/// One fio option: the single table parsing, errors and listing use.
pub struct FioOption {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    /// fio's default, as fio spells it ("" when none).
    pub default: &'static str,
    pub range: &'static str,
    pub support: Support,
    pub help: &'static str,
}

const fn opt(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    default: &'static str,
    range: &'static str,
    support: Support,
    help: &'static str,
) -> FioOption {
    FioOption {
        name,
        aliases,
        kind,
        default,
        range,
        support,
        help,
    }
}

use Kind::*;
use Support::*;

/// Every fio option vsl reads.
pub const OPTIONS: &[FioOption] = &[
    opt("rw", &["readwrite"], Text, "read", "read|write|randread|randwrite|rw|readwrite|randrw", Modelled,
        "I/O pattern; a `:N` suffix (sequential skips, random runs) is refused: the generator has neither"),
    opt("rwmixread", &[], Percent, "50", "0..100", Modelled, "percentage of reads in a mixed pattern"),
    opt("rwmixwrite", &[], Percent, "50", "0..100", Modelled, "percentage of writes in a mixed pattern (reads = 100 - this)"),
    opt("bs", &["blocksize"], Size, "4k", "sector multiple", Modelled,
        "block size; separate read,write sizes are refused unless equal"),
    opt("bsrange", &["blocksize_range"], Text, "", "MIN-MAX", Modelled,
        "block sizes from MIN to MAX: every multiple of MIN, equally likely (as fio without bs_unaligned)"),
    opt("bssplit", &[], Text, "", "SIZE/PCT:...", Modelled, "weighted block size mix"),
    opt("size", &[], SizeOrPercent, "device", "bytes or 1..100%", Modelled,
        "length of the region (with filesize: fio's amount of I/O, which a timed vsl run does not bound)"),
    opt("filesize", &[], SizeOrPercent, "size", "bytes or 1..100%", Modelled, "length of the region (the file); wins over size"),
    opt("offset", &[], SizeOrPercent, "0", "bytes or 0..100%", Modelled,
        "start of the region; a share rounds down to the smallest block size"),
    opt("runtime", &["timeout"], Time, "", ">0 (0: none)", Modelled,
        "measured time; without it the run lasts --duration"),
    opt("time_based", &[], Bool, "0", "0|1", Modelled,
        "run for runtime; without it fio may stop once size bytes are done, vsl always runs the whole runtime"),
    opt("ramp_time", &[], Time, "", ">0", Modelled, "time run before measuring (vsl's warmup); not reported"),
    opt("random_distribution", &[], Text, "random", "random|zipf:T|zoned:A/S:...|zoned_abs:A/SIZE:...", Modelled,
        "offset distribution of random patterns; pareto, normal and gauss are refused"),
    opt("norandommap", &[], Bool, "0", "0|1", Modelled,
        "vsl draws random offsets with replacement, as fio with norandommap; fio's default map is not modelled"),
    opt("randrepeat", &["repeatable"], Bool, "1", "1 (0 refused)", Modelled,
        "the same random sequence every run: vsl always is; 0 (a fresh seed per run) is refused"),
    opt("randseed", &[], Int, "", "u64", Modelled, "seed of every random choice (vsl's --seed)"),
    opt("numjobs", &[], Int, "1", "1..65536", Modelled, "threads running the job (vsl's --threads)"),
    opt("iodepth", &[], Int, "1", "1..65536", Modelled, "I/Os outstanding per thread (vsl's --qd)"),
    opt("buffer_compress_percentage", &[], Percent, "0", "0..99", Modelled,
        "how compressible written data is; one value for the whole file on a modelled card"),
    opt("direct", &[], Bool, "0", "1 (0 refused)", Modelled, "vsl always does direct I/O; direct=0 (page cache) is refused"),
    opt("buffered", &[], Bool, "1", "0 (1 refused)", Modelled, "the opposite of direct"),
    opt("stonewall", &["wait_for_previous"], Bool, "0", "0|1", Modelled,
        "wait for the jobs before to finish: starts a new phase"),
    opt("new_group", &[], Bool, "0", "0|1", NoEffect, "a new reporting group; vsl reports every job on its own"),
    opt("ioengine", &[], Text, "psync", "any", NoEffect, "accepted and ignored: a modelled card has no engine; real targets use io_uring"),
    opt("name", &[], Text, "", "any", NoEffect, "job name (the section name is the job's name)"),
    opt("description", &[], Text, "", "any", NoEffect, "free text"),
    opt("filename", &[], Text, "", "any", NoEffect, "ignored: the target is the modelled card or --target"),
    opt("directory", &[], Text, "", "any", NoEffect, "ignored: the target is the modelled card or --target"),
    opt("thread", &[], Bool, "0", "0|1", NoEffect, "threads instead of processes"),
    opt("group_reporting", &[], Bool, "0", "0|1", NoEffect, "reporting only"),
    opt("invalidate", &[], Bool, "1", "0|1", NoEffect, "page-cache invalidation; vsl does direct I/O"),
    opt("gtod_reduce", &[], Bool, "0", "0|1", NoEffect, "fio's own timing overhead"),
    opt("disable_lat", &[], Bool, "0", "0|1", NoEffect, "reporting only"),
    opt("disable_clat", &[], Bool, "0", "0|1", NoEffect, "reporting only"),
    opt("disable_slat", &[], Bool, "0", "0|1", NoEffect, "reporting only"),
    opt("clat_percentiles", &[], Bool, "1", "0|1", NoEffect, "reporting only"),
    opt("lat_percentiles", &[], Bool, "0", "0|1", NoEffect, "reporting only"),
    opt("percentile_list", &[], Text, "", "any", NoEffect, "reporting only"),
    opt("write_bw_log", &[], Text, "", "any", NoEffect, "logging only"),
    opt("write_lat_log", &[], Text, "", "any", NoEffect, "logging only"),
    opt("write_iops_log", &[], Text, "", "any", NoEffect, "logging only"),
    opt("log_avg_msec", &[], Int, "0", "any", NoEffect, "logging only"),
    opt("rate", &[], Text, "", "bytes/s >0", Modelled, "bandwidth per job: open-loop arrivals at rate / mean bs (modelled card)"),
    opt("rate_iops", &[], Int, "", ">0", Modelled, "IOPS per job: open-loop arrivals at this rate (modelled card)"),
    opt("rate_min", &["ratemin"], Text, "", "", NotModelled, "minimum rate: not modelled"),
    opt("rate_process", &[], Text, "linear", "linear|poisson", Modelled, "arrival process of rate/rate_iops: fixed or exponential gaps"),
    opt("thinktime", &[], Time, "0", "us if no unit", Modelled, "pause of a job after every thinktime_blocks I/Os (closed loop)"),
    opt("thinktime_blocks", &[], Int, "1", ">=1", Modelled, "I/Os between two think times"),
    opt("thinktime_spin", &[], Time, "0", "", NotModelled, "think-time spin: not modelled"),
    opt("thinktime_iotime", &[], Time, "", "s if no unit", Modelled, "issue this long, then pause thinktime (bursts; with rate/rate_iops: on/off windows)"),
    opt("rate_ignore_thinktime", &[], Bool, "0", "0|1", Modelled, "after a pause, resume the rate without catching up (default: catch up)"),
    opt("ss", &["steadystate"], Text, "", "", NotModelled,
        "steady-state termination: not in vsl run (vsl review has SNIA's detector)"),
    opt("ss_dur", &["steadystate_duration"], Time, "", "", NotModelled, "steady-state window: not modelled"),
    opt("ss_ramp", &["steadystate_ramp_time"], Time, "", "", NotModelled, "steady-state ramp: not modelled"),
    opt("ss_interval", &["steadystate_check_interval"], Time, "", "", NotModelled, "steady-state check: not modelled"),
    opt("startdelay", &[], Time, "0", "", NotModelled, "delayed start: not modelled"),
    opt("loops", &[], Int, "1", "", NotModelled, "repeat count: vsl runs for a time"),
    opt("number_ios", &[], Int, "", "", NotModelled, "I/O count limit: vsl runs for a time"),
    opt("io_size", &["io_limit"], Size, "", "", NotModelled, "byte limit: vsl runs for a time"),
    opt("verify", &[], Text, "", "", NotModelled, "data verification: a modelled card carries no data"),
    opt("do_verify", &[], Bool, "1", "", NotModelled, "data verification: not modelled"),
    opt("fsync", &[], Int, "0", "", NotModelled, "flushes: not modelled"),
    opt("fdatasync", &[], Int, "0", "", NotModelled, "flushes: not modelled"),
    opt("sync", &[], Text, "0", "", NotModelled, "synchronous writes: not modelled"),
    opt("nrfiles", &["nr_files"], Int, "1", "", NotModelled, "several files: vsl runs one region"),
    opt("zonemode", &[], Text, "none", "", NotModelled, "zoned devices: not modelled"),
    opt("iodepth_batch", &["iodepth_batch_submit"], Int, "1", "", NotModelled, "submission batching: not modelled"),
    opt("iodepth_batch_complete", &["iodepth_batch_complete_min"], Int, "1", "", NotModelled, "completion batching: not modelled"),
    opt("random_generator", &[], Text, "tausworthe", "", NotModelled, "fio's generators (lfsr never repeats): vsl has its own"),
];

/// The table row for `name` (or one of its aliases).
pub fn option(name: &str) -> Option<&'static FioOption> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// The table as text: what `vsl run --list-fio-options` prints.
pub fn options_table() -> String {
    let rows: Vec<[String; 6]> = OPTIONS
        .iter()
        .map(|o| {
            let name = if o.aliases.is_empty() {
                o.name.to_string()
            } else {
                format!("{} ({})", o.name, o.aliases.join(", "))
            };
            let support = match o.support {
                Modelled => "modelled",
                NoEffect => "no effect",
                NotModelled => "refused",
            };
            [
                name,
                o.kind.name().into(),
                o.default.into(),
                o.range.into(),
                support.into(),
                o.help.into(),
            ]
        })
        .collect();
    let head = ["option", "type", "default", "range", "support", "help"].map(String::from);
    let mut width = [0usize; 5];
    for r in std::iter::once(&head).chain(&rows) {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&head).chain(&rows) {
        for (w, c) in width.iter().zip(r) {
            out += &format!("{c:<w$}  ");
        }
        out += &r[5];
        out.push('\n');
    }
    out
}

/// A job file that cannot be run: where and why, in one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct JobFileError {
    pub file: String,
    /// 1-based; 0 when the error is not about one line.
    pub line: usize,
    pub message: String,
}

impl JobFileError {
    fn at(path: &Path, line: usize, message: impl Into<String>) -> JobFileError {
        JobFileError {
            file: path.display().to_string(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for JobFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// How a job file is read: what `${VAR}` and `$ncpus` stand for, how an
/// included file is read, and whether to refuse what vsl cannot model.
pub struct Context<'a> {
    pub lenient: bool,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub ncpus: u32,
    pub read: &'a dyn Fn(&Path) -> Result<String, String>,
}

/// One job: a workload and how to run it.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub name: String,
    /// Where its section starts, `file:line`.
    pub at: String,
    pub spec: PlannedSpec,
    pub numjobs: u32,
    pub iodepth: u32,
    /// `None`: no runtime given; the caller's default applies.
    pub runtime_ns: Option<u64>,
    pub time_based: bool,
    pub ramp_ns: Option<u64>,
    /// `None`: no randseed given; the caller's default applies.
    pub seed: Option<u64>,
    /// fio's `buffer_compress_percentage` as a fraction.
    pub compress: Option<f64>,
    /// `name=value` of options ignored under `lenient`.
    pub ignored: Vec<String>,
    /// Where vsl's run differs from fio's, for the user.
    pub notes: Vec<String>,
    /// The options of its own section as written (after `${VAR}`), in
    /// order: fio's JSON "job options". A flag has an empty value.
    pub options: Vec<(String, String)>,
    /// The `[global]` options in force for it: fio's "global options".
    pub global_options: Vec<(String, String)>,
    /// fio's `rate_iops` (per job): an open-loop run at this rate.
    pub rate_iops: Option<u64>,
    /// fio's `rate` (bytes/s per job): an open-loop run at this bandwidth.
    pub rate_bytes: Option<u64>,
    /// `rate_process=poisson` (else linear: fixed gaps).
    pub rate_poisson: bool,
    /// fio's `thinktime` (ns; `None`: none).
    pub thinktime_ns: Option<u64>,
    /// fio's `thinktime_blocks`.
    pub thinktime_blocks: u32,
    /// Whether `thinktime_blocks` was given (fio ignores its default of 1
    /// when `thinktime_iotime` is set).
    pub thinktime_blocks_set: bool,
    /// fio's `thinktime_iotime` (ns).
    pub thinktime_iotime_ns: Option<u64>,
    /// fio's `rate_ignore_thinktime`.
    pub rate_ignore_thinktime: bool,
}

/// A parsed job file: phases run one after another; the jobs of a phase
/// run concurrently in fio (only with `lenient` can a phase hold more than
/// one, and vsl then runs them one after another).
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    pub phases: Vec<Vec<Job>>,
}

impl JobFile {
    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.phases.iter().flatten()
    }
}

/// Nesting bound of `include`.
const INCLUDE_DEPTH_MAX: usize = 8;

#[derive(Clone)]
struct Entry {
    key: String,
    value: Option<String>,
    file: String,
    line: usize,
    /// `${VAR}`s of the line that were not set (and so became empty).
    unset: Vec<String>,
}

impl Entry {
    fn err(&self, message: impl Into<String>) -> JobFileError {
        JobFileError {
            file: self.file.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    fn spelled(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.key),
            None => self.key.clone(),
        }
    }
}

struct Section {
    name: String,
    file: String,
    line: usize,
    entries: Vec<Entry>,
}

/// Reads the job file at `path` with the process environment, the real
/// `$ncpus` and the file system.
pub fn read(path: &Path, lenient: bool) -> Result<JobFile, JobFileError> {
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let env = |k: &str| std::env::var(k).ok();
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let cx = Context {
        lenient,
        env: &env,
        ncpus,
        read: &read,
    };
    let text = (cx.read)(path)
        .map_err(|e| JobFileError::at(path, 0, format!("cannot read the job file: {e}")))?;
    parse(&text, path, &cx)
}

/// Parses `text` with nothing from outside: every `${VAR}` unset,
/// `$ncpus` 1, no include found. What the cargo-fuzz target runs.
pub fn parse_isolated(text: &str, lenient: bool) -> Result<JobFile, JobFileError> {
    let cx = Context {
        lenient,
        env: &|_| None,
        ncpus: 1,
        read: &|_| Err("no file system here".into()),
    };
    parse(text, Path::new("job.fio"), &cx)
}

/// Parses job-file text; `path` names it in errors and anchors relative
/// includes.
pub fn parse(text: &str, path: &Path, cx: &Context) -> Result<JobFile, JobFileError> {
    let sections = sections(text, path, cx)?;
    let mut phases: Vec<Vec<Job>> = Vec::new();
    let mut globals: Vec<Entry> = Vec::new();
    for s in sections {
        if s.name.starts_with("global") {
            globals.extend(s.entries);
            continue;
        }
        let mut entries = globals.clone();
        let own = pairs(&s.entries);
        entries.extend(s.entries);
        let (mut job, stonewall) = job(&s.name, &s.file, s.line, &entries, cx)?;
        job.options = own;
        job.global_options = pairs(&globals);
        match phases.last_mut() {
            Some(p) if !stonewall => {
                if !cx.lenient {
                    return Err(JobFileError {
                        file: s.file,
                        line: s.line,
                        message: format!(
                            "job '{}' runs concurrently with '{}' in fio (no stonewall): vsl runs \
                             one workload at a time; add stonewall, or --lenient to run them one \
                             after another",
                            s.name, p[0].name
                        ),
                    });
                }
                let mut job = job;
                job.notes.push(format!(
                    "job '{}' ran after '{}', not concurrently as in fio",
                    job.name,
                    p.last().expect("phase").name
                ));
                p.push(job);
            }
            _ => phases.push(vec![job]),
        }
    }
    if phases.is_empty() {
        return Err(JobFileError::at(
            path,
            0,
            "no job section (only [global] or nothing)",
        ));
    }
    Ok(JobFile { phases })
}

/// `key=value` entries as pairs, a flag with an empty value.
fn pairs(entries: &[Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| (e.key.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

/// Where a line stands: its file (named in errors, and the anchor of
/// relative includes), its number and how deep in includes.
#[derive(Clone, Copy)]
struct Line<'a> {
    path: &'a Path,
    number: usize,
    depth: usize,
}

impl Line<'_> {
    fn err(&self, message: impl Into<String>) -> JobFileError {
        JobFileError::at(self.path, self.number, message)
    }
}

/// The lines of `text` that hold something, comments stripped.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, raw)| (i + 1, strip(raw)))
        .filter(|(_, l)| !l.is_empty())
}

/// Splits the text into sections of entries, following includes.
fn sections(text: &str, path: &Path, cx: &Context) -> Result<Vec<Section>, JobFileError> {
    let mut out: Vec<Section> = Vec::new();
    for (number, l) in content_lines(text) {
        let at = Line {
            path,
            number,
            depth: 0,
        };
        if let Some(rest) = l.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| at.err(format!("section header '{l}' has no closing ]")))?
                .trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(at.err(format!("bad section name in '{l}'")));
            }
            out.push(Section {
                name: name.to_string(),
                file: path.display().to_string(),
                line: number,
                entries: Vec::new(),
            });
            continue;
        }
        let Some(section) = out.last_mut() else {
            return Err(at.err(format!("'{l}' is outside of a [section]")));
        };
        entries_of_line(l, at, cx, &mut section.entries)?;
    }
    Ok(out)
}

/// fio's comment rule: `;` or `#` anywhere ends the line.
fn strip(raw: &str) -> &str {
    let end = raw.find([';', '#']).unwrap_or(raw.len());
    raw[..end].trim()
}

/// Adds the entry of one non-empty line (or an included file's entries).
fn entries_of_line(
    l: &str,
    at: Line,
    cx: &Context,
    out: &mut Vec<Entry>,
) -> Result<(), JobFileError> {
    let mut unset = Vec::new();
    let l = substitute(l, cx, &mut unset).map_err(|m| match l.split_once('=') {
        Some((k, _)) => at.err(format!("{}: {m}", k.trim())),
        None => at.err(m),
    })?;
    if let Some(inc) = l.strip_prefix("include ") {
        return include(inc.trim(), at, cx, out);
    }
    let (key, value) = match l.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
        None => (l.trim(), None),
    };
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(at.err(format!("syntax error: '{l}' is not OPTION=VALUE or OPTION")));
    }
    out.push(Entry {
        key: key.to_string(),
        value,
        file: at.path.display().to_string(),
        line: at.number,
        unset,
    });
    Ok(())
}

/// `include FILE`: as given, else beside the including file.
fn include(name: &str, at: Line, cx: &Context, out: &mut Vec<Entry>) -> Result<(), JobFileError> {
    if at.depth >= INCLUDE_DEPTH_MAX {
        return Err(at.err(format!(
            "include '{name}': more than {INCLUDE_DEPTH_MAX} nested includes"
        )));
    }
    let given = PathBuf::from(name);
    let beside = at
        .path
        .parent()
        .map(|d| d.join(name))
        .filter(|b| given.is_relative() && *b != given);
    let (p, text) = match ((cx.read)(&given), beside) {
        (Ok(t), _) => (given, t),
        (Err(_), Some(b)) => match (cx.read)(&b) {
            Ok(t) => (b, t),
            Err(e) => return Err(at.err(format!("include '{name}': {e}"))),
        },
        (Err(e), None) => return Err(at.err(format!("include '{name}': {e}"))),
    };
    for (number, l) in content_lines(&text) {
        let inner = Line {
            path: &p,
            number,
            depth: at.depth + 1,
        };
        if l.starts_with('[') {
            return Err(inner.err("no new sections in included files (as fio)"));
        }
        entries_of_line(l, inner, cx, out)?;
    }
    Ok(())
}

/// `${VAR}` from the environment (empty when unset, as fio; the unset
/// names are pushed to `unset`) and `$ncpus`.
fn substitute(l: &str, cx: &Context, unset: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::with_capacity(l.len());
    let mut rest = l;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(v) = tail.strip_prefix("${") {
            let end = v
                .find('}')
                .ok_or_else(|| format!("'{tail}': ${{ without a closing }}"))?;
            let var = &v[..end];
            match (cx.env)(var) {
                Some(value) => out.push_str(&value),
                None => unset.push(format!("${{{var}}}")),
            }
            rest = &v[end + 1..];
        } else if let Some(v) = tail.strip_prefix("$ncpus") {
            out.push_str(&cx.ncpus.to_string());
            rest = v;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// What the entries of one job set, before they become a [`Job`].
struct Builder {
    rw: String,
    read_mix: Option<f64>,
    block_sizes: BlockSizes,
    distribution: Distribution,
    zoned_abs: Option<Vec<(f64, u64)>>,
    size: Option<Extent>,
    filesize: Option<Extent>,
    offset: Option<Extent>,
    job: Job,
    stonewall: bool,
    norandommap: bool,
    /// Whether direct=1 (or buffered=0) was given.
    direct: bool,
}

impl Builder {
    /// fio's defaults: rw=read, bs=4k, iodepth=1, numjobs=1.
    fn new(name: &str, at: String) -> Builder {
        Builder {
            rw: "read".into(),
            read_mix: None,
            block_sizes: BlockSizes::Fixed(4096),
            distribution: Distribution::Uniform,
            zoned_abs: None,
            size: None,
            filesize: None,
            offset: None,
            stonewall: false,
            norandommap: false,
            direct: false,
            job: Job {
                name: name.to_string(),
                at,
                spec: PlannedSpec::new(WorkloadSpec::from_rw("read", None).expect("read")),
                numjobs: 1,
                iodepth: 1,
                runtime_ns: None,
                time_based: false,
                ramp_ns: None,
                seed: None,
                compress: None,
                ignored: Vec::new(),
                notes: Vec::new(),
                options: Vec::new(),
                global_options: Vec::new(),
                rate_iops: None,
                rate_bytes: None,
                rate_poisson: false,
                thinktime_ns: None,
                thinktime_blocks: 1,
                thinktime_blocks_set: false,
                thinktime_iotime_ns: None,
                rate_ignore_thinktime: false,
            },
        }
    }
}

/// Turns a job's entries (globals first) into a [`Job`]; returns whether
/// it starts a new phase.
fn job(
    name: &str,
    file: &str,
    line: usize,
    entries: &[Entry],
    cx: &Context,
) -> Result<(Job, bool), JobFileError> {
    let mut b = Builder::new(name, format!("{file}:{line}"));
    for e in entries {
        let Some(o) = option(&e.key) else {
            if cx.lenient {
                b.job.ignored.push(e.spelled());
                continue;
            }
            return Err(e.err(format!(
                "unknown fio option '{}' (vsl run --list-fio-options lists those vsl reads; \
                 --lenient ignores the rest)",
                e.key
            )));
        };
        match apply(&mut b, o, e) {
            Ok(()) => {}
            Err(Refusal::NotModelled(_)) if cx.lenient => b.job.ignored.push(e.spelled()),
            Err(Refusal::NotModelled(why)) => {
                return Err(e.err(format!(
                    "'{}' is not modelled: {why} (--lenient ignores it)",
                    e.spelled()
                )))
            }
            Err(Refusal::Invalid(m)) if e.unset.is_empty() => {
                return Err(e.err(format!("{}: {m}", e.key)))
            }
            Err(Refusal::Invalid(m)) => {
                return Err(e.err(format!(
                    "{}: {m} ({} not set in the environment)",
                    e.key,
                    e.unset.join(", ")
                )))
            }
        }
    }
    let stonewall = b.stonewall;
    finish(b).map(|j| (j, stonewall)).map_err(|m| JobFileError {
        file: file.to_string(),
        line,
        message: format!("job '{name}': {m}"),
    })
}

enum Refusal {
    NotModelled(String),
    Invalid(String),
}

fn invalid<T>(m: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Invalid(m.into()))
}

fn bool_of(e: &Entry) -> Result<bool, Refusal> {
    match e.value.as_deref() {
        None | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(v) => invalid(format!("'{v}' is not 0 or 1")),
    }
}

fn value(e: &Entry) -> Result<&str, Refusal> {
    match e.value.as_deref() {
        Some(v) if v.contains('$') => invalid(format!(
            "'{v}': only ${{VAR}} and $ncpus are substituted (no $pagesize, $mb_memory or arithmetic)"
        )),
        Some(v) if !v.is_empty() => Ok(v),
        _ => invalid("needs a value (OPTION=VALUE)"),
    }
}

fn int_of(e: &Entry, min: u64, max: u64) -> Result<u64, Refusal> {
    let v = value(e)?;
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => invalid(format!("'{v}' is not a whole number from {min} to {max}")),
    }
}

/// A value that fio allows to differ for reads and writes (`4k,8k`): one
/// value, or refused when the parts differ.
fn same_for_reads_and_writes(e: &Entry) -> Result<&str, Refusal> {
    let v = value(e)?;
    let mut parts = v.split(',').filter(|p| !p.is_empty());
    let first = parts.next().unwrap_or(v);
    if parts.any(|p| p != first) {
        return Err(Refusal::NotModelled(
            "separate values for reads and writes".into(),
        ));
    }
    Ok(first)
}

fn apply(b: &mut Builder, o: &FioOption, e: &Entry) -> Result<(), Refusal> {
    if o.support == NotModelled {
        return Err(Refusal::NotModelled(o.help.to_string()));
    }
    if o.support == NoEffect {
        // Still checked, so a typo in a flag does not pass silently.
        if o.kind == Bool {
            bool_of(e)?;
        }
        return Ok(());
    }
    let j = &mut b.job;
    match o.name {
        "rw" => b.rw = rw(value(e)?)?,
        "rwmixread" => b.read_mix = Some(percent(e)?),
        "rwmixwrite" => b.read_mix = Some(1.0 - percent(e)?),
        "bs" => {
            let s = same_for_reads_and_writes(e)?;
            b.block_sizes = BlockSizes::Fixed(parse_size(s).map_err(Refusal::Invalid)?);
        }
        "bsrange" => b.block_sizes = bsrange(same_for_reads_and_writes(e)?)?,
        "bssplit" => {
            b.block_sizes = BlockSizes::parse_split(same_for_reads_and_writes(e)?)
                .map_err(|x| Refusal::Invalid(x.to_string()))?
        }
        "size" => b.size = Some(extent(e, Extent::parse)?),
        "filesize" => b.filesize = Some(extent(e, Extent::parse)?),
        "offset" => b.offset = Some(extent(e, Extent::parse_start)?),
        "runtime" => j.runtime_ns = time_or_zero(e)?,
        "time_based" => j.time_based = bool_of(e)?,
        "ramp_time" => j.ramp_ns = time_or_zero(e)?,
        "random_distribution" => distribution(b, value(e)?)?,
        "norandommap" => b.norandommap = bool_of(e)?,
        "randrepeat" if !bool_of(e)? => {
            return Err(Refusal::NotModelled(
                "a fresh seed every run; vsl is deterministic (set randseed)".into(),
            ))
        }
        "randrepeat" => {}
        "randseed" => j.seed = Some(int_of(e, 0, u64::MAX)?),
        "numjobs" => j.numjobs = int_of(e, 1, 65_536)? as u32,
        "iodepth" => j.iodepth = int_of(e, 1, 65_536)? as u32,
        "buffer_compress_percentage" => {
            let p = percent(e)?;
            if p >= 1.0 {
                return invalid("100% leaves no data (0 to 99)");
            }
            j.compress = Some(p);
        }
        "direct" if !bool_of(e)? => return Err(buffered()),
        "buffered" if bool_of(e)? => return Err(buffered()),
        "direct" | "buffered" => b.direct = true,
        "stonewall" => b.stonewall = bool_of(e)?,
        "rate_iops" => {
            let v = same_for_reads_and_writes(e)?;
            match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => j.rate_iops = Some(n),
                _ => return invalid(format!("'{v}' is not a positive whole number of IOPS")),
            }
        }
        "rate" => {
            let v = same_for_reads_and_writes(e)?;
            match parse_size(v) {
                Ok(n) if n > 0 => j.rate_bytes = Some(n),
                Ok(_) => return invalid("the rate must be positive"),
                Err(m) => return invalid(m),
            }
        }
        "thinktime" => {
            // fio's unit for a bare number here is the microsecond.
            let v = value(e)?;
            j.thinktime_ns = match v.trim() {
                "0" => None,
                t if t.chars().all(|c| c.is_ascii_digit()) => {
                    Some(parse_duration_ns(&format!("{t}us")).map_err(Refusal::Invalid)?)
                }
                t => Some(parse_duration_ns(t).map_err(Refusal::Invalid)?),
            };
        }
        "thinktime_blocks" => {
            j.thinktime_blocks = int_of(e, 1, 1 << 30)? as u32;
            j.thinktime_blocks_set = true;
        }
        "thinktime_iotime" => {
            // fio's unit for a bare number here is the second.
            let v = value(e)?;
            j.thinktime_iotime_ns = match v.trim() {
                "0" => None,
                t if t.chars().all(|c| c.is_ascii_digit()) => {
                    Some(parse_duration_ns(&format!("{t}s")).map_err(Refusal::Invalid)?)
                }
                t => Some(parse_duration_ns(t).map_err(Refusal::Invalid)?),
            };
        }
        "rate_ignore_thinktime" => j.rate_ignore_thinktime = bool_of(e)?,
        "rate_process" => {
            j.rate_poisson = match value(e)? {
                "poisson" => true,
                "linear" => false,
                o => return invalid(format!("'{o}' (expected linear or poisson)")),
            }
        }
        other => unreachable!("modelled option '{other}' has no rule"),
    }
    Ok(())
}

fn buffered() -> Refusal {
    Refusal::NotModelled("buffered I/O through the page cache; vsl does direct I/O".into())
}

fn percent(e: &Entry) -> Result<f64, Refusal> {
    parse_percent(value(e)?).map_err(Refusal::Invalid)
}

fn extent(e: &Entry, parse: fn(&str) -> Result<Extent, String>) -> Result<Extent, Refusal> {
    parse(value(e)?).map_err(Refusal::Invalid)
}

fn time_or_zero(e: &Entry) -> Result<Option<u64>, Refusal> {
    match value(e)? {
        "0" => Ok(None),
        v => parse_duration_ns(v).map(Some).map_err(Refusal::Invalid),
    }
}

fn rw(v: &str) -> Result<String, Refusal> {
    let (name, skip) = match v.split_once(':') {
        Some((n, s)) => (n, Some(s)),
        None => (v, None),
    };
    if matches!(name, "trim" | "randtrim" | "trimwrite" | "randtrimwrite") {
        return Err(Refusal::NotModelled(format!(
            "rw={name}: trims are not in vsl run's workloads"
        )));
    }
    WorkloadSpec::from_rw(name, None).map_err(|e| Refusal::Invalid(e.to_string()))?;
    if let Some(s) = skip {
        // `:0` (no skip) and, for random patterns, `:1` (a new offset
        // every I/O) are what the generator does anyway.
        let random = name.starts_with("rand");
        let neutral = s == "0" || (random && s == "1");
        if !neutral {
            return Err(Refusal::NotModelled(format!(
                "'{v}': {} the generator does not model",
                if random {
                    "runs of sequential I/Os between random offsets are something"
                } else {
                    "skips between sequential I/Os are something"
                }
            )));
        }
    }
    Ok(name.to_string())
}

/// fio's `bsrange=MIN-MAX`: sizes are multiples of MIN, equally likely.
fn bsrange(v: &str) -> Result<BlockSizes, Refusal> {
    let (lo, hi) = v
        .split_once('-')
        .ok_or_else(|| Refusal::Invalid(format!("'{v}' is not MIN-MAX")))?;
    let lo = parse_size(lo).map_err(Refusal::Invalid)?;
    let hi = parse_size(hi).map_err(Refusal::Invalid)?;
    if hi < lo {
        return invalid(format!("'{v}': MAX is below MIN"));
    }
    let n = hi / lo;
    if n > 4096 {
        return invalid(format!("'{v}': more than 4096 sizes"));
    }
    if n == 1 {
        return Ok(BlockSizes::Fixed(lo));
    }
    let w = 1.0 / n as f64;
    Ok(BlockSizes::Split((1..=n).map(|k| (k * lo, w)).collect()))
}

fn distribution(b: &mut Builder, v: &str) -> Result<(), Refusal> {
    let kind = v.split(':').next().unwrap_or(v);
    match kind {
        "pareto" | "normal" | "gauss" => Err(Refusal::NotModelled(format!(
            "random_distribution={kind}: the generator has random, zipf and zoned"
        ))),
        "zoned_abs" => {
            b.zoned_abs = Some(zoned_abs(&v["zoned_abs:".len().min(v.len())..])?);
            Ok(())
        }
        "zipf" if v.split(':').count() > 2 => Err(Refusal::NotModelled(format!(
            "'{v}': a zipf centred elsewhere; the generator scatters the ranks"
        ))),
        "zoned" => {
            let zones = fill_zones(&v["zoned:".len().min(v.len())..])?;
            b.distribution = Distribution::parse(&format!("zoned:{zones}"))
                .map_err(|e| Refusal::Invalid(e.to_string()))?;
            b.zoned_abs = None;
            Ok(())
        }
        _ => {
            b.distribution = Distribution::parse(v).map_err(|e| Refusal::Invalid(e.to_string()))?;
            b.zoned_abs = None;
            Ok(())
        }
    }
}

/// fio's `zoned:50/5:30/15:20/`: a missing access or size percentage
/// shares what the others leave, as fio does.
fn fill_zones(v: &str) -> Result<String, Refusal> {
    let zones: Vec<[&str; 2]> = v
        .split(':')
        .map(|z| z.split_once('/').map_or([z, ""], |(a, s)| [a, s]))
        .collect();
    let fill = |pick: usize| -> Result<Vec<String>, Refusal> {
        let given: Vec<Option<f64>> = zones
            .iter()
            .map(|z| match z[pick].trim() {
                "" => Ok(None),
                p => parse_percent(p)
                    .map(|f| Some(f * 100.0))
                    .map_err(Refusal::Invalid),
            })
            .collect::<Result<_, _>>()?;
        let missing = given.iter().filter(|g| g.is_none()).count();
        let rest = 100.0 - given.iter().flatten().sum::<f64>();
        let share = if missing > 0 {
            rest / missing as f64
        } else {
            0.0
        };
        Ok(given
            .iter()
            .map(|g| g.unwrap_or(share).to_string())
            .collect())
    };
    let (access, size) = (fill(0)?, fill(1)?);
    Ok(access
        .iter()
        .zip(&size)
        .map(|(a, s)| format!("{a}/{s}"))
        .collect::<Vec<_>>()
        .join(":"))
}

/// `zoned_abs:60/20M:40/80M`: access percentages over absolute zone sizes,
/// turned into shares once the region's size is known.
fn zoned_abs(v: &str) -> Result<Vec<(f64, u64)>, Refusal> {
    let mut out = Vec::new();
    for z in v.split(':') {
        let (a, s) = z
            .split_once('/')
            .ok_or_else(|| Refusal::Invalid(format!("zone '{z}' must be ACCESS%/SIZE")))?;
        out.push((
            parse_percent(a).map_err(Refusal::Invalid)?,
            parse_size(s).map_err(Refusal::Invalid)?,
        ));
    }
    let total: f64 = out.iter().map(|z| z.0).sum();
    if (total - 1.0).abs() > 1e-6 {
        return invalid(format!("zones '{v}' must add up to 100% of accesses"));
    }
    Ok(out)
}

/// Checks what only the whole job can tell and builds its spec.
fn finish(b: Builder) -> Result<Job, String> {
    let mut j = b.job;
    let mut spec = WorkloadSpec::from_rw(&b.rw, b.read_mix).map_err(|e| e.to_string())?;
    spec.block_sizes = b.block_sizes;
    spec.distribution = b.distribution;
    let region = b.filesize.or(b.size);
    if b.filesize.is_some() && b.size.is_some() && b.filesize != b.size {
        j.notes
            .push("size= bounds fio's amount of I/O; vsl runs for a time over filesize=".into());
    }
    if let Some(zones) = b.zoned_abs {
        let Some(Extent::Bytes(len)) = region else {
            return Err("random_distribution=zoned_abs needs size= or filesize= in bytes".into());
        };
        let covered: u64 = zones.iter().map(|z| z.1).sum();
        if covered != len {
            return Err(format!(
                "zoned_abs zones cover {covered} bytes, the region is {len}: make them equal"
            ));
        }
        spec.distribution = Distribution::Zoned(
            zones
                .iter()
                .map(|&(a, s)| (a, s as f64 / len as f64))
                .collect(),
        );
    }
    if !b.direct {
        j.notes
            .push("no direct=1: fio would go through the page cache, vsl does direct I/O".into());
    }
    if spec.pattern == crate::Pattern::Sequential && j.numjobs > 1 {
        j.notes.push(format!(
            "numjobs={} sequential: vsl's threads start at equal shares of the region, fio's clones each at its start",
            j.numjobs
        ));
    }
    if spec.pattern == crate::Pattern::Random && !b.norandommap {
        j.notes.push(
            "offsets drawn with replacement (as fio's norandommap), not fio's random map".into(),
        );
    }
    if j.runtime_ns.is_none() {
        j.notes
            .push("no runtime: vsl runs --duration; fio runs until size bytes are done".into());
    } else if !j.time_based {
        j.notes.push(
            "not time_based: vsl runs the whole runtime, fio may stop once size bytes are done"
                .into(),
        );
    }
    if j.numjobs as u64 * j.iodepth as u64 > 65_536 {
        return Err("numjobs x iodepth must be at most 65536".into());
    }
    j.spec = PlannedSpec {
        spec,
        offset: b.offset,
        size: region,
    };
    Ok(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(
        text: &str,
        lenient: bool,
        files: &[(&str, &str)],
    ) -> Result<JobFile, JobFileError> {
        let env = |k: &str| (k == "BS").then(|| "8k".to_string());
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let read = move |p: &Path| {
            files
                .iter()
                .find(|f| Path::new(&f.0) == p)
                .map(|f| f.1.clone())
                .ok_or_else(|| "No such file or directory".to_string())
        };
        let cx = Context {
            lenient,
            env: &env,
            ncpus: 6,
            read: &read,
        };
        parse(text, Path::new("dir/t.fio"), &cx)
    }

    fn one(text: &str) -> Job {
        let f = parse_with(text, false, &[]).unwrap();
        assert_eq!(f.phases.len(), 1);
        f.phases[0][0].clone()
    }

    #[test]
    fn globals_apply_to_later_jobs_and_jobs_override_them() {
        let f = parse_with(
            "[global]\nbs=${BS} ; from the environment\niodepth=4\n\n[a]\nrw=randwrite\nnumjobs=$ncpus\n\
             [global]\niodepth=8\n[b]\nstonewall\nrw=read\nbs=16k # own\n",
            false,
            &[],
        )
        .unwrap();
        assert_eq!(f.phases.len(), 2);
        let (a, b) = (&f.phases[0][0], &f.phases[1][0]);
        assert_eq!(a.spec.spec.block_sizes, BlockSizes::Fixed(8192));
        assert_eq!((a.iodepth, a.numjobs), (4, 6));
        assert_eq!(a.spec.spec.rw_name(), "randwrite");
        assert_eq!(b.spec.spec.block_sizes, BlockSizes::Fixed(16384));
        assert_eq!(b.iodepth, 8);
        assert_eq!(b.at, "dir/t.fio:10");
    }

    #[test]
    fn run_options_map_as_the_cli_flags() {
        let j = one(
            "[j]\nrw=randrw\nrwmixwrite=30\nruntime=2m\nramp_time=500ms\ntime_based\nrandseed=7\n\
             size=50%\noffset=1g\nrandom_distribution=zipf:1.2\nbuffer_compress_percentage=40\n\
             ioengine=libaio\ndirect=1\nnorandommap\n",
        );
        assert!((j.spec.spec.read_fraction - 0.7).abs() < 1e-12);
        assert_eq!(j.runtime_ns, Some(120_000_000_000));
        assert_eq!(j.ramp_ns, Some(500_000_000));
        assert_eq!(j.seed, Some(7));
        assert_eq!(j.spec.size, Some(Extent::Fraction(0.5)));
        assert_eq!(j.spec.offset, Some(Extent::Bytes(1 << 30)));
        assert_eq!(j.spec.spec.distribution, Distribution::Zipf(1.2));
        assert_eq!(j.compress, Some(0.4));
        assert!(j.notes.is_empty(), "{:?}", j.notes);
    }

    #[test]
    fn differences_from_fio_are_noted() {
        let j = one("[j]\nrw=read\nnumjobs=4\n");
        let notes = j.notes.join("; ");
        for want in ["no runtime", "no direct=1", "numjobs=4 sequential"] {
            assert!(notes.contains(want), "{want:?} not in {notes}");
        }
        let j = one("[j]\nrw=randread\nruntime=1s\ndirect=1\n");
        let notes = j.notes.join("; ");
        assert!(notes.contains("with replacement"), "{notes}");
        assert!(notes.contains("not time_based"), "{notes}");
        assert_eq!(j.notes.len(), 2, "{notes}");
    }

    #[test]
    fn bsrange_and_zoned_abs_become_what_the_generator_has() {
        let j = one("[j]\nbsrange=4k-16k\nrw=randread\nsize=100m\nrandom_distribution=zoned_abs:60/20m:40/80m\n");
        assert_eq!(
            j.spec.spec.block_sizes,
            BlockSizes::Split(vec![
                (4096, 0.25),
                (8192, 0.25),
                (12288, 0.25),
                (16384, 0.25)
            ])
        );
        assert_eq!(
            j.spec.spec.distribution,
            Distribution::Zoned(vec![(0.6, 0.2), (0.4, 0.8)])
        );
        // fio's rand-zones example: the last zone's size is what is left.
        let j = one("[j]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\n");
        assert_eq!(
            j.spec.spec.distribution,
            Distribution::Zoned(vec![(0.5, 0.05), (0.3, 0.15), (0.2, 0.8)])
        );
        let e = parse_with(
            "[j]\nsize=100m\nrandom_distribution=zoned_abs:60/20m:40/10m\n",
            false,
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("cover 31457280 bytes"), "{e}");
    }

    #[test]
    fn rates_are_read_and_bad_ones_refused() {
        let j = one("[j]\nrw=randread\nrate_iops=5000\nrate_process=poisson\n");
        assert_eq!(
            (j.rate_iops, j.rate_bytes, j.rate_poisson),
            (Some(5000), None, true)
        );
        let j = one("[j]\nthinktime=250\nthinktime_blocks=8\n");
        assert_eq!(
            (j.thinktime_ns, j.thinktime_blocks),
            (Some(250_000), 8),
            "bare: us"
        );
        assert_eq!(one("[j]\nthinktime=2ms\n").thinktime_ns, Some(2_000_000));
        // Bursts: thinktime_iotime's bare number is in seconds.
        let j =
            one("[j]\nthinktime=1s\nthinktime_iotime=9\nrate_iops=100\nrate_ignore_thinktime=1\n");
        assert_eq!(
            (
                j.thinktime_iotime_ns,
                j.thinktime_blocks_set,
                j.rate_ignore_thinktime
            ),
            (Some(9_000_000_000), false, true)
        );
        let j = one("[j]\nthinktime=1ms\nthinktime_iotime=250ms\nthinktime_blocks=4\n");
        assert_eq!(
            (
                j.thinktime_iotime_ns,
                j.thinktime_blocks,
                j.thinktime_blocks_set
            ),
            (Some(250_000_000), 4, true)
        );
        assert!(parse_with("[j]\nthinktime_blocks=0\n", false, &[]).is_err());
        let j = one("[j]\nrw=randread\nrate=4m,4m\n");
        assert_eq!(
            (j.rate_iops, j.rate_bytes, j.rate_poisson),
            (None, Some(4 << 20), false)
        );
        for (text, needle) in [
            ("[j]\nrate_iops=0\n", "positive whole number"),
            ("[j]\nrate_iops=fast\n", "'fast'"),
            ("[j]\nrate_iops=100,200\n", "separate values"),
            ("[j]\nrate_process=bursty\n", "linear or poisson"),
            ("[j]\nrate=0\n", "positive"),
        ] {
            let e = parse_with(text, false, &[]).unwrap_err();
            assert_eq!(e.line, 2, "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn refusals_name_the_option_and_the_line() {
        let e = parse_with("[j]\nrw=read\nthinktime_spin=500\n", false, &[]).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("dir/t.fio:3: 'thinktime_spin=500' is not modelled"),
            "{e}"
        );
        let e = parse_with("[j]\nfrobnicate=1\n", false, &[]).unwrap_err();
        assert!(
            e.to_string().contains("unknown fio option 'frobnicate'"),
            "{e}"
        );
        let e = parse_with("[j]\nrandom_distribution=pareto:0.9\n", false, &[]).unwrap_err();
        assert!(e.message.contains("pareto"), "{e}");
        let e = parse_with("[j]\nrandom_distribution=zipf:1.2:0.25\n", false, &[]).unwrap_err();
        assert!(e.message.contains("centred"), "{e}");
        let e = parse_with("[j]\nrw=read:4k\n", false, &[]).unwrap_err();
        assert!(e.message.contains("skips"), "{e}");
        let e = parse_with("[j]\nbs=4k,8k\n", false, &[]).unwrap_err();
        assert!(e.message.contains("reads and writes"), "{e}");
        let e = parse_with("[j]\ndirect=0\n", false, &[]).unwrap_err();
        assert!(e.message.contains("page cache"), "{e}");
        assert!(parse_with("[j]\nrw=read:0\nbs=4k,4k\n", false, &[]).is_ok());
    }

    #[test]
    fn syntax_errors_carry_their_line() {
        let e = parse_with("# c\n[j\nrw=read\n", false, &[]).unwrap_err();
        assert_eq!((e.line, e.file.as_str()), (2, "dir/t.fio"));
        let e = parse_with("rw=read\n[j]\n", false, &[]).unwrap_err();
        assert!(e.message.contains("outside of a [section]"), "{e}");
        let e = parse_with("[j]\nr w=read\n", false, &[]).unwrap_err();
        assert!(e.message.contains("syntax error"), "{e}");
        let e = parse_with("[j]\nbs=${NOPE}\n", false, &[]).unwrap_err();
        assert_eq!(
            e.message,
            "bs: needs a value (OPTION=VALUE) (${NOPE} not set in the environment)"
        );
        // As fio, an unset variable is empty: harmless where nothing reads it.
        assert!(parse_with("[j]\nfilename=/dev/${NOPE}\n", false, &[]).is_ok());
        let e = parse_with("[j]\nsize=$mb_memory\n", false, &[]).unwrap_err();
        assert!(e.message.contains("only ${VAR} and $ncpus"), "{e}");
        let e = parse_with("[global]\nbs=4k\n", false, &[]).unwrap_err();
        assert!(e.message.contains("no job section"), "{e}");
        let e = parse_with("[j]\niodepth=0\n", false, &[]).unwrap_err();
        assert!(e.to_string().contains("dir/t.fio:2: iodepth: '0'"), "{e}");
    }

    #[test]
    fn includes_resolve_beside_the_file_and_name_their_own_lines() {
        let j = parse_with(
            "[j]\ninclude common.fio\nrw=write\n",
            false,
            &[("dir/common.fio", "bs=64k\niodepth=32\n")],
        )
        .unwrap();
        let j = &j.phases[0][0];
        assert_eq!(j.spec.spec.block_sizes, BlockSizes::Fixed(65536));
        assert_eq!(j.iodepth, 32);
        let e = parse_with(
            "[j]\ninclude bad.fio\n",
            false,
            &[("dir/bad.fio", "\nthinktime_spin=5\n")],
        )
        .unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("dir/bad.fio", 2));
        let e = parse_with("[j]\ninclude gone.fio\n", false, &[]).unwrap_err();
        assert!(e.message.contains("include 'gone.fio'"), "{e}");
        let e = parse_with(
            "[j]\ninclude loop.fio\n",
            false,
            &[("dir/loop.fio", "include loop.fio\n")],
        )
        .unwrap_err();
        assert!(e.message.contains("nested includes"), "{e}");
    }

    #[test]
    fn concurrent_jobs_are_refused_unless_lenient() {
        let e = parse_with("[a]\nrw=read\n[b]\nrw=write\n", false, &[]).unwrap_err();
        assert_eq!(e.line, 3);
        let text = "[a]\nrw=read\n[b]\nrw=write\nthinktime_spin=10\nmystery=2\n";
        assert!(e.message.contains("runs concurrently"), "{e}");
        let f = parse_with(text, true, &[]).unwrap();
        assert_eq!(f.phases.len(), 1);
        assert_eq!(f.phases[0].len(), 2);
        assert_eq!(
            f.phases[0][1].ignored,
            vec!["thinktime_spin=10", "mystery=2"]
        );
        assert!(f.phases[0][1]
            .notes
            .iter()
            .any(|n| n.contains("not concurrently")));
    }

    #[test]
    fn the_table_has_one_row_per_name() {
        let mut seen = std::collections::BTreeSet::new();
        for o in OPTIONS {
            for n in std::iter::once(&o.name).chain(o.aliases) {
                assert!(seen.insert(*n), "{n} twice");
            }
            // Every modelled option has a rule in `apply` (it panics otherwise).
            if o.support == Modelled {
                let e = Entry {
                    key: o.name.into(),
                    value: Some("1".into()),
                    file: "t".into(),
                    line: 1,
                    unset: Vec::new(),
                };
                let mut b = Builder::new("j", "t:1".into());
                let _ = apply(&mut b, o, &e);
            }
        }
        assert!(options_table().lines().count() == OPTIONS.len() + 1);
    }
}
