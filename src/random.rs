//! The `random` statement's numbers: Philox-4x32-10 (Salmon et al. 2011,
//! "Parallel random numbers: as easy as 1, 2, 3") over a counter made of
//! where the draw happens, and the mapping of its output to each type.
//!
//! Owns: the generator ([`philox4x32_10`], its multipliers and key
//! schedule), the layout of the counter and key ([`counter`], [`key`]),
//! and how one draw's four words become a value of each type
//! ([`value_bits`]). The interpreter calls [`draw`]; the JIT's code
//! (`codegen::lower`, `random_stmt`) emits the same arithmetic inline with
//! the constants and layout stated here, and `tests/jit_semantics.rs`
//! checks the two agree bit for bit (`docs/language.md`, "random").
//!
//! Must never: depend on anything but its inputs (seed, task, iteration,
//! site, draw): no state, no thread, no time.

use crate::ir::Scalar;

/// Philox's round multipliers.
pub const M0: u32 = 0xD251_1F53;
pub const M1: u32 = 0xCD9E_8D57;
/// Philox's key increments (Weyl sequence).
pub const W0: u32 = 0x9E37_79B9;
pub const W1: u32 = 0xBB67_AE85;
/// The number of rounds.
pub const ROUNDS: u32 = 10;

/// Philox-4x32 with [`ROUNDS`] rounds: the four output words of counter
/// `ctr` under key `key`.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for r in 0..ROUNDS {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// Where a draw happens: what its counter is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The task's position among its kernel's launches (0 for the first).
    pub task: u32,
    /// The linear iteration: a `range_for`'s variable, a `struct_for`'s
    /// row-major index, 0 in a serial task.
    pub iteration: i64,
    /// The statement's `site` number.
    pub site: u32,
    /// How many `random` statements ran before this one in the same
    /// iteration (or serial task).
    pub draw: u32,
}

/// The largest `site` number (sites share a counter word with the task).
pub const MAX_SITE: u32 = 0xFFFF;

/// The counter of a draw: the iteration's low and high words, the draw
/// number, and the site in the low 16 bits of the last word with the
/// task's number (modulo 2^16) above it.
pub fn counter(d: Draw) -> [u32; 4] {
    let it = d.iteration as u64;
    [it as u32, (it >> 32) as u32, d.draw, (d.site & MAX_SITE) | (d.task << 16)]
}

/// The key: the 64-bit seed, low word first.
pub fn key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// The bits of a value of type `ty` made from one draw's words `w` (as
/// Quadrants makes them from its generator's: a 64-bit value is the first
/// word above the second): an integer of 32 bits or fewer is the low bits
/// of `w[0]`, one of 64 bits `w[0] << 32 | w[1]`; an `f16` is the `f32`
/// rounded to `f16` (as Quadrants makes it: so 1.0 at the top), an `f32`
/// `(w[0] >> 8) * 2^-24` and an `f64` `(w64 >> 11) * 2^-53`, uniform in
/// [0, 1) with 24 and 53 bits. Register form (`semantics`): a float's
/// bits, an integer's value extended by its signedness. `None` for `i1`.
pub fn value_bits(ty: Scalar, w: [u32; 4]) -> Option<u64> {
    let w64 = (u64::from(w[0]) << 32) | u64::from(w[1]);
    Some(match ty {
        Scalar::I1 => return None,
        Scalar::F16 => half::f16::from_f32(f32::from_bits(value_bits(Scalar::F32, w)? as u32)).to_bits().into(),
        Scalar::F32 => ((w[0] >> 8) as f32 * (1.0 / 16_777_216.0f32)).to_bits().into(),
        Scalar::F64 => ((w64 >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0f64)).to_bits(),
        t if t.bits() == 64 => w64,
        t => crate::semantics::norm_int(t, i64::from(w[0])),
    })
}

/// The value (register form) of a `random` of type `ty` drawn at `d`
/// under `seed`; `None` for `i1`, which the verifier refuses.
pub fn draw(ty: Scalar, seed: u64, d: Draw) -> Option<u64> {
    value_bits(ty, philox4x32_10(counter(d), key(seed)))
}

/// Whether `random` can make values of `ty` (every scalar type but `i1`).
pub fn supports(ty: Scalar) -> bool {
    ty != Scalar::I1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known-answer vectors for Philox-4x32-10
    /// (`kat_vectors`: counter, key, output).
    #[test]
    fn known_answer_vectors() {
        let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            ([0; 4], [0; 2], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
            ([u32::MAX; 4], [u32::MAX; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (ctr, key, want) in kat {
            assert_eq!(philox4x32_10(ctr, key), want, "counter {ctr:08x?} key {key:08x?}");
        }
    }

    #[test]
    fn the_counter_holds_every_part() {
        let d = Draw { task: 3, iteration: -2, site: 5, draw: 7 };
        assert_eq!(counter(d), [0xffff_fffe, 0xffff_ffff, 7, 0x0003_0005]);
        assert_eq!(key(0x1234_5678_9abc_def0), [0x9abc_def0, 0x1234_5678]);
    }

    #[test]
    fn values_take_the_bits_quadrants_takes() {
        let w = [0xffff_ffff, 0x8000_0001, 0, 0];
        let f = f32::from_bits(value_bits(Scalar::F32, w).unwrap() as u32);
        assert_eq!(f, 1.0 - 2f32.powi(-24));
        let d = f64::from_bits(value_bits(Scalar::F64, [u32::MAX; 4]).unwrap());
        assert_eq!(d, 1.0 - 2f64.powi(-53));
        // The first word is the high half: its top bits make the value.
        let half = f64::from_bits(value_bits(Scalar::F64, [0x8000_0000, 0, 0, 0]).unwrap());
        assert_eq!(half, 0.5);
        assert_eq!(f32::from_bits(value_bits(Scalar::F32, [0xff, 1, 2, 3]).unwrap() as u32), 0.0);
        assert_eq!(value_bits(Scalar::I32, w), Some(u64::MAX));
        assert_eq!(value_bits(Scalar::U32, w), Some(0xffff_ffff));
        assert_eq!(value_bits(Scalar::U8, w), Some(0xff));
        assert_eq!(value_bits(Scalar::I64, w), Some(0xffff_ffff_8000_0001));
        assert_eq!(value_bits(Scalar::I1, w), None);
    }

    /// Many draws of `f64` have the mean (1/2) and variance (1/12) of the
    /// uniform distribution within 6 standard errors.
    #[test]
    fn draws_are_uniform_in_mean_and_variance() {
        let n = 200_000;
        let xs: Vec<f64> = (0..n)
            .map(|i| {
                let d = Draw { task: 1, iteration: i / 4, site: 0, draw: (i % 4) as u32 };
                f64::from_bits(draw(Scalar::F64, 42, d).unwrap())
            })
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let se_mean = (1.0f64 / 12.0 / n as f64).sqrt();
        // The variance of (x - 1/2)^2 for a uniform x is 1/180.
        let se_var = (1.0f64 / 180.0 / n as f64).sqrt();
        assert!((mean - 0.5).abs() < 6.0 * se_mean, "mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < 6.0 * se_var, "variance {var}");
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
    }
}
