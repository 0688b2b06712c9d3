//! `bench-evict`: what the automatic size bound costs the store that
//! triggers it, on a large cache, against a full `prune --max-size` of the
//! same cache, for `scripts/bench-bound.sh`.
//!
//! Fills `--records` records of `--size` object bytes through the real
//! store (no bound, fsync off), then opens the store with `max_size` set so
//! that the shard group of one more record is exactly at its share, and
//! times that one `put`: the rename, the counter update, and the eviction
//! of the group's least recently used records down to 90 % (CPU time from
//! `getrusage`, and wall clock). Then, for comparison, removes about as
//! many bytes with a whole-cache `prune --max-size` (scan every record,
//! sort, unlink) and times it the same way. Prints one line per figure.

use clap::Parser;
use kiln::cache::counters::{self, GroupSize};
use kiln::cache::inspect::{Cache, InspectOptions, PrunePlan};
use kiln::cache::{HostScope, Key, Store, StoreOptions};
use kiln::config::{LaunchMeta, MetaKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "bench-evict", about = "Time the eviction a store triggers on a large cache")]
struct Args {
    #[arg(long, value_name = "DIR")]
    cache_dir: PathBuf,
    #[arg(long, default_value_t = 100_000)]
    records: u32,
    /// Object bytes per record
    #[arg(long, default_value_t = 1000)]
    size: usize,
}

/// User plus system CPU time of this process so far.
fn cpu() -> Duration {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: a valid out pointer for getrusage.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `f`; its result, CPU time and wall clock.
fn measure<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (c0, t0) = (cpu(), Instant::now());
    let out = f();
    (out, cpu() - c0, t0.elapsed())
}

fn key(i: u32) -> Key {
    Key::from(blake3::hash(format!("bench-evict {i}").as_bytes()))
}

fn meta() -> LaunchMeta {
    LaunchMeta {
        task: "@bench".into(),
        entry_symbol: "kiln_task".into(),
        kind: MetaKind::Serial,
        params: vec![],
        fields: vec![],
    }
}

fn options(max_size: u64) -> StoreOptions {
    StoreOptions { fsync: false, max_size, ..StoreOptions::default() }
}

fn counted(root: &Path) -> Result<Vec<GroupSize>, String> {
    let sizes = counters::read_sizes(root).map_err(|e| e.to_string())?;
    sizes.into_iter().map(|s| s.ok_or_else(|| "a damaged counter".to_string())).collect()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn run(args: Args) -> Result<(), String> {
    let scope = HostScope::new("x86_64-unknown-linux-gnu", "bench-evict", ["+bench"]);
    let object = vec![0x5au8; args.size];
    let (filled, cpu_fill, wall_fill) = measure(|| -> Result<(), String> {
        let store = Store::open(&args.cache_dir, scope.clone(), options(0)).map_err(|e| e.to_string())?;
        for i in 0..args.records {
            store.put(&key(i), &meta(), &object).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    filled?;
    println!(
        "fill: {} records of {} object bytes: {} wall, {} CPU",
        args.records,
        args.size,
        ms(wall_fill),
        ms(cpu_fill)
    );

    let trigger = key(args.records);
    let g = counters::group_of_shard(&trigger.shard());
    let before = counted(&args.cache_dir)?;
    // Group g exactly at its share: the next record takes it over.
    let max_size = before[g as usize].bytes * counters::GROUPS as u64;
    let store = Store::open(&args.cache_dir, scope, options(max_size)).map_err(|e| e.to_string())?;
    let (put, cpu_put, wall_put) = measure(|| store.put(&trigger, &meta(), &object));
    put.map_err(|e| e.to_string())?;
    let after = counted(&args.cache_dir)?;
    let evicted = store.stats().evicted;
    println!(
        "store that evicts: group {g:x} of {} records ({} bytes) down to {} records ({} bytes), {evicted} evicted: {} wall, {} CPU",
        before[g as usize].records,
        before[g as usize].bytes,
        after[g as usize].records,
        after[g as usize].bytes,
        ms(wall_put),
        ms(cpu_put)
    );
    let record_len = std::fs::metadata(store.record_path(&trigger)).map_err(|e| e.to_string())?.len();
    let freed = before[g as usize].bytes + record_len - after[g as usize].bytes;
    let now: u64 = after.iter().map(|s| s.bytes).sum();
    drop(store);

    // The alternative: a whole-cache prune that frees as much again.
    let cache = Cache::open(&args.cache_dir, &InspectOptions::default()).map_err(|e| e.to_string())?;
    let plan = PrunePlan { max_size: Some(now.saturating_sub(freed)), ..PrunePlan::default() };
    let (report, cpu_prune, wall_prune) = measure(|| cache.prune(&plan));
    let report = report.map_err(|e| e.to_string())?;
    println!(
        "whole-cache prune --max-size freeing as much again: {} records removed: {} wall, {} CPU",
        report.removed.len(),
        ms(wall_prune),
        ms(cpu_prune)
    );
    println!(
        "ratio (prune / eviction): {:.1}x CPU, {:.1}x wall",
        cpu_prune.as_secs_f64() / cpu_put.as_secs_f64().max(1e-9),
        wall_prune.as_secs_f64() / wall_put.as_secs_f64().max(1e-9)
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-evict: error: {e}");
            ExitCode::from(1)
        }
    }
}
