//! Item-level rules: fields, parameters and their defaults, constants.
//!
//! Owns: a field's rank and size limits, parameter lists, default values,
//! and the canonical-bits rule of constants.
//!
//! Must never: look into bodies.

use super::*;

pub(super) fn check_field(f: &Field, diags: &mut Vec<Diagnostic>) {
    let name = &f.name;
    if f.shape.len() > MAX_RANK {
        diags.push(Diagnostic::error(
            format!("field @{name} has rank {}, more than the maximum of {MAX_RANK}", f.shape.len()),
            f.span,
        ));
        return;
    }
    let bytes = f
        .shape
        .iter()
        .try_fold(f.elem.size_bytes() as u64, |acc, &e| acc.checked_mul(e))
        .filter(|&b| b <= MAX_FIELD_BYTES);
    if bytes.is_none() {
        diags.push(Diagnostic::error(
            format!("field @{name} : {} is larger than the limit of 2^40 bytes", field_type(f)),
            f.span,
        ));
    }
}

/// The declared parameters against the body's parameter values, and the
/// default values (kernel parameters only).
pub(super) fn check_params(
    body: &Body,
    params: &[Param],
    defaults_allowed: bool,
    owner: &str,
    owner_span: Span,
    diags: &mut Vec<Diagnostic>,
) {
    if params.len() != body.params.len() {
        diags.push(Diagnostic::error(
            format!(
                "malformed IR: {owner} declares {} but its body has {}",
                plural(params.len(), "parameter", "parameters"),
                plural(body.params.len(), "parameter value", "parameter values")
            ),
            owner_span,
        ));
        return;
    }
    for (i, (p, &v)) in params.iter().zip(&body.params).enumerate() {
        let Some(vd) = body.values().get(v) else {
            diags.push(Diagnostic::error(
                format!("malformed IR: parameter {} of {owner} is out of range", i + 1),
                p.span,
            ));
            continue;
        };
        if vd.def != ValueDef::Param(i as u32) || vd.ty != Type::Scalar(p.ty) {
            diags.push(Diagnostic::error(
                format!("malformed IR: parameter %{} of {owner} does not match its declaration", vd.name),
                p.span,
            ));
        }
        let Some(d) = p.default else { continue };
        if !defaults_allowed {
            diags.push(Diagnostic::error(
                format!("parameter %{} of {owner} has a default value; only kernel parameters may", vd.name),
                p.span,
            ));
            continue;
        }
        if let Some(msg) = default_error(d, p.ty) {
            diags.push(Diagnostic::error(format!("default value of %{} {msg}", vd.name), p.span));
        }
    }
}

/// Why constant `c` is not a valid default for a parameter of type `ty`.
pub(super) fn default_error(c: Const, ty: Scalar) -> Option<String> {
    if c.ty == ty {
        return (!canonical(c)).then(|| format!("does not fit {ty}"));
    }
    // An integer literal of another integer type: say whether its value
    // would fit, since that is what the writer needs to know.
    if c.ty.is_int() && ty.is_int() && canonical(c) {
        let v = c.as_i64().unwrap_or_default();
        if !int_fits(v, ty) {
            return Some(format!("does not fit {ty}"));
        }
    }
    Some(format!("has type {}, expected {ty}", c.ty))
}

/// Whether the bits of a constant are the zero-extended form its type
/// promises (`i1` is 0 or 1, a narrower type uses the low bits of its width).
pub(super) fn canonical(c: Const) -> bool {
    c.ty.wrap_bits(c.bits) == c.bits
}

/// Whether integer `v` is representable in `ty` (`i1`: 0 or 1).
pub(super) fn int_fits(v: i64, ty: Scalar) -> bool {
    let (lo, hi) = if ty.is_int() { ty.int_range() } else { (1, 0) };
    (lo..=hi).contains(&(v as i128))
}
