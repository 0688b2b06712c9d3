//! `random`: Philox-4x32-10 inline, over the counter and key
//! `kiln::random` lays out, with the seed and the task's launch number
//! read from the context (`docs/runtime.md`) and a draw counter that
//! restarts with every iteration.
//!
//! Owns: a task entry's random [`Stream`] (set up only when its body
//! draws, so other tasks' code is unchanged), its restart at each
//! iteration ([`FnCx::begin_iteration`]) and the code of a draw
//! ([`FnCx::random_stmt`]).
//!
//! Must never: compute anything `kiln::random` does not (the interpreter
//! draws with it, and the two agree bit for bit), or depend on the chunk
//! or the thread an iteration runs on.

use super::*;
use kiln::random::{M0, M1, MAX_SITE, ROUNDS, W0, W1};

/// Where a task entry's draws come from.
#[derive(Clone, Copy)]
pub(super) struct Stream<'ctx> {
    /// The seed's two words (the key).
    key: [IntValue<'ctx>; 2],
    /// The launch's number (`i32`).
    task: IntValue<'ctx>,
    /// The current iteration (`i64`): 0 in a serial task.
    iteration: IntValue<'ctx>,
    /// The draws the current iteration made (an `i32` slot).
    draws: PointerValue<'ctx>,
}

/// Whether a body holds a `random` statement.
pub(super) fn draws(body: &Body) -> bool {
    let mut found = false;
    body.walk(body.entry, &mut |s| found |= matches!(body.stmt(s).kind, StmtKind::Random { .. }));
    found
}

impl<'a, 'ctx> Lowering<'a, 'ctx> {
    /// Sets up the stream of a task entry whose body draws: the seed and
    /// launch number loaded in the prologue, the draw counter at zero for
    /// iteration 0 (a serial task's; a parallel task's loop restarts it).
    pub(super) fn random_stream(&self, fx: &mut FnCx<'a, 'ctx>) -> Result<()> {
        if !draws(fx.body) {
            return Ok(());
        }
        let (i32t, i64t) = (self.cx.i32_type(), self.cx.i64_type());
        let seed_p = fx.pb.build_struct_gep(self.ctx_ty, fx.ctx, abi::CTX_SEED, "seed.p")?;
        let seed = fx.pb.build_load(i64t, seed_p, "seed")?.into_int_value();
        let task_p = fx.pb.build_struct_gep(self.ctx_ty, fx.ctx, abi::CTX_TASK, "task.p")?;
        let task = fx.pb.build_load(i64t, task_p, "task")?.into_int_value();
        // The key is the seed, low word first (`kiln::random::key`).
        let hi = fx.pb.build_right_shift(seed, i64t.const_int(32, false), false, "")?;
        let key = [fx.pb.build_int_truncate(seed, i32t, "key0")?, fx.pb.build_int_truncate(hi, i32t, "key1")?];
        let task = fx.pb.build_int_truncate(task, i32t, "")?;
        let draws = fx.pb.build_alloca(i32t, "draws")?;
        fx.pb.build_store(draws, i32t.const_zero())?;
        fx.rand = Some(Stream { key, task, iteration: i64t.const_zero(), draws });
        Ok(())
    }
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// Starts iteration `lin` (the chunk loop's linear index): its draws
    /// start again from 0.
    pub(super) fn begin_iteration(&mut self, lin: IntValue<'ctx>) -> Result<()> {
        let Some(st) = &mut self.rand else { return Ok(()) };
        st.iteration = lin;
        let draws = st.draws;
        self.b.build_store(draws, self.cx.i32_type().const_zero())?;
        Ok(())
    }

    /// `random T` at `site`: the next draw of the iteration, made a `T`.
    pub(super) fn random_stmt(&mut self, ty: Scalar, site: u32) -> Result<BasicValueEnum<'ctx>> {
        let st = self.rand.ok_or_else(|| bug("random outside a task entry"))?;
        let (i32t, i64t) = (self.cx.i32_type(), self.cx.i64_type());
        let b = &self.b;
        let draw = b.build_load(i32t, st.draws, "draw")?.into_int_value();
        let next = b.build_int_add(draw, i32t.const_int(1, false), "")?;
        b.build_store(st.draws, next)?;
        let it_hi = b.build_right_shift(st.iteration, i64t.const_int(32, false), false, "")?;
        let task_hi = b.build_left_shift(st.task, i32t.const_int(16, false), "")?;
        let site = i32t.const_int(u64::from(site & MAX_SITE), false);
        let ctr = [
            b.build_int_truncate(st.iteration, i32t, "")?,
            b.build_int_truncate(it_hi, i32t, "")?,
            draw,
            b.build_or(task_hi, site, "")?,
        ];
        let w = self.philox(ctr, st.key)?;
        self.random_value(ty, w)
    }

    /// Philox-4x32 with `kiln::random::ROUNDS` rounds.
    fn philox(&self, mut c: [IntValue<'ctx>; 4], mut k: [IntValue<'ctx>; 2]) -> Result<[IntValue<'ctx>; 4]> {
        let (i32t, i64t) = (self.cx.i32_type(), self.cx.i64_type());
        let b = &self.b;
        let mulhilo = |m: u32, x: IntValue<'ctx>| -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
            let wide = b.build_int_z_extend(x, i64t, "")?;
            let p = b.build_int_nuw_mul(wide, i64t.const_int(u64::from(m), false), "")?;
            let hi = b.build_right_shift(p, i64t.const_int(32, false), false, "")?;
            Ok((b.build_int_truncate(hi, i32t, "")?, b.build_int_truncate(p, i32t, "")?))
        };
        for r in 0..ROUNDS {
            if r > 0 {
                k = [
                    b.build_int_add(k[0], i32t.const_int(u64::from(W0), false), "")?,
                    b.build_int_add(k[1], i32t.const_int(u64::from(W1), false), "")?,
                ];
            }
            let (hi0, lo0) = mulhilo(M0, c[0])?;
            let (hi1, lo1) = mulhilo(M1, c[2])?;
            let x0 = b.build_xor(b.build_xor(hi1, c[1], "")?, k[0], "")?;
            let x2 = b.build_xor(b.build_xor(hi0, c[3], "")?, k[1], "")?;
            c = [x0, lo1, x2, lo0];
        }
        Ok(c)
    }

    /// A value of `ty` from a draw's words, as `kiln::random::value_bits`
    /// makes it.
    fn random_value(&self, ty: Scalar, w: [IntValue<'ctx>; 4]) -> Result<BasicValueEnum<'ctx>> {
        let (i32t, i64t) = (self.cx.i32_type(), self.cx.i64_type());
        let b = &self.b;
        let w64 = || -> Result<IntValue<'ctx>> {
            let hi = b.build_left_shift(b.build_int_z_extend(w[0], i64t, "")?, i64t.const_int(32, false), "")?;
            Ok(b.build_or(hi, b.build_int_z_extend(w[1], i64t, "")?, "")?)
        };
        Ok(match ty {
            Scalar::I1 => return Err(bug("random i1")),
            // Integers below 2^24 (2^53) convert exactly, and the scale is
            // a power of two: the product is exact in any rounding mode.
            // The f32, rounded (as Quadrants makes an f16).
            Scalar::F16 => {
                let f = self.random_value(Scalar::F32, w)?.into_float_value();
                b.build_float_trunc(f, self.cx.f16_type(), "")?.into()
            }
            Scalar::F32 => {
                let m = b.build_right_shift(w[0], i32t.const_int(8, false), false, "")?;
                let f = b.build_unsigned_int_to_float(m, self.cx.f32_type(), "")?;
                b.build_float_mul(f, self.cx.f32_type().const_float(1.0 / 16_777_216.0), "")?.into()
            }
            Scalar::F64 => {
                let m = b.build_right_shift(w64()?, i64t.const_int(11, false), false, "")?;
                let f = b.build_unsigned_int_to_float(m, self.cx.f64_type(), "")?;
                b.build_float_mul(f, self.cx.f64_type().const_float(1.0 / 9_007_199_254_740_992.0), "")?.into()
            }
            t if t.bits() == 64 => w64()?.into(),
            t => b.build_int_truncate_or_bit_cast(w[0], fx_int_ty(self.cx, t), "")?.into(),
        })
    }
}
