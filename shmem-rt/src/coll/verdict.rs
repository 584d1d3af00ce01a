//! The errors a call's descriptors earn, built in one place: by the runtime's own
//! protocol, which reads the members' descriptors one by one as they arrive, and by a
//! network with its own collectives (`coll::offload`), which gathers every member's descriptor
//! at once and judges them all ([`judge`]) before any data moves. Both report the same
//! error for the same arguments.

use super::sets::SetSpec;
use crate::error::{CollectiveError, Field, Operation, Unable};
use crate::wire::descriptor::{disagreement, Descriptor};

/// Member `pe` cannot take part, for reason `why`; `set_size` completes a root out of
/// range (the set's size does not travel in a descriptor).
pub(crate) fn unable(
    during: &'static str,
    pe: usize,
    why: Unable,
    set_size: usize,
) -> CollectiveError {
    let why = match why {
        Unable::RootOutOfRange { root, .. } => Unable::RootOutOfRange {
            root,
            size: set_size as u64,
        },
        other => other,
    };
    CollectiveError::Unable { during, pe, why }
}

/// PE `me` (descriptor `mine`) and PE `other` (`theirs`) disagree on `field`; a value
/// that cannot be decoded makes it `other`'s undecodable descriptor instead.
pub(crate) fn mismatch(
    during: &'static str,
    me: usize,
    mine: &Descriptor,
    other: usize,
    theirs: &Descriptor,
    field: Field,
) -> CollectiveError {
    let (Ok(mine_value), Ok(their_value)) = (mine.value(field), theirs.value(field)) else {
        return CollectiveError::BadDescriptor { during, pe: other };
    };
    CollectiveError::Mismatch {
        during: mine.op().map_or(during, Operation::name),
        field,
        me,
        mine: mine_value,
        other,
        theirs: their_value,
    }
}

/// Collect's capacity rule: the first of `capacities` (PE, target capacity), in the
/// order given, that cannot hold the `total` elements of the result.
pub(crate) fn capacities_hold(
    during: &'static str,
    total: u64,
    mut capacities: impl Iterator<Item = (usize, u64)>,
) -> Result<(), CollectiveError> {
    match capacities.find(|&(_, capacity)| capacity < total) {
        None => Ok(()),
        Some((pe, capacity)) => Err(CollectiveError::TargetTooSmall {
            during,
            pe,
            capacity,
            needed: total,
        }),
    }
}

/// The verdict on a call from every member's descriptor (`all[i]` is member `i`'s,
/// `all[index]` this member's): `Ok` when every member's arguments agree with this
/// member's and every member can take part; else the first problem, this member's own
/// first, then the others' in member order. A collect's total must also fit every
/// member's target. Every member judges the same descriptors, so all reach the same
/// verdict.
pub(crate) fn judge(
    during: &'static str,
    set: &SetSpec,
    index: usize,
    all: &[Descriptor],
) -> Result<(), CollectiveError> {
    let mine = &all[index];
    let me = set.member(index);
    if let Ok(Some(why)) = mine.unable() {
        return Err(unable(during, me, why, set.size()));
    }
    for (i, theirs) in all.iter().enumerate().filter(|&(i, _)| i != index) {
        let other = set.member(i);
        if let Some(field) = disagreement(mine, theirs) {
            return Err(mismatch(during, me, mine, other, theirs, field));
        }
        match theirs.unable() {
            Ok(None) => {}
            Ok(Some(why)) => return Err(unable(during, other, why, set.size())),
            Err(_) => return Err(CollectiveError::BadDescriptor { during, pe: other }),
        }
    }
    if mine.is(Operation::Collect) {
        let total = all
            .iter()
            .fold(0u64, |sum, d| sum.saturating_add(d.nelems()));
        let order = std::iter::once(index).chain((0..all.len()).filter(|&i| i != index));
        capacities_hold(
            during,
            total,
            order.map(|i| (set.member(i), all[i].capacity())),
        )?;
    }
    Ok(())
}
