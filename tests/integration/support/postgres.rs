//! A private PostgreSQL server (Debian's binaries), owned by a test or a bench (benches/store.rs
//! includes this file) and stopped on drop:
//! `initdb` and `pg_ctl` run as the `postgres` user (initdb refuses root), with a data
//! directory of its own, the socket in that directory, and a free loopback port.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running server.
pub struct Postgres {
    dir: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
}

/// Debian's PostgreSQL binaries (the newest version installed).
fn bin(name: &str) -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/test.sh installs Debian's postgresql)")
        .flatten()
        .map(|e| e.path())
        .collect();
    versions.sort();
    versions.last().expect("a PostgreSQL version").join("bin").join(name)
}

fn as_postgres(program: &Path, args: &[&str]) -> Output {
    Command::new("runuser").arg("-u").arg("postgres").arg("--").arg(program).args(args).output().expect("runuser")
}

impl Postgres {
    /// Creates and starts a server in a new temporary directory.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new().prefix("merlya-pg").tempdir().expect("tempdir").keep();
        let chown = Command::new("chown").arg("postgres:postgres").arg(&dir).status().expect("chown");
        assert!(chown.success(), "chown the data directory to postgres");
        let data = dir.join("data");
        let out = as_postgres(&bin("initdb"), &["-D", &data.to_string_lossy(), "-A", "trust", "-U", "postgres"]);
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let server = Self { dir, port: free_port() };
        server.start_again();
        server
    }

    /// Starts the server (again) on its port, waiting until it accepts connections.
    pub fn start_again(&self) {
        let data = self.dir.join("data");
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.dir.display());
        let log = self.dir.join("server.log");
        let out = as_postgres(
            &bin("pg_ctl"),
            &["-D", &data.to_string_lossy(), "-l", &log.to_string_lossy(), "-o", &options, "-w", "start"],
        );
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops the server as an outage would (`immediate`: connections cut, no clean shut-down).
    pub fn stop(&self) {
        let data = self.dir.join("data");
        let out = as_postgres(&bin("pg_ctl"), &["-D", &data.to_string_lossy(), "-m", "immediate", "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Runs `psql -X -c SQL` as the superuser over the socket, with extra environment.
    pub fn psql(&self, sql: &str, env: &[(&str, &str)]) -> Output {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(bin("psql"));
        command.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-h"]).arg(&self.dir);
        command.args(["-p", &self.port.to_string(), "-d", "postgres", "-c", sql]);
        command.envs(env.iter().copied());
        command.output().expect("psql")
    }

    /// Runs `psql -X -At -c SQL` as the superuser in `database`.
    pub fn psql_on(&self, database: &str, sql: &str) -> Output {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(bin("psql"));
        command.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-h"]).arg(&self.dir);
        command.args(["-p", &self.port.to_string(), "-d", database, "-c", sql]);
        command.output().expect("psql")
    }

    /// The single value a query returns; panics with the server's error otherwise.
    pub fn value(&self, sql: &str) -> String {
        let out = self.psql(sql, &[]);
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Postgres {
    /// The single value a query returns in `database`; panics with the server's error otherwise.
    pub fn value_on(&self, database: &str, sql: &str) -> String {
        let out = self.psql_on(database, sql);
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        as_postgres(&bin("pg_ctl"), &["-D", &data.to_string_lossy(), "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}
