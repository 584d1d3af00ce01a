//! Reductions (`*_to_all`): `nreduce` independent element-wise reductions whose results
//! land in every member's target. Results are combined in member order on every member,
//! so floating-point results are identical everywhere.
//!
//! Two plans, chosen from arguments all members agree on (see [`super::select`]):
//! - *one shot* (small): every member publishes its whole source (inline or staged) and
//!   combines all members' copies itself — one synchronization, nothing trailing;
//! - *scatter–gather* (large): member `i` combines chunk `i` of every member's source
//!   (read in place) into its staging buffer, and every member pulls every chunk from
//!   there after its owner announces it (`mid`); when a chunk does not fit, member `i`
//!   combines it into its own target and copies it into every other member's target
//!   before it announces `mid`, so that no member reads another's target (which its
//!   owner may reuse once it returns) and nothing trails `mid`. Sources are read only
//!   before `mid`, which every member waits for, so no source is reused too early.
//!
//! The arithmetic runs on private blocks: each block of every source is first copied
//! (race-tolerant) into L1-sized scratch, so a member that writes its source at the wrong
//! time yields wrong numbers, never undefined behaviour.

use std::mem::{align_of, size_of, MaybeUninit};

use super::ctx::SetCtx;
use super::select::{Carrier, ReducePlan};
use super::{contribution, fail, place_contribution, publish_or_fail, Span};
use crate::error::{CollectiveError, Operation, ReduceOp, RtResult, Unable};
use crate::memory::layout::{sync, INLINE_BYTES, INLINE_HOT_BYTES};
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType, Location};

/// One reduction operator on one element type, applied element-wise.
///
/// # Safety
/// `Elem` must be plain data: no padding, every bit pattern a valid value, alignment at
/// most 64. The runtime views bytes it copied from symmetric memory as `Elem`s.
pub unsafe trait Combine {
    /// The element type.
    type Elem: Copy;
    /// `out[i] = a[i] ⊕ b[i]` for every `i` (the slices have equal lengths). Keep it a
    /// plain loop over the slices so that the compiler vectorises it.
    fn combine(out: &mut [Self::Elem], a: &[Self::Elem], b: &[Self::Elem]);

    /// Whether combining in any order and grouping gives the same bits (integer
    /// operators; not floating-point sums and products): a network may then reduce
    /// in the order it likes.
    const ORDER_FREE: bool = false;
}

/// Bytes combined per step: blocks that stay in L1.
const BLOCK_BYTES: usize = 4096;

/// Scratch blocks of reductions of at most this many bytes: small enough that the
/// call's frame needs no stack probing and touches no page beyond its own.
const SMALL_BLOCK_BYTES: usize = 256;

#[repr(C, align(64))]
struct Block<const B: usize>([MaybeUninit<u8>; B]);

impl<const B: usize> Block<B> {
    const fn new() -> Block<B> {
        Block([MaybeUninit::uninit(); B])
    }
}

/// This member's descriptor of a reduction with operator `op`, with the faults its own
/// arguments have: a target too small, a target that overlaps the source without being
/// it, more elements than the work array serves (`max_nelems`).
#[inline]
pub(crate) fn describe(
    op: ReduceOp,
    set_key: u64,
    elem: ElemType,
    target: Span,
    source: Span,
    max_nelems: usize,
) -> Descriptor {
    describe_as(
        Operation::Reduce(op),
        set_key,
        elem,
        target,
        source,
        max_nelems,
    )
}

/// [`describe`] for a call of the reduction family `operation` (a reduction or a scan).
#[inline]
pub(crate) fn describe_as(
    operation: Operation,
    set_key: u64,
    elem: ElemType,
    target: Span,
    source: Span,
    max_nelems: usize,
) -> Descriptor {
    let count = source.len;
    let mut mine = Descriptor::new(operation, set_key);
    mine.set_elem(elem);
    mine.set_nelems(count as u64);
    mine.set_extra(target.off as u64);
    mine.set_capacity(target.len as u64);
    if target.len < count {
        mine.set_unable(Unable::TargetTooSmall {
            capacity: target.len as u64,
            needed: count as u64,
        });
    } else if source.off != target.off && source.overlaps(count, &target, count, elem.size as usize)
    {
        mine.set_unable(Unable::Overlap);
    } else if count > max_nelems {
        mine.set_unable(Unable::WorkTooSmall {
            capacity: max_nelems as u64,
            needed: count as u64,
        });
    }
    mine
}

/// Reduces `source.len` elements of every member's source with `C` into every member's
/// target (which must hold them). `op` is the operator, for argument agreement;
/// `max_nelems` the capacity of an explicit work array (`usize::MAX` for the runtime's
/// own buffers). Target and source may be the same buffer but must not otherwise overlap.
pub(crate) fn reduce<T: Transport, C: Combine>(
    ctx: &SetCtx<'_, T>,
    op: ReduceOp,
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
    let mut mine = describe(op, ctx.set.key(), elem, target, source, max_nelems);
    let plan = ctx.env.select.reduce(bytes, n, ctx.stage_capacity());
    if !mine.is_fault() {
        let carrier = match plan {
            ReducePlan::OneShot(carrier) => carrier,
            ReducePlan::ScatterGather => Carrier::Direct,
        };
        place_contribution(&mut mine, carrier, source);
    }
    let chunks = Chunks::new(n, count, size, plan, ctx.stage_capacity());
    // Results of a scatter-gather go through the staging buffer when a chunk fits.
    let staged = mine.is_at(Location::Staged) || chunks.in_stage;
    publish_or_fail(ctx, &mut mine, source, staged)?;
    // A one-shot inline reduction of two members reads this PE's own source into
    // private scratch now, while the other's arrival is on its way, rather than after it
    // arrives: the copy is then off the path from its arrival to the result.
    let mut own = Block::<INLINE_BYTES>::new();
    let pair = n == 2 && plan == ReducePlan::OneShot(Carrier::Inline) && !mine.is_fault();
    if pair {
        // SAFETY: the source is this PE's own checked buffer of `count` elements, which
        // a one-shot inline plan holds to at most `INLINE_BYTES` (the scratch's size).
        unsafe {
            ctx.t
                .get(ctx.own_data(source.off), own.0.as_mut_ptr().cast(), bytes)
        };
    }
    let exposed = (plan == ReducePlan::ScatterGather).then_some(&mine);
    let mut first = None;
    for i in ctx.others() {
        let theirs = ctx.poll_arrival(i)?;
        if first.is_none() {
            if let Err(err) = ctx
                .check_member(&mine, i, &theirs)
                .and_then(|()| chunks.validate::<T, C>(ctx, i, &mine, &theirs))
            {
                first = Some(err);
            }
        }
    }
    ctx.note_all_arrived();
    if let Some(err) = first {
        return Err(fail(ctx, err, exposed));
    }
    let my_src = ctx.own_data(source.off);
    let dst = ctx.own_data(target.off);
    if let ReducePlan::OneShot(carrier) = plan {
        // Every member's contribution is where this PE's is, inline or staged (validated
        // above), so its place follows without reading its descriptor again.
        let rel = match carrier {
            Carrier::Inline => ctx.inline_rel(),
            _ => ctx.stage_rel(),
        };
        if pair {
            // SAFETY: `own` holds this PE's `count` elements (read above) and the other
            // member's inline contribution, in its inline area, holds as many
            // (validated); the target holds
            // them (checked) and only this PE writes it.
            unsafe {
                combine_pair::<T, C>(
                    ctx.t,
                    dst,
                    count,
                    ctx.index,
                    &own,
                    ctx.word(1 - ctx.index, rel),
                )
            };
            return ctx.finish(());
        }
        let from = |i: usize| {
            if i == ctx.index {
                my_src
            } else {
                ctx.word(i, rel)
            }
        };
        // SAFETY: every member's contribution holds `count` elements (validated); the
        // target holds them (checked) and only this PE writes it; sources are read block
        // by block before the block is written, so target == source is fine.
        unsafe { combine_into::<T, C>(ctx.t, dst, count, n, from) };
        return ctx.finish(());
    }
    scatter_gather::<T, C>(ctx, &mine, &chunks, dst)
}

/// How a large reduction is split: member `i` owns elements `chunk(i)`; results go to
/// the staging buffer when a chunk fits there, else to the owner's target.
struct Chunks {
    count: usize,
    size: usize,
    per: usize,
    in_stage: bool,
}

impl Chunks {
    #[inline]
    fn new(n: usize, count: usize, size: usize, plan: ReducePlan, stage: usize) -> Chunks {
        if plan != ReducePlan::ScatterGather {
            // One shot: one chunk, every member's whole source (no division on the
            // small path).
            return Chunks {
                count,
                size,
                per: count,
                in_stage: false,
            };
        }
        let mut per = count.div_ceil(n);
        // Chunk boundaries on 64-byte boundaries keep wide loads aligned.
        if 64 % size == 0 {
            per = (per * size).next_multiple_of(64) / size;
        }
        let in_stage = per * size <= stage;
        Chunks {
            count,
            size,
            per,
            in_stage,
        }
    }

    /// Element range of member `i`'s chunk.
    fn chunk(&self, i: usize) -> (usize, usize) {
        let lo = (i * self.per).min(self.count);
        (lo, (lo + self.per).min(self.count))
    }

    /// Checks that member `i`'s published places hold what this plan reads from them
    /// (its contribution is where this PE's is: all members choose alike).
    fn validate<T: Transport, C: Combine>(
        &self,
        ctx: &SetCtx<'_, T>,
        i: usize,
        mine: &Descriptor,
        theirs: &Descriptor,
    ) -> Result<(), CollectiveError> {
        let bytes = self.count * self.size;
        if !mine.same_location(theirs) {
            return Err(ctx.bad(i));
        }
        if !theirs.is_at(Location::Direct) {
            // Inline or staged, as this PE's own: its plan chose the place for `bytes`
            // (which the member's agreed count gives too), and the place is the member's
            // runtime area, computed locally.
            return Ok(());
        }
        contribution(ctx, i, theirs, bytes, align_of::<C::Elem>())?;
        if theirs.is_at(Location::Direct) && !self.in_stage {
            let mut as_target = *theirs;
            as_target.set_data_off(theirs.extra());
            contribution(ctx, i, &as_target, bytes, align_of::<C::Elem>())?;
        }
        Ok(())
    }
}

fn scatter_gather<T: Transport, C: Combine>(
    ctx: &SetCtx<'_, T>,
    mine: &Descriptor,
    chunks: &Chunks,
    dst: T::Place,
) -> RtResult<()> {
    let size = chunks.size;
    let (lo, hi) = chunks.chunk(ctx.index);
    let result = if chunks.in_stage {
        ctx.stage_of(ctx.index)
    } else {
        T::advance(dst, lo * size)
    };
    // Read once per member: the offsets were validated from these descriptors.
    let mut sources = Vec::with_capacity(ctx.size());
    for i in 0..ctx.size() {
        let off = if i == ctx.index {
            mine.data_off()
        } else {
            ctx.arrived_desc(i).data_off()
        };
        sources.push(T::advance(ctx.data_of(i, off as usize), lo * size));
    }
    // SAFETY: every member's source holds the chunk (validated) and stays unchanged until
    // every member has passed `mid`; `result` is this PE's staging buffer (holding a
    // chunk, not read before `mid`) or its own target chunk. Blocks are read before
    // written, so a target that is the source is fine.
    unsafe { combine_into::<T, C>(ctx.t, result, hi - lo, ctx.size(), |i| sources[i]) };
    if !chunks.in_stage {
        // The chunk goes straight into every other member's target, so that nobody
        // reads a target another member may reuse once it returns.
        for i in ctx.others() {
            let target_off = ctx.arrived_desc(i).extra() as usize;
            // SAFETY: member i's target holds `count` elements (validated) and is written
            // in chunk `lo..hi` by this PE alone; member i does not return before this
            // PE's `mid`. In place (target = source), only this PE reads that chunk of
            // member i's source, and it has read it (above).
            unsafe {
                ctx.t.copy(
                    result,
                    T::advance(ctx.data_of(i, target_off), lo * size),
                    (hi - lo) * size,
                )
            };
        }
        // Nobody reads this PE's target: `done` goes out with `mid`, for a member whose
        // call fails and waits for its readers.
        ctx.publish_progress(sync::MID);
        ctx.publish_progress(sync::DONE);
        for i in ctx.others() {
            ctx.wait_progress(i, sync::MID)?;
        }
        return ctx.finish(());
    }
    ctx.publish_progress(sync::MID);
    for i in ctx.others() {
        ctx.wait_progress(i, sync::MID)?;
        let (lo_i, hi_i) = chunks.chunk(i);
        // SAFETY: member i's chunk result is complete (`mid`) in its staging buffer and
        // unchanged until it sees this PE arrive at the next epoch; the chunk of this
        // PE's target is written by nobody else, and member i has finished reading this
        // PE's source chunk i (it passed `mid`), so overwriting it is fine.
        unsafe {
            ctx.t.copy(
                ctx.stage_of(i),
                T::advance(dst, lo_i * size),
                (hi_i - lo_i) * size,
            )
        };
    }
    // SAFETY: this PE's own staging buffer holds its chunk result; the chunk of its
    // target is read by nobody (results are read from staging buffers).
    unsafe {
        ctx.t
            .copy(result, T::advance(dst, lo * size), (hi - lo) * size)
    };
    ctx.finish(())
}

/// `dst[0..count] = src(0)[..] ⊕ src(1)[..] ⊕ … ⊕ src(n-1)[..]`, left to right, block by
/// block: each block of each source is copied into private scratch, combined into an
/// accumulator of its own (so the compiler stores results unconditionally), and the
/// result copied to `dst` after every source's block was read, so `dst` may be one of
/// the sources.
///
/// # Safety
/// `src(m)` must hold `count` elements for every member `m < n`, and `dst` room for
/// `count`; nobody else may write them meanwhile in a correct program (a program that
/// does yields wrong values, not undefined behaviour: the bytes are copied).
#[inline]
pub(super) unsafe fn combine_into<T: Transport, C: Combine>(
    t: &T,
    dst: T::Place,
    count: usize,
    n: usize,
    src: impl Fn(usize) -> T::Place,
) {
    let size = size_of::<C::Elem>();
    if n == 1 {
        // SAFETY: as the caller guarantees; a no-op when dst is the source.
        unsafe { t.copy(src(0), dst, count * size) };
    } else if count * size <= SMALL_BLOCK_BYTES {
        // SAFETY: the caller's contract, passed on.
        unsafe { combine_blocks::<T, C, SMALL_BLOCK_BYTES>(t, dst, count, n, src) };
    } else {
        // SAFETY: the caller's contract, passed on.
        unsafe { combine_large::<T, C>(t, dst, count, n, &src) };
    }
}

// `combine_pair` reads a member's inline area at these fixed lengths.
const _: () = assert!(INLINE_BYTES == 64 && INLINE_HOT_BYTES == 32);

/// `dst[0..count] = src(0) ⊕ src(1)` of a two-member one-shot inline reduction, in member
/// order, where this member (`me`) has read its own contribution into `own` already and
/// the other's lies at `theirs`: one copy in (race-tolerant), one combine, one copy out.
///
/// # Safety
/// `own` must hold `count` elements (at most [`INLINE_BYTES`] bytes), `theirs` as many
/// in an inline area of an arrival line ([`INLINE_BYTES`] bytes),
/// `dst` room for them; as [`combine_into`] for who else writes them.
#[inline(always)]
unsafe fn combine_pair<T: Transport, C: Combine>(
    t: &T,
    dst: T::Place,
    count: usize,
    me: usize,
    own: &Block<INLINE_BYTES>,
    theirs: T::Place,
) {
    let bytes = count * size_of::<C::Elem>();
    let mut other = Block::<INLINE_BYTES>::new();
    let mut acc = Block::<INLINE_BYTES>::new();
    // SAFETY: the blocks are private, 64-aligned (≥ align_of::<C::Elem>()) and hold
    // `INLINE_BYTES >= bytes`; `theirs` is valid for `INLINE_BYTES` (an inline area, the
    // caller's contract); `own` and `other` are fully written for `count` elements
    // before they are viewed as elements, `acc` by the combine before it is copied out.
    // Every bit pattern is an element (`Combine`'s contract).
    unsafe {
        // The inline area's part in the line's first 64 bytes, or all of it (the bytes
        // past the data are the member's own, unused), at a fixed length: no dispatch on
        // the length, no call.
        if bytes > INLINE_HOT_BYTES {
            t.get_fixed::<INLINE_BYTES>(theirs, other.0.as_mut_ptr().cast());
        } else {
            t.get_fixed::<INLINE_HOT_BYTES>(theirs, other.0.as_mut_ptr().cast());
        }
        let view = |b: &Block<INLINE_BYTES>| {
            std::slice::from_raw_parts(b.0.as_ptr().cast::<C::Elem>(), count)
        };
        let (first, second) = if me == 0 {
            (own, &other)
        } else {
            (&other, own)
        };
        C::combine(
            std::slice::from_raw_parts_mut(acc.0.as_mut_ptr().cast::<C::Elem>(), count),
            view(first),
            view(second),
        );
        t.put_small(acc.0.as_ptr().cast(), dst, bytes);
    }
}

/// [`combine_into`] of more than [`SMALL_BLOCK_BYTES`], in a frame of its own.
///
/// # Safety
/// As [`combine_into`].
#[inline(never)]
unsafe fn combine_large<T: Transport, C: Combine>(
    t: &T,
    dst: T::Place,
    count: usize,
    n: usize,
    src: &dyn Fn(usize) -> T::Place,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { combine_blocks::<T, C, BLOCK_BYTES>(t, dst, count, n, src) };
}

/// [`combine_into`] for `n >= 2`, through scratch blocks of `B` bytes.
///
/// # Safety
/// As [`combine_into`].
#[inline(always)]
unsafe fn combine_blocks<T: Transport, C: Combine, const B: usize>(
    t: &T,
    dst: T::Place,
    count: usize,
    n: usize,
    src: impl Fn(usize) -> T::Place,
) {
    let size = size_of::<C::Elem>();
    let per_block = B / size;
    let mut blocks = [Block::<B>::new(), Block::new(), Block::new(), Block::new()];
    let [acc, spare, a, b] = &mut blocks;
    let (mut cur, mut next) = (acc.0.as_mut_ptr(), spare.0.as_mut_ptr());
    let (a, b) = (a.0.as_mut_ptr(), b.0.as_mut_ptr());
    let mut done = 0;
    while done < count {
        let k = per_block.min(count - done);
        let at = |m: usize| T::advance(src(m), done * size);
        // SAFETY: the blocks are private, 64-aligned (≥ align_of::<C::Elem>()), hold
        // `per_block` elements, and are fully written (by a copy or a combine) before they
        // are viewed as elements; the sources hold `count` elements (the caller's
        // contract). Every bit pattern is an element (`Combine`'s contract).
        unsafe {
            let view = |p: *mut MaybeUninit<u8>| std::slice::from_raw_parts(p.cast::<C::Elem>(), k);
            t.get(at(0), a.cast(), k * size);
            t.get(at(1), b.cast(), k * size);
            C::combine(
                std::slice::from_raw_parts_mut(cur.cast::<C::Elem>(), k),
                view(a),
                view(b),
            );
            for m in 2..n {
                t.get(at(m), b.cast(), k * size);
                C::combine(
                    std::slice::from_raw_parts_mut(next.cast::<C::Elem>(), k),
                    view(cur),
                    view(b),
                );
                std::mem::swap(&mut cur, &mut next);
            }
            t.put(
                cur.cast_const().cast(),
                T::advance(dst, done * size),
                k * size,
            );
        }
        done += k;
    }
}
