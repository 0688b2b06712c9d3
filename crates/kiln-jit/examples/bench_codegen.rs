//! Codegen and JIT benchmark (not a test; `scripts/bench-codegen.sh` runs
//! it in release mode and `docs/performance.md` records its figures).
//!
//! Measures, in one run:
//! 1. per task of `testdata/ten_tasks.kir`: compile to object, and load
//!    (add to a fresh dylib, link, look up the entry);
//! 2. compiling all tasks of that kernel in parallel on 1 and on 2 threads;
//! 3. a JIT-compiled saxpy over 1M floats (bounds checks on and off)
//!    against the same loop written in Rust in this binary.
//!
//! Usage: bench_codegen [REPEATS]

use kiln::config::{CompileConfig, OptLevel};
use kiln::exec::Fields;
use kiln::ir::{Const, Module, Stream};
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};
use kiln_jit::runtime::{self, LaunchNames};
use kiln_jit::Jit;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// CPU time of the whole process (user + system), to tell a slow run from
/// a starved one on a shared machine.
fn cpu_time() -> Duration {
    // SAFETY: rusage is plain integers, for which zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn split(text: &str) -> Stream {
    let mut s = kiln::parser::parse(text).expect("parses");
    kiln::verifier::verify(&s).expect("verifies");
    kiln::passes::run_passes(&kiln::passes::default_pipeline(), &mut s).expect("splits");
    s
}

const SAXPY: &str = "\
field @x : f32[1048576]
field @y : f32[1048576]

kernel @saxpy(%a: f32 = 2.0) {
  for %i in 0 .. 1048576 {
    %xi = load @x[%i]
    %yi = load @y[%i]
    %t = mul %a, %xi
    %s = add %t, %yi
    store @y[%i], %s
  }
}
";

#[inline(never)]
fn rust_saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    for i in 0..y.len() {
        y[i] += a * x[i];
    }
}

fn main() {
    let repeats: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("testdata/ten_tasks.kir")).expect("testdata/ten_tasks.kir");
    let stream = split(&text);
    let tasks: Vec<(&Module, String)> =
        kiln::plan::task_modules(&stream).map(|(m, t)| (m, t.name.to_string())).collect();
    let compiler = Compiler::host(CompileConfig::default()).expect("host compiler");
    let jit = Jit::new().expect("jit");
    println!("host: {} / {}", compiler.target.triple, compiler.target.cpu);
    println!("repeats: {repeats} (medians)");

    // 1. Per task: compile, and load.
    println!("\n## per task (ten_tasks.kir, -O2, {} tasks)", tasks.len());
    println!("{:<16} {:>12} {:>12} {:>10} {:>10}", "task", "compile", "load", "add", "link");
    let mut all_compile = Vec::new();
    let mut all_load = Vec::new();
    for (m, name) in &tasks {
        let mut ct = Vec::new();
        let mut obj = None;
        for _ in 0..repeats {
            let t0 = Instant::now();
            let c = compiler.compile_task(m).expect("compiles");
            ct.push(t0.elapsed());
            obj = Some(c);
        }
        let c = obj.unwrap();
        let (mut lt, mut at, mut kt) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..repeats {
            let t0 = Instant::now();
            let l = jit.load_task(name, &c.object, &c.meta).expect("loads");
            lt.push(t0.elapsed());
            at.push(l.times.add);
            kt.push(l.times.link);
        }
        let (cm, lm) = (median(ct.clone()), median(lt.clone()));
        println!(
            "{:<16} {:>12} {:>12} {:>10} {:>10}  ({} bytes)",
            name,
            ms(cm),
            ms(lm),
            ms(median(at)),
            ms(median(kt)),
            c.object.len()
        );
        all_compile.extend(ct);
        all_load.extend(lt);
    }
    println!("all tasks: compile median {}, load median {}", ms(median(all_compile)), ms(median(all_load)));

    // Sequential compile of all tasks at each optimisation level.
    println!("\n## all {} tasks, one thread, by optimisation level", tasks.len());
    for opt in [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3] {
        let cfg = CompileConfig { opt_level: opt, ..CompileConfig::default() };
        let c = Compiler::host(cfg).unwrap();
        let mut ts = Vec::new();
        for _ in 0..repeats.div_ceil(4) {
            let t0 = Instant::now();
            tasks.iter().for_each(|(m, _)| drop(black_box(c.compile_task(m).unwrap())));
            ts.push(t0.elapsed());
        }
        println!("{opt:?}: {}", ms(median(ts)));
    }

    // 2. Parallel compile of the whole kernel's tasks.
    println!("\n## parallel compile of all {} tasks (-O2)", tasks.len());
    let mut walls = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        // Warm each thread's target machine first.
        pool.install(|| tasks.par_iter().for_each(|(m, _)| drop(compiler.compile_task(m).unwrap())));
        let mut ts = Vec::new();
        let c0 = cpu_time();
        for _ in 0..repeats {
            let t0 = Instant::now();
            pool.install(|| tasks.par_iter().for_each(|(m, _)| drop(black_box(compiler.compile_task(m).unwrap()))));
            ts.push(t0.elapsed());
        }
        let cpu = (cpu_time() - c0) / repeats as u32;
        let m = median(ts);
        println!("{threads} thread(s): wall {} (cpu {} per run)", ms(m), ms(cpu));
        walls.push(m);
    }
    println!("speedup 2 vs 1 threads: {:.2}x", walls[0].as_secs_f64() / walls[1].as_secs_f64());

    // 3. saxpy over 1M floats: JIT (1 thread) against Rust.
    println!("\n## saxpy, 1M f32, one thread");
    let sax = split(SAXPY);
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - (i % 777) as f32 * 0.002).collect();
    let mut rust_y = ys.clone();
    let mut rt = Vec::new();
    for _ in 0..repeats {
        let t0 = Instant::now();
        rust_saxpy(black_box(2.0), black_box(&xs), black_box(&mut rust_y));
        rt.push(t0.elapsed());
    }
    let rust = median(rt);
    println!("rust --release:            {}", ms(rust));
    for checks in [true, false] {
        let cfg = CompileConfig { bounds_checks: checks, ..CompileConfig::default() };
        let mut e = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 1).unwrap();
        let loaded = e.prepare(&sax, "saxpy").expect("saxpy loads");
        let t = &loaded[0];
        let mut fields = Fields::zeroed(&sax);
        let put = |fields: &mut Fields, name: &str, v: &[f32]| {
            let d = fields.get_mut(name).unwrap();
            for (c, x) in d.bytes.chunks_mut(4).zip(v) {
                c.copy_from_slice(&x.to_le_bytes());
            }
        };
        put(&mut fields, "x", &xs);
        put(&mut fields, "y", &ys);
        let slots = [Const::f32(2.0).bits];
        let names = LaunchNames { kernel: "saxpy", task: &t.meta.task };
        let mut jt = Vec::new();
        for _ in 0..repeats {
            let t0 = Instant::now();
            runtime::launch(
                t.entry,
                &t.meta,
                names,
                &slots,
                &mut fields,
                Default::default(),
                &|_| Default::default(),
                &mut runtime::PrintOut::new(&mut Vec::new()),
            )
            .unwrap();
            jt.push(t0.elapsed());
        }
        // Same arithmetic as the Rust loop, so the same result bits.
        let jy: Vec<f32> =
            fields.get("y").unwrap().bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(jy, rust_y, "the JIT's saxpy differs from Rust's");
        put(&mut fields, "y", &ys);
        let jit_t = median(jt);
        println!(
            "jit, bounds checks {:<3}:    {}  ({:.2}x Rust)",
            if checks { "on" } else { "off" },
            ms(jit_t),
            jit_t.as_secs_f64() / rust.as_secs_f64()
        );
    }
}
