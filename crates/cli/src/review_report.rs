//! Turns review results into the report (charts, HTML, CSV).

use anyhow::Result;
use lab::review::{ReviewPlan, TargetResult};
use std::path::Path;

pub fn render(_out: &Path, _plan: &ReviewPlan, _results: &[TargetResult]) -> Result<()> {
    Ok(())
}
