//! Compiled math within its documented ulps, through the JIT's vectorised
//! code (`make accuracy` measures every `f32` input; these are samples
//! spread over all bit patterns, and the special values): fast-math's
//! libmvec functions, and default mode's own functions, which must also
//! round correctly and give the interpreter's bits, inline (`-O2`) and as
//! the runtime's calls (`-O0`).

#[path = "support/accuracy.rs"]
#[allow(dead_code)] // `exhaustive` is for crates/kiln-jit/examples/accuracy.rs
mod accuracy;

use accuracy::{default_funcs, Harness, Mode, FUNCS};
use kiln::config::OptLevel;

/// `n` bit patterns spread over all signs, exponents and NaN payloads
/// (every `step`th, `step` odd so the low bits vary too), then the values
/// where libm's special cases live.
fn sample(n: u32, step: u32) -> Vec<u32> {
    let mut xs: Vec<u32> = (0..n).map(|k| k.wrapping_mul(step)).collect();
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::MAX,
        -f32::MAX,
        88.72284,
        -103.97208,
        std::f32::consts::PI,
        std::f32::consts::FRAC_PI_2,
    ];
    xs.extend(specials.iter().map(|x| x.to_bits()));
    xs
}

#[test]
fn fast_math_functions_are_within_their_ulps() {
    let xs = sample(65536, 65537);
    for f in FUNCS {
        let mut h = Harness::new(f, xs.len(), 2, Mode::Fast);
        let r = h.measure(f, &xs, 0);
        assert_eq!(r.inputs, xs.len() as u64);
        assert!(
            r.max_ulps <= f.max_ulps,
            "{}: {} ulps at x = {:#010x} ({:e}), y = {:e}; documented: {}",
            f.op,
            r.max_ulps,
            r.worst.0,
            f32::from_bits(r.worst.0),
            r.worst.1,
            f.max_ulps
        );
        assert_eq!(r.special_mismatches, 0, "{}: first at {:?}", f.op, r.first_special);
    }
}

/// Default mode's own `sin`, `cos`, `tan`, `exp`, `log` and `tanh`
/// (`kiln::math`), on
/// 2^20 inputs through the vectorised JIT code: each result is the `f64`
/// reference rounded to `f32`, and has the interpreter's bits.
#[test]
fn default_mode_functions_round_correctly_and_match_the_interpreter() {
    let xs = sample(1 << 20, 4097);
    let funcs = default_funcs();
    assert_eq!(funcs.len(), 6, "sin, cos, tan, exp, log and tanh");
    // At -O0 the functions are the runtime's calls, not inline code.
    for (f, opt) in funcs.iter().flat_map(|f| [(f, OptLevel::O2), (f, OptLevel::O0)]) {
        let mut h = Harness::at(f, xs.len(), 2, Mode::Default, opt);
        let r = h.measure(f, &xs, 0);
        assert_eq!(r.inputs, xs.len() as u64);
        assert_eq!(r.engine_mismatches, 0, "{} {opt:?}: first at x = {:#010x?}", f.op, r.first_engine_mismatch);
        assert_eq!(r.special_mismatches, 0, "{}: first at {:?}", f.op, r.first_special);
        assert_eq!(r.misrounded, 0, "{}: max {} ulps at x = {:#010x}", f.op, r.max_ulps, r.worst.0);
        assert!(r.max_ulps <= f.max_ulps, "{}: {} ulps", f.op, r.max_ulps);
    }
}

/// The measure itself: an error of one ulp reads as one, a NaN where a
/// number is due is a mismatch (so the test above can fail).
#[test]
fn ulps_are_measured_in_f32_steps() {
    use accuracy::ulps;
    assert_eq!(ulps(1.0, 1.0), Some(0.0));
    assert_eq!(ulps(f32::from_bits(1.0f32.to_bits() + 1), 1.0), Some(1.0));
    assert_eq!(ulps(3.0, 2.0), Some(2f64.powi(22)));
    assert_eq!(ulps(f32::NAN, 1.0), None);
    assert_eq!(ulps(f32::INFINITY, f64::INFINITY), Some(0.0));
    assert_eq!(ulps(f32::MAX, 1e300), None);
    assert_eq!(ulps(f32::NAN, f64::NAN), Some(0.0));
}
