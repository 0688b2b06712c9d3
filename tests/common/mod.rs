//! Helpers shared by the integration tests (`mod common;`). Each test crate
//! uses some of them, so the others are dead code there.
#![allow(dead_code)]

pub mod kernelgen;
pub mod racegen;
pub mod redis_server;

use kiln::exec::{Engine, Fields};
use kiln::ir::Stream;
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Every `.kir` file under `testdata/` and `lit-tests/`, sorted by path,
/// leaving out lit's scratch directories (copies and outputs, not tests).
pub fn kir_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["testdata", "lit-tests"] {
        for entry in WalkDir::new(root.join(dir)).sort_by_file_name() {
            let entry = entry.expect("walk the test directories");
            let p = entry.path();
            if p.components().any(|c| c.as_os_str() == "Output") {
                continue;
            }
            if p.extension().is_some_and(|e| e == "kir") {
                files.push(p.to_path_buf());
            }
        }
    }
    files
}

/// Runs every kernel of the stream in order, with its parameters' default
/// values, on zeroed fields, and returns the fields.
pub fn run_all(engine: &mut dyn Engine, stream: &Stream) -> Result<Fields, String> {
    let mut fields = Fields::zeroed(stream);
    for m in &stream.modules {
        for k in m.kernels() {
            let args: Vec<_> = k
                .params
                .iter()
                .map(|p| p.default.ok_or_else(|| format!("kernel @{}: a parameter has no default", k.name)))
                .collect::<Result<_, _>>()?;
            engine.run_kernel(stream, &k.name, &args, &mut fields).map_err(|e| e.message)?;
        }
    }
    Ok(fields)
}
