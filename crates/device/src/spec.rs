//! The card options every command spells the same way (`vsl run`,
//! `review`, `sweep`, `torture`, `attach`, `format` and the Python
//! package): [`CardSpec`] as given on the command line (and as an attached
//! card's store records it), [`card_config`] turning it into a typed
//! [`CardConfig`], and [`set_reliability`] for `--fail-die`, `--flashback`
//! and `--media-errors`. Errors are one line naming the option.

use crate::card::{CardConfig, DeviceError, MemberSel};
use crate::flashback::DieFailure;
use crate::preset::{Format, Preset};
use ftl::{GcPolicy, PlacementSpec};
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

/// The card options on the command line: one definition, flattened into
/// every command that takes a card (`vsl run`, `replay`, `attach`, ...), so
/// that each spells and documents them the same way. An option not given is
/// `None`: [`CardSpecArgs::spec`] fills in the defaults, and `vsl attach` on
/// an existing store keeps the store's card when none is given
/// ([`CardSpecArgs::any`]). Serialized field by field (an attach record keeps
/// them), each absent one taking its default.
#[derive(clap::Args, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CardSpecArgs {
    /// Device preset (see `vsl devices`), or a preset file PATH.toml
    /// [default: iodrive-duo-640-mlc; attach: the store's].
    #[arg(long, value_name = "PRESET")]
    pub device: Option<String>,
    /// Low-level format: stock, hp, improved-write or max-write [default:
    /// stock].
    #[arg(long, conflicts_with_all = ["capacity", "overprovision"])]
    pub format: Option<String>,
    /// Formatted capacity of each ioMemory device, e.g. 200G (instead of
    /// --format).
    #[arg(long, allow_hyphen_values = true)]
    pub capacity: Option<String>,
    /// Over-provisioning as a percentage of the usable NAND, e.g. 36%
    /// (instead of --format).
    #[arg(long, allow_hyphen_values = true)]
    pub overprovision: Option<String>,
    /// Logical sector size: 512 or 4096 [default: 4096].
    #[arg(long)]
    pub sector_size: Option<String>,
    /// ioMemory device(s) of a Duo: 0, 1 or all (a run stripes RAID 0
    /// across both; attach serves one block device each) [default: all].
    #[arg(long)]
    pub member: Option<String>,
    /// Model this fraction of the card, for quick runs: each erase block
    /// keeps this fraction of its pages (capacity shrinks; the number of
    /// erase blocks, parallelism and timing stay, so GC behaves as on the
    /// full card) [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    pub scale: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub policy: PolicyArgs,
}

/// The FTL's policies on the command line, for every command that takes a
/// card or modelled targets (`vsl run`, `review`, `pts`, `attach`, ...):
/// GC victim selection and data placement.
#[derive(clap::Args, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PolicyArgs {
    /// Garbage-collection victim selection: greedy, cost-benefit,
    /// d-choices:D, fifo or windowed:W (see `vsl policies`; a review or
    /// PTS target's own gc= overrides it) [default: greedy].
    #[arg(long)]
    pub gc_policy: Option<String>,
    /// Data placement: single (one log), hot-cold (pools by update
    /// frequency, learnt online) or streams (a pool per --stream range);
    /// see `vsl policies` [default: single].
    #[arg(long)]
    pub placement: Option<String>,
    /// A host stream for --placement streams: START-END in bytes of the
    /// card, e.g. 0-64G (repeatable; on a striped card, boundaries on the
    /// stripe, e.g. 1 MiB on a Duo).
    #[arg(long = "stream", value_name = "START-END")]
    pub streams: Vec<String>,
}

impl PolicyArgs {
    /// The GC victim policy (greedy unless given).
    pub fn gc_policy(&self) -> Result<GcPolicy, DeviceError> {
        self.gc_policy
            .as_deref()
            .unwrap_or("greedy")
            .parse()
            .map_err(|e: String| bad(format!("--gc-policy: {e}")))
    }

    /// The placement with its streams (single unless given).
    pub fn placement(&self) -> Result<PlacementSpec, DeviceError> {
        match &self.placement {
            Some(p) => parse_placement(p, &self.streams),
            None if !self.streams.is_empty() => {
                Err(bad("--stream: needs --placement streams".into()))
            }
            None => Ok(PlacementSpec::Single),
        }
    }
}

impl CardSpecArgs {
    /// Whether any card option was given.
    pub fn any(&self) -> bool {
        *self != CardSpecArgs::default()
    }

    /// The card these options spell, defaults filled in.
    pub fn spec(&self) -> CardSpec {
        let d = |o: &Option<String>, v: &str| o.clone().unwrap_or_else(|| v.to_string());
        CardSpec {
            device: d(&self.device, "iodrive-duo-640-mlc"),
            format: d(&self.format, "stock"),
            capacity: self.capacity.clone(),
            overprovision: self.overprovision.clone(),
            sector_size: d(&self.sector_size, "4096"),
            member: d(&self.member, "all"),
            scale: d(&self.scale, "1"),
            gc_policy: d(&self.policy.gc_policy, "greedy"),
            placement: self.policy.placement.clone(),
            streams: self.policy.streams.clone(),
        }
    }
}

/// `--fail-die`, `--flashback` and `--media-errors`, for every command that
/// takes a card (see [`set_reliability`]).
#[derive(clap::Args, Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ReliabilityArgs {
    /// Fail a NAND die (repeatable): [MEMBER:]DIE[@TIME], TIME from the
    /// start of the measured run (after --precondition and --warmup) or
    /// from attach (default 0). Die = bank × channels + channel; Flashback
    /// rebuilds its reads from parity, and two dies of one stripe lose the
    /// sectors they shared.
    #[arg(long = "fail-die", value_name = "[MEMBER:]DIE[@TIME]")]
    pub fail_die: Vec<String>,
    /// Flashback mode after a die failure: adaptive (rebuild the die into
    /// reserve space, then carry on) or basic (stay degraded).
    #[arg(long, default_value = "adaptive")]
    pub flashback: String,
    /// Model raw bit errors (wear, retention, read disturb), ECC, read
    /// retry and error-driven block retirement: on or off.
    #[arg(long, default_value = "off")]
    pub media_errors: String,
}

impl Default for ReliabilityArgs {
    fn default() -> Self {
        ReliabilityArgs {
            fail_die: Vec::new(),
            flashback: "adaptive".into(),
            media_errors: "off".into(),
        }
    }
}

impl ReliabilityArgs {
    /// Sets `c`'s die failures, Flashback mode and media-error model.
    pub fn apply(&self, c: &mut CardConfig) -> Result<(), DeviceError> {
        set_reliability(c, &self.fail_die, &self.flashback, &self.media_errors)
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
    let policy = PolicyArgs {
        gc_policy: Some(a.gc_policy.clone()),
        placement: a.placement.clone(),
        streams: a.streams.clone(),
    };
    c.gc_policy = policy.gc_policy()?;
    c.placement = policy.placement()?;
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

    #[test]
    fn placement_spellings_and_one_line_errors() {
        assert_eq!(
            parse_placement("single", &[]).unwrap(),
            PlacementSpec::Single
        );
        assert_eq!(
            parse_placement("streams", &["0-1M".into(), "2M-4M".into()]).unwrap(),
            PlacementSpec::Streams(vec![(0, 1 << 20), (2 << 20, 4 << 20)])
        );
        for (name, streams, want) in [
            ("warm", vec![], "unknown placement"),
            (
                "streams",
                vec!["0-2M".to_string(), "1M-3M".to_string()],
                "overlap",
            ),
            ("streams", vec!["4M-1M".to_string()], "empty"),
            ("streams", vec!["x".to_string()], "START-END"),
            ("streams", vec!["0-0".to_string()], "empty"),
            ("streams", vec![], "at least one --stream"),
            ("hot-cold", vec!["0-1M".to_string()], "--stream is for"),
        ] {
            let e = parse_placement(name, &streams).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
    }

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        card: CardSpecArgs,
        #[command(flatten)]
        reliability: ReliabilityArgs,
    }

    /// Issue 28: the card options are declared once; unset, they spell the
    /// default card, and serialized they are flat (an attach record's keys).
    #[test]
    fn card_options_default_given_and_serialized_flat() {
        use clap::Parser;
        let none = Cmd::try_parse_from(["x"]).unwrap();
        assert!(!none.card.any());
        let spec = none.card.spec();
        assert_eq!(
            (
                spec.device.as_str(),
                spec.format.as_str(),
                spec.member.as_str()
            ),
            ("iodrive-duo-640-mlc", "stock", "all")
        );
        assert_eq!(
            (spec.sector_size.as_str(), spec.scale.as_str()),
            ("4096", "1")
        );
        assert_eq!(spec.gc_policy, "greedy");
        assert_eq!(none.reliability, ReliabilityArgs::default());
        let c = card_config(&spec).unwrap();
        assert_eq!(c.placement, PlacementSpec::Single);

        let given = Cmd::try_parse_from([
            "x",
            "--gc-policy",
            "fifo",
            "--placement",
            "streams",
            "--stream",
            "0-1G",
            "--scale",
            "0.01",
            "--fail-die",
            "0:1",
        ])
        .unwrap();
        assert!(given.card.any());
        assert_eq!(
            given.card.policy.placement().unwrap(),
            PlacementSpec::Streams(vec![(0, 1 << 30)])
        );
        let json = serde_json::to_value(&given.card).unwrap();
        assert_eq!(json["gc_policy"], "fifo");
        assert_eq!(json["stream"], serde_json::Value::Null);
        assert_eq!(json["streams"][0], "0-1G");
        let back: CardSpecArgs = serde_json::from_value(json).unwrap();
        assert_eq!(back, given.card);
        let old: CardSpecArgs =
            serde_json::from_str(r#"{"device":"iodrive-duo-320-slc"}"#).unwrap();
        assert_eq!(old.device.as_deref(), Some("iodrive-duo-320-slc"));
        assert_eq!(old.policy, PolicyArgs::default());

        let e = Cmd::try_parse_from(["x", "--format", "hp", "--capacity", "100G"]);
        assert!(
            e.is_err(),
            "--format and --capacity together must be refused"
        );
        let e = PolicyArgs {
            streams: vec!["0-1G".into()],
            ..Default::default()
        }
        .placement()
        .unwrap_err()
        .to_string();
        assert!(e.contains("--stream") && !e.contains('\n'), "{e}");
    }
}
