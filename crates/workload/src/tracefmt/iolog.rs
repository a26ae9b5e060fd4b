//! fio iolog, versions 2 and 3 (fio's HOWTO "Trace file format" and
//! `iolog.c::read_iolog`). The first line is `fio version 2 iolog` or
//! `fio version 3 iolog`; then file actions (`FILE add|open|close`) and
//! I/O actions (`FILE read|write|trim|sync|datasync OFFSET LENGTH`, bytes).
//! Version 2 has `FILE wait USEC`: the following I/Os arrive that many
//! microseconds after the previous wait's (without waits, all at 0).
//! Version 3 starts every line with its time in microseconds since the
//! start (fio's `log_io_u` writes `utime_since_now`), and has no `wait`.
//! Each file is a device number, in order of first appearance.

use super::{flags, mul, num, LineParser, OpKind, Out, TraceRecord};
use std::collections::HashMap;

/// Files a trace may name (fio replays them as one job's files).
const MAX_FILES: usize = 65_536;

pub(crate) struct Iolog {
    version: Option<u8>,
    files: HashMap<String, u32>,
    /// The file of the last line and its number.
    last: (String, u32),
    /// Version 2: the time set by the last `wait`.
    clock_ns: u64,
}

impl Iolog {
    pub(crate) fn new() -> Iolog {
        Iolog {
            version: None,
            files: HashMap::new(),
            last: (String::new(), u32::MAX),
            clock_ns: 0,
        }
    }

    fn file(&mut self, name: &str) -> Result<u32, String> {
        // Traces name the same file line after line.
        if self.last.0 == name {
            return Ok(self.last.1);
        }
        if let Some(&d) = self.files.get(name) {
            self.last = (name.to_string(), d);
            return Ok(d);
        }
        if self.files.len() >= MAX_FILES {
            return Err(format!("more than {MAX_FILES} files"));
        }
        let d = self.files.len() as u32;
        self.files.insert(name.to_string(), d);
        self.last = (name.to_string(), d);
        Ok(d)
    }
}

impl LineParser for Iolog {
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        let version = match self.version {
            Some(v) => v,
            None => {
                self.version =
                    Some(match text {
                        "fio version 2 iolog" => 2,
                        "fio version 3 iolog" => 3,
                        _ => return Err(
                            "an iolog starts with 'fio version 2 iolog' or 'fio version 3 iolog'"
                                .into(),
                        ),
                    });
                return Ok(());
            }
        };
        let mut t = text.split_ascii_whitespace();
        let time_ns = if version == 3 {
            let us = num(t.next().unwrap_or(""), "timestamp (µs)")?;
            Some(mul(us, 1000, "timestamp (µs)")?)
        } else {
            None
        };
        let (Some(file), Some(action)) = (t.next(), t.next()) else {
            return Err(format!(
                "expected '{}FILE ACTION [OFFSET LENGTH]'",
                if version == 3 { "TIME " } else { "" }
            ));
        };
        let (op, fl) = match action {
            "add" | "open" | "close" => {
                if t.next().is_some() {
                    return Err(format!("'{action}' takes no offset"));
                }
                self.file(file)?;
                return Ok(());
            }
            "wait" if version == 2 => {
                let us = num(t.next().ok_or("'wait' needs a time in µs")?, "wait (µs)")?;
                self.clock_ns = self
                    .clock_ns
                    .checked_add(mul(us, 1000, "wait (µs)")?)
                    .ok_or("wait out of range")?;
                return Ok(());
            }
            "wait" => return Err("'wait' is not allowed in an iolog version 3".into()),
            "read" => (OpKind::Read, 0),
            "write" => (OpKind::Write, 0),
            "trim" => (OpKind::Discard, 0),
            "sync" | "datasync" => (OpKind::Flush, flags::SYNC),
            a => {
                return Err(format!(
                    "unknown action '{a}' (expected read, write, trim, sync, datasync, add, open, close{})",
                    if version == 2 { " or wait" } else { "" }
                ))
            }
        };
        let device = self.file(file)?;
        let offset = t.next().map(|s| num(s, "offset")).transpose()?;
        let len = t.next().map(|s| num(s, "length")).transpose()?;
        if t.next().is_some() {
            return Err("too many fields".into());
        }
        let (offset, len) = match (op, offset, len) {
            (OpKind::Flush, _, _) => (0, 0),
            (_, Some(o), Some(l)) if l > 0 => (o, l),
            (_, Some(_), Some(_)) => return Err("zero length".into()),
            _ => return Err(format!("'{action}' needs an offset and a length")),
        };
        out.push_back(TraceRecord {
            arrival_ns: time_ns.unwrap_or(self.clock_ns),
            op,
            offset,
            len,
            device,
            completion_ns: None,
            flags: fl,
            line,
        });
        Ok(())
    }

    fn end(&mut self, _out: &mut Out) -> Result<(), String> {
        if self.version.is_none() {
            return Err("empty iolog".into());
        }
        Ok(())
    }
}
