//! One measurement of the per-task cache, in a fresh process (run by
//! `scripts/bench-percache.sh`): the time from "kernel requested" (the
//! file's text in hand) to "kernel ready to launch" (every task loaded,
//! its entry resolved) through the cached per-task path, printed as one
//! JSON line.
//!
//! Usage: bench-percache FILE --cache-dir DIR [-O LEVEL] [--per-task-loads N]
//!                       [--fetched-writes after-ready|at-once]
//!
//! A remote tier is used when `KILN_REMOTE` is set (with the other
//! `KILN_REMOTE_*` settings), as `kiln-run` uses it (`scripts/bench-remote.sh`).
//! `--fetched-writes` says when the local copies of the records the remote
//! returned are written (`FetchedWrites`; `after-ready`, the default, is
//! what `kiln-run` does). Besides the wall time to ready, the process's CPU
//! time over the same span (every thread) is printed as `ready_cpu_ms`.
//!
//! With `--per-task-loads N` (on a warm cache) it then measures the
//! per-task warm load N times per task — key, read, verify, add, link,
//! look up, each into a fresh dylib — and adds the median and quartiles.

use kiln::config::{CompileConfig, OptLevel};
use kiln_codegen::Compiler;
use kiln_jit::cached::{CachedTasks, FetchedWrites};
use kiln_jit::engine::{JitEngine, JitPath};
use kiln_jit::Jit;
use kiln_llvm::session;
use kiln_llvm::HostTarget;
use std::time::Instant;

fn fail(msg: String) -> ! {
    eprintln!("bench-percache: {msg}");
    std::process::exit(1)
}

/// The CPU time of the whole process so far (every thread), in ms.
fn process_cpu_ms() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        fail("clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed".into())
    }
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut file = None;
    let mut cache = None;
    let mut opt = OptLevel::O2;
    let mut per_task = 0usize;
    let mut fetched_writes = FetchedWrites::AfterReady;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--cache-dir" => cache = it.next().cloned(),
            "-O" => {
                opt = match it.next().map(String::as_str) {
                    Some("0") => OptLevel::O0,
                    Some("1") => OptLevel::O1,
                    Some("3") => OptLevel::O3,
                    _ => OptLevel::O2,
                }
            }
            "--per-task-loads" => per_task = it.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            "--fetched-writes" => {
                fetched_writes = match it.next().map(String::as_str) {
                    Some("after-ready") => FetchedWrites::AfterReady,
                    Some("at-once") => FetchedWrites::AtOnce,
                    other => fail(format!("--fetched-writes: expected after-ready or at-once, got {other:?}")),
                }
            }
            f => file = Some(f.to_string()),
        }
    }
    let (Some(file), Some(cache)) = (file, cache) else {
        fail("usage: bench-percache FILE --cache-dir DIR [-O LEVEL] [--per-task-loads N]".into())
    };
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| fail(format!("{file}: {e}")));

    // LLVM, the JIT and the store are set up before the kernel is
    // requested, as in a program that runs more than one kernel.
    let target = HostTarget::detect().unwrap_or_else(|e| fail(e.to_string()));
    let config = CompileConfig { opt_level: opt, ..Default::default() };
    let compiler = Compiler::new(config.clone(), target.clone()).unwrap_or_else(|e| fail(e.to_string()));
    let mut engine = JitEngine::new(compiler.clone(), JitPath::PerTask, 1).unwrap_or_else(|e| fail(e.message));
    let store = session::open_store(std::path::Path::new(&cache), &target, Default::default())
        .unwrap_or_else(|e| fail(e.to_string()));
    let settings = kiln::settings::Settings::load(&[]).unwrap_or_else(|e| fail(e.to_string()));
    let remote = kiln::remote::RemoteSettings::from_settings(&settings).unwrap_or_else(|e| fail(e.to_string()));
    let mut provider = CachedTasks::new(store).with_fetched_writes(fetched_writes);
    if let Some(r) = remote {
        let scope = provider.store().scope_name().to_string();
        provider = provider.with_remote(kiln::remote::RemoteTier::new(r, &scope));
    }
    engine.set_provider(Box::new(provider));

    // Requested: parse, verify, split, then every task keyed and loaded.
    let (t0, cpu0) = (Instant::now(), process_cpu_ms());
    let stream = kiln::parser::parse(&text).unwrap_or_else(|_| fail(format!("{file}: does not parse")));
    kiln::verifier::verify(&stream).unwrap_or_else(|_| fail(format!("{file}: does not verify")));
    let kernels: Vec<String> = stream.modules.iter().flat_map(|m| m.kernels()).map(|k| k.name.to_string()).collect();
    let t_front = Instant::now();
    let mut tasks = 0;
    for k in &kernels {
        let split = engine.split(&stream, k).unwrap_or_else(|e| fail(e.message));
        let s = split.as_deref().unwrap_or(&stream);
        tasks += engine.prepare(s, k).unwrap_or_else(|e| fail(e.message)).len();
    }
    let ready = t0.elapsed();
    let ready_cpu = process_cpu_ms() - cpu0;
    // The records of compiled tasks are written in the background while
    // a kernel would run; wait for them (outside the measurement).
    engine.finish();
    let st = &engine.stats;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut out = serde_json::json!({
        "file": file,
        "tasks": tasks,
        "ready_ms": ms(ready),
        "ready_cpu_ms": ready_cpu,
        "frontend_ms": ms(t_front - t0),
        "key_ms": ms(st.run.key_time),
        "compile_ms": ms(st.run.compile_time),
        "load_ms": ms(st.run.load_time),
        "hits": st.run.hits,
        "misses": st.run.misses,
        "corrupt_replaced": st.run.corrupt_replaced,
        "compiled": st.run.compiled,
        "remote": st.remote.as_ref().map(|(_, r)| serde_json::to_value(r).unwrap_or_default()),
        "warnings": st.warnings,
    });

    if per_task > 0 {
        let store = session::open_store(std::path::Path::new(&cache), &target, Default::default())
            .unwrap_or_else(|e| fail(e.to_string()));
        let jit = Jit::new().unwrap_or_else(|e| fail(e.to_string()));
        let mut split = stream.clone();
        kiln::passes::run_passes(&kiln::passes::default_pipeline(), &mut split)
            .unwrap_or_else(|_| fail("split".into()));
        let modules: Vec<_> = kiln::plan::task_modules(&split).map(|(m, _)| m).collect();
        let (mut total, mut key, mut read, mut add, mut link) = (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..per_task {
            for m in &modules {
                let t = Instant::now();
                let (k, meta) = kiln::plan::key_and_meta(m, &config).unwrap_or_else(|e| fail(e.message));
                let t_key = t.elapsed();
                let rec = match store.get(&k) {
                    Ok(kiln::cache::Lookup::Hit(r)) => r,
                    other => fail(format!("not a warm cache: {other:?}")),
                };
                let t_read = t.elapsed();
                let loaded = jit.load_task("bench", &rec.object, &meta).unwrap_or_else(|e| fail(e.to_string()));
                let all = t.elapsed();
                total.push(all.as_secs_f64() * 1e3);
                key.push(t_key.as_secs_f64() * 1e3);
                read.push((t_read - t_key).as_secs_f64() * 1e3);
                add.push(loaded.times.add.as_secs_f64() * 1e3);
                link.push(loaded.times.link.as_secs_f64() * 1e3);
            }
        }
        let (q1, med, q3) = median(&mut total);
        out["per_task_load_ms"] = serde_json::json!({
            "samples": total.len(),
            "median": med, "q1": q1, "q3": q3,
            "key_median": median(&mut key).1,
            "read_verify_median": median(&mut read).1,
            "add_median": median(&mut add).1,
            "link_lookup_median": median(&mut link).1,
        });
    }
    println!("{out}");
}
