//! The offloaded collective path: a call made with a network's own group collectives
//! (its [`GroupCollectives`] capability, MPI's on the MPI transport) where
//! `select::offloaded` chooses it. One communicator per set of PEs (created at the set's
//! first call, cached), and every call in two steps.
//!
//! 1. **Agreement.** Every member gathers every member's block with one non-blocking
//!    allgather, waited for as every other wait (a failed job ends it): the runtime's
//!    descriptor of the call (operation, set, element type, counts, root, capacity, and
//!    the faults of its own arguments), then up to [`inline_bytes`] of the member's data
//!    when it fits. Every member judges all descriptors ([`judge`]) and reaches the same
//!    verdict, so a mismatch or a bad argument is an error on every member and no target
//!    is written.
//! 2. **Data.** When every member's part came inline, it is copied from the gathered
//!    blocks: the call took one collective of the network. Otherwise it moves straight
//!    between the members' symmetric buffers: broadcast — the network's bcast from the
//!    root's source into the others' targets; fcollect — its allgather (in place when the
//!    source is this member's block); collect — its allgatherv with the counts from the
//!    descriptors; reductions — its allgather of the sources into private memory.
//!    Barrier needs nothing more (the agreement is one). Reductions combine left to right
//!    in member order, so results are bit for bit those of the runtime's own reduction
//!    (a network's reductions may combine in any order), and no type or operator needs a
//!    counterpart in the network. Not `MPI_Allreduce` even for integers, whose result
//!    does not depend on the order: tried, Open MPI 4.1.4 saturates 8- and 16-bit sums
//!    (its AVX operators; open-mpi/ompi#8045, "wontfix"), which the property tests
//!    caught, and it and MPICH 4.0.2 get unsigned `MPI_MIN` wrong (ompi#10648,
//!    pmodels/mpich#6083).
//!
//! A program's work array is accepted (checked, then not needed). Alltoall and scans keep
//! the runtime's protocol, after the agreement step on their operation and element type
//! ([`Call::agree_on_kind`]); so does a data step the capability does not offer. Every
//! member then makes the same kind of call, and a member in a network collective never
//! waits for one in the runtime's protocol.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::ctx::CallEnv;
use super::deadlock::{self, Awaited, Watch};
use super::reduce::Combine;
use super::sets::SetSpec;
use super::verdict::judge;
use super::{broadcast, gather, reduce, RootTarget, Span};
use crate::error::{Operation, PeEnd, ReduceOp, RtError, RtResult, WaitSite};
use crate::job::state;
use crate::memory::layout::{DESC_HEAD_WORDS, DESC_TAIL_WORDS};
use crate::sync::wait::{self, Blocker};
use crate::transport::groups::{Comm, GroupCollectives};
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType};

/// Words of a descriptor on the wire.
const DESC_WORDS: usize = DESC_HEAD_WORDS + DESC_TAIL_WORDS;

/// Polls of the agreement between looks at the members' states (remote loads), when
/// polls are fast.
const LEFT_CHECK_POLLS: u32 = 1024;

/// The longest time between looks at the members' states (a sleeping wait polls once
/// per sleep slice).
const LEFT_CHECK_EVERY: Duration = Duration::from_millis(50);

/// Bytes of the member-order buffer a reduction gathers at a time (all members' chunks).
const REDUCE_GATHER_BYTES: usize = 4 << 20;

/// Bytes of the agreement exchange (all members' parts) that may carry the call's data.
const INLINE_TOTAL_BYTES: usize = 8 << 10;

/// Bytes of its data each member sends inside the agreement exchange of a set of `n`
/// members: a call whose data fits (every member's part) needs no second collective.
/// A multiple of 8 between 64 and 1 KiB; the same on every member (it depends on `n`
/// alone), so every member sends and expects blocks of one size.
fn inline_bytes(n: usize) -> usize {
    (INLINE_TOTAL_BYTES / n.max(1)).clamp(64, 1 << 10) & !7
}

/// The communicators of the sets this PE has called on, by set key, each with the
/// number of agreements this PE has entered on it; and the reductions' scratch memory,
/// kept from call to call (a fresh buffer of 128 KiB or more is a fresh mapping, whose
/// page faults cost more than the reduction).
pub(crate) struct SetComms {
    comms: HashMap<u64, (Comm, u64)>,
    scratch: Vec<Unit>,
}

/// 64 bytes aligned to 64: scratch memory any element type can be viewed in.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Unit([u8; 64]);

/// `scratch` grown to hold `elems` elements of `C::Elem`, viewed as them.
///
/// # Panics
/// If `elems` elements do not fit in the address space.
fn view_as<C: Combine>(scratch: &mut Vec<Unit>, elems: usize) -> &mut [C::Elem] {
    const { assert!(align_of::<C::Elem>() <= align_of::<Unit>()) };
    let bytes = elems
        .checked_mul(size_of::<C::Elem>())
        .expect("scratch for a reduction larger than the address space");
    let units = bytes.div_ceil(size_of::<Unit>());
    if scratch.len() < units {
        scratch.resize(units, Unit([0; 64]));
    }
    // SAFETY: `units` initialised units hold the `bytes` of `elems` elements, aligned
    // (checked above); `Combine`'s contract makes every bit pattern a `C::Elem`.
    unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr().cast::<C::Elem>(), elems) }
}

impl SetComms {
    pub(crate) fn new() -> SetComms {
        SetComms {
            comms: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// Whether `set` has its communicator.
    pub(crate) fn knows(&self, set: &SetSpec) -> bool {
        self.comms.contains_key(&set.key())
    }

    /// Enters a call on `set`: the communicator of its members (ranks in member order),
    /// created at the set's first call (collective over its members) and kept, at most
    /// the PE's set slots (`SHMEM_ACTIVE_SETS`) of them; and the call's number on the set
    /// (from 1), published for the deadlock watch of the members.
    fn enter<T: Transport>(
        &mut self,
        t: &T,
        groups: &T::Groups,
        set: &SetSpec,
    ) -> RtResult<(Comm, u64)> {
        let key = set.key();
        if let Some((comm, calls)) = self.comms.get_mut(&key) {
            *calls += 1;
            deadlock::enter_agreement(t, key, *calls);
            return Ok((*comm, *calls));
        }
        let max = t.region().sets();
        if self.comms.len() >= max && set.size() > 1 {
            return Err(RtError::TooManySets { pe: t.me(), max });
        }
        let members: Vec<usize> = set.members().collect();
        let comm = groups.comm(&members, key)?;
        self.comms.insert(key, (comm, 1));
        deadlock::enter_agreement(t, key, 1);
        Ok((comm, 1))
    }
}

/// What the agreement step gathered, judged sound: every member's descriptor and
/// block, and the set's communicator.
struct Agreed {
    descs: Vec<Descriptor>,
    /// One block of `block` words per member: its descriptor, then `inline` bytes that
    /// hold its data when the data fits.
    blocks: Vec<u64>,
    block: usize,
    inline: usize,
    comm: Comm,
}

impl Agreed {
    /// Whether every member's data (its descriptor's elements of `size` bytes, or
    /// member `only`'s alone) came inline; the same answer on every member, which holds
    /// the same descriptors.
    fn carried(&self, size: usize, only: Option<usize>) -> bool {
        let fits = |d: &Descriptor| d.nelems().saturating_mul(size as u64) <= self.inline as u64;
        match only {
            Some(m) => fits(&self.descs[m]),
            None => self.descs.iter().all(fits),
        }
    }

    /// Member `m`'s inline data (valid for the bytes its descriptor says, when
    /// [`Agreed::carried`]).
    fn inline_of(&self, m: usize) -> *const u8 {
        self.blocks[m * self.block + DESC_WORDS..].as_ptr().cast()
    }
}

/// One member's view of a call on its set.
pub(crate) struct Call<'a, T: Transport> {
    pub(crate) t: &'a T,
    pub(crate) groups: &'a T::Groups,
    pub(crate) comms: &'a mut SetComms,
    pub(crate) env: &'a CallEnv,
    pub(crate) set: SetSpec,
    /// This PE's index in the set.
    pub(crate) index: usize,
    pub(crate) during: &'static str,
}

impl<T: Transport> Call<'_, T> {
    /// The agreement step: gathers every member's descriptor, with `data` (bytes at an
    /// offset of this PE's partition) inline when it fits [`inline_bytes`], and judges
    /// the descriptors.
    fn agree(&mut self, mine: &Descriptor, data: Option<(usize, usize)>) -> RtResult<Agreed> {
        let (comm, call) = self.comms.enter(self.t, self.groups, &self.set)?;
        let n = self.set.size();
        let inline = inline_bytes(n);
        let block = DESC_WORDS + inline / 8;
        let (head, tail, _) = mine.words();
        let mut send = vec![0u64; block];
        send[..DESC_HEAD_WORDS].copy_from_slice(head);
        send[DESC_HEAD_WORDS..DESC_WORDS].copy_from_slice(tail);
        if let Some((off, len)) = data.filter(|&(_, len)| len <= inline) {
            // SAFETY: `len` bytes at `off` of this PE's own partition (the runtime checked
            // the call's spans); `send` has `inline >= len` bytes after the descriptor.
            unsafe {
                crate::memory::copy::copy(
                    self.local(off),
                    send[DESC_WORDS..].as_mut_ptr().cast(),
                    len,
                )
            };
        }
        let mut blocks = vec![0u64; n * block];
        // SAFETY: the bytes of `send`'s words, which it holds while this view lives.
        let send_bytes =
            unsafe { std::slice::from_raw_parts(send.as_ptr().cast::<u8>(), block * 8) };
        // SAFETY: `send_bytes` holds one block, `blocks` one per member; both outlive the
        // exchange, which completes in the wait below before either is dropped (an
        // error there ends the job, never a return with the exchange in flight — see
        // `wait_agreement`).
        let mut request = unsafe {
            self.groups
                .start_allgather(comm, send_bytes, blocks.as_mut_ptr().cast())?
        };
        self.wait_agreement(call, &mut request)?;
        let descs: Vec<Descriptor> = blocks
            .chunks_exact(block)
            .map(|w| {
                let mut head = [0u64; DESC_HEAD_WORDS];
                let mut tail = [0u64; DESC_TAIL_WORDS];
                head.copy_from_slice(&w[..DESC_HEAD_WORDS]);
                tail.copy_from_slice(&w[DESC_HEAD_WORDS..DESC_WORDS]);
                Descriptor::from_words(head, tail)
            })
            .collect();
        judge(self.during, &self.set, self.index, &descs).map_err(RtError::from)?;
        Ok(Agreed {
            descs,
            blocks,
            block,
            inline,
            comm,
        })
    }

    /// Waits for the agreement exchange as for any other word: a job that fails meanwhile
    /// ends the wait with its error, and so does a member that has left the program
    /// (finalized, or panicked) without entering this call: its published count of
    /// agreements on the set says so, and cannot change any more (a member that left
    /// after entering it sent its part, which MPI delivers). The exchange's buffers are then still lent
    /// to MPI, so the job is ended here instead of returning (this PE cannot take part in
    /// anything after it anyway).
    ///
    /// A member in another wait does not end it: that member may be in a wait that will
    /// end in an error and bring it here (a point-to-point wait nobody can satisfy).
    /// Waits that wait for each other end it, whatever their kind (agreements on other
    /// sets, the runtime's protocol, the allocation barrier, a slot claim): the
    /// deadlock watch of call number `call` on the set follows the members' records.
    fn wait_agreement(
        &self,
        call: u64,
        request: &mut <T::Groups as GroupCollectives>::Request,
    ) -> RtResult<()> {
        let t = self.t;
        let mut failed = None;
        let mut polls = 0u32;
        let mut left_checked = Instant::now();
        let key = self.set.key();
        let site = WaitSite {
            name: self.during,
            set_key: key,
            sync: 0,
            epoch: call,
            runtime_owned: true,
        };
        let mut stuck = Watch::new(t, self.during, site, Awaited::Agreement { key, call });
        let waited = wait::wait_for(t, self.env.policy, Blocker::EveryPe, self.during, || {
            match self.groups.test(request) {
                Err(err) => {
                    failed = Some(err);
                    return true;
                }
                Ok(true) => return true,
                Ok(false) => {}
            }
            polls = polls.wrapping_add(1);
            if let Some(err) = stuck.poll() {
                failed = Some(err.into());
                return true;
            }
            if polls % LEFT_CHECK_POLLS == 0
                || (polls % 16 == 0 && left_checked.elapsed() >= LEFT_CHECK_EVERY)
            {
                left_checked = Instant::now();
                let gone = self.set.members().find(|&pe| {
                    pe != t.me()
                        && state::state_of(t, pe).has_left()
                        && deadlock::agreements_entered(t, pe, key) < call
                });
                if let Some(pe) = gone {
                    state::record_failure(t, pe, PeEnd::LeftEarly);
                    failed = Some(RtError::PeLeft {
                        pe,
                        waiter: t.me(),
                        during: self.during,
                    });
                    return true;
                }
            }
            false
        });
        stuck.finish();
        let err = match (failed, waited) {
            (None, Ok(())) => return Ok(()),
            (Some(err), _) | (None, Err(err)) => err,
        };
        crate::error::print_line(&format!("PE {}: {err}", t.me()));
        // The job ends with the status of the PE that failed first, as on shared memory.
        let code = match err {
            RtError::PeFailed { end, .. } => end.exit_code(),
            _ => 1,
        };
        self.groups.abandon(code)
    }

    /// The address of `span` in this PE's own partition.
    fn local(&self, off: usize) -> *mut u8 {
        let base = self
            .t
            .direct(self.t.me())
            .expect("a PE reaches its own partition");
        base.wrapping_add(off)
    }

    /// The agreement step alone, on the operation and element type: what a call that keeps
    /// the runtime's protocol (alltoall) makes first.
    pub(crate) fn agree_on_kind(&mut self, op: Operation, elem: ElemType) -> RtResult<()> {
        let mut mine = Descriptor::new(op, self.set.key());
        mine.set_elem(elem);
        self.agree(&mine, None).map(drop)
    }

    /// `shmem_barrier`/`shmem_sync`: the agreement is the barrier; afterwards every
    /// member's earlier updates are visible here.
    pub(crate) fn barrier(&mut self) -> RtResult<()> {
        let mine = Descriptor::new(Operation::Barrier, self.set.key());
        self.agree(&mine, None)?;
        self.t.quiet();
        Ok(())
    }

    /// `shmem_broadcast` (see `coll::broadcast`): the root's source came with the
    /// agreement when it fits, else `MPI_Bcast` moves it.
    pub(crate) fn broadcast(
        &mut self,
        elem: ElemType,
        root: usize,
        target: Span,
        source: Span,
        root_target: RootTarget,
    ) -> RtResult<()> {
        let mine = broadcast::describe(
            self.set.key(),
            self.set.size(),
            self.index,
            elem,
            root,
            target,
            source,
            root_target,
        );
        let bytes = source.len * elem.size as usize;
        let is_root = root == self.index;
        let agreed = self.agree(&mine, is_root.then_some((source.off, bytes)))?;
        if bytes == 0 {
            return Ok(());
        }
        let writes_target =
            !is_root || (root_target == RootTarget::Written && target.off != source.off);
        if agreed.carried(elem.size as usize, Some(root)) {
            if writes_target {
                // SAFETY: the root's `bytes` came inline; this PE's target holds them
                // (checked by the agreement) and is its own partition.
                unsafe {
                    crate::memory::copy::copy(agreed.inline_of(root), self.local(target.off), bytes)
                };
            }
            return Ok(());
        }
        let buf = self.local(if is_root { source.off } else { target.off });
        // SAFETY: the root's source and every other member's target hold `bytes` bytes of
        // the member's own partition (checked by the runtime and by the agreement); the
        // network reads the root's and writes the others'.
        unsafe { self.groups.bcast(agreed.comm, buf, bytes, root)? };
        if is_root && writes_target {
            // SAFETY: this PE's own source and target, `bytes` long and not overlapping
            // (the agreement refused an overlap other than equality).
            unsafe { crate::memory::copy::copy(buf, self.local(target.off), bytes) };
        }
        Ok(())
    }

    /// `shmem_fcollect` and `shmem_collect` (`op`; see `coll::gather`): the elements
    /// written to the target. Every member's source came with the agreement when each
    /// fits, else `MPI_Allgather`/`MPI_Allgatherv` moves them.
    pub(crate) fn gather(
        &mut self,
        op: Operation,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<usize> {
        let n = self.set.size();
        let size = elem.size as usize;
        let mine = gather::describe(op, self.set.key(), n, self.index, elem, target, source);
        let agreed = self.agree(&mine, Some((source.off, source.len * size)))?;
        let counts: Vec<usize> = agreed
            .descs
            .iter()
            .map(|d| d.nelems() as usize * size)
            .collect();
        let total: usize = counts.iter().sum();
        let recv = self.local(target.off);
        if agreed.carried(size, None) {
            let mut at = 0;
            for (m, &count) in counts.iter().enumerate() {
                // SAFETY: member `m`'s `count` bytes came inline; the target holds the
                // total (checked by the agreement) and is this PE's own partition.
                unsafe { crate::memory::copy::copy(agreed.inline_of(m), recv.add(at), count) };
                at += count;
            }
            return Ok(total / size.max(1));
        }
        let too_large = || {
            RtError::Config(format!(
                "{}: {total} bytes in all is more than MPI's int counts address",
                self.during
            ))
        };
        let int = |v: usize| i32::try_from(v).map_err(|_| too_large());
        if op == Operation::Fcollect {
            let in_place = gather::in_place(op, self.index, elem, target, source);
            let send: *const u8 = if in_place {
                std::ptr::null()
            } else {
                self.local(source.off).cast_const().cast()
            };
            let len = int(source.len * size)?;
            int(total)?;
            // SAFETY: the source holds `len` bytes (or is this member's block of the
            // target), the target `n * len` (checked by the agreement), both in this PE's
            // own partition.
            unsafe { self.groups.allgather(agreed.comm, send, len, recv)? };
        } else {
            let mut displs = Vec::with_capacity(n);
            let mut at = 0usize;
            for &c in &counts {
                displs.push(int(at)?);
                at += c;
            }
            let counts: Vec<i32> = counts.iter().map(|&c| int(c)).collect::<Result<_, _>>()?;
            let send = self.local(source.off);
            // SAFETY: the source holds this member's count, the target the total (checked
            // by the agreement: every capacity holds it); the counts and displacements come
            // from the same descriptors on every member.
            unsafe {
                self.groups.allgatherv(
                    agreed.comm,
                    send.cast_const(),
                    counts[self.index],
                    recv,
                    &counts,
                    &displs,
                )?
            };
        }
        Ok(total / size.max(1))
    }

    /// `shmem_OP_to_all` with `C` (see `coll::reduce`): every member's source gathered
    /// here (with the agreement when it fits, else a chunk at a time) and combined left
    /// to right in member order.
    pub(crate) fn reduce<C: Combine>(
        &mut self,
        op: ReduceOp,
        elem: ElemType,
        target: Span,
        source: Span,
        max_nelems: usize,
    ) -> RtResult<()> {
        let n = self.set.size();
        let size = size_of::<C::Elem>();
        let count = source.len;
        let mine = reduce::describe(op, self.set.key(), elem, target, source, max_nelems);
        let agreed = self.agree(&mine, Some((source.off, count * size)))?;
        if count == 0 {
            return Ok(());
        }
        let inline = agreed.carried(size, None);
        let per_chunk = if inline {
            count
        } else {
            (REDUCE_GATHER_BYTES / (n * size)).clamp(1, count)
        };
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let buf = view_as::<C>(&mut scratch, (n + 2) * per_chunk);
        let (gathered, rest) = buf.split_at_mut(n * per_chunk);
        let (acc, next) = rest.split_at_mut(per_chunk);
        let mut done = 0;
        while done < count {
            let k = per_chunk.min(count - done);
            if inline {
                for m in 0..n {
                    // SAFETY: member `m`'s `count` elements came inline; `gathered` holds
                    // `n * count` elements.
                    unsafe {
                        crate::memory::copy::copy(
                            agreed.inline_of(m),
                            gathered.as_mut_ptr().add(m * count).cast(),
                            count * size,
                        )
                    };
                }
            } else {
                let len = i32::try_from(k * size).expect("a chunk is at most 4 MiB");
                // SAFETY: the source holds `count` elements of this PE's own partition, so
                // `k` from `done`; `gathered` holds `n * k` elements.
                unsafe {
                    let send = self.local(source.off + done * size);
                    self.groups.allgather(
                        agreed.comm,
                        send.cast_const(),
                        len,
                        gathered.as_mut_ptr().cast(),
                    )?;
                }
            }
            let result = combine_in_order::<C>(&gathered[..n * k], &mut acc[..k], &mut next[..k]);
            // SAFETY: the target holds `count` elements of this PE's own partition
            // (checked by the agreement); `result` holds `k` of them.
            unsafe {
                crate::memory::copy::copy(
                    result.as_ptr().cast(),
                    self.local(target.off + done * size),
                    k * size,
                )
            };
            done += k;
        }
        self.comms.scratch = scratch;
        Ok(())
    }
}

/// The blocks of `acc.len()` elements in `gathered` (one per member) combined left to
/// right in member order, `((b0 op b1) op b2) …`, as the runtime's own reduction
/// combines them, with `acc` and `next` (as long) as work space; returns the one that
/// holds the result.
fn combine_in_order<'a, C: Combine>(
    gathered: &[C::Elem],
    mut acc: &'a mut [C::Elem],
    mut next: &'a mut [C::Elem],
) -> &'a [C::Elem] {
    let k = acc.len();
    let mut blocks = gathered.chunks_exact(k);
    acc.copy_from_slice(blocks.next().expect("one member at least"));
    for block in blocks {
        C::combine(next, acc, block);
        std::mem::swap(&mut acc, &mut next);
    }
    acc
}
