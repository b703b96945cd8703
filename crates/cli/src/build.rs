//! `softspin build`: compile handler sources into an RV32 image.
pub fn sdk_dir() -> anyhow::Result<std::path::PathBuf> { anyhow::bail!("todo") }
#[derive(clap::Args)]
pub struct BuildArgs {}
pub fn main(_: BuildArgs) -> anyhow::Result<std::process::ExitCode> { anyhow::bail!("todo") }
