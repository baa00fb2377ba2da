//! tracing to rolling files in `MERLYA_HOME/logs`, never to the terminal (the
//! console owns it). `MERLYA_LOG` overrides `logging.level`.

use color_eyre::eyre::{Result, WrapErr};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{Builder, Rotation};
use tracing_subscriber::EnvFilter;

use crate::config::LoggingConfig;
use crate::home::MerlyaHome;

/// Starts file logging; keep the guard alive until exit so buffered lines are written.
pub fn init(home: &MerlyaHome, config: &LoggingConfig) -> Result<WorkerGuard> {
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix("merlya")
        .filename_suffix("log")
        .max_log_files(config.keep_files.max(1))
        .build(home.logs_dir())
        .wrap_err_with(|| format!("cannot open log files in {}", home.logs_dir().display()))?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let level = std::env::var("MERLYA_LOG").unwrap_or_else(|_| config.level.clone());
    let filter =
        EnvFilter::try_new(&level).wrap_err_with(|| format!("logging.level {level:?} is not a valid filter"))?;
    // A second init (tests calling run twice in one process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(false).try_init();
    Ok(guard)
}
