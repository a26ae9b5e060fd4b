//! A sweep plan: `vsl run` options as keys, lists swept as a grid, optional
//! `[[runs]]` tables, expanded into [`PlannedRun`]s each keyed by its
//! resolved options.

use crate::args::{Cli, Command, RunArgs};
use anyhow::{anyhow, bail, Result};
use clap::{CommandFactory, Parser};
use std::collections::BTreeMap;

/// Options of `vsl run` a plan may not set: outputs belong to the sweep.
const NOT_IN_PLANS: &[&str] = &["json", "csv", "quiet", "help"];

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    /// Hex digest of the resolved options (every `vsl run` option, defaults
    /// included): the file name of its result, what makes a sweep resumable.
    pub key: String,
    /// The options the plan gave, by long name (`sector-size`), as text.
    pub params: BTreeMap<String, String>,
    /// `vsl run` arguments (without the program name).
    pub argv: Vec<String>,
}

/// A whole sweep, in plan order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub runs: Vec<PlannedRun>,
    /// Options that take more than one value across the runs, in name order.
    pub swept: Vec<String>,
    /// Every option the plan names, in name order.
    pub keys: Vec<String>,
}

impl PlannedRun {
    /// The run's options as `vsl run` parses them.
    pub fn args(&self) -> Result<RunArgs> {
        parse_run(&self.argv)
    }
}

impl Plan {
    /// Reads a TOML plan; `name` (the file name) prefixes every error.
    pub fn from_toml(text: &str, name: &str) -> Result<Plan> {
        let value: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map_or(0, |s| text[..s.start].lines().count().max(1));
            let msg: Vec<&str> = e.message().lines().map(str::trim).collect();
            anyhow!("{name}: line {line}: {}", msg.join(": "))
        })?;
        Plan::from_table(value, name)
    }

    /// Reads a plan given as JSON (the Python package's dict).
    pub fn from_json(text: &str, name: &str) -> Result<Plan> {
        let value: toml::Table = serde_json::from_str(text).map_err(|e| anyhow!("{name}: {e}"))?;
        Plan::from_table(value, name)
    }

    pub fn load(path: &std::path::Path) -> Result<Plan> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("cannot read sweep plan {}: {e}", path.display()))?;
        Plan::from_toml(&text, &path.display().to_string())
    }

    fn from_table(mut table: toml::Table, name: &str) -> Result<Plan> {
        let known = run_option_names();
        let explicit = match table.remove("runs") {
            None => vec![toml::Table::new()],
            Some(toml::Value::Array(a)) if a.is_empty() => {
                bail!("{name}: 'runs' is an empty list: the sweep would have no runs")
            }
            Some(toml::Value::Array(a)) => a
                .into_iter()
                .map(|v| match v {
                    toml::Value::Table(t) => Ok(t),
                    _ => Err(anyhow!(
                        "{name}: 'runs' must be a list of tables ([[runs]])"
                    )),
                })
                .collect::<Result<_>>()?,
            Some(_) => bail!("{name}: 'runs' must be a list of tables ([[runs]])"),
        };
        let base = options(table, &known, name)?;
        let mut runs: Vec<PlannedRun> = Vec::new();
        for (i, t) in explicit.into_iter().enumerate() {
            let mut merged = base.clone();
            merged.extend(options(t, &known, &format!("{name}: runs[{i}]"))?);
            for params in grid(&merged) {
                let run = planned(params).map_err(|e| anyhow!("{name}: {e}"))?;
                if !runs.iter().any(|r| r.key == run.key) {
                    runs.push(run);
                }
            }
        }
        let keys: Vec<String> = {
            let mut k: Vec<String> = runs.iter().flat_map(|r| r.params.keys().cloned()).collect();
            k.sort();
            k.dedup();
            k
        };
        let swept = keys
            .iter()
            .filter(|k| {
                let first = runs[0].params.get(*k);
                runs.iter().any(|r| r.params.get(*k) != first)
            })
            .cloned()
            .collect();
        Ok(Plan { runs, swept, keys })
    }
}

/// The long names of `vsl run`'s options, from its clap definition (the one
/// place options are declared).
fn run_option_names() -> Vec<String> {
    let cmd = Cli::command();
    let run = cmd.find_subcommand("run").expect("vsl run exists");
    run.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .filter(|l| !NOT_IN_PLANS.contains(&l.as_str()))
        .collect()
}

/// A table of options, each a list of values (a single value is a list of one).
fn options(
    table: toml::Table,
    known: &[String],
    name: &str,
) -> Result<BTreeMap<String, Vec<String>>> {
    let mut out = BTreeMap::new();
    for (k, v) in table {
        let long = k.replace('_', "-");
        if !known.contains(&long) {
            bail!(
                "{name}: unknown key '{k}' (a plan's keys are `vsl run` options: {})",
                known.join(", ")
            );
        }
        let values = match v {
            toml::Value::Array(a) if a.is_empty() => {
                bail!("{name}: '{k}' is an empty list: the grid would have no runs")
            }
            toml::Value::Array(a) => a
                .into_iter()
                .map(|x| {
                    scalar(x).ok_or_else(|| anyhow!("{name}: '{k}': a list of lists or tables"))
                })
                .collect::<Result<_>>()?,
            x => vec![scalar(x).ok_or_else(|| anyhow!("{name}: '{k}' must be a value or a list"))?],
        };
        out.insert(long, values);
    }
    Ok(out)
}

fn scalar(v: toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The product of every option's values, the last option varying fastest.
fn grid(options: &BTreeMap<String, Vec<String>>) -> Vec<BTreeMap<String, String>> {
    let mut out = vec![BTreeMap::new()];
    for (k, values) in options {
        out = out
            .into_iter()
            .flat_map(|partial| {
                values.iter().map(move |v| {
                    let mut p = partial.clone();
                    p.insert(k.clone(), v.clone());
                    p
                })
            })
            .collect();
    }
    out
}

fn planned(params: BTreeMap<String, String>) -> Result<PlannedRun> {
    let mut argv = Vec::new();
    for (k, v) in &params {
        if k == "precondition" {
            match v.as_str() {
                "true" => argv.push("--precondition".to_string()),
                "false" => {}
                _ => bail!("'precondition' must be true or false, not '{v}'"),
            }
            continue;
        }
        if k == "stream" {
            // One value gives a run all its streams (a list sweeps):
            // `stream = "0-64G,128G-192G"` is two `--stream` options.
            for range in v.split(',') {
                argv.push("--stream".to_string());
                argv.push(range.trim().to_string());
            }
            continue;
        }
        argv.push(format!("--{k}"));
        argv.push(v.clone());
    }
    let args = parse_run(&argv)?;
    if let Some(t) = &args.target {
        if realtime::Target::is_real(t) {
            bail!("target '{t}': a sweep runs modelled cards only (virtual time)");
        }
    }
    // Check what can be checked without running, so that a bad value stops
    // the sweep before any run starts.
    crate::cmd_run::workload_spec(&args.workload)?;
    crate::cmd_run::duration_ns(&args)?;
    let card = crate::cmd_run::card_config(&args.card)?;
    if args.target.is_none() {
        // The card itself too (`--stream` ranges against its capacity); a
        // `--target` card is checked when its run starts.
        card.check()?;
    }
    let key = format!("{:016x}", fnv1a(format!("{args:?}").as_bytes()));
    Ok(PlannedRun { key, params, argv })
}

/// Parses `vsl run` arguments; clap's message shortened to its first line.
pub fn parse_run(argv: &[String]) -> Result<RunArgs> {
    let full = ["vsl", "run"]
        .into_iter()
        .map(String::from)
        .chain(argv.iter().cloned());
    match Cli::try_parse_from(full) {
        Ok(Cli {
            command: Command::Run(a),
        }) => Ok(*a),
        Ok(_) => unreachable!("parsed as vsl run"),
        Err(e) => {
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("invalid options");
            Err(anyhow!("{}", line.trim_start_matches("error: ")))
        }
    }
}

/// FNV-1a, 64 bits: a run key must not change between builds (std's
/// hasher may), and needs no cryptographic strength.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_the_product_and_keys_ignore_spelling_of_defaults() {
        let p = Plan::from_toml(
            "scale = 0.01\nformat = ['stock', 'hp']\nseed = [1, 2, 3]\n",
            "p",
        )
        .unwrap();
        assert_eq!(p.runs.len(), 6);
        assert_eq!(p.swept, ["format", "seed"]);
        // Giving the default explicitly resolves to the same run.
        let a = Plan::from_toml("scale = 0.01\nqd = 16\n", "p").unwrap();
        let b = Plan::from_toml("scale = 0.01\n", "p").unwrap();
        assert_eq!(a.runs[0].key, b.runs[0].key);
        let c = Plan::from_toml("scale = 0.01\nqd = 8\n", "p").unwrap();
        assert_ne!(a.runs[0].key, c.runs[0].key);
    }

    #[test]
    fn explicit_runs_merge_with_the_base_and_duplicates_collapse() {
        let p = Plan::from_toml(
            "scale = 0.01\n[[runs]]\nformat = 'hp'\n[[runs]]\nformat = ['hp', 'stock']\nsector_size = 512\n",
            "p",
        )
        .unwrap();
        assert_eq!(p.runs.len(), 3);
        assert_eq!(p.swept, ["format", "sector-size"]);
        assert_eq!(p.runs[0].params["scale"], "0.01");
    }

    #[test]
    fn bad_plans_are_one_line_errors() {
        for (text, needle) in [
            ("colour = 'red'\n", "unknown key 'colour'"),
            ("format = []\n", "'format' is an empty list"),
            ("runs = []\n", "'runs' is an empty list"),
            ("json = 'x.json'\n", "unknown key 'json'"),
            ("threads = 'many'\n", "invalid value 'many'"),
            ("profile = 'nope'\n", "unknown profile 'nope'"),
            ("target = 'file:/tmp/x:1G'\n", "modelled cards only"),
            ("format = [\n", "p:"),
        ] {
            let e = format!("{:#}", Plan::from_toml(text, "p").unwrap_err());
            assert!(e.contains(needle), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{text:?}: not one line: {e}");
        }
    }

    /// Issue 28: a sweep compares GC victim policies; a bad one stops the
    /// plan before any run.
    #[test]
    fn gc_policies_sweep_and_bad_ones_stop_the_plan() {
        let p = Plan::from_toml(
            "scale = 0.01\ngc-policy = ['greedy', 'd-choices:4', 'windowed:16', 'fifo']\n",
            "p",
        )
        .unwrap();
        assert_eq!(p.swept, ["gc-policy"]);
        let policies: Vec<_> = p
            .runs
            .iter()
            .map(|r| {
                r.args()
                    .unwrap()
                    .card
                    .spec
                    .policy
                    .gc_policy
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(policies, ["greedy", "d-choices:4", "windowed:16", "fifo"]);
        for bad in ["d-choices:0", "windowed:0", "lru"] {
            let text = format!("gc-policy = ['greedy', '{bad}']\n");
            let e = format!("{:#}", Plan::from_toml(&text, "p").unwrap_err());
            assert!(e.contains(bad), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: not one line: {e}");
        }
    }

    /// Issue 28: one plan value gives a run several streams; overlapping
    /// or out-of-range ones stop the plan before any run.
    #[test]
    fn a_run_takes_several_streams_from_one_value() {
        let p = Plan::from_toml(
            "scale = 0.01\nplacement = 'streams'\nstream = ['0-1G', '0-1G, 2G-3G']\n",
            "p",
        )
        .unwrap();
        assert_eq!(p.swept, ["stream"]);
        let streams: Vec<_> = p
            .runs
            .iter()
            .map(|r| r.args().unwrap().card.spec.policy.streams)
            .collect();
        assert_eq!(streams, [vec!["0-1G"], vec!["0-1G", "2G-3G"]]);
        // A lone value and the same value in a list are the same run.
        let one = Plan::from_toml(
            "scale = 0.01\nplacement = 'streams'\nstream = '0-1G'\n",
            "p",
        );
        assert_eq!(one.unwrap().runs[0].key, p.runs[0].key);
        for (stream, needle) in [
            ("0-2G,1G-3G", "overlap"),
            ("0-1G,2G-100T", "beyond the card"),
        ] {
            let text = format!("scale = 0.01\nplacement = 'streams'\nstream = '{stream}'\n");
            let e = format!("{:#}", Plan::from_toml(&text, "p").unwrap_err());
            assert!(e.contains(needle), "{stream}: {e}");
            assert!(!e.contains('\n'), "{stream}: not one line: {e}");
        }
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // Test vectors of the FNV reference (isthe.com/chongo/tech/comp/fnv).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
