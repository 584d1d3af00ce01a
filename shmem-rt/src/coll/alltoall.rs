//! Alltoall and alltoalls: member `j`'s block for member `i` (elements `i·nelems ..` of
//! its source) lands in block `j` of member `i`'s target. Every member pulls the blocks
//! meant for it straight into its own target; nobody writes another member's memory.
//!
//! A contiguous source small enough travels packed in the member's arrival line or
//! staging buffer (all `n` blocks, so readers need nothing trailing); otherwise it is
//! read in place (*direct*), with the source's stride in the descriptor, and the owner
//! waits for its readers' `done` before returning.

use super::ctx::SetCtx;
use super::select::Carrier;
use super::{contribution, fail, place_contribution, publish_or_fail, wait_readers, Span};
use crate::error::{CollectiveError, Operation, RtResult, Unable};
use crate::memory::layout::sync;
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType, Location};

/// The shape of an alltoall(s) call on one member: `nelems` elements per block, and the
/// strides (in elements) between consecutive elements of its target and its source (1
/// and 1 for `alltoall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocks {
    /// Elements in each block.
    pub nelems: usize,
    /// Target stride (a member passing 0 fails the call on every member).
    pub target_stride: usize,
    /// Source stride (likewise).
    pub source_stride: usize,
}

impl Blocks {
    /// Elements of a buffer that `n` blocks span at `stride` (`None` on overflow).
    fn span(&self, n: usize, stride: usize) -> Option<usize> {
        match n.checked_mul(self.nelems)? {
            0 => Some(0),
            count => (count - 1).checked_mul(stride)?.checked_add(1),
        }
    }
}

/// This member's descriptor of an alltoall(s) on a set of `n` members, with the faults
/// its own arguments have: a zero stride, a target or source too small for `n` blocks at
/// its stride, a target that overlaps the source.
#[inline]
pub(crate) fn describe(
    set_key: u64,
    n: usize,
    elem: ElemType,
    target: Span,
    source: Span,
    blocks: Blocks,
) -> Descriptor {
    let size = elem.size as usize;
    let mut mine = Descriptor::new(Operation::Alltoall, set_key);
    mine.set_elem(elem);
    mine.set_nelems(blocks.nelems as u64);
    mine.set_capacity(target.len as u64);
    let target_span = blocks.span(n, blocks.target_stride);
    let source_span = blocks.span(n, blocks.source_stride);
    match (target_span, source_span) {
        _ if blocks.target_stride == 0 || blocks.source_stride == 0 => {
            mine.set_unable(Unable::ZeroStride)
        }
        (Some(t), _) if t > target.len => mine.set_unable(Unable::TargetTooSmall {
            capacity: target.len as u64,
            needed: t as u64,
        }),
        (_, Some(s)) if s > source.len => mine.set_unable(Unable::SourceTooSmall {
            len: source.len as u64,
            needed: s as u64,
        }),
        (None, _) => mine.set_unable(Unable::TargetTooSmall {
            capacity: target.len as u64,
            needed: u64::MAX,
        }),
        (_, None) => mine.set_unable(Unable::SourceTooSmall {
            len: source.len as u64,
            needed: u64::MAX,
        }),
        (Some(t), Some(s)) => {
            if source.overlaps(s, &target, t, size) {
                mine.set_unable(Unable::Overlap);
            }
        }
    }
    mine
}

/// Alltoall(s) over `ctx`'s set: block `ctx.index` of every member's source into block
/// `i` of this PE's target for member `i`. Every member passes the same `nelems`; the
/// target and source must not overlap.
pub(crate) fn alltoall<T: Transport>(
    ctx: &SetCtx<'_, T>,
    elem: ElemType,
    target: Span,
    source: Span,
    blocks: Blocks,
) -> RtResult<()> {
    let n = ctx.size();
    let size = elem.size as usize;
    let mut mine = describe(ctx.set.key(), n, elem, target, source, blocks);
    // Everything this PE sends, as one contiguous run when the source is contiguous.
    let all = Span::new(source.off, n.saturating_mul(blocks.nelems));
    if !mine.is_fault() {
        let carrier = if blocks.source_stride == 1 {
            ctx.env.select.gather(all.len * size, ctx.stage_capacity())
        } else {
            Carrier::Direct
        };
        place_contribution(&mut mine, carrier, all);
        mine.set_extra(blocks.source_stride as u64);
    }
    let staged = mine.is_at(Location::Staged);
    publish_or_fail(ctx, &mut mine, all, staged)?;
    let exposed = mine.is_at(Location::Direct);
    let dst = ctx.data_of(ctx.index, target.off);
    let copy_block = |from: T::Place, stride: usize, block: usize| {
        let to = T::advance(dst, block * blocks.nelems * blocks.target_stride * size);
        if stride == 1 && blocks.target_stride == 1 {
            // SAFETY: `from` holds the block's elements (this PE's checked source, or a
            // member's validated contribution), and block `block` of this PE's target
            // holds them (checked above); target and sources do not overlap (this
            // PE's: checked; others': another partition).
            unsafe { ctx.t.copy(from, to, blocks.nelems * size) };
            return;
        }
        for k in 0..blocks.nelems {
            // SAFETY: as above, element by element at the strides.
            unsafe {
                ctx.t.copy(
                    T::advance(from, k * stride * size),
                    T::advance(to, k * blocks.target_stride * size),
                    size,
                )
            };
        }
    };
    let my_block = |stride: usize| ctx.index * blocks.nelems * stride * size;
    copy_block(
        T::advance(
            ctx.data_of(ctx.index, source.off),
            my_block(blocks.source_stride),
        ),
        blocks.source_stride,
        ctx.index,
    );

    let mut any_direct = exposed;
    for i in ctx.others() {
        let theirs = ctx.poll_arrival(i)?;
        let from = ctx
            .check_member(&mine, i, &theirs)
            .and_then(|()| their_blocks(ctx, i, &theirs, &blocks, size));
        let (place, stride) = match from {
            Ok(from) => from,
            Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
        };
        any_direct |= theirs.is_at(Location::Direct);
        copy_block(T::advance(place, my_block(stride)), stride, i);
    }
    ctx.note_all_arrived();
    if any_direct {
        ctx.publish_progress(sync::DONE);
    }
    if exposed {
        wait_readers(ctx, &mine)?;
    }
    ctx.finish(())
}

/// Where member `index`'s `n` blocks start and their stride in elements, as its
/// descriptor says: packed (stride 1) inline or staged, or in its source at the stride it
/// published, after checking that the whole run lies where it may be read.
fn their_blocks<T: Transport>(
    ctx: &SetCtx<'_, T>,
    index: usize,
    theirs: &Descriptor,
    blocks: &Blocks,
    size: usize,
) -> Result<(T::Place, usize), CollectiveError> {
    let stride = match theirs.location() {
        Ok(Location::Direct) => usize::try_from(theirs.extra()).unwrap_or(0),
        _ => 1,
    };
    let elems = match stride {
        0 => None,
        s => blocks.span(ctx.size(), s),
    };
    let bytes = elems.and_then(|e| e.checked_mul(size));
    match bytes {
        Some(bytes) => Ok((contribution(ctx, index, theirs, bytes, 1)?, stride)),
        None => Err(ctx.bad(index)),
    }
}
