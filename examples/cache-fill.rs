//! `cache-fill`: fills a Kiln cache with synthetic records through the
//! real store (`kiln::cache::Store::put`), for benchmarks and for the
//! tests that need records without LLVM.
//!
//! Record `i` of seed `S` has the key blake3("kiln cache-fill" S i), task
//! `@fill.S.I` (kinds cycling serial, range_for, struct_for) and an
//! object of `--size` bytes derived from its key, so any two runs with
//! the same arguments write the same records. Prints each key written,
//! one per line, unless `--quiet`.
//!
//! `--pause-before-rename MS` stages each record (written and synced under
//! its temporary name) and sleeps before renaming it into place: the real
//! write path, only paused, so a test can kill a writer mid-write.
//!
//! `--packed` stores the records as one batch fetched from the remote
//! (`Store::put_fetched_all`): packs in the scope's `packed/` directory,
//! linked under each record's name.

use clap::Parser;
use kiln::cache::size::{parse_duration, parse_size};
use kiln::cache::{CacheRoot, HostScope, Key, Native, Store, StoreOptions};
use kiln::config::{LaunchMeta, MetaBound, MetaField, MetaKind, MetaParam};
use kiln::ir::Scalar;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

#[derive(Parser)]
#[command(name = "cache-fill", about = "Fill a Kiln cache with synthetic records")]
struct Args {
    /// The cache root (created if missing)
    #[arg(long, value_name = "DIR")]
    cache_dir: PathBuf,
    /// Number of records
    #[arg(long, default_value_t = 10)]
    count: u64,
    /// Index of the first record
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Object bytes per record
    #[arg(long, default_value_t = 1000)]
    size: usize,
    /// Distinguishes the keys of separate fills
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value = "x86_64-unknown-linux-gnu")]
    triple: String,
    #[arg(long, default_value = "kiln-test")]
    cpu: String,
    /// Comma-separated CPU features
    #[arg(long, default_value = "+fill")]
    features: String,
    /// Record this scope as this machine's own (as codegen does for the detected host)
    #[arg(long)]
    native: bool,
    /// Set each record's last use this long ago (e.g. 2d)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    last_use_ago: Option<Duration>,
    /// Sleep this many milliseconds between writing a record and renaming it into place
    #[arg(long, value_name = "MS")]
    pause_before_rename: Option<u64>,
    /// Do not fsync records (throwaway benchmark caches only)
    #[arg(long)]
    no_fsync: bool,
    #[arg(long)]
    allow_insecure_cache: bool,
    /// The cache's size bound (0: none) [default: the store's, 5 GiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_size: Option<u64>,
    /// Print nothing
    #[arg(long)]
    quiet: bool,
    /// Store the records as one fetched batch: packs linked under each record's name
    #[arg(long, conflicts_with = "pause_before_rename")]
    packed: bool,
}

/// The synthetic key of record `i` of `seed`.
fn key(seed: u64, i: u64) -> Key {
    let mut h = blake3::Hasher::new();
    h.update(b"kiln cache-fill");
    h.update(&seed.to_le_bytes());
    h.update(&i.to_le_bytes());
    Key::from(h.finalize())
}

fn meta(seed: u64, i: u64) -> LaunchMeta {
    let kind = match i % 3 {
        0 => MetaKind::Serial,
        1 => MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Param(0), block_dim: 64 },
        _ => MetaKind::StructFor { field: "@grid".into(), rank: 2, block_dim: 128 },
    };
    LaunchMeta {
        task: format!("@fill.{seed}.{i}"),
        entry_symbol: format!("kiln_task_fill_{seed}_{i}"),
        kind,
        params: vec![MetaParam { name: "%n".into(), ty: Scalar::I32 }],
        fields: vec![
            MetaField { name: "@x".into(), elem: Scalar::F32, shape: vec![1024] },
            MetaField { name: "@grid".into(), elem: Scalar::F32, shape: vec![64, 64] },
        ],
    }
}

fn run(args: Args) -> Result<(), String> {
    let scope = HostScope::from_feature_string(&args.triple, &args.cpu, &args.features);
    let options = StoreOptions {
        allow_insecure: args.allow_insecure_cache,
        llvm_version: "none".into(),
        fsync: !args.no_fsync,
        max_size: args.max_size.unwrap_or(kiln::cache::DEFAULT_MAX_SIZE),
        ..Default::default()
    };
    let native = if args.native { Native::Told } else { Native::No };
    let store =
        CacheRoot::open(&args.cache_dir, options).and_then(|r| r.scope(scope, native)).map_err(|e| e.to_string())?;
    if args.packed {
        return fill_packed(&store, &args);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut object = vec![0u8; args.size];
    for i in args.start..args.start + args.count {
        let k = key(args.seed, i);
        blake3::Hasher::new().update(&k.0).finalize_xof().fill(&mut object);
        let staged = store.stage(&k, &meta(args.seed, i), &object).map_err(|e| e.to_string())?;
        if let Some(ms) = args.pause_before_rename {
            // Tell a watching test which temporary file is pending.
            if !args.quiet {
                let _ = writeln!(out, "staged {}", staged.temp_path().display());
                let _ = out.flush();
            }
            std::thread::sleep(Duration::from_millis(ms));
        }
        staged.commit().map_err(|e| e.to_string())?;
        if let Some(ago) = args.last_use_ago {
            let path = store.record_path(&k);
            let file =
                std::fs::File::options().write(true).open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            file.set_modified(SystemTime::now() - ago).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if !args.quiet && writeln!(out, "{k}").is_err() {
            break;
        }
    }
    let _ = out.flush();
    Ok(())
}

/// The object of the record of key `k`: `size` bytes derived from it.
fn object_of(k: &Key, size: usize) -> Vec<u8> {
    let mut object = vec![0u8; size];
    blake3::Hasher::new().update(&k.0).finalize_xof().fill(&mut object);
    object
}

/// `--packed`: every record in one fetched batch, as a remote-warm run
/// stores them; the pack's one mtime aged by `--last-use-ago`.
fn fill_packed(store: &Store, args: &Args) -> Result<(), String> {
    let range = args.start..args.start + args.count;
    let keys: Vec<Key> = range.clone().map(|i| key(args.seed, i)).collect();
    let metas: Vec<LaunchMeta> = range.map(|i| meta(args.seed, i)).collect();
    let objects: Vec<Vec<u8>> = keys.iter().map(|k| object_of(k, args.size)).collect();
    let batch = (0..keys.len()).map(|i| (&keys[i], &metas[i], objects[i].as_slice(), Duration::ZERO));
    store.put_fetched_all(batch).map_err(|e| e.to_string())?;
    for (k, ago) in keys.iter().zip(args.last_use_ago.iter().cycle()) {
        let path = store.packed_path(k);
        let file = std::fs::File::options().write(true).open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        file.set_modified(SystemTime::now() - *ago).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if !args.quiet {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for k in &keys {
            let _ = writeln!(out, "{k}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cache-fill: error: {e}");
            ExitCode::from(1)
        }
    }
}
