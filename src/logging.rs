//! tracing to rolling files in `MERLYA_HOME/logs`, never to the terminal (the
//! console owns it). `MERLYA_LOG` overrides `logging.level`.

use color_eyre::eyre::{Result, WrapErr};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{Builder, Rotation};
use tracing_subscriber::EnvFilter;

use crate::config::LoggingConfig;
use crate::home::MerlyaHome;

/// The rolling appender, narrowing each day's new file to 0600: the appender
/// creates files with the default mode, and log lines may name hosts,
/// commands and users. Checked once per day (and at start) on the writer thread.
struct PrivateFiles {
    inner: tracing_appender::rolling::RollingFileAppender,
    dir: std::path::PathBuf,
    day: Option<chrono::NaiveDate>,
}

impl PrivateFiles {
    fn narrow(&self) {
        narrow_log_files(&self.dir);
    }
}

/// Sets every `merlya.*.log` file in `dir` to 0600.
pub fn narrow_log_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("merlya") && name.ends_with(".log") {
            let _ = crate::home::make_private(&entry.path());
        }
    }
}

impl std::io::Write for PrivateFiles {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        let today = chrono::Utc::now().date_naive();
        if self.day != Some(today) {
            self.day = Some(today);
            self.narrow();
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Starts file logging; keep the guard alive until exit so buffered lines are written.
pub fn init(home: &MerlyaHome, config: &LoggingConfig) -> Result<WorkerGuard> {
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix("merlya")
        .filename_suffix("log")
        .max_log_files(config.keep_files.max(1))
        .build(home.logs_dir())
        .wrap_err_with(|| format!("cannot open log files in {}", home.logs_dir().display()))?;
    let writer = PrivateFiles { inner: appender, dir: home.logs_dir(), day: None };
    writer.narrow();
    // The default queue (128,000 lines) is allocated and touched at start-up (about 4 MB, a few ms of
    // page faults on every CLI call); 8,192 lines are plenty for merlya's rate, and a full queue drops.
    let (writer, guard) =
        tracing_appender::non_blocking::NonBlockingBuilder::default().buffered_lines_limit(8192).finish(writer);
    let level = std::env::var("MERLYA_LOG").unwrap_or_else(|_| config.level.clone());
    let filter =
        EnvFilter::try_new(&level).wrap_err_with(|| format!("logging.level {level:?} is not a valid filter"))?;
    // A second init (tests calling run twice in one process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(false).try_init();
    Ok(guard)
}
