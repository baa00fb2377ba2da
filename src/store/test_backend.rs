//! The backend store tests run on: SQLite by default; with `MERLYA_TEST_STORE=postgres`, a private
//! PostgreSQL server (Debian's binaries, started once per test process as the `postgres` user on a
//! free loopback port, stopped when the process ends) and a new database per test. scripts/test.sh
//! runs the library's tests both ways, so the store's whole API is checked on both backends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use super::Store;

/// A store for a test whose files go in `dir`, on the backend `MERLYA_TEST_STORE` names.
pub(crate) async fn store_in(dir: &Path) -> Store {
    let database = dir.join("merlya.db");
    if std::env::var("MERLYA_TEST_STORE").as_deref() != Ok("postgres") {
        return Store::open(&database).await.expect("open the SQLite store");
    }
    let url = new_database();
    Store::open_postgres(&database, &url, None).await.expect("open the PostgreSQL store")
}

/// A new, empty database on the shared server; its URL.
pub(crate) fn new_database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let server = server();
    let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    server.psql(&format!("CREATE DATABASE {name}"));
    format!("postgres://postgres@127.0.0.1:{}/{name}", server.port)
}

struct Server {
    dir: PathBuf,
    port: u16,
}

fn bin(name: &str) -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/test.sh installs Debian's postgresql)")
        .flatten()
        .map(|e| e.path())
        .collect();
    versions.sort();
    versions.last().expect("a PostgreSQL version").join("bin").join(name)
}

fn as_postgres(program: &Path, args: &[&str]) -> std::process::Output {
    Command::new("runuser").args(["-u", "postgres", "--"]).arg(program).args(args).output().expect("runuser")
}

impl Server {
    fn psql(&self, sql: &str) {
        let out = as_postgres(
            &bin("psql"),
            &["-X", "-h", &self.dir.to_string_lossy(), "-p", &self.port.to_string(), "-d", "postgres", "-c", sql],
        );
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The server, started on first use; a watchdog stops it and removes its files when this process ends.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::Builder::new().prefix("merlya-test-pg").tempdir().expect("tempdir").keep();
        let chown = Command::new("chown").arg("postgres:postgres").arg(&dir).status().expect("chown");
        assert!(chown.success(), "chown the data directory to postgres");
        let data = dir.join("data");
        let out = as_postgres(&bin("initdb"), &["-D", &data.to_string_lossy(), "-A", "trust", "-U", "postgres"]);
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = free_port();
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", dir.display());
        let log = dir.join("server.log");
        let out = as_postgres(
            &bin("pg_ctl"),
            &["-D", &data.to_string_lossy(), "-l", &log.to_string_lossy(), "-o", &options, "-w", "start"],
        );
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
        let watchdog = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; runuser -u postgres -- {ctl} -D {data} -m immediate stop; rm -rf {dir}",
            pid = std::process::id(),
            ctl = bin("pg_ctl").display(),
            data = data.display(),
            dir = dir.display(),
        );
        // `setsid -f` forks the watchdog away and returns at once: waited for here, it outlives us.
        let started = Command::new("setsid")
            .args(["-f", "sh", "-c", &watchdog])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("start the server's watchdog");
        assert!(started.success(), "start the server's watchdog");
        Server { dir, port }
    })
}
