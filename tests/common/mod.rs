//! Helpers shared by the integration tests (`mod common;`). Each test crate
//! uses some of them, so the others are dead code there.
#![allow(dead_code)]

pub mod kernelgen;

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
