//! Ctrl-C and `kill`: a run that is interrupted keeps what it has done.
//!
//! Owns: the process's interrupt flag. A tool that handles interruption
//! calls [`install`] once: then SIGINT and SIGTERM no longer end the
//! process at once but are noted ([`requested`]), and the work that polls
//! the flag stops at its next boundary (no compiler process is started
//! after it, no kernel launched), so the caller can store what was
//! compiled, remove its temporary files and exit with `128 + signal`. A
//! second signal ends the process at once, as the first would have.
//! The flag is set from a signal handler by signal-hook, which does the
//! async-signal-safe part.
//!
//! Must never: print, exit on its own, or be installed by the library for
//! a tool (only a tool's `main` decides that a process handles signals).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signal that interrupted the process; 0 while none has.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// Armed by the first signal: the second ends the process.
static ARMED: AtomicBool = AtomicBool::new(false);

/// The signals a run handles: Ctrl-C and the polite `kill`.
const SIGNALS: [i32; 2] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

/// From now on SIGINT and SIGTERM are noted, not fatal, until a second.
pub fn install() -> Result<(), String> {
    for sig in SIGNALS {
        // Registered first, so the first signal finds the flag unarmed
        // and only arms it; the second finds it armed and exits.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, &ARMED)
            .and_then(|_| signal_hook::flag::register(sig, &ARMED))
            .and_then(|_| signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize))
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    Ok(())
}

/// The signal that interrupted the process, if one did.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => i32::try_from(s).ok(),
    }
}

/// `Err` naming the signal once one has come: what work that stops at its
/// next boundary returns.
pub fn check() -> Result<(), String> {
    match requested() {
        Some(sig) => Err(format!("interrupted by signal {sig}")),
        None => Ok(()),
    }
}

/// The process's exit status after `signal`, as the shell reports one.
pub fn exit_status(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(130)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Installing and raising would interrupt every other test of this
    // process's: `tests/interrupt.rs` signals real runs instead.
    #[test]
    fn the_exit_status_is_the_shells() {
        assert_eq!(exit_status(libc::SIGINT), 130);
        assert_eq!(exit_status(libc::SIGTERM), 143);
    }
}
