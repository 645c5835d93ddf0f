//! Ctrl-C. A run stops at its next epoch boundary on the first SIGINT and writes the
//! report so far, marked incomplete; a second SIGINT ends the process at once. A
//! command with nothing partial to write (`convert`, `record`, `inspect`) ends at
//! the first.
//!
//! The handler only touches atomics and calls async-signal-safe functions (`write`,
//! `unlink`, `_exit`): it sets [`STOP`], which the engine reads at every epoch
//! boundary, or removes the temporary files of unfinished outputs (registered by
//! [`super::output`]) and exits with code 130.
//!
//! SIGTERM (and SIGHUP, a closed terminal) end the process at once the same way,
//! with code 128 + the signal's number: no run is asked to stop, but no temporary
//! output file is left behind.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

/// Set by the first SIGINT of a command that stops gracefully; the engine ends its
/// runs at the next epoch boundary when it is set.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// SIGINTs received so far.
static RECEIVED: AtomicU32 = AtomicU32::new(0);

/// Whether the first SIGINT stops gracefully (true) or ends the process (false).
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Temporary files to remove when the process ends on a signal: NUL-terminated paths
/// leaked for the process's lifetime (a handler must never see one freed).
static TEMPS: [AtomicPtr<c_char>; 16] = [const { AtomicPtr::new(null_mut()) }; 16];

const STOPPING: &[u8] = b"\ntiersim: stopping at the next epoch boundary to write the partial report; Ctrl-C again aborts at once\n";

extern "C" fn on_sigint(_: libc::c_int) {
    if RECEIVED.fetch_add(1, Ordering::SeqCst) == 0 && GRACEFUL.load(Ordering::SeqCst) {
        STOP.store(true, Ordering::SeqCst);
        // SAFETY: write(2) is async-signal-safe; the buffer is a static.
        unsafe { libc::write(2, STOPPING.as_ptr().cast(), STOPPING.len()) };
        return;
    }
    remove_temps_and_exit(130);
}

extern "C" fn on_termination(signal: libc::c_int) {
    remove_temps_and_exit(128 + signal);
}

/// Removes the registered temporary files and ends the process with `code`; only
/// async-signal-safe calls, for the handlers.
fn remove_temps_and_exit(code: libc::c_int) -> ! {
    for t in &TEMPS {
        let p = t.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: unlink(2) is async-signal-safe; `p` is a leaked, NUL-terminated
            // path that is never freed.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: _exit(2) is async-signal-safe and ends the process without unwinding.
    unsafe { libc::_exit(code) }
}

/// Installs the SIGINT handler: with `graceful`, the first SIGINT sets [`STOP`] and
/// the second aborts; otherwise the first aborts. Aborting removes registered
/// temporary files and exits with code 130. SIGTERM and SIGHUP abort at once.
pub fn install(graceful: bool) {
    GRACEFUL.store(graceful, Ordering::SeqCst);
    let handlers: [(libc::c_int, extern "C" fn(libc::c_int)); 3] =
        [(libc::SIGINT, on_sigint), (libc::SIGTERM, on_termination), (libc::SIGHUP, on_termination)];
    for (signal, handler) in handlers {
        // SAFETY: a zeroed sigaction with a handler address and an empty mask is
        // valid; the handlers only do async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, null_mut());
        }
    }
}

/// Whether the first SIGINT has asked the runs to stop.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Registers a temporary file to remove if the process is aborted; returns its slot
/// for [`forget_temp`], or `None` when every slot is taken (the file is then left
/// behind on an abort, as before).
pub fn register_temp(path: &Path) -> Option<usize> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let raw = c.into_raw();
    for (i, t) in TEMPS.iter().enumerate() {
        if t.compare_exchange(null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return Some(i);
        }
    }
    // SAFETY: `raw` came from `CString::into_raw` above and was never shared.
    drop(unsafe { CString::from_raw(raw) });
    None
}

/// Stops removing the temporary file in `slot` on an abort (it was renamed or
/// removed). Its path stays allocated: a handler running now may still read it.
pub fn forget_temp(slot: usize) {
    TEMPS[slot].store(null_mut(), Ordering::SeqCst);
}
