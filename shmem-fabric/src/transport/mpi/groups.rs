//! MPI's collectives as the network's group-collectives capability: a communicator per
//! group (`MPI_Comm_create_group`, the world's own for the whole world in order), and
//! `MPI_Iallgather`, `MPI_Allgather(v)`, collect's runs (point-to-point rounds:
//! an exclusive scan, then runs of the target), `MPI_Bcast`, `MPI_(I)allreduce` (a user-defined
//! `MPI_Op` over a contiguous datatype of one element) and
//! `MPI_Alltoall` (vector datatypes for strided blocks) on it, and exchanges of one
//! message per pair of members (`MPI_Isend`/`MPI_Irecv` on a tag of their own, the
//! pieces after the first of a message past 32 KiB on the next tag).

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use super::ffi::{self, check};
use super::MpiNet;
use crate::error::RtError;
use crate::error::RtResult;
use crate::transport::groups::{
    BlockShape, CombineFn, Comm, Exchange, GroupCollectives, GroupOp, Peers, Reduction,
};

/// A non-blocking collective or exchange in flight (`exchange`): the request the shim
/// allocated, released by the test that finds it complete.
pub struct MpiRequest(Option<NonNull<c_void>>, bool);

/// The tag of the exchanges (`GroupCollectives::start_exchange`); their messages' later
/// pieces go on the next one.
const EXCHANGE_TAG: c_int = 2930;

// SAFETY: the request is the shim's handle, used only by the test that completes it; MPI
// runs at MPI_THREAD_SERIALIZED and the runtime makes a PE's MPI calls one at a time.
unsafe impl Send for MpiRequest {}
// SAFETY: as above; a test takes the request `&mut`.
unsafe impl Sync for MpiRequest {}

/// The Fortran handle of a communicator this capability made.
fn handle(comm: Comm) -> c_int {
    comm.0 as c_int
}

impl GroupCollectives for MpiNet {
    type Request = MpiRequest;

    fn supports(&self, op: GroupOp) -> bool {
        match op {
            GroupOp::Iallgather
            | GroupOp::Exchange
            | GroupOp::Allgather
            | GroupOp::Allgatherv
            | GroupOp::AllgatherRuns
            | GroupOp::Bcast
            | GroupOp::Allreduce
            | GroupOp::Alltoall => true,
        }
    }

    fn comm(&self, members: &[usize], tag: u64) -> RtResult<Comm> {
        let ranks: Vec<c_int> = members.iter().map(|&pe| pe as c_int).collect();
        let mut comm: c_int = 0;
        // SAFETY: `ranks` holds `members.len()` world ranks; a valid out-pointer.
        let rc = unsafe {
            ffi::shmem_mpi_comm_create(
                ranks.as_ptr(),
                ranks.len() as c_int,
                (tag % 32_749) as c_int,
                &mut comm,
            )
        };
        check(rc, "MPI_Comm_create_group")?;
        Ok(Comm(comm.into()))
    }

    fn free_comm(&self, comm: Comm) {
        // SAFETY: a communicator `comm` made, with no exchange in flight (the caller's
        // contract); the shim keeps the world's own. MPI_Comm_free is a local step in Open MPI and
        // MPICH (it drops a reference; context ids are agreed anew at each creation).
        let rc = unsafe { ffi::shmem_mpi_comm_free(handle(comm)) };
        // An error here is the library's own: end the job with MPI's message, as a call
        // that cannot return an error does.
        if let Err(err) = check(rc, "MPI_Comm_free") {
            crate::error::print_line(&err.to_string());
            self.abandon(1)
        }
    }

    unsafe fn start_allgather(
        &self,
        comm: Comm,
        send: &[u8],
        recv: *mut u8,
    ) -> RtResult<MpiRequest> {
        let mut request = std::ptr::null_mut();
        // SAFETY: `send` and `recv` stay valid until the test finds the exchange complete
        // (the caller's contract); a valid out-pointer.
        let rc = unsafe {
            ffi::shmem_mpi_iallgather_start(
                handle(comm),
                send.as_ptr().cast(),
                send.len() as c_int,
                recv.cast(),
                &mut request,
            )
        };
        check(rc, "MPI_Iallgather")?;
        Ok(MpiRequest(NonNull::new(request), false))
    }

    unsafe fn start_exchange(&self, comm: Comm, x: Exchange<'_>) -> RtResult<MpiRequest> {
        // SAFETY: the caller's contract.
        unsafe { self.start_exchange_among(comm, x, Peers::All, Peers::All) }
    }

    unsafe fn start_exchange_among(
        &self,
        comm: Comm,
        x: Exchange<'_>,
        to: Peers,
        from: Peers,
    ) -> RtResult<MpiRequest> {
        let (to_mode, to) = peers(to)?;
        let (from_mode, from) = peers(from)?;
        let mut request = std::ptr::null_mut();
        // SAFETY: the buffers stay valid until the test finds the exchange complete, and
        // no message is longer than `cap` (the caller's contract); a valid out-pointer.
        let rc = unsafe {
            ffi::shmem_mpi_exchange_start_among(
                handle(comm),
                EXCHANGE_TAG,
                count(x.n)?,
                count(x.me)?,
                x.head.as_ptr().cast(),
                count(x.head.len())?,
                x.data,
                i64::try_from(x.data_step).map_err(|_| too_large())?,
                count(x.data_len)?,
                x.recv,
                count(x.cap)?,
                x.lens,
                to_mode,
                to,
                from_mode,
                from,
                &mut request,
            )
        };
        check(rc, "MPI_Isend/MPI_Irecv")?;
        Ok(MpiRequest(NonNull::new(request), true))
    }

    fn test(&self, request: &mut MpiRequest) -> RtResult<bool> {
        let Some(pending) = request.0 else {
            return Ok(true);
        };
        let mut done: c_int = 0;
        // SAFETY: a request in flight, made by `start_exchange` (`request.1`) or another
        // start; a valid out-pointer.
        let rc = unsafe {
            if request.1 {
                ffi::shmem_mpi_exchange_test(pending.as_ptr(), &mut done)
            } else {
                ffi::shmem_mpi_iallgather_test(pending.as_ptr(), &mut done)
            }
        };
        check(rc, "MPI_Test")?;
        if done != 0 {
            // The shim released it.
            request.0 = None;
        }
        Ok(done != 0)
    }

    fn abandon(&self, code: i32) -> ! {
        super::abort_job(code);
        std::process::exit(code)
    }

    unsafe fn bcast(&self, comm: Comm, buf: *mut u8, len: usize, root: usize) -> RtResult<()> {
        check(
            // SAFETY: `buf` is valid for `len` bytes (the caller's contract).
            unsafe { ffi::shmem_mpi_bcast(handle(comm), buf.cast(), len, root as c_int) },
            "MPI_Bcast",
        )
    }

    unsafe fn allgather(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
    ) -> RtResult<()> {
        check(
            // SAFETY: `send` is null or holds `len` bytes, `recv` `len` per member (the
            // caller's contract).
            unsafe { ffi::shmem_mpi_allgather(handle(comm), send.cast(), len, recv.cast()) },
            "MPI_Allgather",
        )
    }

    unsafe fn allgatherv(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
        counts: &[i32],
        displs: &[i32],
    ) -> RtResult<()> {
        check(
            // SAFETY: the buffers hold what the counts and displacements say (the caller's
            // contract), one count and displacement per member.
            unsafe {
                ffi::shmem_mpi_allgatherv(
                    handle(comm),
                    send.cast(),
                    len,
                    recv.cast(),
                    counts.as_ptr(),
                    displs.as_ptr(),
                )
            },
            "MPI_Allgatherv",
        )
    }

    unsafe fn allgather_runs(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
        total: i32,
    ) -> RtResult<()> {
        check(
            // SAFETY: `send` holds `len` bytes and `recv` `total` (the caller's contract).
            unsafe {
                ffi::shmem_mpi_allgather_runs(handle(comm), send.cast(), len, recv.cast(), total)
            },
            "collect's runs (MPI_Sendrecv, MPI_Mprobe)",
        )
    }

    fn reduction(
        &self,
        combine: CombineFn,
        elem_bytes: usize,
        commutes: bool,
    ) -> RtResult<Reduction> {
        let (mut op, mut elem): (c_int, c_int) = (0, 0);
        // SAFETY: `combine` has `MPI_User_function`'s shape (pointers and an int
        // pointer); valid out-pointers.
        let rc = unsafe {
            ffi::shmem_mpi_op_create(
                combine,
                c_int::from(commutes),
                count(elem_bytes)?,
                &mut op,
                &mut elem,
            )
        };
        check(rc, "MPI_Op_create")?;
        Ok(Reduction {
            op: op.into(),
            elem: elem.into(),
        })
    }

    unsafe fn start_allreduce(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        elems: usize,
        with: Reduction,
    ) -> RtResult<MpiRequest> {
        let mut request = std::ptr::null_mut();
        // SAFETY: the buffers hold `elems` elements of `with` and stay valid until the
        // test finds the exchange complete (the caller's contract); a valid out-pointer.
        unsafe { allreduce(comm, send, recv, elems, with, &mut request)? };
        Ok(MpiRequest(NonNull::new(request), false))
    }

    unsafe fn allreduce(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        elems: usize,
        with: Reduction,
    ) -> RtResult<()> {
        // SAFETY: the buffers hold `elems` elements of `with` (the caller's contract); a
        // null request: blocking.
        unsafe { allreduce(comm, send, recv, elems, with, std::ptr::null_mut()) }
    }

    unsafe fn alltoall(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        shape: BlockShape,
    ) -> RtResult<()> {
        let fits = |stride: usize| {
            shape
                .nelems
                .checked_mul(stride)
                .and_then(|e| e.checked_mul(shape.size))
                .is_some_and(|bytes| isize::try_from(bytes).is_ok())
        };
        count(shape.nelems)?;
        count(shape.size)?;
        if !fits(shape.source_stride) || !fits(shape.target_stride) {
            return Err(too_large());
        }
        check(
            // SAFETY: the buffers hold every member's block at the strides (the caller's
            // contract); each count and extent fits the C types (checked above).
            unsafe {
                ffi::shmem_mpi_alltoall(
                    handle(comm),
                    send.cast(),
                    recv.cast(),
                    shape.nelems,
                    shape.size,
                    shape.source_stride,
                    shape.target_stride,
                )
            },
            "MPI_Alltoall",
        )
    }
}

/// `MPI_Allreduce` of `elems` elements of `with` from `send` (null: in place) into
/// `recv`, or `MPI_Iallreduce` started into `*request` when `request` is not null.
///
/// # Safety
/// The buffers must hold `elems` elements of `with` and, when started, stay valid until
/// the test finds the exchange complete; `request` must be null or valid for a write.
unsafe fn allreduce(
    comm: Comm,
    send: *const u8,
    recv: *mut u8,
    elems: usize,
    with: Reduction,
    request: *mut *mut c_void,
) -> RtResult<()> {
    // SAFETY: the caller's contract.
    let rc = unsafe {
        ffi::shmem_mpi_allreduce(
            handle(comm),
            send.cast(),
            recv.cast(),
            count(elems)?,
            with.op as c_int,
            with.elem as c_int,
            request,
        )
    };
    let call = if request.is_null() {
        "MPI_Allreduce"
    } else {
        "MPI_Iallreduce"
    };
    check(rc, call)
}

/// The shim's selection of the members `p` names (its `PEERS_` mode and member).
fn peers(p: Peers) -> RtResult<(c_int, c_int)> {
    Ok(match p {
        Peers::All => (0, 0),
        Peers::None => (1, 0),
        Peers::Only(m) => (2, count(m)?),
        Peers::AllBut(m) => (3, count(m)?),
    })
}

/// `n` as an MPI count (an `int`).
fn count(n: usize) -> RtResult<c_int> {
    c_int::try_from(n).map_err(|_| too_large())
}

/// The error of a count MPI's `int` cannot hold.
fn too_large() -> RtError {
    RtError::Config("a collective's count is more than MPI's int counts address".into())
}
