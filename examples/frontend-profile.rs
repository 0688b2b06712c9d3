//! Where the front end's time goes, phase by phase, in CPU time of one
//! thread (so other load on the machine does not skew it):
//! `frontend-profile FILE`; first the streaming front end as `kiln-opt`
//! runs it (wall and all threads' CPU).
use kiln::lexer::{split_items, Lexer};

fn cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes a timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time of the whole process (all threads).
fn process_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes a timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: frontend-profile FILE");
    let text = std::fs::read_to_string(&path).expect("read input");
    let mb = text.len() as f64 / 1e6;
    let report = |what: &str, t: f64| eprintln!("{what:<28} {t:7.3}s  {:7.1} MB/s", mb / t);

    if std::env::var_os("PARSE_ONLY").is_some() {
        // For `perf record`: the full parse and nothing else.
        let t = cpu();
        let s = kiln::parser::parse_sequential(&text).expect("parses");
        report("parse (sequential, full)", cpu() - t);
        std::mem::forget(s);
        return;
    }
    // What `kiln-opt FILE` runs: the streaming front end, on all cores.
    let (w, c) = (std::time::Instant::now(), process_cpu());
    let out = kiln::frontend::parse_verify_print(&text).expect("valid input");
    let (wall, all) = (w.elapsed().as_secs_f64(), process_cpu() - c);
    eprintln!(
        "{:<28} {wall:7.3}s wall, {all:.3}s CPU ({:.1} MB/s wall, {:.1} MB per CPU-s), {} bytes out",
        "streaming parse+verify+print",
        mb / wall,
        mb / all,
        out.len()
    );
    drop(out);

    let t = cpu();
    let chunks = split_items(&text);
    report("split into chunks", cpu() - t);

    let t = cpu();
    let mut n = 0usize;
    for tok in Lexer::new(&text, 0) {
        n += tok.is_ok() as usize;
    }
    report(&format!("lex ({n} tokens)"), cpu() - t);

    let t = cpu();
    let mut items = 0;
    for c in &chunks {
        items += kiln::parser::parse_syntax_only(&text, c);
    }
    report(&format!("lex + grammar ({items} items)"), cpu() - t);

    std::env::set_var("RAYON_NUM_THREADS", "1");
    let t = cpu();
    let s = kiln::parser::parse_sequential(&text).expect("parses");
    report("parse (sequential, full)", cpu() - t);

    let t = cpu();
    let _ = kiln::verifier::verify(&s);
    report("verify", cpu() - t);

    let t = cpu();
    let out = s.to_string();
    report("print", cpu() - t);
    let t = cpu();
    drop(s);
    report("drop IR", cpu() - t);
    assert!(!out.is_empty());
}
