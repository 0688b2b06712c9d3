//! The KIR data model and the facts about it.
//!
//! Owns: the in-memory form every other part of Kiln reads and writes, and
//! every fact about its shape and typing, one concern per file (after
//! Cranelift's `codegen/src/ir/`):
//!
//! - `entities`: the typed indices (`Value(u32)`, `Stmt(u32)`,
//!   `Block(u32)`), the [`Arena`]s they index (`Index`/`IndexMut`; no code
//!   outside `ir` indexes a raw vector) and the side tables keyed by them;
//!   numbering follows creation order, so printing never churns;
//! - `body`: [`Body`], one function's, kernel's or task's arenas (private
//!   to `ir`), its values' data and definitions;
//! - `types`: scalars, types and constants;
//! - `typing`: the typing rules ([`result_type`], [`loop_var_type`]);
//! - `ops`: operators and their facts (`accepts`, `commutes_on`, `libm`);
//! - `stmt`: statements, and the one table of statement kinds from which
//!   operands, child blocks, bound variables, purity and terminator-ness
//!   come;
//! - `module`: items, modules and streams;
//! - `span`: source spans (honest equality, [`Span::is_dummy`]) and the
//!   operand spans a body keeps for diagnostics;
//! - `compare`: equality up to layout ([`Stream::same_as`]);
//! - `builder`: [`Builder`], a cursor that appends statements to a body
//!   (what a front end that makes IR from another program builds with).
//!
//! Must never: print, parse, or check anything. Well-formedness is the
//! verifier's job; this module lets passes build any shape.

mod body;
mod builder;
mod compare;
mod entities;
mod module;
mod ops;
mod span;
mod stmt;
mod types;
mod typing;

pub use body::{Body, ValueData, ValueDef};
pub use builder::{Builder, Ins};
pub use entities::{Arena, Block, EntityRef, EntitySet, SecondaryMap, Stmt, Value};
pub use module::{Field, Func, Item, Kernel, Module, Param, Stream, StreamIndex, TaskItem, MAX_RANK};
pub use ops::{AtomicOp, BinOp, CmpOp, UnOp};
pub use span::{Loc, OperandSpans, Span};
pub use stmt::{
    operands_mut, Bound, ChildBlocks, Class, Defines, FieldRef, PrintPiece, StmtData, StmtKind, TaskKind,
    DEFAULT_BLOCK_DIM, MAX_PRINT_VALUES,
};
pub use types::{Const, Scalar, Type};
pub use typing::{loop_var_type, result_type, TypeEnv};

/// A name (global, without `@`, or local, without `%`). Names of up to 24
/// bytes live inline, so the common case allocates nothing.
pub type Name = compact_str::CompactString;
