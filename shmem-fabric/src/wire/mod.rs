//! Encodings other PEs read: the terms of the protocol and the words that carry them —
//! set keys, progress words, the job's failure record, call descriptors and fault
//! records. The lowest layer of the crate: it imports nothing of it, so every layer
//! above reads the same words the same way.

pub(crate) mod descriptor;
pub(crate) mod failure;
pub(crate) mod faults;
pub(crate) mod progress;
pub(crate) mod set_key;
pub(crate) mod terms;
