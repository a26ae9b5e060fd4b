//! Real files and block devices as lab targets (the `realtime` crate).

use anyhow::{bail, Result};
use lab::review::ReviewTarget;

pub fn review_target(spec: &str) -> Result<Box<dyn ReviewTarget>> {
    bail!(
        "target '{spec}': real-device targets are being integrated and not available in this build"
    )
}
