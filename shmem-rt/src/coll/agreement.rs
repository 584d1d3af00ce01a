//! Judging a call from every member's descriptor at once: what a transport with its own
//! collectives (MPI's) decides after gathering the descriptors of one call, before any
//! data moves. Every member judges the same descriptors in the same order, so every
//! member reaches the same verdict; the errors are those the runtime's own protocol
//! reports for the same arguments.

use super::descriptor::{disagreement, Descriptor};
use super::sets::SetSpec;
use crate::error::{CollectiveError, Operation, Unable};

/// The verdict on a call: `Ok` when every member's arguments agree with this member's
/// and every member can take part (`all[i]` is member `i`'s descriptor, `all[index]`
/// this member's); else the first problem, this member's own first, then the others' in
/// member order. A collect's total must also fit every member's target.
pub(crate) fn judge(
    during: &'static str,
    set: &SetSpec,
    index: usize,
    all: &[Descriptor],
) -> Result<(), CollectiveError> {
    let mine = &all[index];
    let unable = |i: usize, why: Unable| CollectiveError::Unable {
        during,
        pe: set.member(i),
        why: match why {
            Unable::RootOutOfRange { root, .. } => Unable::RootOutOfRange {
                root,
                size: set.size() as u64,
            },
            other => other,
        },
    };
    if let Ok(Some(why)) = mine.unable() {
        return Err(unable(index, why));
    }
    for (i, theirs) in all.iter().enumerate().filter(|&(i, _)| i != index) {
        if let Some(field) = disagreement(mine, theirs) {
            return Err(match (mine.value(field), theirs.value(field)) {
                (Ok(mine_value), Ok(their_value)) => CollectiveError::Mismatch {
                    during: mine.op().map_or(during, Operation::name),
                    field,
                    me: set.member(index),
                    mine: mine_value,
                    other: set.member(i),
                    theirs: their_value,
                },
                _ => CollectiveError::BadDescriptor {
                    during,
                    pe: set.member(i),
                },
            });
        }
        match theirs.unable() {
            Ok(None) => {}
            Ok(Some(why)) => return Err(unable(i, why)),
            Err(_) => {
                return Err(CollectiveError::BadDescriptor {
                    during,
                    pe: set.member(i),
                })
            }
        }
    }
    if mine.is(Operation::Collect) {
        let total = all
            .iter()
            .fold(0u64, |sum, d| sum.saturating_add(d.nelems()));
        let order = std::iter::once(index).chain((0..all.len()).filter(|&i| i != index));
        for i in order {
            if all[i].capacity() < total {
                return Err(CollectiveError::TargetTooSmall {
                    during,
                    pe: set.member(i),
                    capacity: all[i].capacity(),
                    needed: total,
                });
            }
        }
    }
    Ok(())
}
