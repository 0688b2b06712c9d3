//! cargo-fuzz target: see `checks::import` (fuzz/checks.rs), which
//! `tests/fuzz_corpus.rs` also runs over the kept corpus.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::import(data));
