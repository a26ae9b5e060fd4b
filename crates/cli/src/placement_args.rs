//! `--placement` and `--stream`, shared by `vsl run`, `sweep` and
//! `review`: parsed once into the card's [`ftl::PlacementSpec`] (stream
//! ranges in card bytes; the device checks them against the card).

use anyhow::{anyhow, Result};
use ftl::PlacementSpec;
use workload::units::parse_size;

/// Parses `--placement NAME` and its `--stream START-END` ranges (bytes of
/// the card, e.g. `0-64G`). Errors are one line naming the option.
pub fn parse_placement(name: &str, streams: &[String]) -> Result<PlacementSpec> {
    let ranges = streams
        .iter()
        .map(|s| parse_range(s).map_err(|e| anyhow!("--stream {s}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let spec = PlacementSpec::parse(name, ranges).map_err(|e| anyhow!("--placement: {e}"))?;
    if let PlacementSpec::Streams(r) = &spec {
        let mut sorted = r.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(anyhow!(
                "--stream: ranges {}-{} and {}-{} (bytes) overlap",
                w[0].0,
                w[0].1,
                w[1].0,
                w[1].1
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
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
}
