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
    let src = kiln::diag::SourceFile::new(path.clone(), text);
    let stream = match kiln::parser::parse(src.text()).and_then(|s| kiln::verifier::verify(&s).map(|()| s)) {
        Ok(s) => s,
        Err(ds) => {
            eprint!("{}", src.render_all(&ds));
            std::process::exit(1);
        }
    };
    let out = stream.to_string();
    let res = match args.get(2).map(String::as_str) {
        Some("-o") => std::fs::write(&args[3], out),
        _ => std::io::stdout().lock().write_all(out.as_bytes()),
    };
    if let Err(e) = res {
        eprintln!("kir-frontend: {e}");
        std::process::exit(1);
    }
}
