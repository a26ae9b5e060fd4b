//! `--placement` and `--stream`, shared by `vsl run`, `sweep` and
//! `review`: parsed once into the card's [`ftl::PlacementSpec`] (stream
//! ranges in card bytes; the device checks them against the card).

use anyhow::{anyhow, Result};
use ftl::PlacementSpec;

/// Parses `--placement NAME` and its `--stream START-END` ranges (bytes of
/// the card, e.g. `0-64G`). Errors are one line naming the option. The
/// parsing lives in `device::parse_placement`, which `vsl attach` shares.
pub fn parse_placement(name: &str, streams: &[String]) -> Result<PlacementSpec> {
    device::parse_placement(name, streams).map_err(|e| anyhow!("{e}"))
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
