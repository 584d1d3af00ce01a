//! Failures as words: a member that finds a failed call writes it into its fault record
//! (owner-written, under a sequence lock), and members that learn of the call later —
//! a broadcast root that returned before its readers checked their arguments — read the
//! error there, word for word, and report it in the same words.

use super::terms::{ArgValue, CollectiveError, Field, Operation, ReduceOp, Unable, WaitSite};

/// Words of an encoded failure.
pub const FAULT_WORDS: usize = 8;

/// Operation names as codes (the `during` of an error).
const NAMES: [&str; 13] = [
    "barrier",
    "broadcast",
    "collect",
    "fcollect",
    "reduce",
    "finalize",
    "sync",
    "alltoall",
    "inscan",
    "exscan",
    "symmetric allocation",
    "set_lock",
    "a collective",
];

/// The code of call name `name` in a fault record (the last code, "a collective", for a
/// name not in the list).
pub fn name_code(name: &str) -> u64 {
    NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or(NAMES.len() - 1) as u64
}

/// The call name a fault record's code stands for.
pub fn name_from(code: u64) -> &'static str {
    NAMES
        .get(code as usize)
        .copied()
        .unwrap_or(NAMES[NAMES.len() - 1])
}

fn field_code(f: Field) -> u64 {
    match f {
        Field::Operation => 0,
        Field::ActiveSet => 1,
        Field::ElementType => 2,
        Field::Nelems => 3,
        Field::Root => 4,
    }
}

fn field_from(code: u64) -> Option<Field> {
    Some(match code {
        0 => Field::Operation,
        1 => Field::ActiveSet,
        2 => Field::ElementType,
        3 => Field::Nelems,
        4 => Field::Root,
        _ => return None,
    })
}

const REDUCE_OPS: [ReduceOp; 7] = [
    ReduceOp::And,
    ReduceOp::Or,
    ReduceOp::Xor,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::Sum,
    ReduceOp::Prod,
];

fn operation_code(op: Operation) -> u64 {
    match op {
        Operation::Barrier => 0,
        Operation::Broadcast => 1,
        Operation::Collect => 2,
        Operation::Fcollect => 3,
        Operation::Reduce(r) => 4 + REDUCE_OPS.iter().position(|x| *x == r).unwrap_or(0) as u64,
        Operation::Alltoall => 11,
        Operation::Inscan(r) => 12 + REDUCE_OPS.iter().position(|x| *x == r).unwrap_or(0) as u64,
        Operation::Exscan(r) => 19 + REDUCE_OPS.iter().position(|x| *x == r).unwrap_or(0) as u64,
        Operation::Allocation => 26,
    }
}

fn operation_from(code: u64) -> Option<Operation> {
    Some(match code {
        0 => Operation::Barrier,
        1 => Operation::Broadcast,
        2 => Operation::Collect,
        3 => Operation::Fcollect,
        c @ 4..=10 => Operation::Reduce(REDUCE_OPS[c as usize - 4]),
        11 => Operation::Alltoall,
        c @ 12..=18 => Operation::Inscan(REDUCE_OPS[c as usize - 12]),
        c @ 19..=25 => Operation::Exscan(REDUCE_OPS[c as usize - 19]),
        26 => Operation::Allocation,
        _ => return None,
    })
}

/// A value as two words.
fn value_words(v: ArgValue) -> [u64; 2] {
    match v {
        ArgValue::Operation(op) => [operation_code(op), 0],
        ArgValue::ActiveSet(key) => [key, 0],
        ArgValue::ElementType { size, tag } => [size as u64, tag],
        ArgValue::Nelems(n) => [n, 0],
        ArgValue::Root(r) => [r, 0],
    }
}

fn value_from(field: Field, [a, b]: [u64; 2]) -> Option<ArgValue> {
    Some(match field {
        Field::Operation => ArgValue::Operation(operation_from(a)?),
        Field::ActiveSet => ArgValue::ActiveSet(a),
        Field::ElementType => ArgValue::ElementType {
            size: a as u32,
            tag: b,
        },
        Field::Nelems => ArgValue::Nelems(a),
        Field::Root => ArgValue::Root(a),
    })
}

/// Variant codes.
const MISMATCH: u64 = 1;
const UNABLE: u64 = 2;
const TOO_SMALL: u64 = 3;
const WRONG_SET: u64 = 4;
const DEADLOCK: u64 = 5;
const BAD_DESCRIPTOR: u64 = 6;
const DIVERGED: u64 = 7;

/// The error as record words (an [`CollectiveError::Earlier`] is recorded as the error
/// it carries; a `MemberLeft`, which only finalize finds, is not recorded).
pub fn encode(err: &CollectiveError) -> Option<[u64; FAULT_WORDS]> {
    let mut w = [0u64; FAULT_WORDS];
    match err {
        CollectiveError::Mismatch {
            during,
            field,
            me,
            mine,
            other,
            theirs,
        } => {
            w[0] = MISMATCH | name_code(during) << 8 | field_code(*field) << 16;
            w[1] = *me as u64;
            w[2] = *other as u64;
            [w[3], w[4]] = value_words(*mine);
            [w[5], w[6]] = value_words(*theirs);
        }
        CollectiveError::Unable { during, pe, why } => {
            let (kind, a, b) = match *why {
                Unable::TargetTooSmall { capacity, needed } => (0, capacity, needed),
                Unable::RootOutOfRange { root, size } => (1, root, size),
                Unable::Overlap => (2, 0, 0),
                Unable::WorkTooSmall { capacity, needed } => (3, capacity, needed),
                Unable::SourceTooSmall { len, needed } => (4, len, needed),
                Unable::ZeroStride => (5, 0, 0),
            };
            w[0] = UNABLE | name_code(during) << 8 | kind << 16;
            w[1] = *pe as u64;
            w[2] = a;
            w[3] = b;
        }
        CollectiveError::TargetTooSmall {
            during,
            pe,
            capacity,
            needed,
        } => {
            w[0] = TOO_SMALL | name_code(during) << 8;
            w[1] = *pe as u64;
            w[2] = *capacity;
            w[3] = *needed;
        }
        CollectiveError::WrongSet {
            during,
            bound,
            used,
        } => {
            w[0] = WRONG_SET | name_code(during) << 8;
            w[1] = *bound;
            w[2] = *used;
        }
        CollectiveError::Deadlock {
            during,
            me,
            mine,
            other,
            theirs,
        } => {
            w[0] = DEADLOCK
                | name_code(during) << 8
                | name_code(mine.name) << 16
                | name_code(theirs.name) << 24
                | (mine.runtime_owned as u64) << 32
                | (theirs.runtime_owned as u64) << 33;
            w[1] = *me as u64;
            w[2] = *other as u64;
            w[3] = mine.set_key;
            w[4] = mine.sync;
            w[5] = mine.epoch;
            w[6] = theirs.set_key;
            w[7] = theirs.sync ^ theirs.epoch << 40;
        }
        CollectiveError::BadDescriptor { during, pe } => {
            w[0] = BAD_DESCRIPTOR | name_code(during) << 8;
            w[1] = *pe as u64;
        }
        CollectiveError::Diverged {
            during,
            me,
            other,
            before,
        } => {
            w[0] = DIVERGED | name_code(during) << 8;
            w[1] = *me as u64;
            w[2] = *other as u64;
            w[3] = *before;
        }
        CollectiveError::Earlier { error, .. } => return encode(error),
        CollectiveError::MemberLeft { .. } => return None,
    }
    Some(w)
}

/// The error recorded in `w`, if the words are a record this runtime writes.
pub fn decode(w: &[u64; FAULT_WORDS]) -> Option<CollectiveError> {
    let during = name_from((w[0] >> 8) & 0xff);
    Some(match w[0] & 0xff {
        MISMATCH => {
            let field = field_from((w[0] >> 16) & 0xff)?;
            CollectiveError::Mismatch {
                during,
                field,
                me: w[1] as usize,
                mine: value_from(field, [w[3], w[4]])?,
                other: w[2] as usize,
                theirs: value_from(field, [w[5], w[6]])?,
            }
        }
        UNABLE => CollectiveError::Unable {
            during,
            pe: w[1] as usize,
            why: match (w[0] >> 16) & 0xff {
                0 => Unable::TargetTooSmall {
                    capacity: w[2],
                    needed: w[3],
                },
                1 => Unable::RootOutOfRange {
                    root: w[2],
                    size: w[3],
                },
                2 => Unable::Overlap,
                3 => Unable::WorkTooSmall {
                    capacity: w[2],
                    needed: w[3],
                },
                4 => Unable::SourceTooSmall {
                    len: w[2],
                    needed: w[3],
                },
                5 => Unable::ZeroStride,
                _ => return None,
            },
        },
        TOO_SMALL => CollectiveError::TargetTooSmall {
            during,
            pe: w[1] as usize,
            capacity: w[2],
            needed: w[3],
        },
        WRONG_SET => CollectiveError::WrongSet {
            during,
            bound: w[1],
            used: w[2],
        },
        DEADLOCK => CollectiveError::Deadlock {
            during,
            me: w[1] as usize,
            mine: Box::new(WaitSite {
                name: name_from((w[0] >> 16) & 0xff),
                set_key: w[3],
                sync: w[4],
                epoch: w[5],
                runtime_owned: (w[0] >> 32) & 1 != 0,
            }),
            other: w[2] as usize,
            theirs: Box::new(WaitSite {
                name: name_from((w[0] >> 24) & 0xff),
                set_key: w[6],
                sync: w[7] & ((1 << 40) - 1),
                epoch: w[7] >> 40,
                runtime_owned: (w[0] >> 33) & 1 != 0,
            }),
        },
        BAD_DESCRIPTOR => CollectiveError::BadDescriptor {
            during,
            pe: w[1] as usize,
        },
        DIVERGED => CollectiveError::Diverged {
            during,
            me: w[1] as usize,
            other: w[2] as usize,
            before: w[3],
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_errors_read_back_alike() {
        let errors = [
            CollectiveError::Mismatch {
                during: "broadcast",
                field: Field::Root,
                me: 0,
                mine: ArgValue::Root(0),
                other: 3,
                theirs: ArgValue::Root(2),
            },
            CollectiveError::Mismatch {
                during: "reduce",
                field: Field::ElementType,
                me: 1,
                mine: ArgValue::ElementType { size: 8, tag: 77 },
                other: 2,
                theirs: ArgValue::ElementType { size: 4, tag: 78 },
            },
            CollectiveError::Mismatch {
                during: "barrier",
                field: Field::Operation,
                me: 1,
                mine: ArgValue::Operation(Operation::Barrier),
                other: 2,
                theirs: ArgValue::Operation(Operation::Reduce(ReduceOp::Max)),
            },
            CollectiveError::Unable {
                during: "fcollect",
                pe: 4,
                why: Unable::TargetTooSmall {
                    capacity: 3,
                    needed: 8,
                },
            },
            CollectiveError::Unable {
                during: "broadcast",
                pe: 1,
                why: Unable::RootOutOfRange { root: 9, size: 3 },
            },
            CollectiveError::TargetTooSmall {
                during: "collect",
                pe: 2,
                capacity: 5,
                needed: 6,
            },
            CollectiveError::BadDescriptor {
                during: "reduce",
                pe: 7,
            },
            CollectiveError::Diverged {
                during: "barrier",
                me: 0,
                other: 1,
                before: 40,
            },
            CollectiveError::Mismatch {
                during: "inscan",
                field: Field::Operation,
                me: 0,
                mine: ArgValue::Operation(Operation::Inscan(ReduceOp::Sum)),
                other: 1,
                theirs: ArgValue::Operation(Operation::Exscan(ReduceOp::Prod)),
            },
            CollectiveError::Unable {
                during: "exscan",
                pe: 2,
                why: Unable::Overlap,
            },
        ];
        for err in errors {
            let words = encode(&err).expect("recordable");
            assert_eq!(decode(&words), Some(err));
        }
        assert_eq!(decode(&[0; FAULT_WORDS]), None);
    }
}
