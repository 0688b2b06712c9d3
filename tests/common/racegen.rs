//! Kernels racy or race-free by construction, for the race detector's
//! tests (`tests/races.rs`): a module of [`kernelgen`] (race-free by
//! construction, see there) with one more kernel, `@race`, appended. Its
//! top-level loop (a parallel task once offloaded: `range_for`, or
//! `struct_for` over a 1-D or 2-D field) follows one of these patterns,
//! picked by the seed, with the access that matters made directly or
//! through a helper function `@rf`:
//!
//! racy (two iterations touch one element, one writes, not both atomic):
//! - reads the element another iteration writes (`load @rx[i+d]`, `store @rx[i]`);
//! - writes the element another iteration reads (`load @rx[i]`, `store @rx[i+d]`);
//! - every iteration writes one element (`store @rx[c]`);
//! - every iteration updates one element atomically and reads it plainly;
//! - every iteration updates one element atomically and writes it plainly;
//!
//! race-free:
//! - each iteration reads and writes its own element only;
//! - a stencil: reads neighbours of one field, writes its own element of another;
//! - a histogram of integer atomics (`atomic add @rh[i % b]`);
//! - every iteration reads one element nobody writes.
//!
//! `d` is from 1 to the extent - 1 (indices wrap with `rem`), the extent is
//! at least 2, and a 2-D pattern shifts along the first dimension, so the
//! racing iterations differ whether the nest becomes a `struct_for` or a
//! `range_for` with a serial inner loop. Integer atomics only, so a
//! race-free kernel's digest does not depend on the order.

#![allow(dead_code)]

use super::kernelgen::{self, GenConfig, Rng};
use kiln::ir::Scalar;
use std::fmt::Write;

/// The patterns of the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pat {
    ReadOther,
    WriteOther,
    WriteOne,
    AtomicRead,
    AtomicWrite,
    Own,
    Stencil,
    Histogram,
    ReadOne,
}

pub const RACY: [Pat; 5] = [Pat::ReadOther, Pat::WriteOther, Pat::WriteOne, Pat::AtomicRead, Pat::AtomicWrite];
pub const RACE_FREE: [Pat; 4] = [Pat::Own, Pat::Stencil, Pat::Histogram, Pat::ReadOne];

/// The module of `seed`, with a racy `@race` kernel or a race-free one.
/// Also returns the pattern (for failure messages).
pub fn generate(seed: u64, racy: bool) -> (String, Pat) {
    let mut text = kernelgen::generate(seed, &GenConfig::default());
    let mut rng = Rng::new(seed ^ 0x7261_6365_7321);
    let pattern = if racy { *rng.pick(&RACY) } else { *rng.pick(&RACE_FREE) };
    let p = Pattern::new(&mut rng, pattern);
    text.push('\n');
    p.write(&mut text);
    (text, pattern)
}

struct Pattern {
    name: Pat,
    ty: Scalar,
    /// Histogram and atomic counters: an integer type.
    ity: Scalar,
    n: u64,
    /// The second extent of a 2-D pattern.
    m: Option<u64>,
    d: u64,
    /// The constant element's first index.
    c: u64,
    helper: bool,
    /// A serial region before the loop (the task numbers move).
    prelude: bool,
    /// The access wrapped in an `if` whose condition always holds.
    in_if: bool,
}

impl Pattern {
    fn new(rng: &mut Rng, name: Pat) -> Pattern {
        let n = 2 + rng.below(7) as u64;
        let m = if rng.chance(30) { Some(1 + rng.below(3) as u64) } else { None };
        Pattern {
            name,
            ty: *rng.pick(&[Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64]),
            ity: *rng.pick(&[Scalar::I32, Scalar::I64]),
            n,
            m,
            d: 1 + rng.below(n as usize - 1) as u64,
            c: rng.below(n as usize) as u64,
            helper: rng.chance(50),
            prelude: rng.chance(50),
            in_if: rng.chance(30),
        }
    }

    fn shape(&self) -> String {
        match self.m {
            Some(m) => format!("[{}, {m}]", self.n),
            None => format!("[{}]", self.n),
        }
    }

    /// An index list with `first` as the first index (`%j` or `0` after it).
    fn idx(&self, first: &str, second: &str) -> String {
        match self.m {
            Some(_) => format!("{first}, {second}"),
            None => first.to_string(),
        }
    }

    /// Lines defining `%e`, `(i + d) rem n`.
    fn other_index(&self, out: &mut String, ind: &str, i: &str) {
        let _ = writeln!(out, "{ind}%on = const {} : i32", self.n);
        let _ = writeln!(out, "{ind}%od = const {} : i32", self.d);
        let _ = writeln!(out, "{ind}%os = add {i}, %od");
        let _ = writeln!(out, "{ind}%e = rem %os, %on");
    }

    /// The statements of the access that makes (or would make) the race,
    /// in a function body or the loop body: `i`, `j` are the iteration's
    /// indices; the access's result, if any, is `%r` of type `ty` (or
    /// `ity`).
    fn access(&self, out: &mut String, ind: &str, i: &str, j: &str) {
        let (ty, ity) = (self.ty, self.ity);
        let own = self.idx(i, j);
        let e = self.idx("%e", j);
        let one = self.idx("%oc", "%oz");
        let c = format!("{}", self.c);
        match self.name {
            Pat::ReadOther => {
                self.other_index(out, ind, i);
                let _ = writeln!(out, "{ind}%r = load @rx[{e}]");
            }
            Pat::WriteOther => {
                self.other_index(out, ind, i);
                let _ = writeln!(out, "{ind}%r = load @rx[{own}]");
                let _ = writeln!(out, "{ind}store @rx[{e}], %r");
            }
            Pat::WriteOne => {
                let _ = writeln!(out, "{ind}%oc = const {c} : i32\n{ind}%oz = const 0 : i32");
                let _ = writeln!(out, "{ind}%r = const 1 : {ty}");
                let _ = writeln!(out, "{ind}store @rx[{one}], %r");
            }
            Pat::AtomicRead | Pat::AtomicWrite | Pat::Histogram => {
                if self.name == Pat::Histogram {
                    let _ = writeln!(out, "{ind}%ob = const {} : i32", self.n.div_ceil(2));
                    let _ = writeln!(out, "{ind}%oc = rem {i}, %ob");
                } else {
                    let _ = writeln!(out, "{ind}%oc = const {c} : i32");
                }
                let _ = writeln!(out, "{ind}%one = const 1 : {ity}");
                let _ = writeln!(out, "{ind}%r = atomic add @rh[%oc], %one");
            }
            Pat::Own => {
                let _ = writeln!(out, "{ind}%v = load @rx[{own}]");
                let _ = writeln!(out, "{ind}%one = const 1 : {ty}");
                let _ = writeln!(out, "{ind}%r = add %v, %one");
                let _ = writeln!(out, "{ind}store @rx[{own}], %r");
            }
            Pat::Stencil => {
                self.other_index(out, ind, i);
                let _ = writeln!(out, "{ind}%sa = load @rx[{e}]");
                let _ = writeln!(out, "{ind}%sb = load @rx[{own}]");
                let _ = writeln!(out, "{ind}%r = add %sa, %sb");
            }
            Pat::ReadOne => {
                let _ = writeln!(out, "{ind}%oc = const {c} : i32\n{ind}%oz = const 0 : i32");
                let _ = writeln!(out, "{ind}%r = load @rx[{one}]");
            }
        }
    }

    /// The type of `%r`.
    fn result_ty(&self) -> Scalar {
        match self.name {
            Pat::AtomicRead | Pat::AtomicWrite | Pat::Histogram => self.ity,
            _ => self.ty,
        }
    }

    /// What the loop body does with `res` (the access's result) after the
    /// access: the second half of a racy pair, or a write of its own
    /// element of `@ry`.
    fn after(&self, out: &mut String, ind: &str, own: &str, res: &str) {
        let line = match self.name {
            Pat::ReadOther => format!("store @rx[{own}], {res}"),
            Pat::AtomicRead => "%back = load @rh[%kc]".to_string(),
            Pat::AtomicWrite => format!("store @rh[%kc], {res}"),
            Pat::Stencil | Pat::ReadOne => format!("store @ry[{own}], {res}"),
            _ => return,
        };
        let _ = writeln!(out, "{ind}{line}");
    }

    fn write(&self, out: &mut String) {
        let (ty, ity, rt) = (self.ty, self.ity, self.result_ty());
        let _ = writeln!(out, "field @rx : {ty}{}", self.shape());
        let _ = writeln!(out, "field @ry : {ty}{}", self.shape());
        let _ = writeln!(out, "field @rh : {ity}[{}]", self.n);
        let _ = writeln!(out, "field @rs : i32");
        if self.helper {
            let params = if self.m.is_some() { "%a: i32, %b2: i32" } else { "%a: i32" };
            let _ = writeln!(out, "\nfunc @rf({params}) -> {rt} {{");
            self.access(out, "  ", "%a", "%b2");
            let _ = writeln!(out, "  ret %r\n}}");
        }
        let _ = writeln!(out, "\nkernel @race() {{");
        if self.prelude {
            let _ = writeln!(out, "  %s = const 1 : i32\n  store @rs[], %s");
        }
        let _ = writeln!(out, "  for %i in 0 .. {} {{", self.n);
        let mut ind = "    ".to_string();
        if let Some(m) = self.m {
            let _ = writeln!(out, "{ind}for %j in 0 .. {m} {{");
            ind.push_str("  ");
        }
        let _ = writeln!(out, "{ind}%kc = const {} : i32", self.c);
        let own = self.idx("%i", "%j");
        let mut inner = ind.clone();
        if self.in_if {
            let _ = writeln!(out, "{ind}%t = const true : i1\n{ind}%res.slot = alloca {rt}\n{ind}if %t {{");
            inner.push_str("  ");
        }
        if self.helper {
            let args = if self.m.is_some() { "%i, %j" } else { "%i" };
            let _ = writeln!(out, "{inner}%r = call @rf({args})");
        } else {
            self.access(out, &inner, "%i", "%j");
        }
        let res = if self.in_if {
            let _ = writeln!(out, "{inner}store %res.slot, %r\n{ind}}}\n{ind}%res = load %res.slot");
            "%res"
        } else {
            "%r"
        };
        self.after(out, &ind, &own, res);
        if self.m.is_some() {
            let _ = writeln!(out, "    }}");
        }
        let _ = writeln!(out, "  }}\n}}");
    }
}
