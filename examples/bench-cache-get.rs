//! `bench-cache-get`: the time of a cache hit (open, read, verify, touch)
//! through the real store, for `scripts/bench-cache.sh`.
//!
//! Stores `--keys` records of `--size` object bytes in a scope of its own
//! under `--cache-dir`, then times `--iterations` `Store::get` hits cycling
//! over them, and prints the median, 90th and 99th percentile and mean in
//! microseconds (a warm page cache: the case of a process that meets tasks
//! another process compiled).

use clap::Parser;
use kiln::cache::{HostScope, Key, Lookup, Store, StoreOptions};
use kiln::config::{LaunchMeta, MetaBound, MetaField, MetaKind, MetaParam};
use kiln::ir::Scalar;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(name = "bench-cache-get", about = "Time cache hits through kiln::cache::Store::get")]
struct Args {
    #[arg(long, value_name = "DIR")]
    cache_dir: PathBuf,
    /// Object bytes per record
    #[arg(long, default_value_t = 20_000)]
    size: usize,
    /// Distinct records to cycle over
    #[arg(long, default_value_t = 64)]
    keys: u32,
    #[arg(long, default_value_t = 20_000)]
    iterations: u32,
}

fn run(args: Args) -> Result<(), String> {
    let scope = HostScope::new("x86_64-unknown-linux-gnu", "bench-get", ["+bench"]);
    let store = Store::open(&args.cache_dir, scope, StoreOptions::default()).map_err(|e| e.to_string())?;
    let meta = LaunchMeta {
        task: "@bench.0".into(),
        entry_symbol: "kiln_task_bench_0".into(),
        kind: MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Param(0), block_dim: 64 },
        params: vec![MetaParam { name: "%n".into(), ty: Scalar::I32 }],
        fields: vec![MetaField { name: "@x".into(), elem: Scalar::F32, shape: vec![1 << 20] }],
    };
    let keys: Vec<Key> = (0..args.keys).map(|i| Key::from(blake3::hash(format!("bench {i}").as_bytes()))).collect();
    let object: Vec<u8> = (0..args.size).map(|i| (i * 31 % 251) as u8).collect();
    let mut put_us = Vec::new();
    for k in &keys {
        let t = Instant::now();
        store.put(k, &meta, &object).map_err(|e| e.to_string())?;
        put_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut us = Vec::with_capacity(args.iterations as usize);
    for i in 0..args.iterations {
        let k = &keys[i as usize % keys.len()];
        let t = Instant::now();
        let found = store.get(k).map_err(|e| e.to_string())?;
        us.push(t.elapsed().as_secs_f64() * 1e6);
        match found {
            Lookup::Hit(r) if r.object.len() == args.size => {}
            other => return Err(format!("expected a hit, got {other:?}")),
        }
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    };
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    println!(
        "get hit, {} B object ({} B record), {} iterations over {} records: median {:.1} us, p90 {:.1} us, p99 {:.1} us, mean {:.1} us",
        args.size,
        std::fs::metadata(store.record_path(&keys[0])).map(|m| m.len()).unwrap_or(0),
        args.iterations,
        keys.len(),
        pct(&mut us, 0.5),
        pct(&mut us, 0.9),
        pct(&mut us, 0.99),
        mean
    );
    println!("put (with fsync), {} records: median {:.1} us", keys.len(), pct(&mut put_us, 0.5));
    let s = store.stats();
    println!(
        "counters: {} hits, {} misses, {} corrupt, {} B read, {} B written",
        s.hits, s.misses, s.corrupt, s.bytes_read, s.bytes_written
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-cache-get: error: {e}");
            ExitCode::from(1)
        }
    }
}
