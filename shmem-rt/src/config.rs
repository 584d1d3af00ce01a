//! The launcher's side of the job's configuration: the PE count (`-n`, `SHMEM_NPES`),
//! checked mode, and whether the job fits the machine. The variables and what a PE reads
//! when it joins (sizes, active sets, an MPI launch) are the fabric's
//! (`shmem_fabric::config`), re-exported here.

pub use shmem_fabric::config::*;

use crate::error::{RtError, RtResult};

/// Whether checked mode is on: `SHMEM_CHECKED=1|0`, else on in debug builds.
pub(crate) fn checked_from_env() -> bool {
    match std::env::var(env::CHECKED).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    }
}

/// PE count when neither `-n` nor `SHMEM_NPES` says otherwise: one per CPU this process
/// may use, and at least two so that a program is parallel by default.
pub fn default_npes() -> usize {
    available_cpus().clamp(2, MAX_NPES)
}

/// Parses a PE count (from `-n` or `SHMEM_NPES`); `source` names it in the error.
pub fn parse_npes(text: &str, source: &str) -> RtResult<usize> {
    let trimmed = text.trim();
    let bad = |why: &str| {
        RtError::Config(format!(
            "invalid PE count {source}={text:?}: {why} (expected a whole number from 1 to {MAX_NPES})"
        ))
    };
    if trimmed.starts_with('-') {
        return Err(bad("it is negative"));
    }
    let n: usize = trimmed.parse().map_err(|e| bad(number_problem(&e)))?;
    if n == 0 {
        return Err(bad("a job needs at least one PE"));
    }
    if n > MAX_NPES {
        return Err(bad("too large"));
    }
    Ok(n)
}

/// Reads `SHMEM_NPES`, falling back to `default` when unset.
pub(crate) fn npes_from_env(default: usize) -> RtResult<usize> {
    match std::env::var("SHMEM_NPES") {
        Ok(v) => parse_npes(&v, "SHMEM_NPES"),
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => Err(RtError::Config(
            "invalid PE count SHMEM_NPES: not valid UTF-8".into(),
        )),
    }
}

/// Physical memory of this machine, in bytes.
pub fn physical_memory() -> usize {
    // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return usize::MAX;
    }
    (pages as usize).saturating_mul(page as usize)
}

/// Checks that `npes` partitions of `part_size` bytes fit in the machine's memory.
pub(crate) fn check_fits_in_memory(npes: usize, part_size: usize) -> RtResult<()> {
    let total = npes.checked_mul(part_size);
    let phys = physical_memory();
    match total {
        Some(t) if t <= phys => Ok(()),
        _ => Err(RtError::Config(format!(
            "SHMEM_SYMMETRIC_SIZE of {part_size} bytes per PE times {npes} PEs exceeds this machine's memory ({phys} bytes)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npes_accepts_whole_numbers_and_rejects_the_rest() {
        assert_eq!(parse_npes("4", "-n"), Ok(4));
        assert_eq!(parse_npes(" 1 ", "-n"), Ok(1));
        for bad in ["0", "-1", "abc", "100000", "", "2.5"] {
            let err = parse_npes(bad, "SHMEM_NPES").unwrap_err().to_string();
            assert!(err.starts_with("invalid PE count SHMEM_NPES="), "{err}");
        }
    }
}
