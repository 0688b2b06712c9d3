//! Fast-math math within its documented ulps (`make accuracy` measures
//! every `f32` input; this is a sample of 65536 spread over all bit
//! patterns, and the special values), through the JIT's vectorised code.

mod common;

use common::accuracy::{Harness, FUNCS};

/// Every 65537th bit pattern (all signs, exponents and NaN payloads),
/// then the values where libm's special cases live.
fn sample() -> Vec<u32> {
    let mut xs: Vec<u32> = (0..65536u32).map(|k| k.wrapping_mul(65537)).collect();
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
    let xs = sample();
    for f in FUNCS {
        let mut h = Harness::new(f, xs.len(), 2);
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

/// The measure itself: an error of one ulp reads as one, a NaN where a
/// number is due is a mismatch (so the test above can fail).
#[test]
fn ulps_are_measured_in_f32_steps() {
    use common::accuracy::ulps;
    assert_eq!(ulps(1.0, 1.0), Some(0.0));
    assert_eq!(ulps(f32::from_bits(1.0f32.to_bits() + 1), 1.0), Some(1.0));
    assert_eq!(ulps(3.0, 2.0), Some(2f64.powi(22)));
    assert_eq!(ulps(f32::NAN, 1.0), None);
    assert_eq!(ulps(f32::INFINITY, f64::INFINITY), Some(0.0));
    assert_eq!(ulps(f32::MAX, 1e300), None);
    assert_eq!(ulps(f32::NAN, f64::NAN), Some(0.0));
}
