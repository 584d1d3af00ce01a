//! Encodings other PEs read: the terms of the protocol and the words that carry them —
//! set keys, progress words, the job's failure record, call descriptors and fault
//! records. The lowest layer of the crate: it imports nothing of it, so every layer
//! above reads the same words the same way.

pub mod descriptor;
pub mod failure;
pub mod faults;
pub mod progress;
pub mod set_key;
pub mod terms;
