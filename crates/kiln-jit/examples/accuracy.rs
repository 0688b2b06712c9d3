//! `make accuracy`: the accuracy of compiled math over every `f32` input
//! (a binary function: every `x`, each with a `y` of a fixed sequence),
//! through the JIT's vectorised code, against `f64`. Prints a Markdown
//! table for docs/performance.md: `--default` measures default mode's own
//! functions ("Default-mode math", with the results that are not the
//! reference rounded to `f32` and those whose bits differ from the
//! interpreter's), otherwise fast-math's ("Fast-math accuracy").
//!
//! Usage: accuracy [--default] [OP...]   (default: every function; chunks of 2^22)

#[path = "../tests/support/accuracy.rs"]
mod accuracy;

use accuracy::Mode;
use std::time::Instant;

fn main() {
    let mut only: Vec<String> = std::env::args().skip(1).collect();
    let mode = match only.iter().position(|a| a == "--default") {
        Some(k) => {
            only.remove(k);
            Mode::Default
        }
        None => Mode::Fast,
    };
    let funcs = if mode == Mode::Default { accuracy::default_funcs() } else { accuracy::FUNCS.to_vec() };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "| function | inputs | max ulps | at x | not correctly rounded | specials wrong | differ from the interpreter | documented bound | seconds |"
    );
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |");
    for f in funcs.iter().filter(|f| only.is_empty() || only.iter().any(|o| o == f.op)) {
        let t = Instant::now();
        let r = accuracy::exhaustive(f, 1 << 22, threads, mode);
        let x = f32::from_bits(r.worst.0);
        let at = if f.arity == 1 { format!("{x:e}") } else { format!("{x:e}, y = {:e}", r.worst.1) };
        let engines = if mode == Mode::Default { r.engine_mismatches.to_string() } else { "—".to_string() };
        println!(
            "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {:.0} |",
            f.op,
            r.inputs,
            r.max_ulps,
            at,
            r.misrounded,
            r.special_mismatches,
            engines,
            f.max_ulps,
            t.elapsed().as_secs_f64()
        );
    }
}
