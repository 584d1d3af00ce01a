//! The calls of `shim.c` (compiled with the MPI's `mpicc`), and their errors as
//! [`RtError::Mpi`]. The shim keeps MPI's handles on the C side: a network instance's
//! window lives in a [`NetHandle`] the Rust side holds by pointer, communicators are
//! named by their Fortran handles, a non-blocking exchange by a pointer the shim made.

use std::ffi::{c_char, c_int, c_void};

use crate::error::{RtError, RtResult};

/// The shim's `struct shmem_mpi_net` (opaque here).
#[repr(C)]
pub(super) struct NetHandle {
    _opaque: [u8; 0],
}

extern "C" {
    pub(super) fn shmem_mpi_net_new() -> *mut NetHandle;
    pub(super) fn shmem_mpi_net_free(net: *mut NetHandle);
    pub(super) fn shmem_mpi_win_free(net: *mut NetHandle) -> c_int;
    pub(super) fn shmem_mpi_comm_free(handle: c_int) -> c_int;
    fn shmem_mpi_error_string(code: c_int, buf: *mut c_char, len: c_int) -> c_int;
    fn shmem_mpi_library_version(buf: *mut c_char, len: c_int);
    pub(super) fn shmem_mpi_init(rank: *mut c_int, size: *mut c_int, provided: *mut c_int)
        -> c_int;
    pub(super) fn shmem_mpi_node_split(
        group: c_int,
        node_rank: *mut c_int,
        node_size: *mut c_int,
        leaders: *mut c_int,
        indexes: *mut c_int,
        node_handle: *mut c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_node_bcast(node_handle: c_int, buf: *mut c_void, len: c_int) -> c_int;
    pub(super) fn shmem_mpi_node_barrier(node_handle: c_int) -> c_int;
    pub(super) fn shmem_mpi_allreduce_u64(values: *mut u64, count: c_int, max: c_int) -> c_int;
    pub(super) fn shmem_mpi_connect_all() -> c_int;
    pub(super) fn shmem_mpi_win_create(net: *mut NetHandle, base: *mut c_void, len: usize)
        -> c_int;
    pub(super) fn shmem_mpi_win_unified(net: *mut NetHandle, unified: *mut c_int) -> c_int;
    pub(super) fn shmem_mpi_put(
        net: *mut NetHandle,
        src: *const c_void,
        len: usize,
        pe: c_int,
        off: usize,
        completion: c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_get(
        net: *mut NetHandle,
        dst: *mut c_void,
        len: usize,
        pe: c_int,
        off: usize,
    ) -> c_int;
    pub(super) fn shmem_mpi_amo(
        net: *mut NetHandle,
        bytes: c_int,
        code: c_int,
        operand: u64,
        cond: u64,
        pe: c_int,
        off: usize,
        old: *mut u64,
    ) -> c_int;
    pub(super) fn shmem_mpi_flush_all(net: *mut NetHandle) -> c_int;
    pub(super) fn shmem_mpi_win_sync(net: *mut NetHandle) -> c_int;
    pub(super) fn shmem_mpi_progress() -> c_int;
    pub(super) fn shmem_mpi_comm_create(
        ranks: *const c_int,
        n: c_int,
        tag: c_int,
        handle: *mut c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_iallgather_start(
        handle: c_int,
        send: *const c_void,
        len: c_int,
        recv: *mut c_void,
        request: *mut *mut c_void,
    ) -> c_int;
    pub(super) fn shmem_mpi_iallgather_test(request: *mut c_void, done: *mut c_int) -> c_int;
    pub(super) fn shmem_mpi_bcast(
        handle: c_int,
        buf: *mut c_void,
        len: usize,
        root: c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_allgather(
        handle: c_int,
        send: *const c_void,
        len: c_int,
        recv: *mut c_void,
    ) -> c_int;
    pub(super) fn shmem_mpi_allgatherv(
        handle: c_int,
        send: *const c_void,
        len: c_int,
        recv: *mut c_void,
        counts: *const c_int,
        displs: *const c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_abort(code: c_int);
    pub(super) fn shmem_mpi_finalize() -> c_int;
}

/// Completion a put waits for (`shmem_mpi_put`'s last argument).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(super) enum PutCompletion {
    /// The source may be reused.
    Local = 1,
    /// Delivered at the target.
    Remote = 2,
}

/// Atomic operation codes of `shmem_mpi_amo`.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(super) enum AmoCode {
    Fetch = 0,
    Set = 1,
    Swap = 2,
    CompareSwap = 3,
    Add = 4,
    And = 5,
    Or = 6,
    Xor = 7,
}

/// MPI's text for error code `code`.
pub(super) fn error_string(code: c_int) -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the buffer holds `len` bytes; the shim writes at most `len - 1` and a NUL.
    let n = unsafe { shmem_mpi_error_string(code, buf.as_mut_ptr(), buf.len() as c_int) };
    let bytes: Vec<u8> = buf[..n.max(0) as usize].iter().map(|&c| c as u8).collect();
    match String::from_utf8_lossy(&bytes).trim() {
        "" => format!("MPI error code {code}"),
        text => text.to_string(),
    }
}

/// The MPI library's own version line (first line of `MPI_Get_library_version`).
pub(super) fn library_version() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: as in `error_string`.
    unsafe { shmem_mpi_library_version(buf.as_mut_ptr(), buf.len() as c_int) };
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// `Ok` for `MPI_SUCCESS`, else the error of `call`.
pub(super) fn check(rc: c_int, call: &'static str) -> RtResult<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(RtError::Mpi {
            call,
            message: error_string(rc),
        })
    }
}
