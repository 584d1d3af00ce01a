//! MPI's collectives as the network's group-collectives capability: a communicator per
//! group (`MPI_Comm_create_group`, the world's own for the whole world in order), and
//! `MPI_Iallgather`, `MPI_Allgather(v)` and `MPI_Bcast` on it.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use super::ffi::{self, check};
use super::MpiNet;
use crate::error::RtResult;
use crate::transport::groups::{Comm, GroupCollectives, GroupOp};

/// An `MPI_Iallgather` in flight: the request the shim allocated, released by the test
/// that finds it complete.
pub struct MpiRequest(Option<NonNull<c_void>>);

/// The Fortran handle of a communicator this capability made.
fn handle(comm: Comm) -> c_int {
    comm.0 as c_int
}

impl GroupCollectives for MpiNet {
    type Request = MpiRequest;

    fn supports(&self, op: GroupOp) -> bool {
        match op {
            GroupOp::Iallgather | GroupOp::Allgather | GroupOp::Allgatherv | GroupOp::Bcast => true,
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
        Ok(MpiRequest(NonNull::new(request)))
    }

    fn test(&self, request: &mut MpiRequest) -> RtResult<bool> {
        let Some(pending) = request.0 else {
            return Ok(true);
        };
        let mut done: c_int = 0;
        // SAFETY: a request in flight, made by `start_allgather`; a valid out-pointer.
        let rc = unsafe { ffi::shmem_mpi_iallgather_test(pending.as_ptr(), &mut done) };
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
}
