//! Reductions (`*_to_all`): `nreduce` independent element-wise reductions whose results
//! land in every member's target. Results are combined in member order on every member,
//! so floating-point results are identical everywhere.
//!
//! Two plans, chosen from arguments all members agree on:
//! - *one shot* (small): every member publishes its whole source (inline or staged) and
//!   combines all members' copies itself — one synchronization, nothing trailing;
//! - *scatter–gather* (large): member `i` combines chunk `i` of every member's source
//!   (read in place) into its staging buffer — or into its target when the chunk does not
//!   fit — announces it (`mid`), and every member then pulls every chunk. Sources are
//!   read only before `mid`, which every member waits for, so no source is reused too
//!   early; only results left in a target need the trailing `done` handshake.

use std::mem::{align_of, size_of, MaybeUninit};

use super::descriptor::{Descriptor, ElemType, Fault, Kind, Location};
use super::{
    check_member, choose_place, contribution, copy_bytes, fail, publish_or_fail, wait_readers,
    CollectiveError, Span,
};
use crate::collective::SetCtx;
use crate::error::RtResult;
use crate::layout::INLINE_BYTES;

/// One reduction operator on one element type, applied element-wise.
///
/// # Safety
/// `Elem` must be plain data: no padding, every bit pattern a valid value, alignment at
/// most 64. The runtime views bytes in shared memory as `Elem`s.
pub unsafe trait Combine {
    /// The element type.
    type Elem: Copy;
    /// `out[i] = a[i] ⊕ b[i]` for every `i` (the slices have equal lengths). Keep it a
    /// plain loop over the slices so that the compiler vectorises it.
    fn combine(out: &mut [Self::Elem], a: &[Self::Elem], b: &[Self::Elem]);
}

/// Sources up to this many bytes are reduced in one shot when the data every member
/// reads, `bytes × (members − 1)`, stays below [`ONE_SHOT_READ_MAX`].
pub const ONE_SHOT_MAX: usize = 4 << 10;

/// See [`ONE_SHOT_MAX`].
pub const ONE_SHOT_READ_MAX: usize = 16 << 10;

/// Bytes combined per step: two accumulator blocks that stay in L1.
const BLOCK_BYTES: usize = 4096;

#[repr(C, align(64))]
struct Block([MaybeUninit<u8>; BLOCK_BYTES]);

/// Reduces `source.len` elements of every member's source with `C` into every member's
/// target (which must hold them). `op` is the operator's code for argument agreement;
/// `max_nelems` the capacity of an explicit work array (`usize::MAX` for the runtime's
/// own buffers). Target and source may be the same buffer but must not otherwise overlap.
pub fn reduce<C: Combine>(
    ctx: &SetCtx<'_>,
    op: u8,
    elem: ElemType,
    target: Span,
    source: Span,
    max_nelems: usize,
) -> RtResult<()> {
    let size = size_of::<C::Elem>();
    debug_assert_eq!(size, elem.size as usize);
    debug_assert!(align_of::<C::Elem>() <= 64);
    let n = ctx.size();
    let count = source.len;
    let bytes = count * size;
    let mut mine = Descriptor::new(Kind::Reduce, ctx.set.key());
    mine.op = op;
    mine.elem = elem;
    mine.nelems = count as u64;
    mine.extra = target.off as u64;
    mine.capacity = target.len as u64;
    if target.len < count {
        mine.fault = Fault::TargetTooSmall as u8;
        mine.data_off = count as u64;
    } else if source.off != target.off && source.overlaps(count, &target, count, size) {
        mine.fault = Fault::Overlap as u8;
    } else if count > max_nelems {
        mine.fault = Fault::WorkTooSmall as u8;
        mine.data_off = max_nelems as u64;
    }
    let one_shot = bytes <= INLINE_BYTES
        || (bytes <= ctx.stage.capacity
            && bytes <= ONE_SHOT_MAX
            && bytes * (n - 1) <= ONE_SHOT_READ_MAX);
    if !mine.is_fault() {
        if one_shot {
            choose_place(ctx, &mut mine, source, bytes, usize::MAX);
        } else {
            mine.data_off = source.off as u64;
            mine.location = Location::Direct as u8;
        }
    }
    let plan = Plan::new(ctx, count, size, one_shot, mine.location);
    // Results of a scatter-gather go through the staging buffer when a chunk fits.
    let staged = mine.location == Location::Staged as u8 || plan.in_stage;
    publish_or_fail(ctx, &mine, source, staged)?;
    let exposed = (!one_shot).then_some(&mine);
    let mut first = None;
    for i in ctx.others() {
        ctx.poll_briefly(&ctx.line_of(i).epoch, ctx.epoch);
        let theirs = ctx.wait_arrival(i)?;
        if first.is_none() {
            first = check_member(ctx, &mine, i, &theirs)
                .and_then(|()| plan.validate::<C>(ctx, i, &theirs))
                .err();
        }
    }
    ctx.note_all_arrived();
    if let Some(err) = first {
        return Err(fail(ctx, err, exposed));
    }
    let my_src = ctx.address_in(ctx.index, source.off).cast_const();
    let dst = ctx.address_in(ctx.index, target.off);
    if one_shot {
        // Every member's contribution is where this PE's is, inline or staged (validated
        // above), so its place follows without reading its descriptor again.
        debug_assert_ne!(plan.location, Location::Direct as u8);
        let inline = plan.location == Location::Inline as u8;
        let from = |i: usize| {
            if i == ctx.index {
                my_src
            } else if inline {
                ctx.line_of(i).inline.as_ptr().cast::<u8>()
            } else {
                ctx.stage_of(i).cast_const()
            }
        };
        // SAFETY: every member's contribution holds `count` elements (validated) and
        // stays unchanged until this PE arrives at the next epoch; the target holds them
        // (checked) and only this PE writes it. Sources are read block by block before
        // the block is written, so target == source is fine.
        unsafe { combine_into::<C>(dst, count, n, from) };
        return Ok(());
    }
    scatter_gather::<C>(ctx, &mine, &plan, dst)
}

/// How a large reduction is split: member `i` owns elements `chunk(i)`; results go to
/// the staging buffer when a chunk fits there, else to the owner's target.
struct Plan {
    count: usize,
    size: usize,
    per: usize,
    in_stage: bool,
    /// Where every member's contribution must be (all members derive the same plan).
    location: u8,
}

impl Plan {
    fn new(ctx: &SetCtx<'_>, count: usize, size: usize, one_shot: bool, location: u8) -> Plan {
        let n = ctx.size();
        let mut per = count.div_ceil(n);
        // Chunk boundaries on 64-byte boundaries keep wide loads aligned.
        if 64 % size == 0 {
            per = (per * size).next_multiple_of(64) / size;
        }
        let in_stage = !one_shot && per * size <= ctx.stage.capacity;
        Plan {
            count,
            size,
            per,
            in_stage,
            location,
        }
    }

    /// Element range of member `i`'s chunk.
    fn chunk(&self, i: usize) -> (usize, usize) {
        let lo = (i * self.per).min(self.count);
        (lo, (lo + self.per).min(self.count))
    }

    /// Checks that member `i`'s published places hold what this plan reads from them.
    fn validate<C: Combine>(
        &self,
        ctx: &SetCtx<'_>,
        i: usize,
        theirs: &Descriptor,
    ) -> Result<(), CollectiveError> {
        let bytes = self.count * self.size;
        if theirs.location != self.location {
            return Err(CollectiveError::BadDescriptor {
                during: ctx.during,
                pe: ctx.set.member(i),
            });
        }
        contribution(ctx, i, theirs, bytes, align_of::<C::Elem>())?;
        if theirs.location == Location::Direct as u8 && !self.in_stage {
            let mut as_target = *theirs;
            as_target.data_off = theirs.extra;
            contribution(ctx, i, &as_target, bytes, align_of::<C::Elem>())?;
        }
        Ok(())
    }
}

fn scatter_gather<C: Combine>(
    ctx: &SetCtx<'_>,
    mine: &Descriptor,
    plan: &Plan,
    dst: *mut u8,
) -> RtResult<()> {
    let size = plan.size;
    let (lo, hi) = plan.chunk(ctx.index);
    let result = if plan.in_stage {
        ctx.stage_of(ctx.index)
    } else {
        // SAFETY: lo ≤ count ≤ target length.
        unsafe { dst.add(lo * size) }
    };
    let source_of = |i: usize| {
        let off = ctx.arrived_desc(i).data_off as usize;
        // SAFETY: the member's source was validated to hold `count` elements.
        unsafe { ctx.address_in(i, off).add(lo * size).cast_const() }
    };
    // SAFETY: every member's source holds the chunk (validated) and stays unchanged until
    // every member has passed `mid`; `result` is this PE's staging buffer (holding a chunk,
    // not read before `mid`) or its own target chunk. Blocks are read before written, so a
    // target that is the source is fine.
    unsafe { combine_into::<C>(result, hi - lo, ctx.size(), source_of) };
    ctx.publish_progress(|s| &s.mid.0);
    for i in ctx.others() {
        ctx.wait_progress(i, |s| &s.mid.0)?;
        let (lo_i, hi_i) = plan.chunk(i);
        let from = if plan.in_stage {
            ctx.stage_of(i)
        } else {
            let target_off = ctx.arrived_desc(i).extra as usize;
            // SAFETY: the member's target was validated to hold `count` elements.
            unsafe { ctx.address_in(i, target_off).add(lo_i * size) }
        };
        // SAFETY: member i's chunk result is complete (`mid`) and unchanged until it sees
        // this PE arrive at the next epoch (staged) or say it is done (target); the chunk
        // of this PE's target is written by nobody else, and member i has finished reading
        // this PE's source chunk i (it passed `mid`), so overwriting it is fine.
        unsafe { copy_bytes(from, dst.add(lo_i * size), (hi_i - lo_i) * size) };
    }
    if plan.in_stage {
        // SAFETY: this PE's own staging buffer holds its chunk result; the chunk of its
        // target is read by nobody (results are read from staging buffers).
        unsafe { copy_bytes(result, dst.add(lo * size), (hi - lo) * size) };
        Ok(())
    } else {
        ctx.publish_progress(|s| &s.done.0);
        wait_readers(ctx, mine)
    }
}

/// `dst[0..count] = src(0)[..] ⊕ src(1)[..] ⊕ … ⊕ src(n-1)[..]`, left to right, in
/// L1-sized blocks: each step combines into a block of its own (so the compiler stores
/// results unconditionally), and each block of every source is read before that block of
/// `dst` is written, so `dst` may be one of the sources.
///
/// # Safety
/// `src(m)` must point to `count` readable, `C::Elem`-aligned elements for every member
/// `m < n`, and `dst` to `count` writable ones; nobody else may write them meanwhile.
unsafe fn combine_into<C: Combine>(
    dst: *mut u8,
    count: usize,
    n: usize,
    src: impl Fn(usize) -> *const u8,
) {
    let size = size_of::<C::Elem>();
    if n == 1 {
        // SAFETY: as the caller guarantees; a no-op when dst is the source.
        unsafe {
            if src(0) != dst.cast_const() {
                copy_bytes(src(0), dst, count * size);
            }
        }
        return;
    }
    let per_block = BLOCK_BYTES / size;
    let mut blocks = [
        Block([MaybeUninit::uninit(); BLOCK_BYTES]),
        Block([MaybeUninit::uninit(); BLOCK_BYTES]),
    ];
    let [x, y] = &mut blocks;
    let (mut cur, mut next) = (
        x.0.as_mut_ptr().cast::<C::Elem>(),
        y.0.as_mut_ptr().cast::<C::Elem>(),
    );
    let mut done = 0;
    while done < count {
        let k = per_block.min(count - done);
        // SAFETY: the caller guarantees the ranges; each block holds `per_block` elements,
        // is aligned to 64 ≥ align_of::<C::Elem>() and is written before it is read.
        unsafe {
            let at =
                |m: usize| std::slice::from_raw_parts(src(m).add(done * size).cast::<C::Elem>(), k);
            C::combine(std::slice::from_raw_parts_mut(cur, k), at(0), at(1));
            for m in 2..n {
                let acc = std::slice::from_raw_parts(cur.cast_const(), k);
                C::combine(std::slice::from_raw_parts_mut(next, k), acc, at(m));
                std::mem::swap(&mut cur, &mut next);
            }
            copy_bytes(cur.cast_const().cast(), dst.add(done * size), k * size);
        }
        done += k;
    }
}
