//! Active sets: the PEs that take part in a collective, named by the C triplet
//! (`PE_start`, `logPE_stride`, `PE_size`).

use std::sync::atomic::{AtomicUsize, Ordering};

use shmem_rt::__private::SetSpec;

use crate::error::{Result, ShmemError};

/// PE count of the job, published by [`Pe::init`](crate::pe::Pe::init) so that
/// [`ActiveSet::new`] can validate a set without a handle (0 = not initialised).
pub(crate) static JOB_NPES: AtomicUsize = AtomicUsize::new(0);

/// A validated set of PEs `start + i·2^log_stride`, `i in 0..size`, all inside the job.
/// Cheap to copy; the runtime caches each set's sync layout on first use. Sets of the
/// same PEs are equal (a one-member set whatever its stride).
#[derive(Debug, Clone, Copy)]
pub struct ActiveSet {
    spec: SetSpec,
    /// As given (the spec forgets the stride of a one-member set).
    log_stride: u32,
}

impl ActiveSet {
    /// The set of the C triplet `(PE_start, logPE_stride, PE_size)`: the PEs
    /// `pe_start + i·2^log_pe_stride` for `i < pe_size`. Errors for a size of 0, a stride
    /// exponent of 31 or more, or a last member outside the job; requires an initialised
    /// PE.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let odd = ActiveSet::new(1, 1, 2)?; // PEs 1 and 3
    ///     assert_eq!((odd.start(), odd.log_stride(), odd.stride(), odd.size()), (1, 1, 2, 2));
    ///     assert!(odd.contains(3) && !odd.contains(2));
    ///     assert_eq!(odd.index_of(3), Some(1));
    ///     assert_eq!((odd.member(1), odd.member(2)), (Some(3), None));
    ///     assert_eq!(odd.members().collect::<Vec<_>>(), [1, 3]);
    ///     assert!(ActiveSet::new(2, 1, 2).is_err()); // PE 4 is not in the job
    ///     pe.barrier_all()
    /// }
    /// ```
    pub fn new(pe_start: usize, log_pe_stride: u32, pe_size: usize) -> Result<ActiveSet> {
        let npes = JOB_NPES.load(Ordering::Acquire);
        if npes == 0 {
            return Err(shmem_rt::RtError::NotLaunched.into());
        }
        SetSpec::new(pe_start, log_pe_stride, pe_size, npes)
            .map(|spec| ActiveSet {
                spec,
                log_stride: log_pe_stride,
            })
            .map_err(ShmemError::InvalidActiveSet)
    }

    pub(crate) fn world(npes: usize) -> ActiveSet {
        ActiveSet {
            spec: SetSpec::world(npes),
            log_stride: 0,
        }
    }

    /// Lowest PE of the set (`PE_start`).
    ///
    /// Example: [`ActiveSet::new`].
    pub fn start(&self) -> usize {
        self.spec.start()
    }
    /// `logPE_stride`.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn log_stride(&self) -> u32 {
        self.log_stride
    }
    /// Distance between consecutive members.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn stride(&self) -> usize {
        1 << self.log_stride
    }
    /// Number of PEs (`PE_size`).
    ///
    /// Example: [`ActiveSet::new`].
    pub fn size(&self) -> usize {
        self.spec.size()
    }
    /// Whether `pe` is a member.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn contains(&self, pe: usize) -> bool {
        self.spec.index_of(pe).is_some()
    }
    /// The index of `pe` within the set (what a broadcast root is), if it is a member.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn index_of(&self, pe: usize) -> Option<usize> {
        self.spec.index_of(pe)
    }
    /// The PE at `index` within the set.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn member(&self, index: usize) -> Option<usize> {
        (index < self.size()).then(|| self.spec.member(index))
    }
    /// The member PEs in order.
    ///
    /// Example: [`ActiveSet::new`].
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.spec.members()
    }

    pub(crate) fn spec(&self) -> &SetSpec {
        &self.spec
    }
}

impl PartialEq for ActiveSet {
    fn eq(&self, other: &ActiveSet) -> bool {
        self.spec == other.spec
    }
}

impl Eq for ActiveSet {}

impl std::hash::Hash for ActiveSet {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.spec.hash(state);
    }
}

impl std::fmt::Display for ActiveSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the active set (PE_start {}, logPE_stride {}, PE_size {})",
            self.start(),
            self.log_stride(),
            self.size()
        )
    }
}
