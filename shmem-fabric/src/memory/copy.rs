//! The race-tolerant copy: how every byte of data crosses between symmetric memory and
//! a PE's private memory (or between two places of symmetric memory).
//!
//! Other PEs may write symmetric memory at any time — a correct program does not while a
//! call reads it, but a wrong one may, and safe code must not turn that into undefined
//! behaviour. A plain `memcpy` or a `&[T]` over such memory would let the compiler assume
//! nothing else writes it; this copy gives the compiler nothing to assume. Up to 16 bytes
//! the bytes move through volatile loads and stores of unaligned words (the accesses the
//! language provides for memory that something outside the program changes), inlined
//! into the caller; 17-64 bytes, out of line, through 16-byte moves of inline assembly
//! on x86-64 (an unaligned volatile word of 16 bytes goes through the stack), or inlined
//! by [`copy_small`] and [`copy_fixed`] for the few copies on a collective's critical
//! path; above, on
//! x86-64, through inline assembly too (an opaque instruction sequence, as for
//! memory-mapped I/O), elsewhere (and under Miri, which runs no assembly) through
//! volatile words (up to 64 bytes) and relaxed atomic loads and stores. A racing write
//! then yields bytes of either version — a torn value of a `Pod` type, never UB.
//!
//! Speed: above 64 bytes, 16-byte SSE2 moves up to `REP_MOVSB_MIN`, then `rep movsb`,
//! which matches `memcpy` at those sizes on current x86-64 processors (ERMSB/FSRM); the
//! benchmark's copy floors measure it.

/// From this many bytes on, `rep movsb` (the processor's own fast string copy) moves
/// the data.
const REP_MOVSB_MIN: usize = 2048;

/// Copies `len` bytes from `src` to `dst`, which must not overlap unless they are equal
/// (then nothing is done). Either side may be memory that other processes write at the
/// same time.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `len` bytes (no alignment is
/// required), and neither may be a Rust reference's referent that the copy violates
/// (`dst` must not be memory behind a live `&T`).
#[inline(always)]
pub unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    if len == 0 || std::ptr::eq(src, dst) {
        return;
    }
    if len <= 16 {
        // SAFETY: the caller's contract, passed on; `1 <= len <= 16`.
        unsafe { small(src, dst, len) }
    } else if len <= 64 {
        // SAFETY: the caller's contract, passed on; `17 <= len <= 64`.
        unsafe { small_wide(src, dst, len) }
    } else {
        // SAFETY: the caller's contract, passed on; `len > 64`.
        unsafe { arch::copy(src, dst, len) }
    }
}

/// A word of `N` bytes with alignment 1, for unaligned volatile accesses.
#[repr(C, packed)]
#[derive(Clone, Copy)]
struct Unaligned<W: Copy>(W);

/// Moves a `W` from `src` to `dst` with one volatile load and one volatile store.
///
/// # Safety
/// `src` and `dst` must be valid for `size_of::<W>()` bytes.
#[inline(always)]
unsafe fn move_word<W: Copy>(src: *const u8, dst: *mut u8) {
    // SAFETY: valid for the word's bytes (the caller's contract); `Unaligned` has
    // alignment 1, so any address is aligned for it.
    let word = unsafe { std::ptr::read_volatile(src.cast::<Unaligned<W>>()) };
    // SAFETY: as the load, for `dst`.
    unsafe { std::ptr::write_volatile(dst.cast::<Unaligned<W>>(), word) };
}

/// Moves 16 bytes from `src` to `dst`: one unaligned SSE load into a register and one
/// store from it, in inline assembly (as opaque to the compiler as the volatile
/// accesses): a volatile access of an unaligned (packed) 16-byte word compiles to a copy
/// through the stack, eight instructions for one move.
///
/// # Safety
/// `src` and `dst` must be valid for 16 bytes.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
unsafe fn move_16(src: *const u8, dst: *mut u8) {
    // SAFETY: reads 16 bytes at `src` and writes 16 at `dst` (valid by the caller's
    // contract), with no alignment required; clobbers only the register named, touches
    // no stack and no flags.
    unsafe {
        std::arch::asm!(
            "movdqu {t}, xmmword ptr [{s}]",
            "movdqu xmmword ptr [{d}], {t}",
            s = in(reg) src,
            d = in(reg) dst,
            t = out(xmm_reg) _,
            options(nostack, preserves_flags),
        )
    }
}

/// [`move_word`] of 16 bytes where there is no assembly (and under Miri).
///
/// # Safety
/// `src` and `dst` must be valid for 16 bytes.
#[cfg(any(not(target_arch = "x86_64"), miri))]
#[inline(always)]
unsafe fn move_16(src: *const u8, dst: *mut u8) {
    // SAFETY: the caller's contract, passed on.
    unsafe { move_word::<u128>(src, dst) }
}

/// Copies `1..=16` bytes with overlapping unaligned words: every move reads only
/// `src..src + len` and writes only `dst..dst + len`, and overlapping moves copy the same
/// source bytes to the same destination bytes twice.
///
/// # Safety
/// As [`copy`], with `1 <= len <= 16`.
#[inline(always)]
unsafe fn small(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: in every arm, every offset stays inside the ranges (`len - n >= 0` in the arm
    // of size n), which the caller guarantees valid.
    unsafe {
        match len {
            1..=3 => {
                move_word::<u8>(src, dst);
                move_word::<u8>(src.add(len / 2), dst.add(len / 2));
                move_word::<u8>(src.add(len - 1), dst.add(len - 1));
            }
            4..=7 => {
                move_word::<u32>(src, dst);
                move_word::<u32>(src.add(len - 4), dst.add(len - 4));
            }
            8 => {
                move_word::<u64>(src, dst);
            }
            _ => {
                move_word::<u64>(src, dst);
                move_word::<u64>(src.add(len - 8), dst.add(len - 8));
            }
        }
    }
}

/// Copies `17..=64` bytes with two or four overlapping unaligned 16-byte words, as
/// [`small`] does shorter lengths. Out of line: the 16-byte moves (inline assembly on
/// x86-64) would otherwise sit in every caller, changing its register use and inlining
/// for every length (measured: a few more instructions in the 8-byte calls of the
/// collectives); a call costs fewer than it saves over the volatile form.
///
/// # Safety
/// As [`copy`], with `17 <= len <= 64`.
#[inline(never)]
unsafe fn small_wide(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract, passed on.
    unsafe { wide_moves(src, dst, len) }
}

/// The moves of [`small_wide`], inlined.
///
/// # Safety
/// As [`small_wide`].
#[inline(always)]
unsafe fn wide_moves(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: every offset stays inside the ranges (`len >= 17`; `len >= 33` where 32 is
    // subtracted), which the caller guarantees valid.
    unsafe {
        move_16(src, dst);
        move_16(src.add(len - 16), dst.add(len - 16));
        if len > 32 {
            move_16(src.add(16), dst.add(16));
            move_16(src.add(len - 32), dst.add(len - 32));
        }
    }
}

/// [`copy`] of at most 64 bytes, wholly inlined (17-64 bytes too, which [`copy`] moves
/// out of line): for the few copies on a collective's critical path.
///
/// # Safety
/// As [`copy`], with `len <= 64`.
#[inline(always)]
pub unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    debug_assert!(len <= 64);
    if len == 0 || std::ptr::eq(src, dst) {
        return;
    }
    // SAFETY: the caller's contract, passed on, with the length each arm needs.
    unsafe {
        if len <= 16 {
            small(src, dst, len);
        } else {
            wide_moves(src, dst, len);
        }
    }
}

/// [`copy`] of exactly `N` bytes (a multiple of 16, at most 64; the ranges must not
/// overlap), inlined: `N / 16` moves of 16 bytes where [`copy`] would dispatch on the
/// length (and call out of line above 16 bytes).
///
/// # Safety
/// As [`copy`], with `len` `N`.
#[inline(always)]
pub unsafe fn copy_fixed<const N: usize>(src: *const u8, dst: *mut u8) {
    const { assert!(N % 16 == 0 && N <= 64) };
    // SAFETY: every offset stays inside the `N` bytes the caller guarantees valid.
    unsafe {
        for at in (0..N).step_by(16) {
            move_16(src.add(at), dst.add(at));
        }
    }
}

/// Sets `len` bytes at `dst` to zero; `dst` may be memory that other processes write at
/// the same time.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes and not behind a live `&T`.
#[inline]
pub(crate) unsafe fn zero(dst: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: writes only `dst..dst + len` (valid by the caller's contract); the
    // direction flag is clear (the ABI guarantees it).
    unsafe {
        std::arch::asm!(
            "rep stosb",
            inout("rcx") len => _,
            inout("rdi") dst => _,
            in("al") 0u8,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    for i in 0..len {
        // SAFETY: inside `dst..dst + len`; atomics tolerate concurrent writers.
        unsafe { std::sync::atomic::AtomicU8::from_ptr(dst.add(i)) }
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod arch {
    use super::REP_MOVSB_MIN;
    use std::arch::asm;

    /// See [`super::copy`]; `len > 64`.
    #[inline(never)]
    pub(super) unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
        // SAFETY: in every block, each move reads only from `src..src + len` and writes only
        // to `dst..dst + len` (valid by the caller's contract); the last 64 bytes, copied
        // by `small` when the length is not a multiple of 64, overlap the loop's last
        // block, copying the same source bytes to the same destination bytes twice. The
        // blocks touch no stack (`nostack`) and clobber only the registers named.
        unsafe {
            match len {
                65..REP_MOVSB_MIN => {
                    // Whole 64-byte blocks, then the last 64 bytes (overlapping the last
                    // block when the length is not a multiple of 64).
                    asm!(
                        "2:",
                        "movdqu xmm0, xmmword ptr [{s}]",
                        "movdqu xmm1, xmmword ptr [{s} + 16]",
                        "movdqu xmm2, xmmword ptr [{s} + 32]",
                        "movdqu xmm3, xmmword ptr [{s} + 48]",
                        "movdqu xmmword ptr [{d}], xmm0",
                        "movdqu xmmword ptr [{d} + 16], xmm1",
                        "movdqu xmmword ptr [{d} + 32], xmm2",
                        "movdqu xmmword ptr [{d} + 48], xmm3",
                        "add {s}, 64",
                        "add {d}, 64",
                        "dec {blocks}",
                        "jnz 2b",
                        s = inout(reg) src => _,
                        d = inout(reg) dst => _,
                        blocks = inout(reg) len / 64 => _,
                        out("xmm0") _,
                        out("xmm1") _,
                        out("xmm2") _,
                        out("xmm3") _,
                        options(nostack),
                    );
                    if len % 64 != 0 {
                        super::small_wide(src.add(len - 64), dst.add(len - 64), 64);
                    }
                }
                _ => asm!(
                    // The direction flag is clear (the ABI guarantees it): forward copy.
                    "rep movsb",
                    inout("rcx") len => _,
                    inout("rsi") src => _,
                    inout("rdi") dst => _,
                    options(nostack, preserves_flags),
                ),
            }
        }
    }
}

#[cfg(any(not(target_arch = "x86_64"), miri))]
mod arch {
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

    /// See [`super::copy`]: relaxed atomic bytes up to 8-byte alignment of the source,
    /// then atomic words where the destination is aligned too, then bytes.
    #[inline]
    pub(super) unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
        let mut i = 0;
        // SAFETY: every access lies inside the two ranges (the caller's contract)
        // and is aligned for its atomic type; atomics tolerate concurrent writers.
        unsafe {
            let byte = |i: usize| {
                let v = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed);
                AtomicU8::from_ptr(dst.add(i)).store(v, Relaxed);
            };
            while i < len && (src as usize + i) % 8 != 0 {
                byte(i);
                i += 1;
            }
            if (dst as usize + i) % 8 == 0 {
                while i + 8 <= len {
                    let v = AtomicU64::from_ptr(src.add(i).cast_mut().cast()).load(Relaxed);
                    AtomicU64::from_ptr(dst.add(i).cast()).store(v, Relaxed);
                    i += 8;
                }
            }
            while i < len {
                byte(i);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy;

    #[test]
    fn zero_clears_exactly_its_range() {
        for len in [0, 1, 7, 64, 5000] {
            let mut buf = vec![0xeeu8; len + 2];
            // SAFETY: the buffer holds 1 + len bytes from the offset used.
            unsafe { super::zero(buf.as_mut_ptr().add(1), len) };
            assert_eq!(buf[0], 0xee);
            assert!(buf[1..1 + len].iter().all(|&b| b == 0));
            assert_eq!(buf[1 + len], 0xee);
        }
    }

    #[test]
    fn every_length_and_misalignment_copies_exactly() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in (0..300).chain([2047, 2048, 2049, 4095, 4096]) {
            for (s_off, d_off) in [(0, 0), (3, 1), (1, 6), (7, 7)] {
                let mut dst = vec![0xeeu8; len + 16];
                // SAFETY: both buffers hold the ranges used.
                unsafe { copy(src.as_ptr().add(s_off), dst.as_mut_ptr().add(d_off), len) };
                assert!(dst[..d_off].iter().all(|&b| b == 0xee), "len {len}");
                assert_eq!(
                    &dst[d_off..d_off + len],
                    &src[s_off..s_off + len],
                    "len {len}"
                );
                assert!(dst[d_off + len..].iter().all(|&b| b == 0xee), "len {len}");
            }
        }
    }
}
