//! The console holding a large fleet (issue 25): a home of N generated hosts
//! written straight into the database, the console's peak RSS once the
//! inventory is drawn, and the time from a filter keystroke to the last byte
//! of the redrawn screen (the output then stays quiet), against a 10-host home
//! measured in the same run.

use std::path::Path;
use std::time::Duration;

use super::Console;

/// Hosts written per INSERT (well under SQLite's 32,766 parameters).
const BATCH: usize = 500;

/// Adds `count` hosts to the home's database in one transaction, as an import
/// would leave them: `role-region-NNNNNN`, a 10.x address, three tags
/// (role, environment, region), a login user on a third of them.
pub fn fill(home: &Path, count: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use sqlx::{ConnectOptions, Connection};
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(home.join("merlya.db"));
        let mut conn = options.connect().await.unwrap();
        let mut tx = conn.begin().await.unwrap();
        let (roles, envs, regions) = (
            ["web", "db", "cache", "queue", "api", "batch", "edge", "mon"],
            ["prod", "staging", "dev"],
            ["eu-west", "eu-central", "us-east", "us-west", "ap-south"],
        );
        let now = "2026-11-26T08:00:00Z";
        for start in (0..count).step_by(BATCH) {
            let ids: Vec<usize> = (start..count.min(start + BATCH)).collect();
            let rows = vec!["(?, ?, ?, 22, ?, ?, ?)"; ids.len()].join(", ");
            let sql =
                format!("INSERT INTO hosts (id, name, hostname, port, username, created_at, updated_at) VALUES {rows}");
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for &i in &ids {
                let (role, region) = (roles[i % roles.len()], regions[(i / 24) % regions.len()]);
                insert = insert
                    .bind(i64::try_from(i + 1000).unwrap())
                    .bind(format!("{role}-{region}-{i:06}"))
                    .bind(format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255))
                    .bind((i % 3 == 0).then_some("deploy"))
                    .bind(now)
                    .bind(now);
            }
            insert.execute(&mut *tx).await.unwrap();
            let rows = vec!["(?, ?)"; ids.len() * 3].join(", ");
            let mut tags =
                sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO host_tags (host_id, tag) VALUES {rows}")));
            for &i in &ids {
                let id = i64::try_from(i + 1000).unwrap();
                let (role, env, region) =
                    (roles[i % roles.len()], envs[(i / 8) % envs.len()], regions[(i / 24) % regions.len()]);
                tags = tags.bind(id).bind(role).bind(id).bind(env).bind(id).bind(region);
            }
            tags.execute(&mut *tx).await.unwrap();
        }
        tx.commit().await.unwrap();
    });
}

/// What one home measured.
pub struct Figures {
    /// Seconds from exec to the inventory drawn.
    pub first_frame: f64,
    /// Peak RSS (MiB) once the inventory is drawn, and after the filter keystrokes.
    pub rss_drawn: f64,
    pub rss_after: f64,
    /// Milliseconds from each filter keystroke to the last byte of its redrawn screen: characters
    /// typed (each narrows the list), then erased.
    pub typed: Vec<f64>,
    pub erased: Vec<f64>,
}

/// The typing measured: queries typed a key at a time (narrowing), then erased (widening).
pub const QUERIES: [&str; 3] = ["web-eu", "prod 12", "10.1.2"];

/// Starts the console on `home` and measures it.
pub fn measure(home: &Path) -> Figures {
    let console = Console::start(home);
    let first_frame = console.wait_for("Inventory").as_secs_f64();
    console.quiet_after(console.started);
    let rss_drawn = console.peak_rss_mib();
    let (mut typed, mut erased) = (Vec::new(), Vec::new());
    console.key(b"/");
    for query in QUERIES {
        for c in query.bytes() {
            typed.push(console.key(&[c]));
        }
        for _ in query.bytes() {
            erased.push(console.key(b"\x7f"));
        }
    }
    console.key(b"\x1b");
    let rss_after = console.peak_rss_mib();
    console.quit();
    Figures { first_frame, rss_drawn, rss_after, typed, erased }
}

impl Console {
    /// Sends `bytes` and waits until the screen is redrawn and quiet: milliseconds from the
    /// keystroke to the last byte of output.
    fn key(&self, bytes: &[u8]) -> f64 {
        use std::io::Write;
        let sent = std::time::Instant::now();
        (&self.master).write_all(bytes).unwrap();
        self.quiet_after(sent).as_secs_f64() * 1000.0
    }

    /// Waits until output came after `since` and then none for 250 ms; the time to its last byte.
    fn quiet_after(&self, since: std::time::Instant) -> Duration {
        loop {
            let last = *self.last_output.lock().unwrap();
            if last > since && last.elapsed() >= Duration::from_millis(250) {
                return last - since;
            }
            assert!(since.elapsed() < Duration::from_secs(60), "the console stayed silent");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// VmHWM of the console, in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        kib / 1024.0
    }
}
