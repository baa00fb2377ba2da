//! The console (placeholder while the Elm loop is written).
use color_eyre::eyre::Result;
pub fn run_console(_rt: &tokio::runtime::Runtime, _home: crate::home::MerlyaHome) -> Result<u8> {
    Ok(0)
}
