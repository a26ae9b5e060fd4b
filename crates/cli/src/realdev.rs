//! Real files and block devices as lab targets (the `realtime` crate).

use anyhow::Result;
use lab::review::ReviewTarget;
use realtime::RealReviewTarget;

/// `file:PATH:SIZE` or `blockdev:/dev/NAME` for `vsl review`.
pub fn review_target(spec: &str) -> Result<Box<dyn ReviewTarget>> {
    Ok(Box::new(RealReviewTarget::open(spec)?))
}
