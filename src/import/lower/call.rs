//! Real functions (`qd.real_func`): a Quadrants `call "F", args = {...}`
//! as a KIR `call @f(...)`, and `F`'s dump as the KIR function `@f`,
//! lowered once, at its first call, with the types of that call.
//!
//! Owns: a real function's KIR name and signature (parameters: the types
//! of its call's arguments, in order; result: the one scalar of the
//! call's result struct, or none), the check that every call agrees with
//! it, its body's `argload[i]` (parameter `i`) and `return` (`ret`), and
//! the refusals of what a KIR function cannot be: recursive (the error
//! names the cycle), or returning more than one value.
//!
//! Must never: lower a function twice, or build a call whose callee is
//! not in the module (a call of a function the log lacks is an error).

use super::*;

impl Module<'_> {
    /// `call "F", args = {...}` with its statement's name `n`.
    pub(super) fn call(&mut self, b: &mut Body, s: &Stmt, func: &str, args: &[u32], n: &Name) -> Result<(), Error> {
        let vals: Vec<(Value, Scalar)> = args.iter().map(|a| self.val(b, *a, s)).collect::<Result<_, _>>()?;
        let leaves = match &s.ty {
            Some(Ty::Other(t)) => chi::struct_leaves(t),
            _ => None,
        };
        let Some(leaves) = leaves else {
            return Err(located(format!("the call of '{func}' is not typed by the struct of its results"), s));
        };
        let ret = match leaves.as_slice() {
            [] => None,
            [(path, prim)] if path[..] == [0] => Some(stmt_scalar(prim, s)?),
            _ => {
                return Err(refused_stmt(
                    format!("qd.real_func '{}' with {} results", base_name(func), leaves.len()),
                    s,
                )
                .with_why("a KIR function returns at most one scalar"))
            }
        };
        let params: Vec<Scalar> = vals.iter().map(|v| v.1).collect();
        let name = self.function(func, &params, ret, s)?;
        let args = vals.into_iter().map(|v| v.0).collect();
        let results = match ret {
            Some(t) => Some(b.bld.ins(n.clone()).call(name, args, t)),
            None => {
                b.bld.call(name, args);
                None
            }
        };
        b.vals.insert(s.id, V::Results(results));
        Ok(())
    }

    /// The KIR name of real function `func`, lowered at its first call
    /// (`s`, with `params` and `ret`); a later call must agree.
    fn function(&mut self, func: &str, params: &[Scalar], ret: Option<Scalar>, s: &Stmt) -> Result<String, Error> {
        if let Some(at) = self.active.iter().position(|f| f == func) {
            let cycle: Vec<&str> = self.active[at..].iter().map(|f| base_name(f)).chain([base_name(func)]).collect();
            return Err(refused_stmt(format!("recursive qd.real_func ({})", cycle.join(" -> ")), s)
                .with_why("KIR rejects recursion: calls run on the host stack, with no defined depth limit"));
        }
        if let Some(sig) = self.lowered.get(func) {
            if sig.params != params || sig.ret != ret {
                let had = signature(&sig.params, sig.ret);
                let now = signature(params, ret);
                return Err(located(format!("'{func}' is called as {now} here and as {had} before"), s));
            }
            return Ok(sig.name.clone());
        }
        let funcs = self.funcs;
        let Some(f) = funcs.get(func) else {
            return Err(located(
                format!(
                    "a call of '{func}', whose dump (its 'Initial IR' before 'Access lowered') the log does not hold"
                ),
                s,
            ));
        };
        let name = self.names.unique(&sanitize(base_name(func)));
        self.active.push(func.to_string());
        let item = self.func_item(f, &name, params, ret);
        self.active.pop();
        self.func_items.push(Item::Func(std::sync::Arc::new(item?)));
        self.lowered.insert(func.to_string(), FuncSig { name: name.clone(), params: params.to_vec(), ret });
        Ok(name)
    }

    /// Function `f`'s KIR, named `name`, of that signature.
    fn func_item(&mut self, f: &FuncIn, name: &str, params: &[Scalar], ret: Option<Scalar>) -> Result<ir::Func, Error> {
        let mut body = ir::Body::new();
        let mut bld = Builder::new(&mut body);
        let vals: Vec<Vec<Value>> =
            params.iter().enumerate().map(|(i, &t)| vec![bld.param(format!("a{i}"), t)]).collect();
        let k = KernelIn {
            quadrants_name: f.quadrants_name.clone(),
            python_name: base_name(&f.quadrants_name).to_string(),
            kir_name: name.to_string(),
            tasks: Vec::new(),
        };
        let mut kc = Kernel {
            k: &k,
            params: vals,
            ndarrays: HashMap::new(),
            tmps: BTreeMap::new(),
            rets: BTreeMap::new(),
            components: BTreeMap::new(),
            func_ret: Some(ret),
        };
        let mut b =
            Body { bld, vals: HashMap::new(), axes: HashMap::new(), fresh: 0, seen: HashSet::new(), too_big: None };
        self.block(&mut kc, &mut b, &mut Vec::new(), &f.body)?;
        for (n, field) in &kc.components {
            self.extra.push((field.clone(), Scalar::I1, vec![*n]));
        }
        let params = params.iter().map(|&ty| ir::Param { ty, default: None, span: Span::DUMMY }).collect();
        Ok(ir::Func { name: name.into(), params, ret, body, span: Span::DUMMY })
    }

    /// `return tmpN` in a real function: `ret %N`, of its return type.
    pub(super) fn func_ret(&self, b: &mut Body, vals: &[u32], want: Option<Scalar>, s: &Stmt) -> Result<(), Error> {
        let v = match vals {
            [] => None,
            [id] => Some(self.val(b, *id, s)?),
            _ => {
                return Err(refused_stmt(format!("a qd.real_func returning {} values", vals.len()), s)
                    .with_why("a KIR function returns at most one scalar"))
            }
        };
        if v.map(|v| v.1) != want {
            let got = v.map_or("nothing".to_string(), |v| v.1.to_string());
            let want = want.map_or("nothing".to_string(), |t| t.to_string());
            return Err(located(format!("the function returns {got}, but its call expects {want}"), s));
        }
        b.bld.ret(v.map(|v| v.0));
        Ok(())
    }
}

/// `argload[i]` in a real function: its parameter `i`.
pub(super) fn func_arg(kc: &Kernel, b: &mut Body, s: &Stmt, i: u32, ty: Option<Scalar>) -> Result<(), Error> {
    let Some(&[v]) = kc.params.get(i as usize).map(Vec::as_slice) else {
        let n = kc.params.len();
        return Err(located(format!("argument {i} of a function called with {n} arguments"), s));
    };
    let pty = b.ty(v);
    if let Some(t) = ty.filter(|t| *t != pty) {
        return Err(located(format!("argument {i} is {pty} at the call but loaded as {t}"), s));
    }
    b.vals.insert(s.id, V::Val(v));
    Ok(())
}

/// `(f32, i32) -> f32`, for a message.
fn signature(params: &[Scalar], ret: Option<Scalar>) -> String {
    let ps: Vec<String> = params.iter().map(|p| p.to_string()).collect();
    format!("({}) -> {}", ps.join(", "), ret.map_or("nothing".to_string(), |t| t.to_string()))
}

/// The Python name of a real function's compiled name: `sq` of
/// `sq_143_0` (Quadrants appends a function counter and an instance).
pub(super) fn base_name(quadrants_name: &str) -> &str {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    let strip = |s: &str| -> Option<usize> {
        let (rest, k) = s.rsplit_once('_')?;
        let (base, n) = rest.rsplit_once('_')?;
        (digits(k) && digits(n) && !base.is_empty()).then_some(base.len())
    };
    strip(quadrants_name).map_or(quadrants_name, |n| &quadrants_name[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        assert_eq!(base_name("sq_143_0"), "sq");
        assert_eq!(base_name("collatz_steps_144_12"), "collatz_steps");
        // Not a compiled name: kept whole.
        assert_eq!(base_name("sq"), "sq");
        assert_eq!(base_name("_1_2"), "_1_2");
        assert_eq!(base_name("sq_c60_0"), "sq_c60_0");
    }

    #[test]
    fn signatures_read_as_types() {
        assert_eq!(signature(&[Scalar::F32, Scalar::I32], Some(Scalar::F64)), "(f32, i32) -> f64");
        assert_eq!(signature(&[], None), "() -> nothing");
    }
}
