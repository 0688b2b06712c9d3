//! `make accuracy`: the accuracy of every fast-math function over every
//! `f32` input (a binary one: every `x`, each with a `y` of a fixed
//! sequence), through the JIT's vectorised code, against `f64`. Prints a
//! Markdown table for docs/performance.md ("Fast-math accuracy").
//!
//! Usage: accuracy [OP...]   (default: every function; chunks of 2^22)

#[path = "../tests/common/accuracy.rs"]
mod accuracy;

use std::time::Instant;

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("| function | inputs | max ulps | at x | specials wrong | documented bound | seconds |");
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: |");
    for f in accuracy::FUNCS.iter().filter(|f| only.is_empty() || only.iter().any(|o| o == f.op)) {
        let t = Instant::now();
        let r = accuracy::exhaustive(f, 1 << 22, threads);
        let x = f32::from_bits(r.worst.0);
        let at = if f.arity == 1 { format!("{x:e}") } else { format!("{x:e}, y = {:e}", r.worst.1) };
        println!(
            "| {} | {} | {:.3} | {} | {} | {} | {:.0} |",
            f.op,
            r.inputs,
            r.max_ulps,
            at,
            r.special_mismatches,
            f.max_ulps,
            t.elapsed().as_secs_f64()
        );
    }
}
