//! The calls of `shim.c` (compiled with the MPI's `mpicc`), and their errors as
//! [`RtError::Mpi`]. The shim keeps MPI's handles on the C side: a network instance's
//! window lives in a [`NetHandle`] the Rust side holds by pointer, communicators are
//! named by their Fortran handles, a non-blocking exchange by a pointer the shim made.
//!
//! The shim is a shared library of its own (linked against MPI by `mpicc`), carried inside
//! the program and loaded — with MPI — only when a process joins an MPI job ([`load`]): a
//! program built with the `mpi` feature that runs on one node's shared memory maps no MPI
//! library (Open MPI's cost each process 1.8 MB of resident memory and milliseconds of
//! start-up).

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use crate::error::{RtError, RtResult};

/// The shim's `struct shmem_mpi_net` (opaque here).
#[repr(C)]
pub(super) struct NetHandle {
    _opaque: [u8; 0],
}

/// The shim's functions: each is an `unsafe fn` of the same name and signature that calls
/// the loaded shim's (the contract of each is the C function's, see `shim.c`).
macro_rules! shim_functions {
    ($($vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// The shim's entry points, resolved once when it is loaded.
        struct Shim {
            $($name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)*
        }

        impl Shim {
            /// Looks up every entry point in the loaded library `lib`.
            fn resolve(lib: *mut c_void) -> Result<Shim, String> {
                Ok(Shim {
                    $($name: {
                        let address = symbol(lib, concat!(stringify!($name), "\0"))?;
                        // SAFETY: `address` is the shim's function of this name, compiled
                        // from shim.c with exactly this C signature.
                        unsafe {
                            std::mem::transmute::<
                                *mut c_void,
                                unsafe extern "C" fn($($ty),*) $(-> $ret)?,
                            >(address)
                        }
                    },)*
                })
            }
        }

        $(
            // Each wrapper has the C function's parameters, however many it takes.
            #[allow(clippy::too_many_arguments)]
            $vis unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the caller keeps the C function's contract.
                unsafe { (shim().$name)($($arg),*) }
            }
        )*
    };
}

shim_functions! {
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
    pub(super) fn shmem_mpi_get_issue(
        net: *mut NetHandle,
        dst: *mut c_void,
        len: usize,
        pe: c_int,
        off: usize,
    ) -> c_int;
    pub(super) fn shmem_mpi_strided(
        net: *mut NetHandle,
        put: c_int,
        buf: *mut c_void,
        local: usize,
        pe: c_int,
        off: usize,
        remote: usize,
        elem: usize,
        count: usize,
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
    pub(super) fn shmem_mpi_load_within(
        net: *mut NetHandle,
        pe: c_int,
        off: usize,
        seconds: f64,
        value: *mut u64,
        done: *mut c_int,
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
    pub(super) fn shmem_mpi_exchange_start_among(
        handle: c_int,
        tag: c_int,
        n: c_int,
        me: c_int,
        head: *const c_void,
        head_len: c_int,
        data: *const u8,
        data_step: i64,
        data_len: c_int,
        recv: *mut u8,
        cap: c_int,
        lens: *mut c_int,
        to_mode: c_int,
        to: c_int,
        from_mode: c_int,
        from: c_int,
        request: *mut *mut c_void,
    ) -> c_int;
    pub(super) fn shmem_mpi_exchange_test(request: *mut c_void, done: *mut c_int) -> c_int;
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
    pub(super) fn shmem_mpi_allgather_runs(
        handle: c_int,
        send: *const c_void,
        len: c_int,
        recv: *mut c_void,
        total: c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_op_create(
        combine: crate::transport::groups::CombineFn,
        commute: c_int,
        bytes: c_int,
        op: *mut c_int,
        datatype: *mut c_int,
    ) -> c_int;
    pub(super) fn shmem_mpi_allreduce(
        handle: c_int,
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        op: c_int,
        datatype: c_int,
        request: *mut *mut c_void,
    ) -> c_int;
    pub(super) fn shmem_mpi_alltoall(
        handle: c_int,
        send: *const c_void,
        recv: *mut c_void,
        nelems: usize,
        size: usize,
        source_stride: usize,
        target_stride: usize,
    ) -> c_int;
    pub(super) fn shmem_mpi_abort(code: c_int);
    pub(super) fn shmem_mpi_finalize() -> c_int;
}

/// The shim library, built by build.rs (`mpicc -shared`), carried in the program.
const SHIM_LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libshmem_mpi_shim.so"));

/// The loaded shim: set by [`load`].
static SHIM: OnceLock<Shim> = OnceLock::new();

/// The loaded shim's entry points.
///
/// # Panics
/// If [`load`] has not succeeded: every caller runs after `join` loaded it.
fn shim() -> &'static Shim {
    SHIM.get()
        .expect("the MPI shim is loaded when the process joins an MPI job")
}

/// Whether this process loaded the shim, which it does on joining an MPI job: MPI can be
/// running only then.
pub(super) fn loaded() -> bool {
    SHIM.get().is_some()
}

/// Loads the shim, and with it the MPI library it is linked against (once per process):
/// written to a memory file, opened with `dlopen` (`RTLD_GLOBAL`: MPI's own plug-ins
/// resolve their symbols against it).
pub(super) fn load() -> RtResult<()> {
    if SHIM.get().is_some() {
        return Ok(());
    }
    let shim = open_shim().map_err(|message| RtError::Mpi {
        call: "dlopen",
        message,
    })?;
    let _ = SHIM.set(shim);
    Ok(())
}

fn open_shim() -> Result<Shim, String> {
    let lib = match std::env::var_os(crate::config::env::MPI_SHIM) {
        Some(path) if !path.is_empty() => open_file(&path)?,
        _ => open_carried()?,
    };
    check_digest(lib)?;
    Shim::resolve(lib)
}

/// The carried shim, written to a memory file and opened.
fn open_carried() -> Result<*mut c_void, String> {
    // SAFETY: a NUL-terminated name; the flags are valid.
    let fd = unsafe { libc::memfd_create(c"shmem-mpi-shim".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "cannot create a memory file for the MPI shim: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fd` was just created and is owned here alone.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    std::io::Write::write_all(&mut file, SHIM_LIBRARY)
        .map_err(|e| format!("cannot write the MPI shim to a memory file: {e}"))?;
    let lib = open_file(std::ffi::OsStr::new(&format!("/proc/self/fd/{fd}")));
    drop(file);
    lib
}

/// The shim library at `path`, opened (`RTLD_GLOBAL`: MPI's own plug-ins resolve their
/// symbols against it).
fn open_file(path: &std::ffi::OsStr) -> Result<*mut c_void, String> {
    let name = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path))
        .map_err(|_| format!("the MPI shim's path {path:?} holds a NUL byte"))?;
    // SAFETY: a NUL-terminated path; the library's initialisers are MPI's and the shim's.
    let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if lib.is_null() {
        return Err(format!("cannot load the MPI shim {path:?}: {}", dl_error()));
    }
    Ok(lib)
}

/// Refuses a shim built from another `shim.c` than this program's: its functions could
/// have other signatures. build.rs gives the shim and this crate the source's digest.
fn check_digest(lib: *mut c_void) -> Result<(), String> {
    const EXPECTED: &str = env!("SHIM_SOURCE_DIGEST");
    let address = symbol(lib, "shmem_mpi_shim_digest\0")?;
    // SAFETY: the shim's `unsigned long long shmem_mpi_shim_digest(void)` (a shim without
    // it failed above).
    let digest =
        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> u64>(address)() };
    if digest.to_string() == EXPECTED {
        Ok(())
    } else {
        Err(format!(
            "the MPI shim (SHMEM_MPI_SHIM) is built from another version of shim.c than \
             this program's (digest {digest}, expected {EXPECTED}): build it from the \
             same sources (CARGO_TARGET_DIR=DIR MPICC=... cargo build -p shmem-fabric \
             --features mpi)"
        ))
    }
}

/// The address of the NUL-terminated symbol `name` in `lib`.
fn symbol(lib: *mut c_void, name: &str) -> Result<*mut c_void, String> {
    // SAFETY: `lib` is a handle from dlopen; `name` ends in NUL.
    let address = unsafe { libc::dlsym(lib, name.as_ptr().cast()) };
    if address.is_null() {
        Err(format!(
            "the MPI shim has no {}: {}",
            name.trim_end_matches('\0'),
            dl_error()
        ))
    } else {
        Ok(address)
    }
}

/// The dynamic loader's message for its last failure.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message valid until the next call.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: as above; copied at once.
        unsafe { std::ffi::CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Completion a put waits for (`shmem_mpi_put`'s last argument).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(super) enum PutCompletion {
    /// None until the next flush: the source must stay until then.
    Deferred = 0,
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
    /// An add that fetches nothing (`MPI_Accumulate`; the old value reads 0).
    AddUpdate = 8,
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
