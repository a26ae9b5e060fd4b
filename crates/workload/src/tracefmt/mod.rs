//! Block-trace readers for replay, streaming: each reader is an iterator
//! over [`TraceRecord`]s that holds one line at a time, so a trace larger
//! than RAM replays in bounded memory.
//!
//! Formats ([`TraceFormat`]): fio iolog v2 and v3, blkparse's default text
//! output, MSR Cambridge CSV, SNIA IOTTA block-trace CSVs, MQSim's ASCII
//! traces. [`detect`] guesses the format from the first lines; every error
//! names the file and the line.

/// What a traced request asks the device to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
    /// Trim / discard / unmap.
    Discard,
    /// Cache flush (no data).
    Flush,
}

impl OpKind {
    pub const ALL: [OpKind; 4] = [OpKind::Read, OpKind::Write, OpKind::Discard, OpKind::Flush];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Discard => "discard",
            OpKind::Flush => "flush",
        }
    }

    /// Index into [`OpKind::ALL`].
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

mod blkparse;
mod iolog;
mod lines;
pub(crate) mod msr;
mod simple;

pub use lines::LineReader;

use std::collections::VecDeque;
use std::fmt;
use std::io::BufRead;
use std::path::Path;

/// Request flags a trace may carry.
pub mod flags {
    /// Forced unit access (blkparse `F` after the op).
    pub const FUA: u8 = 1;
    /// Synchronous request (blkparse `S`, fio `sync`).
    pub const SYNC: u8 = 2;
    /// A cache flush before the data (blkparse `F` before the op).
    pub const PREFLUSH: u8 = 4;
}

/// One traced request, times relative to the trace's first request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub arrival_ns: u64,
    pub op: OpKind,
    /// Bytes (0 for a flush).
    pub offset: u64,
    pub len: u64,
    /// The traced device, volume, disk or file (format-specific number).
    pub device: u32,
    /// When the traced system completed it, if the trace says.
    pub completion_ns: Option<u64>,
    /// [`flags`].
    pub flags: u8,
    /// Line of the trace file it came from.
    pub line: u64,
}

/// The trace formats read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// fio `write_iolog` version 2 (`fio version 2 iolog`; `wait` in µs).
    IologV2,
    /// fio `write_iolog` version 3 (each line starts with a time in µs).
    IologV3,
    /// `blkparse` default text output (`8,0 1 1 0.000000000 123 Q W 1234 + 8 [proc]`).
    Blkparse,
    /// MSR Cambridge CSV (SNIA IOTTA): `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// Tencent CBS CSV (SNIA IOTTA): `Timestamp,Offset,Size,IOType,VolumeID`.
    SniaTencent,
    /// FIU SRCMap / dedup traces (SNIA IOTTA): `ts_ns pid process lba size R|W major minor md5`.
    SniaFiu,
    /// MQSim ASCII trace: `time_ns device lba size_sectors type` (type 0 write, 1 read).
    Mqsim,
}

impl TraceFormat {
    pub const NAMES: &'static str = "iolog, blkparse, msr, snia-tencent, snia-fiu, mqsim";

    pub fn parse(s: &str) -> Result<TraceFormat, String> {
        Ok(match s {
            "iolog" | "iolog-v3" => TraceFormat::IologV3,
            "iolog-v2" => TraceFormat::IologV2,
            "blkparse" => TraceFormat::Blkparse,
            "msr" => TraceFormat::Msr,
            "snia-tencent" | "tencent" => TraceFormat::SniaTencent,
            "snia-fiu" | "fiu" => TraceFormat::SniaFiu,
            "mqsim" => TraceFormat::Mqsim,
            _ => {
                return Err(format!(
                    "unknown trace format '{s}' (expected one of {})",
                    TraceFormat::NAMES
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::IologV2 => "iolog-v2",
            TraceFormat::IologV3 => "iolog-v3",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Msr => "msr",
            TraceFormat::SniaTencent => "snia-tencent",
            TraceFormat::SniaFiu => "snia-fiu",
            TraceFormat::Mqsim => "mqsim",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trace that cannot be read: the file, the line (0: not a line's fault)
/// and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub line: u64,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "trace {}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "trace {} line {}: {}",
                self.file, self.line, self.message
            )
        }
    }
}

impl std::error::Error for TraceError {}

/// Records as a line parser produces them, before the times are made
/// relative.
pub(crate) type Out = VecDeque<TraceRecord>;

/// A format: turns lines into records (zero, one or, buffered, several).
pub(crate) trait LineParser {
    /// One line (without its end), numbered `line`. Blank lines and `#`
    /// comments are skipped before this is called.
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String>;
    /// The file ended: flush what is buffered.
    fn end(&mut self, _out: &mut Out) -> Result<(), String> {
        Ok(())
    }
}

/// A streaming trace reader: an iterator over records with times relative
/// to the first record. It holds one line (and, for blkparse, a bounded
/// window of requests awaiting their completion) at a time. After an error
/// it ends.
pub struct TraceReader {
    lines: LineReader,
    parser: Box<dyn LineParser + Send>,
    out: Out,
    format: TraceFormat,
    base: Option<u64>,
    done: bool,
    records: u64,
}

/// How many lines auto-detection looks at.
const DETECT_LINES: usize = 16;

impl TraceReader {
    /// Opens `path` (`-`: standard input), detecting the format from its
    /// first lines unless `format` is given.
    pub fn open(path: &Path, format: Option<TraceFormat>) -> Result<TraceReader, TraceError> {
        let name = path.display().to_string();
        let input: Box<dyn BufRead + Send> = if name == "-" {
            Box::new(std::io::BufReader::with_capacity(1 << 20, std::io::stdin()))
        } else {
            let f = std::fs::File::open(path).map_err(|e| TraceError {
                file: name.clone(),
                line: 0,
                message: format!("cannot open: {e}"),
            })?;
            Box::new(std::io::BufReader::with_capacity(1 << 20, f))
        };
        TraceReader::new(&name, input, format)
    }

    /// Reads a trace from `input`, named `name` in errors.
    pub fn new(
        name: &str,
        input: Box<dyn BufRead + Send>,
        format: Option<TraceFormat>,
    ) -> Result<TraceReader, TraceError> {
        let mut lines = LineReader::new(name, input);
        let format = match format {
            Some(f) => f,
            None => {
                let head = lines.peek_lines(DETECT_LINES)?;
                detect(&head).ok_or_else(|| TraceError {
                    file: name.into(),
                    line: 0,
                    message: if head.is_empty() {
                        "empty trace".into()
                    } else {
                        format!(
                            "cannot tell its format from the first lines ('{}'): use --trace-format ({})",
                            clip(&head[0]),
                            TraceFormat::NAMES
                        )
                    },
                })?
            }
        };
        let parser: Box<dyn LineParser + Send> = match format {
            TraceFormat::IologV2 | TraceFormat::IologV3 => Box::new(iolog::Iolog::new()),
            TraceFormat::Blkparse => Box::new(blkparse::Blkparse::new()),
            TraceFormat::Msr => Box::new(msr::MsrParser::default()),
            TraceFormat::SniaTencent => Box::new(simple::Tencent),
            TraceFormat::SniaFiu => Box::new(simple::Fiu),
            TraceFormat::Mqsim => Box::new(simple::Mqsim),
        };
        // An iolog's header says its version.
        let format = if matches!(format, TraceFormat::IologV2 | TraceFormat::IologV3) {
            let head = lines.peek_lines(1)?;
            match head.first().map(|s| s.trim()) {
                Some("fio version 2 iolog") => TraceFormat::IologV2,
                _ => TraceFormat::IologV3,
            }
        } else {
            format
        };
        Ok(TraceReader {
            lines,
            parser,
            out: VecDeque::new(),
            format,
            base: None,
            done: false,
            records: 0,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Lines read so far.
    pub fn lines_read(&self) -> u64 {
        self.lines.line_no()
    }

    /// Bytes read so far (for progress).
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    pub fn name(&self) -> &str {
        self.lines.name()
    }

    fn fail(&mut self, line: u64, message: String) -> Option<Result<TraceRecord, TraceError>> {
        self.done = true;
        Some(Err(TraceError {
            file: self.lines.name().to_string(),
            line,
            message,
        }))
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(mut r) = self.out.pop_front() {
                let base = *self.base.get_or_insert(r.arrival_ns);
                r.arrival_ns = r.arrival_ns.saturating_sub(base);
                r.completion_ns = r.completion_ns.map(|c| c.saturating_sub(base));
                self.records += 1;
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            match self.lines.next_line() {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(None) => {
                    self.done = true;
                    if let Err(m) = self.parser.end(&mut self.out) {
                        let n = self.lines.line_no();
                        return self.fail(n, m);
                    }
                    if self.records == 0 && self.out.is_empty() {
                        return self.fail(0, "holds no I/O".into());
                    }
                }
                Ok(Some((n, text))) => {
                    let t = text.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    if let Err(m) = self.parser.line(t, n, &mut self.out) {
                        let m = format!("{m}: '{}'", clip(t));
                        return self.fail(n, m);
                    }
                }
            }
        }
    }
}

/// At most 80 characters of a line, for an error message.
fn clip(s: &str) -> String {
    let s = s.trim_end();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Guesses the format from the first lines of a trace (blank lines and
/// `#` comments skipped), or `None`.
pub fn detect(head: &[String]) -> Option<TraceFormat> {
    let data: Vec<&str> = head
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let first = *data.first()?;
    if first.starts_with("fio version 2 iolog") {
        return Some(TraceFormat::IologV2);
    }
    if first.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::IologV3);
    }
    let lower = first.to_ascii_lowercase();
    if lower.starts_with("timestamp,hostname") {
        return Some(TraceFormat::Msr);
    }
    if lower.starts_with("timestamp,offset,size,iotype") {
        return Some(TraceFormat::SniaTencent);
    }
    // The first line that looks like a record decides.
    for l in data.iter().take(DETECT_LINES) {
        if l.contains(',') && !is_blkparse_dev(l.split_whitespace().next().unwrap_or("")) {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() == 7 && matches!(f[3].to_ascii_lowercase().as_str(), "read" | "write") {
                return Some(TraceFormat::Msr);
            }
            if f.len() == 5 && f[..4].iter().all(|x| is_number(x)) && matches!(f[3], "0" | "1") {
                return Some(TraceFormat::SniaTencent);
            }
            continue;
        }
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() >= 7 && is_blkparse_dev(t[0]) {
            return Some(TraceFormat::Blkparse);
        }
        if t.len() == 5 && t.iter().all(|x| is_number(x)) && matches!(t[4], "0" | "1") {
            return Some(TraceFormat::Mqsim);
        }
        if t.len() >= 8
            && matches!(t[5], "R" | "W" | "r" | "w")
            && [0, 1, 3, 4, 6, 7].iter().all(|&i| is_number(t[i]))
        {
            return Some(TraceFormat::SniaFiu);
        }
    }
    None
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn is_blkparse_dev(s: &str) -> bool {
    match s.split_once(',') {
        Some((a, b)) => {
            !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `u64` from decimal digits, or an error naming the field.
#[inline]
pub(crate) fn num(s: &str, what: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("{what} '{}' is not a whole number", clip(s)))
}

/// Seconds with up to nine decimals (`12.000345`) as nanoseconds, exactly.
pub(crate) fn secs_to_ns(s: &str, what: &str) -> Result<u64, String> {
    let bad = || format!("{what} '{}' is not a time in seconds", clip(s));
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    let i: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let digits = &frac[..frac.len().min(9)];
    let mut f: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| bad())?
    };
    for _ in digits.len()..9 {
        f *= 10;
    }
    i.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(f))
        .ok_or_else(|| format!("{what} '{}' is too large", clip(s)))
}

/// `a * b` or an error naming the field.
#[inline]
pub(crate) fn mul(a: u64, b: u64, what: &str) -> Result<u64, String> {
    a.checked_mul(b)
        .ok_or_else(|| format!("{what} {a} is out of range"))
}

#[cfg(test)]
mod tests;
