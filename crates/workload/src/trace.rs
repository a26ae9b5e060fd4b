//! Block traces for closed-loop replay inside a workload: the SNIA IOTTA /
//! MSR Cambridge CSV format (its line parser is shared with the streaming
//! reader of [`crate::tracefmt`]), and a documented synthetic mail-server
//! trace.
//!
//! MSR Cambridge lines are
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` with
//! `Type` `Read` or `Write`, offsets and sizes in bytes. Replay is closed
//! loop: the trace gives the order, offsets, sizes and read/write mix; the
//! queue depth gives the concurrency (the reviews replay at an effective
//! QD of 8 and 48).

use crate::spec::SpecError;
use crate::tracefmt::msr::{parse_line, MsrLine};
use sim::Prng;

/// One traced I/O.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceIo {
    pub is_read: bool,
    pub offset: u64,
    pub len: u64,
}

/// A trace: I/Os in issue order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trace {
    pub name: String,
    pub ios: Vec<TraceIo>,
}

impl Trace {
    /// Parses MSR Cambridge CSV text. A malformed or truncated line is an
    /// error naming its line number.
    pub fn parse_msr_csv(name: &str, text: &str) -> Result<Trace, SpecError> {
        let mut ios = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| {
                SpecError::Invalid(format!("trace {name} line {}: {why}: '{line}'", i + 1))
            };
            let (is_read, offset, len) = match parse_line(line, i == 0).map_err(bad)? {
                MsrLine::Skip => continue,
                MsrLine::Io {
                    is_read,
                    offset,
                    len,
                    ..
                } => (is_read, offset, len),
            };
            ios.push(TraceIo {
                is_read,
                offset,
                len,
            });
        }
        if ios.is_empty() {
            return Err(SpecError::Invalid(format!("trace {name} holds no I/O")));
        }
        Ok(Trace {
            name: name.into(),
            ios,
        })
    }

    /// Synthetic mail-server trace: 95 % reads; reads are 4 KiB (70 %),
    /// 8 KiB (20 %), 16 KiB (5 %) and 64 KiB (5 %) at offsets drawn with a
    /// hot 20 % of the space taking 80 % of reads (mailbox locality); writes
    /// are 4 KiB (80 %) or 8 KiB appends to a log in the last 10 % of the
    /// space, as a mail store's journal does. `span` is the byte range the
    /// offsets cover.
    pub fn synthetic_mail(seed: u64, count: usize, span: u64) -> Trace {
        let mut p = Prng::from_seed(seed);
        let mut ios = Vec::with_capacity(count);
        let log_start = span / 10 * 9 / 4096 * 4096;
        let mut log_cursor = log_start;
        let hot = (span / 5 / 4096).max(1);
        let all = (log_start / 4096).max(1);
        for _ in 0..count {
            if p.chance(0.95) {
                let u = p.next_f64();
                let len = if u < 0.70 {
                    4096
                } else if u < 0.90 {
                    8192
                } else if u < 0.95 {
                    16384
                } else {
                    65536
                };
                let block = if p.chance(0.8) {
                    p.below(hot)
                } else {
                    p.below(all)
                };
                ios.push(TraceIo {
                    is_read: true,
                    offset: block * 4096,
                    len,
                });
            } else {
                let len = if p.chance(0.8) { 4096 } else { 8192 };
                if log_cursor + len > span {
                    log_cursor = log_start;
                }
                ios.push(TraceIo {
                    is_read: false,
                    offset: log_cursor,
                    len,
                });
                log_cursor += len;
            }
        }
        Trace {
            name: "synthetic-mail".into(),
            ios,
        }
    }

    pub fn read_fraction(&self) -> f64 {
        self.ios.iter().filter(|io| io.is_read).count() as f64 / self.ios.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_msr_lines_and_header() {
        let t = Trace::parse_msr_csv(
            "t",
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
             128166372003061629,usr,0,Read,3154152960,4096,1331\n\
             128166372016382155,usr,0,Write,3154152960,8192,1020\n",
        )
        .unwrap();
        assert_eq!(t.ios.len(), 2);
        assert_eq!(
            t.ios[1],
            TraceIo {
                is_read: false,
                offset: 3154152960,
                len: 8192
            }
        );
    }

    #[test]
    fn truncated_line_is_an_error_with_its_number() {
        let e = Trace::parse_msr_csv("t", "1,h,0,Read,4096,4096,1\n2,h,0,Wri").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(Trace::parse_msr_csv("t", "").is_err());
    }

    #[test]
    fn synthetic_mail_is_95_percent_read() {
        let t = Trace::synthetic_mail(1, 100_000, 1 << 34);
        let r = t.read_fraction();
        assert!((0.945..0.955).contains(&r), "{r}");
        assert!(t.ios.iter().all(|io| io.offset + io.len <= 1 << 34));
    }
}
