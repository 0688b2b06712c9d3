//! Running the lowered form: a kernel's entry over [`Fields`], statement
//! by statement, parallel launches in the asked order with the race
//! shadow, and every run-time error with its statement's span.
//!
//! Owns: [`State`] (the run's fields and call depth), the bounds check of
//! every access and the out-of-bounds error, element reads and writes,
//! and the iteration loop of a parallel launch.
//!
//! Must never: skip a bounds check, or panic on any input.

use super::*;

impl Program {
    /// Runs the kernel with `args` over `fields`; what its `print`s
    /// wrote is appended to `printed`, in order.
    pub(super) fn run(
        &self,
        args: &[Const],
        fields: &mut Fields,
        opts: Interpreter,
        printed: &mut Vec<String>,
    ) -> Result<(), RunError> {
        if args.len() != self.kernel_params.len() {
            return Err(err(format!(
                "kernel @{} takes {} arguments, {} given",
                self.kernel,
                self.kernel_params.len(),
                args.len()
            )));
        }
        for (i, (a, &ty)) in args.iter().zip(&self.kernel_params).enumerate() {
            if a.ty != ty {
                return Err(err(format!("kernel @{}: argument {i} is {}, the parameter is {ty}", self.kernel, a.ty)));
            }
        }
        // Move the bytes of every field the program uses out of the map for
        // the run (no lookups by name while running), and back afterwards
        // whatever happens.
        for f in &self.fields {
            let data = fields.get(&f.name).ok_or_else(|| err(format!("field @{} has no storage", f.name)))?;
            if data.elem != f.elem || data.shape != f.shape {
                let want = FieldData { elem: f.elem, shape: f.shape.clone(), bytes: Default::default() };
                return Err(err(format!(
                    "field @{} is declared {} but its storage is {}",
                    f.name,
                    want.type_string(),
                    data.type_string()
                )));
            }
            if data.bytes.len() != data.len() * data.elem.size_bytes() {
                return Err(err(format!(
                    "field @{}: storage has {} bytes, not the size of {}",
                    f.name,
                    data.bytes.len(),
                    data.type_string()
                )));
            }
        }
        let store = self
            .fields
            .iter()
            .map(|f| fields.get_mut(&f.name).map(|d| std::mem::take(&mut d.bytes)).unwrap_or_default())
            .collect();
        let mut st = State {
            fields: store,
            frames: self.codes.iter().map(|c| Some(vec![0u64; c.nregs])).collect(),
            args: args.iter().map(|a| to_reg(*a)).collect(),
            task: NO_TASK,
            opts,
            par: Vec::new(),
            rand: RandAt::default(),
            printed: Vec::new(),
        };
        let result = self.exec_entry(&mut st);
        printed.extend(st.printed.into_iter().map(|(_, text)| text));
        for (f, bytes) in self.fields.iter().zip(st.fields) {
            if let Some(d) = fields.get_mut(&f.name) {
                d.bytes = bytes;
            }
        }
        result
    }

    pub(super) fn exec_entry(&self, st: &mut State) -> Result<(), RunError> {
        let code = &self.codes[self.entry];
        let mut regs = st.frames[self.entry].take().unwrap_or_default();
        for (&p, &a) in code.params.iter().zip(&st.args) {
            regs[p as usize] = a;
        }
        self.exec(self.entry, &mut regs, st).map(|_| ())
    }

    pub(super) fn oob(&self, st: &State, acc: &Access, dim: usize, index: i64) -> RunError {
        let f = &self.fields[acc.field as usize];
        let task = (st.task != NO_TASK).then(|| self.task_names[st.task as usize].as_str());
        out_of_bounds(&self.kernel, task, &f.name, &f.shape, index, dim).at(Some(acc.at))
    }

    fn assert_failed(&self, st: &State, site: &AssertSite, regs: &[u64]) -> RunError {
        let task = (st.task != NO_TASK).then(|| self.task_names[st.task as usize].as_str());
        let args: Vec<(Scalar, u64)> = site.args.iter().map(|&(r, ty)| (ty, regs[r as usize])).collect();
        assertion_failed(&self.kernel, task, &assert_message(&site.message, &args)).at(Some(site.at))
    }

    /// Appends a `print`'s text to the run's output, keyed by the current
    /// iteration of the parallel launch running (0 outside one).
    fn print(&self, site: &PrintSite, regs: &[u64], st: &mut State) -> Result<(), RunError> {
        if st.printed.len() >= crate::exec::MAX_PRINT_LINES {
            st.printed.clear();
            return Err(too_much_output(&self.kernel));
        }
        let values = site.args.iter().map(|&(r, ty)| (ty, regs[r as usize]));
        let key = st.par.last().map_or(0, |run| run.order.index(run.k));
        st.printed.push((key, print_text(&site.pieces, values)));
        Ok(())
    }

    /// The byte offset of an element, bounds-checked.
    #[inline(always)]
    pub(super) fn offset(&self, st: &State, regs: &[u64], acc: &Access) -> Result<usize, RunError> {
        let f = &self.fields[acc.field as usize];
        let mut lin: u64 = 0;
        for (d, (&r, &ext)) in acc.idx.iter().zip(&f.shape).enumerate() {
            let i = regs[r as usize] as i64;
            if i < 0 || i as u64 >= ext {
                return Err(self.oob(st, acc, d, i));
            }
            lin = lin * ext + i as u64;
        }
        Ok(lin as usize * f.elem.size_bytes())
    }

    pub(super) fn exec(&self, id: usize, regs: &mut [u64], st: &mut State) -> Result<Option<u64>, RunError> {
        let code = &self.codes[id];
        let insts = &code.insts[..];
        let mut pc = 0usize;
        loop {
            let Some(inst) = insts.get(pc) else { return Ok(None) };
            pc += 1;
            match *inst {
                Inst::Assert { cond, site } => {
                    if regs[cond as usize] & 1 == 0 {
                        return Err(self.assert_failed(st, &code.asserts[site as usize], regs));
                    }
                }
                Inst::Print { site } => self.print(&code.prints[site as usize], regs, st)?,
                Inst::Const { dst, bits } => regs[dst as usize] = bits,
                Inst::Copy { dst, src } => regs[dst as usize] = regs[src as usize],
                Inst::Bin { op, ty, dst, a, b } => {
                    regs[dst as usize] = bin_reg(op, ty, regs[a as usize], regs[b as usize])
                }
                Inst::Un { op, ty, dst, a } => regs[dst as usize] = un_reg(op, ty, regs[a as usize]),
                Inst::Cmp { op, ty, dst, a, b } => {
                    regs[dst as usize] = cmp_reg(op, ty, regs[a as usize], regs[b as usize])
                }
                Inst::Cast { from, to, dst, a } => regs[dst as usize] = cast_reg(from, to, regs[a as usize]),
                Inst::BitCast { from, to, dst, a } => regs[dst as usize] = bitcast_reg(from, to, regs[a as usize]),
                Inst::Select { dst, c, a, b } => {
                    regs[dst as usize] = if regs[c as usize] & 1 != 0 { regs[a as usize] } else { regs[b as usize] }
                }
                Inst::Load { dst, acc } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Read);
                    regs[dst as usize] = read_elem(elem, &st.fields[acc.field as usize], at);
                }
                Inst::Store { acc, src } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Write);
                    write_elem(elem, &mut st.fields[acc.field as usize], at, regs[src as usize]);
                }
                Inst::Atomic { op, dst, acc, src } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Atomic);
                    let bytes = &mut st.fields[acc.field as usize];
                    let old = read_elem(elem, bytes, at);
                    let new = bin_reg(op.as_binop(), elem, old, regs[src as usize]);
                    write_elem(elem, bytes, at, new);
                    if let Some(d) = dst {
                        regs[d as usize] = old;
                    }
                }
                Inst::LoadBound { dst, field, to } => {
                    let elem = self.fields[field as usize].elem;
                    let v = read_elem(elem, &st.fields[field as usize], 0);
                    regs[dst as usize] = cast_reg(elem, to, v);
                }
                Inst::Call { code: callee, args, dst } => {
                    let c = &self.codes[callee as usize];
                    let mut frame = st.frames[callee as usize]
                        .take()
                        .ok_or_else(|| err(format!("kernel @{}: {} is called recursively", self.kernel, c.what)))?;
                    for (&p, &a) in c.params.iter().zip(code.arglists[args as usize].iter()) {
                        frame[p as usize] = regs[a as usize];
                    }
                    let r = self.exec(callee as usize, &mut frame, st);
                    st.frames[callee as usize] = Some(frame);
                    let r = r?;
                    if let Some(d) = dst {
                        regs[d as usize] = r.ok_or_else(|| {
                            err(format!("kernel @{}: {} ended without returning a value", self.kernel, c.what))
                        })?;
                    }
                }
                Inst::Ret { val } => return Ok(val.map(|v| regs[v as usize])),
                Inst::Jump { to } => pc = to as usize,
                Inst::JumpIfNot { cond, to } => {
                    if regs[cond as usize] & 1 == 0 {
                        pc = to as usize
                    }
                }
                Inst::ForEnter { var, hi, exit } => {
                    if (regs[var as usize] as i64) >= (regs[hi as usize] as i64) {
                        pc = exit as usize
                    }
                }
                Inst::ForNext { var, hi, body } => {
                    // var < hi held, so var + 1 cannot overflow its type.
                    let v = (regs[var as usize] as i64) + 1;
                    regs[var as usize] = v as u64;
                    if v < regs[hi as usize] as i64 {
                        pc = body as usize
                    }
                }
                Inst::ParBegin { par, exit } => {
                    if !self.par_begin(code, par, regs, st)? {
                        pc = exit as usize
                    }
                }
                Inst::ParNext { body } => {
                    if self.par_next(code, regs, st) {
                        pc = body as usize
                    }
                }
                Inst::ParEnd => self.par_end(code, st)?,
                Inst::SetTask { task } => st.task = task,
                Inst::BeginTask { ordinal } => st.rand = RandAt { task: ordinal, iteration: 0, draws: 0 },
                Inst::Random { dst, ty, site } => regs[dst as usize] = st.random(ty, site)?,
                Inst::Launch { code: t } => {
                    let c = &self.codes[t as usize];
                    let mut frame = st.frames[t as usize]
                        .take()
                        .ok_or_else(|| err(format!("kernel @{}: {} is launched recursively", self.kernel, c.what)))?;
                    for (&p, &k) in c.params.iter().zip(&c.param_from_kernel) {
                        frame[p as usize] = st.args[k];
                    }
                    let saved = st.task;
                    st.task = c.task;
                    let r = self.exec(t as usize, &mut frame, st);
                    st.task = saved;
                    st.frames[t as usize] = Some(frame);
                    r?;
                }
                Inst::End => {
                    if code.has_result {
                        return Err(err(format!("kernel @{}: {} ended without `ret`", self.kernel, code.what)));
                    }
                    return Ok(None);
                }
            }
        }
    }
}

/// Parallel launches: the iteration loop in the run order, and the race
/// report at the end of a launch.
impl Program {
    /// Starts a launch of `code.pars[par]`; false when it has no iteration.
    pub(super) fn par_begin(&self, code: &Code, par: u32, regs: &mut [u64], st: &mut State) -> Result<bool, RunError> {
        let p = &code.pars[par as usize];
        let (n, lo) = match &p.space {
            Space::Range { lo, hi } => {
                let (lo, hi) = (regs[*lo as usize] as i64, regs[*hi as usize] as i64);
                ((hi as i128 - lo as i128).max(0) as u64, lo)
            }
            Space::Struct { shape } => (shape.iter().product(), 0),
        };
        if n == 0 {
            return Ok(false);
        }
        let shadow = if st.opts.check_races {
            if n > crate::races::MAX_CHECKED_ITERATIONS {
                return Err(err(format!(
                    "kernel @{}, task {}: {n} iterations are more than --check-races can follow in one launch ({})",
                    self.kernel,
                    self.task_label(st),
                    crate::races::MAX_CHECKED_ITERATIONS
                )));
            }
            Some(Box::new(Shadow::new()))
        } else {
            None
        };
        let printed_from = st.printed.len();
        let mut run = ParRun { par, order: st.opts.order.permutation(n), k: 0, lo, shadow, printed_from };
        st.begin_iteration(set_iteration(p, &mut run, regs));
        st.par.push(run);
        Ok(true)
    }

    /// Moves the current launch to its next iteration; false after the last.
    #[inline]
    pub(super) fn par_next(&self, code: &Code, regs: &mut [u64], st: &mut State) -> bool {
        let Some(run) = st.par.last_mut() else { return false };
        run.k += 1;
        if run.k >= run.order.len() {
            return false;
        }
        let it = set_iteration(&code.pars[run.par as usize], run, regs);
        st.begin_iteration(it);
        true
    }

    /// Ends the current launch: the races it found are the error.
    pub(super) fn par_end(&self, code: &Code, st: &mut State) -> Result<(), RunError> {
        let Some(run) = st.par.pop() else { return Ok(()) };
        // The launch's lines in iteration order (a stable sort: one
        // iteration's stay in program order), whatever order it ran in.
        if let Some(lines) = st.printed.get_mut(run.printed_from..) {
            lines.sort_by_key(|&(key, _)| key);
        }
        let Some(shadow) = &run.shadow else { return Ok(()) };
        let (found, more) = shadow.conflicts();
        if found.is_empty() {
            return Ok(());
        }
        let p = &code.pars[run.par as usize];
        let task = match st.task {
            NO_TASK => Name::from("-"),
            t => self.task_names[t as usize].clone(),
        };
        let iteration = |epoch: u32| iteration_text(p, &run, run.order.index(epoch as u64 - 1));
        let races = found
            .iter()
            .map(|c| Race {
                kernel: self.kernel.clone(),
                task: task.clone(),
                element: self.element_text(c.field, c.elem),
                iteration: iteration(c.epoch),
                kind: c.kind,
                span: self.sites[c.site as usize],
                other_iteration: iteration(c.other_epoch),
                other_kind: c.other_kind,
                other_span: self.sites[c.other_site as usize],
            })
            .collect();
        Err(RunError::races(RaceReport { races, more, task_span: p.span }))
    }

    pub(super) fn task_label(&self, st: &State) -> String {
        match st.task {
            NO_TASK => "-".to_string(),
            t => format!("@{}", self.task_names[t as usize]),
        }
    }

    /// `@g[1, 2]` for the element at row-major index `lin` of a field.
    pub(super) fn element_text(&self, field: u32, lin: u64) -> String {
        let f = &self.fields[field as usize];
        let idx: Vec<String> = unravel(lin, &f.shape).iter().map(|i| i.to_string()).collect();
        format!("@{}[{}]", f.name, idx.join(", "))
    }
}

/// The row-major multi-index of linear index `lin` in `shape`.
pub(super) fn unravel(mut lin: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (o, &ext) in out.iter_mut().zip(shape).rev() {
        *o = lin % ext.max(1);
        lin /= ext.max(1);
    }
    out
}

/// Sets the loop variables of the current iteration of a launch.
#[inline(always)]
/// Sets the loop variables to the current iteration's; returns its linear
/// index (a `range_for`'s variable, a `struct_for`'s row-major index).
pub(super) fn set_iteration(p: &ParLoop, run: &mut ParRun, regs: &mut [u64]) -> i64 {
    let idx = run.order.index(run.k);
    if let Some(sh) = run.shadow.as_deref_mut() {
        // k + 1 fits: a checked launch has at most MAX_CHECKED_ITERATIONS.
        sh.begin_iteration(run.k as u32 + 1);
    }
    match &p.space {
        Space::Range { .. } => {
            let it = run.lo.wrapping_add(idx as i64);
            regs[p.vars[0] as usize] = it as u64;
            it
        }
        Space::Struct { shape } => {
            let mut rest = idx;
            for (&v, &ext) in p.vars.iter().zip(shape.iter()).rev() {
                regs[v as usize] = rest % ext;
                rest /= ext;
            }
            idx as i64
        }
    }
}

/// An iteration as a report names it: `5`, or `(1, 2)`.
pub(super) fn iteration_text(p: &ParLoop, run: &ParRun, idx: u64) -> String {
    match &p.space {
        Space::Range { .. } => run.lo.wrapping_add(idx as i64).to_string(),
        Space::Struct { shape } => {
            let parts: Vec<String> = unravel(idx, shape).iter().map(|i| i.to_string()).collect();
            match parts.len() {
                1 => parts[0].clone(),
                _ => format!("({})", parts.join(", ")),
            }
        }
    }
}

/// Run-time state of one kernel run.
pub(super) struct State {
    /// The bytes of each field of [`Program::fields`].
    pub(super) fields: Vec<crate::exec::Storage>,
    /// The register file of each code; `None` while it runs (there is no
    /// recursion, so one frame per body suffices).
    pub(super) frames: Vec<Option<Vec<u64>>>,
    pub(super) args: Vec<u64>,
    pub(super) task: u32,
    pub(super) opts: Interpreter,
    /// The parallel launches running (innermost last; tasks do not nest in
    /// verified code).
    pub(super) par: Vec<ParRun>,
    /// What the run's `print`s wrote, each with its iteration in the
    /// parallel launch that printed it (0 outside one).
    pub(super) printed: Vec<(u64, String)>,
    /// Where the next `random` draws (`crate::random`).
    pub(super) rand: RandAt,
}

/// The random stream's position: the launch, the iteration, how many
/// draws the iteration made.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RandAt {
    pub(super) task: u32,
    pub(super) iteration: i64,
    pub(super) draws: u32,
}

/// One launch of a parallel task in progress.
pub(super) struct ParRun {
    /// Its loop in the running code's [`Code::pars`].
    pub(super) par: u32,
    pub(super) order: Permutation,
    /// The position in the run order of the current iteration.
    pub(super) k: u64,
    /// A `range_for`'s lower bound.
    pub(super) lo: i64,
    pub(super) shadow: Option<Box<Shadow>>,
    /// Where its lines start in [`State::printed`].
    pub(super) printed_from: usize,
}

impl State {
    /// The next number of the stream, of type `ty`, drawn at `site`.
    fn random(&mut self, ty: Scalar, site: u32) -> Result<u64, RunError> {
        let at = self.rand;
        self.rand.draws = at.draws.wrapping_add(1);
        let d = crate::random::Draw { task: at.task, iteration: at.iteration, site, draw: at.draws };
        crate::random::draw(ty, self.opts.seed, d).ok_or_else(|| err(format!("random makes no {ty} values")))
    }

    /// Starts an iteration of a parallel launch: its draws start again.
    fn begin_iteration(&mut self, iteration: i64) {
        self.rand.iteration = iteration;
        self.rand.draws = 0;
    }
    /// Records an access to element `at` (a byte offset) in the current
    /// launch's shadow, when races are checked.
    #[inline(always)]
    pub(super) fn touch(&mut self, acc: &Access, elem: Scalar, at: usize, kind: AccessKind) {
        if let Some(sh) = self.par.last_mut().and_then(|r| r.shadow.as_deref_mut()) {
            sh.access(acc.field, (at >> elem.size_bytes().trailing_zeros()) as u64, kind, acc.site);
        }
    }
}

#[inline(always)]
pub(super) fn read_elem(elem: Scalar, bytes: &[u8], at: usize) -> u64 {
    let size = elem.size_bytes();
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&bytes[at..at + size]);
    let raw = u64::from_le_bytes(b);
    match elem {
        Scalar::I1 => (raw & 0xff != 0) as u64,
        // An integer in register form (sign-extended when signed).
        t if t.is_int() => crate::semantics::norm_int(t, raw as i64),
        _ => raw,
    }
}

#[inline(always)]
pub(super) fn write_elem(elem: Scalar, bytes: &mut [u8], at: usize, v: u64) {
    let size = elem.size_bytes();
    let v = if elem == Scalar::I1 { v & 1 } else { v };
    bytes[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
}
