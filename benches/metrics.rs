//! Prometheus scrape latency: `GET /metrics` from `merlya --metrics-addr` (while `mcp serve --http`
//! runs, on a home with commands of each outcome), median of 200 scrapes over a fresh TCP connection each,
//! against the same raw HTTP round trip to a `/nothing` path of the same server (404) in the same run.
//!
//! Run: `cargo bench --bench metrics`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::median;

fn get(port: u16, path: &str) -> (f64, usize) {
    let t = Instant::now();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = Vec::new();
    stream.read_to_end(&mut body).unwrap();
    (t.elapsed().as_secs_f64() * 1000.0, body.len())
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_merlya");
    let home = tempfile::tempdir().unwrap();
    for command in ["true", "false"] {
        let _ = Command::new(bin).args(["exec", "localhost", "--", command]).env("MERLYA_HOME", home.path()).output();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(bin)
        .args(["--metrics-addr", &format!("127.0.0.1:{port}"), "mcp", "serve", "--http", "127.0.0.1:0"])
        .env("MERLYA_HOME", home.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let (mut scrape, mut nothing, mut size) = (Vec::new(), Vec::new(), 0);
    for _ in 0..200 {
        let (t, n) = get(port, "/metrics");
        scrape.push(t);
        size = n;
        nothing.push(get(port, "/nothing").0);
    }
    let _ = child.kill();
    let _ = child.wait();
    let (scrape, nothing) = (median(scrape), median(nothing));
    println!("| measure | reference | merlya | difference |");
    println!("|---|---:|---:|---:|");
    println!(
        "| `GET /metrics` ({size} bytes), median of 200 | {nothing:.3} ms (404 round trip) | {scrape:.3} ms | {:+.3} ms |",
        scrape - nothing
    );
}
