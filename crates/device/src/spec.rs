//! The card options every command spells the same way (`vsl run`,
//! `review`, `sweep`, `torture`, `attach`, `format` and the Python
//! package): [`CardSpec`] as given on the command line (and as an attached
//! card's store records it), [`card_config`] turning it into a typed
//! [`CardConfig`], and [`set_reliability`] for `--fail-die`, `--flashback`
//! and `--media-errors`. Errors are one line naming the option.

use crate::card::{CardConfig, DeviceError, MemberSel};
use crate::flashback::DieFailure;
use crate::preset::{Format, Preset};
use ftl::PlacementSpec;
use serde::{Deserialize, Serialize};
use workload::units::{parse_duration_ns, parse_percent, parse_size};

/// The card options, as given on the command line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CardSpec {
    pub device: String,
    pub format: String,
    pub capacity: Option<String>,
    pub overprovision: Option<String>,
    pub sector_size: String,
    pub member: String,
    pub scale: String,
    pub gc_policy: String,
    /// Data placement (`--placement`: single, hot-cold or streams); `None`
    /// leaves the configuration's (single). Absent from stores made before
    /// it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The `--stream START-END` ranges (bytes of the card) of `--placement
    /// streams`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<String>,
}

impl CardSpec {
    /// The smallest card the presets allow (ioMemory 0 of an
    /// iodrive-duo-320-slc at scale 0.001: 24 erase units), for tests.
    pub fn tiny() -> CardSpec {
        CardSpec {
            device: "iodrive-duo-320-slc".into(),
            format: "stock".into(),
            capacity: None,
            overprovision: None,
            sector_size: "4096".into(),
            member: "0".into(),
            scale: "0.001".into(),
            gc_policy: "greedy".into(),
            placement: None,
            streams: Vec::new(),
        }
    }
}

fn bad(message: String) -> DeviceError {
    DeviceError::Config(message)
}

/// The card configuration of a [`CardSpec`] (as `vsl run` builds it).
pub fn card_config(a: &CardSpec) -> Result<CardConfig, DeviceError> {
    let preset = Preset::resolve(&a.device).map_err(bad)?;
    let mut c = CardConfig::new(preset);
    c.format = if let Some(cap) = &a.capacity {
        Format::Capacity(parse_size(cap).map_err(|e| bad(format!("--capacity: {e}")))?)
    } else if let Some(op) = &a.overprovision {
        Format::Overprovision(parse_percent(op).map_err(|e| bad(format!("--overprovision: {e}")))?)
    } else {
        Format::parse(&a.format).map_err(|e| bad(format!("--format: {e}")))?
    };
    c.sector_bytes = match a.sector_size.as_str() {
        "512" => 512,
        "4096" | "4k" | "4K" => 4096,
        s => return Err(bad(format!("--sector-size: {s} is not 512 or 4096"))),
    };
    c.member = MemberSel::parse(&a.member).map_err(|e| bad(format!("--member: {e}")))?;
    c.scale = a
        .scale
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= 1.0)
        .ok_or_else(|| bad(format!("--scale: '{}' must be a number in (0, 1]", a.scale)))?;
    c.gc_policy = a
        .gc_policy
        .parse()
        .map_err(|e: String| bad(format!("--gc-policy: {e}")))?;
    match &a.placement {
        Some(p) => c.placement = parse_placement(p, &a.streams)?,
        None if !a.streams.is_empty() => {
            return Err(bad("--stream: needs --placement streams".into()))
        }
        None => {}
    }
    c.track_sequence = true;
    Ok(c)
}

/// Parses `--placement NAME` and its `--stream START-END` ranges (bytes of
/// the card, e.g. `0-64G`). Errors are one line naming the option.
pub fn parse_placement(name: &str, streams: &[String]) -> Result<PlacementSpec, DeviceError> {
    let ranges = streams
        .iter()
        .map(|s| parse_range(s).map_err(|e| bad(format!("--stream {s}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let spec = PlacementSpec::parse(name, ranges).map_err(|e| bad(format!("--placement: {e}")))?;
    if let PlacementSpec::Streams(r) = &spec {
        let mut sorted = r.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(bad(format!(
                "--stream: ranges {}-{} and {}-{} (bytes) overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            )));
        }
    }
    Ok(spec)
}

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| "expected START-END, e.g. 0-64G".to_string())?;
    // parse_size wants a positive size; a stream may start at 0.
    let size = |t: &str| {
        if t.trim() == "0" {
            Ok(0)
        } else {
            parse_size(t.trim())
        }
    };
    let a = size(a)?;
    let b = size(b)?;
    if a >= b {
        return Err(format!("the range is empty ({a} >= {b} bytes)"));
    }
    Ok((a, b))
}

/// Parses `--fail-die [MEMBER:]DIE[@TIME]` for card `c`; the error is one
/// line naming the option and what is wrong.
pub fn parse_fail_die(s: &str, c: &CardConfig) -> Result<DieFailure, DeviceError> {
    let usage = "expected [MEMBER:]DIE[@TIME], e.g. 7, 1:7 or 7@30s";
    let (spec, at) = match s.split_once('@') {
        Some((a, t)) => (a, Some(t)),
        None => (s, None),
    };
    let (member, die) = match spec.split_once(':') {
        Some((m, d)) => (Some(m), d),
        None => (None, spec),
    };
    let die: u32 = die.parse().map_err(|_| {
        bad(format!(
            "--fail-die: '{s}': die '{die}' is not a number ({usage})"
        ))
    })?;
    let member = match member {
        Some(m) => m.parse::<u32>().map_err(|_| {
            bad(format!(
                "--fail-die: '{s}': member '{m}' is not a number ({usage})"
            ))
        })?,
        None => match c.member {
            MemberSel::One(i) => i,
            MemberSel::All => 0,
        },
    };
    let p = c.preset;
    if member >= p.members {
        return Err(bad(format!(
            "--fail-die: '{s}': ioMemory device {member} does not exist ({} has {})",
            p.name, p.members
        )));
    }
    if let MemberSel::One(i) = c.member {
        if i != member {
            return Err(bad(format!(
                "--fail-die: '{s}': ioMemory device {member} is not in use (--member {i})"
            )));
        }
    }
    let g = p.geometry;
    let dies = g.channels * g.banks;
    if die >= dies {
        return Err(bad(format!(
            "--fail-die: '{s}': die {die} is out of range: an ioMemory device of {} has {dies} dies (0..{}; die = bank x {} + channel)",
            p.name,
            dies - 1,
            g.channels
        )));
    }
    let at_ns = match at {
        Some(t) => {
            parse_duration_ns(t).map_err(|e| bad(format!("--fail-die: '{s}': time: {e}")))?
        }
        None => 0,
    };
    Ok(DieFailure { member, die, at_ns })
}

/// Sets `c`'s die failures, Flashback mode and media-error model from the
/// command line (`vsl run` and `vsl attach` spell them the same way).
pub fn set_reliability(
    c: &mut CardConfig,
    fail_die: &[String],
    flashback: &str,
    media_errors: &str,
) -> Result<(), DeviceError> {
    c.reliability.fail_dies = fail_die
        .iter()
        .map(|s| parse_fail_die(s, c))
        .collect::<Result<_, _>>()?;
    c.reliability.adaptive = match flashback {
        "adaptive" => true,
        "basic" => false,
        o => {
            return Err(bad(format!(
                "--flashback: '{o}' (expected adaptive or basic)"
            )))
        }
    };
    c.reliability.media_errors = on_off("--media-errors", media_errors)?;
    Ok(())
}

/// An `on` / `off` option's value.
pub fn on_off(flag: &str, value: &str) -> Result<bool, DeviceError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        o => Err(bad(format!("{flag}: '{o}' (expected on or off)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_option_is_one_line_naming_it() {
        let mut s = CardSpec::tiny();
        assert!(card_config(&s).is_ok());
        for (field, value, names) in [
            ("device", "nosuch", "unknown device 'nosuch'"),
            ("format", "huge", "--format"),
            ("sector_size", "1024", "--sector-size"),
            ("member", "x", "--member"),
            ("scale", "2", "--scale"),
            ("gc_policy", "d-choices:0", "--gc-policy"),
        ] {
            s = CardSpec::tiny();
            match field {
                "device" => s.device = value.into(),
                "format" => s.format = value.into(),
                "sector_size" => s.sector_size = value.into(),
                "member" => s.member = value.into(),
                "scale" => s.scale = value.into(),
                _ => s.gc_policy = value.into(),
            }
            let e = card_config(&s).unwrap_err().to_string();
            assert!(e.contains(names), "{field}={value}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let mut c = card_config(&CardSpec::tiny()).unwrap();
        assert!(set_reliability(&mut c, &["9999".into()], "adaptive", "off")
            .unwrap_err()
            .to_string()
            .contains("die 9999 is out of range"));
        assert!(set_reliability(&mut c, &[], "fancy", "off")
            .unwrap_err()
            .to_string()
            .contains("--flashback"));
        set_reliability(&mut c, &["0:3@1s".into()], "basic", "on").unwrap();
        assert_eq!(c.reliability.fail_dies.len(), 1);
        assert_eq!(c.reliability.fail_dies[0].at_ns, 1_000_000_000);
        assert!(!c.reliability.adaptive && c.reliability.media_errors);
    }
}
