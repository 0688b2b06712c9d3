//! The floating-point environment a kernel computes in: whether subnormal
//! numbers are kept (IEEE 754, KIR's default) or flushed to zero, as
//! Quadrants' CPU backend runs (`docs/language.md`, "Subnormal numbers").
//!
//! Owns: [`FpEnv`], which puts the calling thread in a [`Denormals`] mode
//! for a scope and gives it back its own after. Both engines compute in
//! it: the JIT around each call of a task's entry (on whichever pool
//! thread makes it), the interpreter around a whole run. In flush mode the
//! x86-64 SSE control register's FTZ (a subnormal result becomes a zero
//! of its sign) and DAZ (a subnormal input counts as a zero of its sign)
//! bits are set, so the hardware does the flushing for the compiled code
//! and for the interpreter's own arithmetic alike: the two agree bit for
//! bit because the same instructions see the same mode.
//!
//! Must never: leave a thread in another mode than it had past the scope
//! (the guard restores the register on drop, a panic's unwinding included).

use crate::config::Denormals;
use std::cell::Cell;

thread_local! {
    /// The mode this thread computes in, for the interpreter's operations
    /// that are not one hardware instruction ([`flushing`]).
    static FLUSHING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread computes with subnormals flushed. The
/// interpreter asks it where an operation of its own is software (`rem`'s
/// `fmod`, `min` and `max`, `floor` and `ceil`) and so would not see the
/// hardware's mode, whereas the JIT's code for them is instructions that
/// do: there it flushes their subnormal inputs and results itself.
pub fn flushing() -> bool {
    FLUSHING.with(Cell::get)
}

/// MXCSR's flush-to-zero bit (results) and denormals-are-zero bit
/// (inputs).
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

/// The calling thread in a mode for as long as this lives.
#[must_use = "the mode lasts only while the guard lives"]
pub struct FpEnv {
    /// The register as it was, when it was changed.
    #[cfg(target_arch = "x86_64")]
    saved: Option<u32>,
    /// [`flushing`] as it was.
    was_flushing: bool,
}

impl FpEnv {
    /// Puts the calling thread in `mode` (every thread starts in
    /// `Preserve`; the register is written only when it changes).
    pub fn enter(mode: Denormals) -> FpEnv {
        let was_flushing = FLUSHING.with(|f| f.replace(mode == Denormals::Flush));
        #[cfg(target_arch = "x86_64")]
        {
            let saved = read_mxcsr();
            let want = match mode {
                Denormals::Flush => saved | FTZ_DAZ,
                Denormals::Preserve => saved & !FTZ_DAZ,
            };
            if want == saved {
                return FpEnv { saved: None, was_flushing };
            }
            write_mxcsr(want);
            FpEnv { saved: Some(saved), was_flushing }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            FpEnv { was_flushing }
        }
    }
}

impl Drop for FpEnv {
    fn drop(&mut self) {
        FLUSHING.with(|f| f.set(self.was_flushing));
        #[cfg(target_arch = "x86_64")]
        if let Some(saved) = self.saved {
            write_mxcsr(saved);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn read_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit control register to the
    // location given, a live local of that size; it touches nothing else.
    unsafe { core::arch::asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack, preserves_flags)) };
    value
}

#[cfg(target_arch = "x86_64")]
fn write_mxcsr(value: u32) {
    // SAFETY: `ldmxcsr` loads the control register from a live local; the
    // values written are the register's own with only the FTZ and DAZ bits
    // changed (no reserved bit is set, which would fault), and the change
    // is undone by the guard that made it.
    unsafe { core::arch::asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, readonly, preserves_flags)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A product whose exact value is subnormal, computed at run time.
    fn tiny_product(a: f32, b: f32) -> f32 {
        std::hint::black_box(a) * std::hint::black_box(b)
    }

    #[test]
    fn flush_zeroes_subnormal_results_and_inputs_then_gives_the_mode_back() {
        let kept = tiny_product(1e-30, 1e-10);
        assert!(kept.is_subnormal(), "{kept:e}");
        {
            let _env = FpEnv::enter(Denormals::Flush);
            let flushed = tiny_product(1e-30, 1e-10);
            assert_eq!(flushed.to_bits(), 0.0f32.to_bits());
            assert_eq!(tiny_product(-1e-30, 1e-10).to_bits(), (-0.0f32).to_bits(), "a zero of its sign");
            // A subnormal input counts as zero: times a large number, zero.
            assert_eq!(tiny_product(kept, 1e30), 0.0);
            {
                let _inner = FpEnv::enter(Denormals::Preserve);
                assert_eq!(tiny_product(1e-30, 1e-10).to_bits(), kept.to_bits(), "preserve inside flush");
            }
            assert_eq!(tiny_product(1e-30, 1e-10), 0.0, "still flushing");
        }
        assert_eq!(tiny_product(1e-30, 1e-10).to_bits(), kept.to_bits(), "the thread's own mode again");
    }
}
