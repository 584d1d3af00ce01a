//! What `#[shmem_typed::main]` expands to: start the PEs if the program was started
//! directly, otherwise join the job, run the user's main, finalize, and turn the result
//! into the process's exit status.

use std::fmt::Display;

use crate::pe::Pe;

/// What an SPMD main may return: `()` or `Result<(), E>` with a printable error.
#[diagnostic::on_unimplemented(
    message = "the SPMD main cannot return `{Self}`",
    label = "return `()` or `Result<(), E>` where `E: Display`",
    note = "each PE prints an `Err` as `PE <n>: error: <E>` and the program exits with status 1"
)]
pub trait MainResult {
    /// `Err(message)` for a failed PE.
    fn into_outcome(self) -> Result<(), String>;
}

impl MainResult for () {
    fn into_outcome(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Display> MainResult for Result<(), E> {
    fn into_outcome(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// Runs `body` as the SPMD program. Never returns: the process exits with 0 when every
/// step succeeded, 1 when `body` or finalize failed (the error is printed with the PE
/// number), 2 when SHMEM could not start.
pub fn run_main<R: MainResult>(default_npes: usize, body: impl FnOnce(&mut Pe) -> R) -> ! {
    if !shmem_rt::is_pe() {
        // Returns only in a PE (forked from the supervisor, or started anew).
        shmem_rt::__private::self_start_or_become_pe(default_npes);
    }
    let mut pe = match Pe::init() {
        Ok(pe) => pe,
        Err(e) => {
            shmem_rt::__private::print_line(&format!("error: cannot start SHMEM: {e}"));
            std::process::exit(2);
        }
    };
    let me = pe.my_pe();
    if let Err(msg) = body(&mut pe).into_outcome() {
        shmem_rt::__private::print_line(&format!("PE {me}: error: {msg}"));
        std::process::exit(1);
    }
    if let Err(e) = pe.finalize() {
        shmem_rt::__private::print_line(&format!("PE {me}: error: {e}"));
        std::process::exit(1);
    }
    std::process::exit(0)
}
