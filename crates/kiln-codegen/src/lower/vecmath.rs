//! Vector math in fast-math mode: the libm calls of a loop vectorise to
//! glibc's vector math library, libmvec (`_ZGVdN8v_sinf` and the rest),
//! as clang's `-fveclib=libmvec` makes them.
//!
//! Each libm call is told which vector variants exist, through the call
//! attribute LLVM's vectoriser reads (`vector-function-abi-variant`, the
//! vector function ABI's mangled names), for the vector ISAs the target's
//! features allow: `b` (SSE, 128 bits) always on x86-64, `c` (AVX) or `d`
//! (AVX2, 256 bits), `e` (AVX-512F). The call is also marked as touching
//! no memory (fast-math ignores `errno`, as `-ffast-math` implies
//! `-fno-math-errno`), without which no loop calling it vectorises. The
//! vectoriser picks the width, told to prefer the widest the target
//! allows ([`preferred_width`]: 512 bits with AVX-512F, as `gcc -O3
//! -march=native -ffast-math` vectorises on such a host, where LLVM's own
//! tuning for many of those CPUs stops at 256); iterations left over call
//! the scalar function, as in default mode. The JIT loads libmvec into the
//! process when an object names one of its functions (`jit::Jit`).
//!
//! Why libmvec and not Kiln's own implementations written as IR: it covers
//! every libm operator of KIR (glibc 2.35 and later) at every width at
//! once, its accuracy is documented by glibc and measured here over every
//! `f32` (`make accuracy`, `docs/performance.md`), and it is what the C
//! baseline of the benchmark calls. The price: in this mode the JIT and the
//! interpreter agree only within those ulps, which `--fast-math` already
//! says.
//!
//! Owns: which vector variants a libm call is offered, by target, their
//! declarations, and the attributes that let the vectoriser use them.
//!
//! Must never: offer a variant the target's features do not allow (it
//! would be called on a CPU without its instructions), or change a call in
//! default mode.

use super::{bug, FnCx, Lowering, Result};
use inkwell::attributes::AttributeLoc;
use inkwell::module::Linkage;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum};
use inkwell::AddressSpace;
use kiln::ir::Scalar;

/// The call attribute LLVM's vectoriser reads the variants from.
const VARIANTS_ATTR: &str = "vector-function-abi-variant";

/// The x86-64 vector ISAs of the vector function ABI: the mangling letter,
/// the register width, and the target feature that allows it (`None`: the
/// x86-64 baseline). `c` only when `d` is not allowed.
const X86_ISAS: &[(char, u32, Option<&str>)] =
    &[('b', 128, None), ('c', 256, Some("+avx")), ('d', 256, Some("+avx2")), ('e', 512, Some("+avx512f"))];

/// The vector ISAs `triple` with `features` allows, as (letter, bits).
pub(super) fn vector_isas(triple: &str, features: &str) -> Vec<(char, u32)> {
    if !triple.starts_with("x86_64") {
        return Vec::new();
    }
    let has = |f: &str| features.split(',').any(|x| x == f);
    let mut isas: Vec<(char, u32)> =
        X86_ISAS.iter().filter(|(_, _, f)| f.is_none_or(has)).map(|&(c, bits, _)| (c, bits)).collect();
    if isas.iter().any(|&(c, _)| c == 'd') {
        isas.retain(|&(c, _)| c != 'c');
    }
    isas
}

/// The vector width, in bits, fast math asks the vectoriser to prefer
/// (LLVM's `prefer-vector-width`): the widest of `isas`, when it is wider
/// than the SSE baseline. Measured on loops of four shapes
/// (`docs/performance.md`, "Fast-math vector width"): on an AVX-512 host,
/// LLVM's default of 256 bits for the CPU left Kiln 1.14-2.04x slower than
/// gcc, which picks 512; with 512, 0.93-1.01x.
pub(super) fn preferred_width(isas: &[(char, u32)]) -> Option<u32> {
    isas.iter().map(|&(_, bits)| bits).max().filter(|&bits| bits > 128)
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// Calls LLVM's intrinsic for libm function `name` (`llvm.sin.f32`),
    /// offered the libmvec variants of the C function (`_ZGVdN8v_sinf`)
    /// for every ISA the target allows; the vectoriser picks one, and the
    /// calls left scalar become the C function's.
    ///
    /// An intrinsic, not a call of `sinf`: the vectoriser uses a variant
    /// only for a call known not to touch memory, and LLVM rewrites such a
    /// call of some functions (`logf`) into the intrinsic, which would drop
    /// the variants.
    pub(super) fn call_vector_math(
        &self,
        l: &Lowering<'a, 'ctx>,
        name: &str,
        ty: Scalar,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(l, &format!("llvm.{name}"), l.reg_ty(ty))?;
        let scalar = f.get_name().to_str().map_err(|_| bug("intrinsic name"))?.to_string();
        let c_name = if ty == Scalar::F32 { format!("{name}f") } else { name.to_string() };
        let params = "v".repeat(args.len());
        let mut names = Vec::with_capacity(l.vector_isas.len());
        for &(isa, bits) in &l.vector_isas {
            let lanes = bits / ty.bits();
            let vector = format!("_ZGV{isa}N{lanes}{params}_{c_name}");
            l.declare_vector(&vector, ty, lanes, args.len())?;
            names.push(format!("_ZGV_LLVM_N{lanes}{params}_{scalar}({vector})"));
        }
        let variants = self.cx.create_string_attribute(VARIANTS_ATTR, &names.join(","));
        self.call_math(l, f, args, |c| c.add_attribute(AttributeLoc::Function, variants))
    }
}

impl<'ctx> Lowering<'_, 'ctx> {
    /// Declares vector function `name` (`lanes` × `ty` per argument and
    /// result) and keeps it through the optimiser until the vectoriser
    /// asks for it (`llvm.compiler.used`, as LLVM's own mapping pass does).
    fn declare_vector(&self, name: &str, ty: Scalar, lanes: u32, arity: usize) -> Result<()> {
        if self.module.get_function(name).is_some() {
            return Ok(());
        }
        let vty = self.reg_ty(ty).into_float_type().vec_type(lanes);
        let params: Vec<BasicMetadataTypeEnum> = (0..arity).map(|_| vty.into()).collect();
        let f = self.module.add_function(name, vty.fn_type(&params, false), Some(Linkage::External));
        f.add_attribute(AttributeLoc::Function, self.enum_attr("nounwind"));
        let mut used: Vec<_> = match self.module.get_global("llvm.compiler.used") {
            Some(g) => {
                let old = g.get_initializer().ok_or_else(|| bug("llvm.compiler.used without elements"))?;
                let arr = old.into_array_value();
                let n = arr.get_type().len();
                let elems = (0..n)
                    // SAFETY: `k` < the array's length, and each operand of
                    // `llvm.compiler.used` is a pointer constant.
                    .map(|k| unsafe {
                        use inkwell::values::AsValueRef;
                        inkwell::values::PointerValue::new(inkwell::llvm_sys::core::LLVMGetOperand(
                            arr.as_value_ref(),
                            k,
                        ))
                    })
                    .collect();
                // SAFETY: its operands were copied out above; nothing else
                // refers to the global, which is replaced below.
                unsafe { g.delete() };
                elems
            }
            None => Vec::new(),
        };
        used.push(f.as_global_value().as_pointer_value());
        let ptr = self.cx.ptr_type(AddressSpace::default());
        let init = ptr.const_array(&used);
        let g = self.module.add_global(init.get_type(), None, "llvm.compiler.used");
        g.set_linkage(Linkage::Appending);
        g.set_section(Some("llvm.metadata"));
        g.set_initializer(&init.as_basic_value_enum());
        Ok(())
    }
}
