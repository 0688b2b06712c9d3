//! Measures keying alone — canonical per-task text and blake3 — over a
//! file's tasks, after parsing and the default pipeline (not timed). Prints
//! the canonical text's size, the time per round and the throughput.
//!
//! `cargo run --release --example bench-key -- tasks.kir [ROUNDS]`

use kiln::config::CompileConfig;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: bench-key FILE.kir [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: u32 = args.next().and_then(|r| r.parse().ok()).unwrap_or(20);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    let stream = kiln::parser::parse(&text).unwrap_or_else(|d| {
        eprintln!("{path}: {d}");
        std::process::exit(1)
    });
    let t = Instant::now();
    let stream = kiln::passes::to_task_stream(stream).unwrap_or_else(|d| {
        eprintln!("{path}: {d}");
        std::process::exit(1)
    });
    let pipeline = t.elapsed();
    let cfg = CompileConfig::default();
    let keys = kiln::key::stream_keys(&stream, &cfg);
    let bytes: usize = keys.iter().map(|k| k.text.len()).sum();
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let t = Instant::now();
        let keys = kiln::key::stream_keys(&stream, &cfg);
        let secs = t.elapsed().as_secs_f64();
        std::hint::black_box(keys);
        best = best.min(secs);
    }
    println!("tasks: {}", keys.len());
    println!("canonical text: {bytes} bytes ({:.1} bytes per task)", bytes as f64 / keys.len() as f64);
    println!("default pipeline (once): {:.2} ms", pipeline.as_secs_f64() * 1e3);
    println!("keying, best of {rounds}: {:.3} ms = {:.0} MB/s", best * 1e3, bytes as f64 / best / 1e6);
}
