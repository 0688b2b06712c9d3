//! Interpreter speed on saxpy-like code: statements executed per second,
//! plainly or with the race detector and iteration orders of `kiln-run
//! --engine interp` (`crate::races`).
//!
//! Run with `cargo run --release --example bench-interp [N] [REPS] [MODE]
//! [FIELD_LEN]`. MODE is `plain` (the default: the kernel as written, its
//! loop a plain `for`), or `ORDER` or `check:ORDER` (ORDER one of
//! `ascending`, `descending`, `shuffle`): the kernel offloaded into a
//! `range_for` task whose iterations run in that order, with the race
//! detector for `check:`. The fields have FIELD_LEN elements (default N),
//! of which the loop touches the first N. Besides the time, it prints the
//! process's CPU time and peak resident memory (`VmHWM`), so separate runs
//! of each mode (`scripts/bench-races.sh`) show what the shadow state
//! costs. The kernel is built through the IR API (not parsed) so the figure
//! is the interpreter's alone:
//!
//! ```text
//! kernel @saxpy(%a: f32, %n: i32) {
//!   for %i in 0 .. %n {
//!     %xi = load @x[%i]
//!     %yi = load @y[%i]
//!     %t = mul %a, %xi
//!     %s = add %t, %yi
//!     store @y[%i], %s
//!   }
//! }
//! ```
//!
//! Five statements per iteration are counted (the loop's own increment and
//! test are not), so the figure is conservative.

use kiln::exec::{Engine, Fields};
use kiln::interp::Interpreter;
use kiln::ir::*;
use std::time::Instant;

fn saxpy(n: u64) -> Stream {
    let mut body = Body::new();
    let a = body.add_param("a", Scalar::F32, Span::DUMMY);
    let nv = body.add_param("n", Scalar::I32, Span::DUMMY);
    let f32t = Type::Scalar(Scalar::F32);
    let i = body.new_value("i", Type::Scalar(Scalar::I32), ValueDef::Undefined, Span::DUMMY);
    let blk = body.new_block();
    let r = |f: &str| FieldRef { field: f.into(), indices: vec![i], span: Span::DUMMY };
    let (s1, xi) = body.new_stmt_with_result(StmtKind::Load(r("x")), "xi", f32t, Span::DUMMY);
    let (s2, yi) = body.new_stmt_with_result(StmtKind::Load(r("y")), "yi", f32t, Span::DUMMY);
    let (s3, t) = body.new_stmt_with_result(StmtKind::Binary(BinOp::Mul, a, xi), "t", f32t, Span::DUMMY);
    let (s4, s) = body.new_stmt_with_result(StmtKind::Binary(BinOp::Add, t, yi), "s", f32t, Span::DUMMY);
    let s5 = body.new_stmt(StmtKind::Store(r("y"), s), Span::DUMMY);
    for st in [s1, s2, s3, s4, s5] {
        body.push(blk, st);
    }
    let lp = body.new_stmt(
        StmtKind::For { var: i, lo: Bound::Const(0), hi: Bound::Value(nv), body: blk, serial: false },
        Span::DUMMY,
    );
    body[i].def = ValueDef::LoopVar(lp, 0);
    body.push(body.entry, lp);
    let field =
        |name: &str| Item::Field(Field { name: name.into(), elem: Scalar::F32, shape: vec![n], span: Span::DUMMY });
    let param = |ty| Param { ty, default: None, span: Span::DUMMY };
    let kernel = Item::Kernel(Kernel {
        name: "saxpy".into(),
        params: vec![param(Scalar::F32), param(Scalar::I32)],
        body,
        span: Span::DUMMY,
    });
    Stream { modules: vec![Module { name: None, items: vec![field("x"), field("y"), kernel], span: Span::DUMMY }] }
}

/// The process's user + system CPU seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers, for which zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident memory in KiB (`VmHWM` of /proc/self/status).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
    let reps: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    let mode = args.next().unwrap_or_else(|| "plain".to_string());
    let len: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(n).max(n);
    let mut interp = Interpreter::new();
    if mode != "plain" {
        let (check, order) = match mode.strip_prefix("check:") {
            Some(o) => (true, o),
            None => (false, mode.as_str()),
        };
        interp.check_races = check;
        interp.order = order.parse().unwrap_or_else(|e| panic!("MODE: {e}"));
    }
    let stream = saxpy(len);
    let mut fields = Fields::zeroed(&stream);
    let run_args = [Const::f32(2.0), Const::i32(n as i32)];
    // One warm-up run (page faults, caches).
    interp.run_kernel(&stream, "saxpy", &run_args, &mut fields).expect("saxpy runs");
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    for _ in 0..reps {
        interp.run_kernel(&stream, "saxpy", &run_args, &mut fields).expect("saxpy runs");
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let stmts = 5.0 * n as f64 * reps as f64;
    println!(
        "saxpy ({mode}): n = {n} of {len}, {reps} runs, {secs:.3} s, cpu {cpu:.3} s, peak rss {} KiB",
        peak_rss_kib()
    );
    println!("{:.1} million statements/s ({:.2} ns per statement, cpu)", stmts / cpu / 1e6, cpu * 1e9 / stmts);
}
