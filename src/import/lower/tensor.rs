//! Quadrants' vectors and matrices in scalar KIR.
//!
//! KIR's values are scalars; a vector or matrix is its components. A
//! tensor-typed statement of the log (`[$a, $b, $c]`, an element-wise
//! `add`, a `global load` of a `<*[Tensor (3) f32]>`) becomes one KIR
//! statement per component, named `%N.k` (row-major), and a field,
//! ndarray or global temporary of vectors or matrices is a KIR field with
//! the components' axes last (`f32[64, 3]`, `f32[16, 2, 2]`): its numpy
//! value's shape, and Quadrants' own element order. A local vector is one
//! slot per component; a component chosen at run time is read by a
//! `select` over all of them and written by a `select` into each.
//!
//! Owns: [`Place`] and [`Comp`] (what a pointer to a vector or to one of
//! its components names), the meaning of `shift ptr` (an index into a
//! local, an ndarray's element or a tensor-typed pointer; bytes, scaled by
//! the field's `dynamic_index_stride`, from a scalar pointer into a matrix
//! field, as Quadrants' `MatrixPtrStmt::offset_used_as_index` decides),
//! loads and stores of every pointer the importer makes, and the
//! component-wise application of an operator ([`Module::each`]).
//!
//! Must never: build anything but scalar KIR, guess a layout the table
//! does not state, or panic on any input.

use super::*;

#[cfg(test)]
mod tests;

/// Where a whole vector or matrix lives.
#[derive(Clone, Debug)]
pub(super) enum Place {
    /// An element of a field, ndarray or global temporary: component `k`
    /// is at `lead` followed by `k`'s position in `axes`.
    Field { field: Name, lead: Vec<Value>, axes: Vec<u64>, elem: Scalar },
    /// A local vector or matrix: one slot per component.
    Slots { slots: Vec<Value>, elem: Scalar },
}

/// A scalar pointer to component `k` of a matrix field's element, kept so
/// that a `shift ptr` by bytes can find the component it moves to.
#[derive(Clone, Debug)]
pub(crate) struct Comp {
    lead: Vec<Value>,
    axes: Vec<u64>,
    k: u64,
    stride: Option<u64>,
}

/// The KIR name of component `k` of the vector statement `id` defines.
pub(super) fn comp_name(id: u32, k: impl std::fmt::Display) -> Name {
    Name::from(format!("v.{id}.{k}"))
}

/// The axes a statement's tensor type gives it (none for a scalar).
pub(super) fn axes_of(s: &Stmt) -> Vec<u64> {
    match &s.ty {
        Some(Ty::Tensor { shape, .. }) => shape.iter().map(|&d| u64::from(d)).collect(),
        _ => Vec::new(),
    }
}

fn is_tensor_ptr(s: &Stmt) -> bool {
    matches!(&s.ty, Some(Ty::Tensor { ptr: true, .. }))
}

/// A vector's `[n]` is written `(n)`, a matrix's `(n, m)`.
fn shape_text(axes: &[u64]) -> String {
    format!("({})", axes.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
}

/// The number of components of a tensor of `axes`.
fn count(axes: &[u64]) -> u64 {
    axes.iter().product()
}

/// Component `k`'s indices along `axes` (row-major), as constants.
fn const_index(b: &mut Body, s: &Stmt, axes: &[u64], k: u64) -> Vec<Value> {
    let mut digits = vec![0; axes.len()];
    let mut rest = k;
    for (i, &d) in axes.iter().enumerate().rev() {
        digits[i] = rest % d.max(1);
        rest /= d.max(1);
    }
    digits.into_iter().map(|v| b.index_const(s.id, v)).collect()
}

/// The indices along `axes` of the component whose row-major number is
/// the `i32` value `k`: `k` itself for a vector, `k / m` and `k % m` for a
/// matrix (a component out of range is then out of the field's bounds,
/// which every engine checks).
fn dyn_index(b: &mut Body, s: &Stmt, axes: &[u64], k: Value) -> Vec<Value> {
    match axes {
        [_, m] => {
            let c = b.index_const(s.id, *m);
            let q = b.at(s.id).binary(BinOp::Div, k, c);
            let r = b.at(s.id).binary(BinOp::Rem, k, c);
            vec![q, r]
        }
        _ => vec![k],
    }
}

/// The pointer a `global ptr` to a field element makes: a scalar's, a
/// whole vector's (a tensor-typed pointer), or one component's.
pub(super) fn field_ptr(b: &mut Body, s: &Stmt, f: FieldAt, idx: Vec<Value>) -> Result<V, Error> {
    let field = Name::from(f.name);
    if f.axes.is_empty() {
        if is_tensor_ptr(s) {
            return Err(located(
                format!(
                    "a pointer to a {} tensor into field @{field}, whose elements are scalars",
                    shape_text(&axes_of(s))
                ),
                s,
            ));
        }
        return Ok(V::Ptr { field, idx, elem: f.elem, comp: None });
    }
    if is_tensor_ptr(s) {
        let hinted = axes_of(s);
        if f.k != 0 || count(&hinted) != count(&f.axes) {
            return Err(located(
                format!(
                    "a pointer to a {} tensor into field @{field} of {} elements (from its component {})",
                    shape_text(&hinted),
                    shape_text(&f.axes),
                    f.k
                ),
                s,
            ));
        }
        return Ok(V::Tensor(Place::Field { field, lead: idx, axes: f.axes, elem: f.elem }));
    }
    let k = f.k as u64;
    let mut full = idx.clone();
    full.extend(const_index(b, s, &f.axes, k));
    let comp = Comp { lead: idx, axes: f.axes, k, stride: f.stride };
    Ok(V::Ptr { field, idx: full, elem: f.elem, comp: Some(Box::new(comp)) })
}

/// The pointer an `external_ptr` makes into ndarray `nd`: to a scalar
/// element, to a whole vector or matrix element, or (with the element's
/// indices among `idx`) to one component. The log's element shape must be
/// the last axes of the ndarray's (the table keeps them apart for a
/// Quadrants ndarray, together for a numpy array passed in its place), or
/// a matrix element's flattened (`(9)` for a 3x3: see [`flat_matrix`]).
pub(super) fn ndarray_ptr(
    b: &mut Body,
    s: &Stmt,
    nd: &Nd,
    element_shape: &[u32],
    mut idx: Vec<Value>,
) -> Result<V, Error> {
    let field = Name::from(nd.name.as_str());
    let mut axes: Vec<u64> = element_shape.iter().map(|&d| u64::from(d)).collect();
    let full = [nd.shape.as_slice(), &nd.axes].concat();
    if let Some(matrix) = flat_matrix(nd, &full, &axes) {
        // Quadrants numbers a matrix element's components row-major, as
        // the field's last two axes hold them: one flat index is two.
        if idx.len() + 1 == full.len() && !is_tensor_ptr(s) {
            if let Some(k) = idx.pop() {
                idx.extend(dyn_index(b, s, &matrix, k));
            }
        }
        axes = matrix;
    }
    if !full.ends_with(&axes) || (axes.is_empty() && !nd.axes.is_empty()) {
        return Err(located(
            format!(
                "ndarray @{field} has the shape {full:?} in the field table, which does not end in the log's elements {}",
                shape_text(&axes)
            ),
            s,
        ));
    }
    let rank = full.len() - axes.len();
    let elem = nd.elem;
    match idx.len() {
        n if n == rank && !axes.is_empty() && is_tensor_ptr(s) => {
            Ok(V::Tensor(Place::Field { field, lead: idx, axes, elem }))
        }
        n if n == full.len() && !is_tensor_ptr(s) => Ok(V::Ptr { field, idx, elem, comp: None }),
        n => Err(located(format!("ndarray @{field} has rank {rank} but is indexed with {n}"), s)),
    }
}

/// The matrix axes `[n, m]` of `nd`'s elements when the log addresses
/// them flattened (`log_axes` is `[n * m]`): the table's element axes, or
/// for an array passed without them (a numpy array, a torch tensor) its
/// last two axes; None when the log's elements are the table's own.
fn flat_matrix(nd: &Nd, full: &[u64], log_axes: &[u64]) -> Option<Vec<u64>> {
    let [flat] = log_axes else { return None };
    let matrix = if nd.axes.is_empty() { full.get(full.len().checked_sub(2)?..)? } else { &nd.axes };
    (matrix.len() == 2 && count(matrix) == *flat && full.last() != Some(flat)).then(|| matrix.to_vec())
}

/// `alloca` of a scalar (named `n`) or of a vector or matrix (one slot
/// each).
pub(super) fn alloca(b: &mut Body, s: &Stmt, elem: Scalar, n: &Name) -> V {
    let axes = axes_of(s);
    if axes.is_empty() {
        return V::Slot { slot: b.bld.ins(n.clone()).alloca(elem), elem };
    }
    let slots = (0..count(&axes)).map(|k| b.bld.ins(comp_name(s.id, k)).alloca(elem)).collect();
    V::Tensor(Place::Slots { slots, elem })
}

/// `[$a, $b, ...]`: the components, which are KIR values already.
pub(super) fn matrix_init(b: &Body, s: &Stmt, comps: &[u32]) -> Result<V, Error> {
    let axes = axes_of(s);
    if comps.is_empty() || (!axes.is_empty() && count(&axes) != comps.len() as u64) {
        return Err(located(format!("a {} tensor of {} components", shape_text(&axes), comps.len()), s));
    }
    let mut out = Vec::with_capacity(comps.len());
    for id in comps {
        match b.vals.get(id) {
            Some(&V::Val(v)) => out.push(v),
            Some(_) => return Err(located(format!("${id} is not a scalar here"), s)),
            None => return Err(located(format!("${id} is used before it is defined"), s)),
        }
    }
    if out.iter().any(|&c| b.ty(c) != b.ty(out[0])) {
        return Err(located("a vector whose components differ in type".to_string(), s));
    }
    Ok(V::Vec(out))
}

/// The scalar pointer component `k` of `place` is.
fn component(b: &mut Body, s: &Stmt, place: &Place, k: u64) -> V {
    match place {
        Place::Field { field, lead, axes, elem } => {
            let mut idx = lead.clone();
            idx.extend(const_index(b, s, axes, k));
            V::Ptr { field: field.clone(), idx, elem: *elem, comp: None }
        }
        Place::Slots { slots, elem } => V::Slot { slot: slots[k as usize], elem: *elem },
    }
}

fn place_len(place: &Place) -> u64 {
    match place {
        Place::Field { axes, .. } => count(axes),
        Place::Slots { slots, .. } => slots.len() as u64,
    }
}

/// `shift ptr [$base + $offset]`: a pointer to one component. `check`
/// names the field a local vector of `n` components is checked against
/// when the component is chosen at run time.
pub(super) fn shift(
    b: &mut Body,
    s: &Stmt,
    base: u32,
    offset: u32,
    check: &mut dyn FnMut(u64) -> Name,
) -> Result<V, Error> {
    let off = match b.vals.get(&offset) {
        Some(&V::Val(v)) if b.ty(v) == Scalar::I32 => v,
        Some(&V::Val(v)) => return Err(located(format!("a component offset of type {}", b.ty(v)), s)),
        _ => return Err(located(format!("${offset} is not a value here"), s)),
    };
    let konst: Option<u64> = b.konst(off).and_then(Const::as_i64).map(|k| u64::try_from(k).unwrap_or(u64::MAX));
    match b.vals.get(&base).cloned() {
        Some(V::Tensor(place)) => {
            let n = place_len(&place);
            if let Some(k) = konst {
                if k >= n {
                    return Err(located(format!("component {k} of a tensor of {n} components"), s));
                }
                return Ok(component(b, s, &place, k));
            }
            Ok(match place {
                Place::Field { field, mut lead, axes, elem } => {
                    lead.extend(dyn_index(b, s, &axes, off));
                    V::Ptr { field, idx: lead, elem, comp: None }
                }
                Place::Slots { slots, elem } => {
                    // Out of range is the bounds error of a field of the
                    // vector's length, at this statement.
                    let r = FieldRef { field: check(slots.len() as u64), indices: vec![off], span: Span::DUMMY };
                    b.at(s.id).load(r, Scalar::I1);
                    V::DynSlot { slots, index: off, elem }
                }
            })
        }
        Some(V::Ptr { field, elem, comp: Some(c), .. }) => by_bytes(b, s, (field, elem), &c, (off, konst)),
        Some(_) => Err(located(format!("${base} is not a pointer to a vector or matrix"), s)),
        None => Err(located(format!("${base} is used before it is defined"), s)),
    }
}

/// A shift in bytes from component `c.k` of a matrix field's element:
/// by whole components of the field's `dynamic_index_stride`.
fn by_bytes(
    b: &mut Body,
    s: &Stmt,
    (field, elem): (Name, Scalar),
    c: &Comp,
    off: (Value, Option<u64>),
) -> Result<V, Error> {
    let Some(stride) = c.stride.filter(|&st| st > 0) else {
        return Err(located(
            format!("field @{field} is shifted in bytes, but the field table gives no dynamic_index_stride for it"),
            s,
        ));
    };
    let mut idx = c.lead.clone();
    match off.1 {
        Some(bytes) if bytes % stride == 0 && c.k + bytes / stride < count(&c.axes) => {
            idx.extend(const_index(b, s, &c.axes, c.k + bytes / stride));
        }
        Some(bytes) => return Err(located(format!("a shift of {bytes} bytes in field @{field}"), s)),
        None => {
            let st = b.index_const(s.id, stride);
            let q = b.at(s.id).binary(BinOp::Div, off.0, st);
            let k = if c.k == 0 {
                q
            } else {
                let kc = b.index_const(s.id, c.k);
                b.at(s.id).binary(BinOp::Add, q, kc)
            };
            idx.extend(dyn_index(b, s, &c.axes, k));
        }
    }
    Ok(V::Ptr { field, idx, elem, comp: None })
}

/// The value at a scalar pointer, named `name`.
fn load_scalar(b: &mut Body, s: &Stmt, p: &V, name: Name) -> Result<Value, Error> {
    Ok(match p {
        V::Ptr { field, idx, elem, .. } => {
            let r = FieldRef { field: field.clone(), indices: idx.clone(), span: Span::DUMMY };
            b.bld.ins(name).load(r, *elem)
        }
        V::Slot { slot, .. } => b.bld.ins(name).load_slot(*slot),
        V::DynSlot { slots, index, .. } => load_dyn(b, s, slots, *index, name),
        _ => return Err(located("a load from what is not a pointer".to_string(), s)),
    })
}

/// The component of a local vector that `index` names (component 0 when
/// it names none), named `name`: every component loaded, then chosen.
fn load_dyn(b: &mut Body, s: &Stmt, slots: &[Value], index: Value, name: Name) -> Value {
    if let [slot] = slots {
        return b.bld.ins(name).load_slot(*slot);
    }
    let all: Vec<Name> = slots.iter().map(|_| b.fresh(s.id)).collect();
    let all: Vec<Value> = all.into_iter().zip(slots).map(|(n, slot)| b.bld.ins(n).load_slot(*slot)).collect();
    let mut acc = all[0];
    for (k, v) in all.iter().enumerate().skip(1) {
        let kc = b.index_const(s.id, k as u64);
        let hit = b.at(s.id).cmp(CmpOp::Eq, index, kc);
        let next = if k + 1 == all.len() { name.clone() } else { b.fresh(s.id) };
        acc = b.bld.ins(next).select(hit, *v, acc);
    }
    acc
}

/// `v` stored at the scalar pointer `p`.
pub(super) fn store_scalar(b: &mut Body, s: &Stmt, p: &V, v: Value) -> Result<(), Error> {
    let ty = b.ty(v);
    let elem = match p {
        V::Ptr { elem, .. } | V::Slot { elem, .. } | V::DynSlot { elem, .. } => *elem,
        _ => return Err(located("a store to what is not a pointer".to_string(), s)),
    };
    if elem != ty {
        return Err(located(format!("a store of {ty} to a pointer of another type"), s));
    }
    match p {
        V::Ptr { field, idx, .. } => {
            b.bld.store(FieldRef { field: field.clone(), indices: idx.clone(), span: Span::DUMMY }, v)
        }
        V::Slot { slot, .. } => b.bld.store_slot(*slot, v),
        V::DynSlot { slots, index, .. } => {
            for (k, slot) in slots.iter().enumerate() {
                let [kc, hit, old, new] = [(); 4].map(|_| b.fresh(s.id));
                let kc = b.bld.ins(kc).konst(Const::i32(k as i32));
                let hit = b.bld.ins(hit).cmp(CmpOp::Eq, *index, kc);
                let old = b.bld.ins(old).load_slot(*slot);
                let new = b.bld.ins(new).select(hit, v, old);
                b.bld.store_slot(*slot, new);
            }
        }
        _ => return Err(located("a store to what is not a pointer".to_string(), s)),
    }
    Ok(())
}

/// A `global load` or `local load` through `$p`: a scalar, or a vector
/// of component loads.
pub(super) fn load(b: &mut Body, s: &Stmt, p: u32) -> Result<V, Error> {
    match b.vals.get(&p).cloned() {
        Some(V::Tensor(place)) => {
            let mut out = Vec::new();
            for k in 0..place_len(&place) {
                let ptr = component(b, s, &place, k);
                out.push(load_scalar(b, s, &ptr, comp_name(s.id, k))?);
            }
            Ok(V::Vec(out))
        }
        Some(ptr @ (V::Ptr { .. } | V::Slot { .. } | V::DynSlot { .. })) => {
            Ok(V::Val(load_scalar(b, s, &ptr, Name::from(s.id.to_string()))?))
        }
        _ => Err(located(format!("${p} is not a pointer"), s)),
    }
}

/// `comps` stored into the components of `place`, in order.
pub(super) fn store_components(b: &mut Body, s: &Stmt, place: &Place, comps: &[Value]) -> Result<(), Error> {
    if comps.len() as u64 != place_len(place) {
        return Err(located("a store of a vector or matrix of another shape".to_string(), s));
    }
    for (k, &c) in comps.iter().enumerate() {
        let ptr = component(b, s, place, k as u64);
        store_scalar(b, s, &ptr, c)?;
    }
    Ok(())
}

/// A `global store` or `local store` of `$val` through `$dest`.
pub(super) fn store(b: &mut Body, s: &Stmt, dest: u32, val: u32) -> Result<(), Error> {
    let v = b.vals.get(&val).cloned();
    match (b.vals.get(&dest).cloned(), v) {
        (Some(V::Tensor(place)), Some(V::Vec(comps))) => store_components(b, s, &place, &comps),
        (Some(V::Tensor(_)), _) | (_, Some(V::Vec(_))) => {
            Err(located("a store of a vector or matrix of another shape".to_string(), s))
        }
        (Some(ptr), Some(V::Val(v))) => store_scalar(b, s, &ptr, v),
        (_, None) => Err(located(format!("${val} is used before it is defined"), s)),
        (_, Some(_)) => Err(located(format!("${val} is not a value here"), s)),
    }
}

/// An operand of a component-wise operation.
enum Operand {
    Scalar(Value),
    Vec(Vec<Value>),
}

impl Module<'_> {
    /// `f` applied to the operands `ids` component by component, defining
    /// `s`: a scalar when every operand is one, else a vector of the
    /// operands' one length (a scalar operand is used for every
    /// component). `f` names its result as it is told.
    pub(super) fn each<const N: usize>(
        &mut self,
        b: &mut Body,
        s: &Stmt,
        ids: [u32; N],
        mut f: impl FnMut(&mut Self, &mut Body, [Value; N], Name) -> Result<Value, Error>,
    ) -> Result<(), Error> {
        let mut ops = Vec::with_capacity(N);
        for id in ids {
            ops.push(match b.vals.get(&id) {
                Some(&V::Val(v)) => Operand::Scalar(v),
                Some(V::Vec(c)) => Operand::Vec(c.clone()),
                Some(_) => return Err(located(format!("${id} is not a value here"), s)),
                None => return Err(located(format!("${id} is used before it is defined"), s)),
            });
        }
        let lens: Vec<usize> =
            ops.iter().filter_map(|o| if let Operand::Vec(c) = o { Some(c.len()) } else { None }).collect();
        if lens.windows(2).any(|w| w[0] != w[1]) {
            return Err(located(format!("an element-wise operation on tensors of {lens:?} components"), s));
        }
        let pick = |k: Option<usize>| -> [Value; N] {
            std::array::from_fn(|i| match (&ops[i], k) {
                (Operand::Scalar(x), _) => *x,
                (Operand::Vec(c), Some(k)) => c[k],
                (Operand::Vec(c), None) => c[0],
            })
        };
        let v = match lens.first() {
            None => V::Val(f(self, b, pick(None), Name::from(s.id.to_string()))?),
            Some(&n) => {
                let mut out = Vec::with_capacity(n);
                for k in 0..n {
                    out.push(f(self, b, pick(Some(k)), comp_name(s.id, k))?);
                }
                V::Vec(out)
            }
        };
        b.vals.insert(s.id, v);
        Ok(())
    }
}

/// The scalar pointers a pointer operand of an atomic stands for: itself,
/// or a whole vector's components.
pub(super) fn components(b: &mut Body, s: &Stmt, p: V) -> Vec<V> {
    match p {
        V::Tensor(place) => (0..place_len(&place)).map(|k| component(b, s, &place, k)).collect(),
        p => vec![p],
    }
}

/// [`load_scalar`] for the atomics of `ops`.
pub(super) fn load_at(b: &mut Body, s: &Stmt, p: &V, name: Name) -> Result<Value, Error> {
    load_scalar(b, s, p, name)
}

/// The indices of the cell of a field of `shape` that the `i32` number
/// `flat` counts to (row-major, as a `struct_for` walks them), computed
/// where the builder is (the loop's own variable for a 1-D field).
pub(super) fn cell_indices(b: &mut Body, id: u32, flat: Value, shape: &[u64]) -> Vec<Value> {
    let mut vars = vec![flat; shape.len()];
    let mut rest = flat;
    for (k, &extent) in shape.iter().enumerate().skip(1).rev() {
        let c = b.index_const(id, extent);
        vars[k] = b.at(id).binary(BinOp::Rem, rest, c);
        rest = b.at(id).binary(BinOp::Div, rest, c);
    }
    vars[0] = rest;
    vars
}
