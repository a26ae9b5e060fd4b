use crate::args::ValidateArgs;
use anyhow::Result;
pub fn validate(_a: ValidateArgs) -> Result<()> {
    anyhow::bail!("not yet")
}
