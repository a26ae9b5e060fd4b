//! MSR Cambridge CSV (SNIA IOTTA trace 388):
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, the
//! timestamp and response time in Windows filetime units (100 ns), offset
//! and size in bytes, `Type` `Read` or `Write`. The one line parser of
//! both [`crate::Trace::parse_msr_csv`] and the streaming reader.

use super::{LineParser, OpKind, Out, TraceRecord};

/// One parsed line.
pub(crate) enum MsrLine {
    /// A header.
    Skip,
    Io {
        /// Fields the closed-loop [`crate::Trace`] does not need are `None`
        /// when they do not parse.
        timestamp: Option<u64>,
        disk: Option<u32>,
        response: Option<u64>,
        is_read: bool,
        offset: u64,
        len: u64,
    },
}

/// Parses one trimmed, non-empty line; `first`: it is the file's first line
/// (which may be a header).
pub(crate) fn parse_line(line: &str, first: bool) -> Result<MsrLine, &'static str> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 6 {
        if first && line.to_ascii_lowercase().contains("timestamp") {
            return Ok(MsrLine::Skip);
        }
        return Err("expected 7 comma-separated fields");
    }
    let is_read = match f[3].trim().to_ascii_lowercase().as_str() {
        "read" | "r" => true,
        "write" | "w" => false,
        _ if first => return Ok(MsrLine::Skip),
        _ => return Err("type must be Read or Write"),
    };
    let offset: u64 = f[4].trim().parse().map_err(|_| "bad offset")?;
    let len: u64 = f[5].trim().parse().map_err(|_| "bad size")?;
    if len == 0 {
        return Err("zero size");
    }
    Ok(MsrLine::Io {
        timestamp: f[0].trim().parse().ok(),
        disk: f[2].trim().parse().ok(),
        response: f.get(6).and_then(|r| r.trim().parse().ok()),
        is_read,
        offset,
        len,
    })
}

#[derive(Default)]
pub(crate) struct MsrParser {
    seen: bool,
}

impl LineParser for MsrParser {
    fn line(&mut self, text: &str, _line: u64, out: &mut Out) -> Result<(), String> {
        let first = !self.seen;
        self.seen = true;
        match parse_line(text, first)? {
            MsrLine::Skip => Ok(()),
            MsrLine::Io {
                timestamp,
                disk,
                response,
                is_read,
                offset,
                len,
            } => {
                let ts = timestamp.ok_or("bad timestamp (Windows filetime expected)")?;
                let arrival = super::mul(ts, 100, "timestamp")?;
                let completion = match response {
                    Some(r) => Some(
                        super::mul(r, 100, "response time")?
                            .checked_add(arrival)
                            .ok_or("response time out of range")?,
                    ),
                    None => None,
                };
                out.push_back(TraceRecord {
                    arrival_ns: arrival,
                    op: if is_read { OpKind::Read } else { OpKind::Write },
                    offset,
                    len,
                    device: disk.ok_or("bad disk number")?,
                    completion_ns: completion,
                    flags: 0,
                    line: _line,
                });
                Ok(())
            }
        }
    }
}
