//! Kiln: a toolchain for KIR, a textual kernel IR, built around a
//! cross-process per-task artifact cache.
//!
//! This crate is the LLVM-free core: everything up to the key, the cache
//! store, the remote tier, the interpreter, the importer and the reducer,
//! and the tools over them. The LLVM boundary is a crate boundary: the code
//! generator (`crates/kiln-codegen`) and the JIT (`crates/kiln-jit`) build
//! on this crate through `crates/kiln-llvm`, and nothing here can name
//! them. The binaries in `tools/` are `main`s over the libraries, though
//! `kiln-run`, `kiln-compile` and `kiln-cache-inspect` still hold their
//! commands' sequencing. See `docs/ARCHITECTURE.md` for the code map and
//! invariants.
//!
//! `unsafe` is forbidden in every LLVM-free module but three, whose few
//! blocks say why they are sound (`// SAFETY:`, which clippy's
//! `undocumented_unsafe_blocks`, denied in `Cargo.toml`, requires of every
//! block): `exec` (a fallible zeroed allocation), `fpenv` (the MXCSR
//! register) and `reduce` (killing a test script's process group).

#[forbid(unsafe_code)]
pub mod diag;
#[forbid(unsafe_code)]
pub mod frontend;
#[forbid(unsafe_code)]
pub mod import;
#[forbid(unsafe_code)]
pub mod ir;
#[forbid(unsafe_code)]
pub mod lexer;
#[forbid(unsafe_code)]
pub mod parser;
#[forbid(unsafe_code)]
pub mod printer;
#[forbid(unsafe_code)]
pub mod verifier;

#[forbid(unsafe_code)]
pub mod interp;
#[forbid(unsafe_code)]
pub mod key;
#[forbid(unsafe_code)]
pub mod math;
#[forbid(unsafe_code)]
pub mod passes;
#[forbid(unsafe_code)]
pub mod plan;
#[forbid(unsafe_code)]
pub mod races;
#[forbid(unsafe_code)]
pub mod random;
pub mod reduce;
#[forbid(unsafe_code)]
pub mod semantics;

#[forbid(unsafe_code)]
pub mod cache;
#[forbid(unsafe_code)]
pub mod flight;
#[forbid(unsafe_code)]
pub mod remote;

#[forbid(unsafe_code)]
pub mod build_id;
#[forbid(unsafe_code)]
pub mod config;
pub mod exec;
pub mod fpenv;
#[forbid(unsafe_code)]
pub mod interrupt;
#[forbid(unsafe_code)]
pub mod npy;
#[forbid(unsafe_code)]
pub mod settings;
#[forbid(unsafe_code)]
pub mod stats;

#[forbid(unsafe_code)]
pub mod cli;
#[forbid(unsafe_code)]
pub mod compile_protocol;
#[forbid(unsafe_code)]
pub mod manual;
#[forbid(unsafe_code)]
pub mod tool;
#[forbid(unsafe_code)]
pub mod trace;
#[forbid(unsafe_code)]
pub mod version;

/// Kiln's version, part of every cache key and record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
