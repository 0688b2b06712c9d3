//! Kiln: a toolchain for KIR, a textual kernel IR, built around a
//! cross-process per-task artifact cache.
//!
//! The library holds everything; the binaries in `tools/` are thin `main`s
//! over it. See `docs/ARCHITECTURE.md` for the code map and invariants.
//!
//! The LLVM boundary is a wall: everything up to the key and the cache store
//! (`ir` .. `cache`) builds and tests without LLVM; only `codegen` and `jit`
//! touch inkwell, behind the `llvm` feature.

pub mod diag;
pub mod frontend;
pub mod import;
pub mod ir;
pub mod lexer;
pub mod parser;
pub mod printer;
pub mod verifier;

pub mod interp;
pub mod key;
pub mod math;
pub mod passes;
pub mod races;
pub mod reduce;

pub mod cache;
pub mod flight;
pub mod remote;

pub mod build_id;
pub mod config;
pub mod exec;
pub mod fpenv;
pub mod interrupt;
pub mod npy;
pub mod settings;
pub mod stats;

pub mod cli;
pub mod manual;
pub mod tool;
pub mod trace;
pub mod version;

#[cfg(feature = "llvm")]
pub mod cached;
#[cfg(feature = "llvm")]
pub mod codegen;
#[cfg(feature = "llvm")]
pub mod fill;
#[cfg(feature = "llvm")]
pub mod jit;
#[cfg(feature = "llvm")]
pub mod target;

/// Kiln's version, part of every cache key and record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
