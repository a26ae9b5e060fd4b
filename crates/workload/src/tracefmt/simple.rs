//! One-line-one-request formats: SNIA IOTTA's Tencent CBS CSV and FIU
//! traces, and MQSim's ASCII traces. Sectors are 512 bytes in all three.

use super::{mul, num, secs_to_ns, LineParser, OpKind, Out, TraceRecord};

const SECTOR: u64 = 512;

fn sectors(s: &str, what: &str) -> Result<u64, String> {
    mul(num(s, what)?, SECTOR, what)
}

fn device(s: &str, what: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .map_err(|_| format!("{what} '{s}' is not a number below 2^32"))
}

/// Tencent CBS (SNIA IOTTA 27917): `Timestamp,Offset,Size,IOType,VolumeID`,
/// Unix time in seconds, offset and size in sectors, IOType 0 read, 1 write.
pub(crate) struct Tencent;

impl LineParser for Tencent {
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        if text
            .to_ascii_lowercase()
            .starts_with("timestamp,offset,size,iotype")
        {
            return Ok(());
        }
        let f: Vec<&str> = text.split(',').map(str::trim).collect();
        if f.len() != 5 {
            return Err(
                "expected 5 comma-separated fields (Timestamp,Offset,Size,IOType,VolumeID)".into(),
            );
        }
        let op = match f[3] {
            "0" => OpKind::Read,
            "1" => OpKind::Write,
            o => return Err(format!("IOType '{o}' (expected 0 for read, 1 for write)")),
        };
        let len = sectors(f[2], "size")?;
        if len == 0 {
            return Err("zero size".into());
        }
        out.push_back(TraceRecord {
            arrival_ns: secs_to_ns(f[0], "timestamp")?,
            op,
            offset: sectors(f[1], "offset")?,
            len,
            device: device(f[4], "volume")?,
            completion_ns: None,
            flags: 0,
            line,
        });
        Ok(())
    }
}

/// FIU SRCMap / deduplication traces (SNIA IOTTA 390, 391):
/// `ts_ns pid process lba size R|W major minor md5`, lba and size in
/// 512-byte blocks. The process name has no spaces in these traces.
pub(crate) struct Fiu;

impl LineParser for Fiu {
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        let t: Vec<&str> = text.split_ascii_whitespace().collect();
        if t.len() < 8 {
            return Err("expected 'ts_ns pid process lba size R|W major minor [md5]'".into());
        }
        let op = match t[5] {
            "R" | "r" => OpKind::Read,
            "W" | "w" => OpKind::Write,
            o => return Err(format!("operation '{o}' (expected R or W)")),
        };
        let len = sectors(t[4], "size")?;
        if len == 0 {
            return Err("zero size".into());
        }
        let major = num(t[6], "major")?;
        let minor = num(t[7], "minor")?;
        if major > 4095 || minor > 1_048_575 {
            return Err(format!("device {major},{minor} out of range"));
        }
        out.push_back(TraceRecord {
            arrival_ns: num(t[0], "timestamp (ns)")?,
            op,
            offset: sectors(t[3], "lba")?,
            len,
            device: ((major as u32) << 20) | minor as u32,
            completion_ns: None,
            flags: 0,
            line,
        });
        Ok(())
    }
}

/// MQSim's ASCII trace (MQSim README, `ASCII_Trace_Definition.h`):
/// `arrival_time device lba size_in_sectors type`, type 0 write, 1 read;
/// times in nanoseconds (MQSim's default `Time_Unit`).
pub(crate) struct Mqsim;

impl LineParser for Mqsim {
    fn line(&mut self, text: &str, line: u64, out: &mut Out) -> Result<(), String> {
        let mut t = text.split_ascii_whitespace();
        let mut field = |what: &str| {
            t.next().ok_or_else(|| {
                format!("expected 5 fields 'time_ns device lba sectors type', {what} missing")
            })
        };
        let at = num(field("time")?, "time (ns)")?;
        let dev = device(field("device")?, "device")?;
        let offset = sectors(field("lba")?, "lba")?;
        let len = sectors(field("size")?, "size")?;
        let op = match field("type")? {
            "0" => OpKind::Write,
            "1" => OpKind::Read,
            o => return Err(format!("type '{o}' (expected 0 for write, 1 for read)")),
        };
        if t.next().is_some() {
            return Err("more than 5 fields".into());
        }
        if len == 0 {
            return Err("zero size".into());
        }
        out.push_back(TraceRecord {
            arrival_ns: at,
            op,
            offset,
            len,
            device: dev,
            completion_ns: None,
            flags: 0,
            line,
        });
        Ok(())
    }
}
