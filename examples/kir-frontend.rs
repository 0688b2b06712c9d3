//! Parses, verifies and prints a KIR file: the front end on its own, for
//! benchmarks until `kiln-opt` exists. `kir-frontend FILE [-o OUT]`.
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: kir-frontend FILE [-o OUT]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("kir-frontend: {path}: {e}");
            std::process::exit(1);
        }
    };
    // KIR_TIMING=1 prints the time of each phase to stderr.
    let timing = std::env::var_os("KIR_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let src = kiln::diag::SourceFile::new(path.clone(), text);
    let parsed = kiln::parser::parse(src.text());
    let t1 = std::time::Instant::now();
    let stream = match parsed.and_then(|s| kiln::verifier::verify(&s).map(|()| s)) {
        Ok(s) => s,
        Err(ds) => {
            eprint!("{}", src.render_all(&ds));
            std::process::exit(1);
        }
    };
    let t2 = std::time::Instant::now();
    let out = stream.to_string();
    if timing {
        let t3 = std::time::Instant::now();
        eprintln!(
            "parse {:.3}s verify {:.3}s print {:.3}s",
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            (t3 - t2).as_secs_f64()
        );
    }
    let res = match args.get(2).map(String::as_str) {
        Some("-o") => std::fs::write(&args[3], out),
        _ => std::io::stdout().lock().write_all(out.as_bytes()),
    };
    if let Err(e) = res {
        eprintln!("kir-frontend: {e}");
        std::process::exit(1);
    }
}
