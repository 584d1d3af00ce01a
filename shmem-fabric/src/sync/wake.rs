//! Futex primitives: sleeping on a 32-bit word of shared memory and waking its sleepers,
//! across processes (the non-private futex operations work on shared mappings).

use std::time::Duration;

/// Sleeps while the 32-bit word at `word` holds `expected`, at most `timeout`; returns
/// early on a wake-up, a signal, or a changed word (spurious returns are the caller's to
/// handle).
///
/// # Safety
/// `word` must be a valid, 4-aligned address of shared memory for the whole call.
pub(crate) unsafe fn futex_wait(word: *const u32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is valid and aligned (the caller's contract); FUTEX_WAIT (not the
    // private variant) works across processes; the kernel only reads the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every sleeper on the 32-bit word at `word`.
///
/// # Safety
/// `word` must be a valid, 4-aligned address.
#[inline]
pub(crate) unsafe fn futex_wake(word: *const u32) {
    // SAFETY: valid and aligned (the caller's contract); waking has no other
    // preconditions and does not access the word.
    unsafe {
        libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAKE, i32::MAX);
    }
}

/// A full barrier for the processor between this thread's earlier stores and later
/// loads. On x86-64 a locked read-modify-write of the stack does that (as Linux's
/// `smp_mb`) at a fraction of the cost of `mfence`; elsewhere a sequentially consistent
/// fence.
#[inline]
pub(crate) fn store_load_fence() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: adds 0 to the word at the stack pointer, which is this thread's own mapped
    // stack: its value does not change; the locked instruction is a full barrier for the
    // processor, and the asm block (not `nomem`) one for the compiler.
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp], 0", options(nostack));
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}
