//! Building handler images with the SDK: the `softspin-sdk` crate, with
//! errors as [`crate::Error::Build`].

use std::path::PathBuf;

pub use softspin_sdk::{BuildOptions, Toolchain, DEFAULT_MEMORY_MAP};

use crate::Result;

impl From<softspin_sdk::Error> for crate::Error {
    fn from(e: softspin_sdk::Error) -> Self {
        crate::Error::Build(e.0)
    }
}

/// The SDK directory (see [`softspin_sdk::sdk_dir`]).
pub fn sdk_dir() -> Result<PathBuf> {
    Ok(softspin_sdk::sdk_dir()?)
}

/// Compile and link (see [`softspin_sdk::build`]).
pub fn build(o: &BuildOptions) -> Result<()> {
    Ok(softspin_sdk::build(o)?)
}

/// Compile and link for ISA `isa` (`corev`, `rv32imac`; see
/// [`softspin_sdk::build_isa`]), or the default one.
pub fn build_isa(o: &BuildOptions, isa: Option<&str>) -> Result<()> {
    Ok(softspin_sdk::build_isa(o, isa)?)
}
