//! Frame render time and memory while a 1,000,000-line flood of output from
//! 50 hosts goes through `update` (each host's ring keeps `ui.scrollback_lines`),
//! then the frame time scrolled to the oldest line held and with one host shown.
//!
//! Then a long answer streamed in small chunks: rendered block by block as it streams (what
//! `update` does) against the whole answer re-rendered per chunk (what it did before).
//!
//! Run: `cargo bench --bench frames` (FLOOD_LINES=1000000 by default).

use std::time::Instant;

use merlya::app::model::Model;
use merlya::app::msg::Msg;
use merlya::app::theme::Theme;
use merlya::app::update::update;
use merlya::app::view::view;
use merlya::exec::{ExecEvent, Stream};
use merlya::inventory::Host;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn frame_median(model: &Model, terminal: &mut Terminal<TestBackend>, frames: usize) -> f64 {
    let mut times: Vec<f64> = (0..frames)
        .map(|_| {
            let t = Instant::now();
            terminal.draw(|f| view(model, f)).unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

fn main() {
    let total: usize = std::env::var("FLOOD_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let scrollback = 10_000;
    let hosts: Vec<Host> = (0..50).map(|i| Host::new(format!("web{i:02}"), format!("10.0.0.{i}"))).collect();
    let mut model = Model::new(hosts, false, scrollback, Theme::dark());
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    update(&mut model, Msg::Resize(200, 60));
    let empty = frame_median(&model, &mut terminal, 50);
    let rss_before = rss_kib();
    let t = Instant::now();
    let mut peak = rss_before;
    let mut screenful = 0.0;
    for i in 0..total {
        // The baseline: the same pane with just a screenful (1,000 lines) held.
        if i == 1_000 {
            screenful = frame_median(&model, &mut terminal, 50);
        }
        let line = format!("{i:>8} GET /api/v1/orders?id={i} 200 {}ms upstream=10.0.1.{} cache=MISS", i % 997, i % 250);
        update(
            &mut model,
            Msg::Exec {
                run: 1,
                event: ExecEvent::Line { host: format!("web{:02}", i % 50), stream: Stream::Stdout, line },
            },
        );
        if i % 100_000 == 0 {
            peak = peak.max(rss_kib());
        }
    }
    let ingest = t.elapsed().as_secs_f64();
    let full = frame_median(&model, &mut terminal, 50);
    model.output_view.follow = false;
    model.output_view.scroll = model.output.len().saturating_sub(60);
    let oldest = frame_median(&model, &mut terminal, 50);
    model.output_view = Model::new(Vec::new(), false, 1, Theme::dark()).output_view;
    model.output_view.host = Some("web07".into());
    let one_host = frame_median(&model, &mut terminal, 50);
    // A long conversation: 200 answers with Markdown and a highlighted code block each.
    for i in 0..200 {
        let answer = format!(
            "## Finding {i}\n\nLoad on **web{:02}** is high; check:\n\n```bash\nps aux --sort=-%cpu | head -5\nsystemctl status php-fpm\n```\n",
            i % 50
        );
        let agent = merlya::agent::AgentEvent::Delta { agent: "main".into(), text: answer };
        update(&mut model, Msg::Agent(agent));
        update(&mut model, Msg::Note(format!("turn {i}")));
    }
    let chat = frame_median(&model, &mut terminal, 50);
    let rss_after = rss_kib();
    println!("{total} lines from 50 hosts through update, {scrollback} lines kept per host, 200x60 frame");
    println!("ingest: {:.2} s ({:.0} lines/s)", ingest, total as f64 / ingest);
    println!("frame with no output:        {empty:.3} ms (median of 50)");
    println!("frame with 1,000 lines held: {screenful:.3} ms (median of 50, the baseline)");
    let vs = |ms: f64| ms / screenful.max(1e-9);
    println!("frame after the flood:       {full:.3} ms (median of 50) → {:.2}x the baseline", vs(full));
    println!("frame at the oldest line:    {oldest:.3} ms (median of 50) → {:.2}x", vs(oldest));
    println!("frame with one host shown:   {one_host:.3} ms (median of 50) → {:.2}x", vs(one_host));
    println!("frame with 200 Markdown answers in the chat: {chat:.3} ms (median of 50) → {:.2}x", vs(chat));
    println!(
        "lines held: {} (dropped {}), RSS before {:.1} MiB, peak {:.1} MiB, after {:.1} MiB",
        model.output.len(),
        model.output.dropped(),
        rss_before as f64 / 1024.0,
        peak.max(rss_after) as f64 / 1024.0,
        rss_after as f64 / 1024.0
    );
    streaming();
}

/// A 40-block answer (about 16 KB) arriving in 8-byte chunks, as a model streams it.
fn streaming() {
    let theme = Theme::dark();
    let answer: String = (0..40)
        .map(|i| format!("### Step {i}\n\nCheck **web{i:02}** with `df -h`; it was *fine* before.\n\n```bash\ndf -h /var\ndu -sh /var/log/* | sort -h | tail\n```\n\n"))
        .collect();
    let chunks: Vec<usize> =
        (8..answer.len()).step_by(8).filter(|e| answer.is_char_boundary(*e)).chain([answer.len()]).collect();
    let t = Instant::now();
    let mut streamed = merlya::app::markdown::Streamed::default();
    for end in &chunks {
        streamed.update(&answer[..*end], &theme);
    }
    let incremental = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    for end in &chunks {
        std::hint::black_box(merlya::app::markdown::render(&answer[..*end], &theme));
    }
    let whole = t.elapsed().as_secs_f64() * 1000.0;
    println!(
        "a {} KB answer in {} chunks: rendered as it streams {incremental:.1} ms, whole per chunk {whole:.1} ms → {:.1}x faster",
        answer.len() / 1024,
        chunks.len(),
        whole / incremental.max(1e-9)
    );
}
