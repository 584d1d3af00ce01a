//! The example of `shmem_broadcast(3)`: with 8 PEs, `shmem_broadcast64(target, source,
//! nlong, 0, 4, 0, 4, pSync)` copies the source on PE 4 to the target on PEs 5, 6 and 7.
//!
//! `PE_root` 0 is an index within the active set (`PE_start` 4, `logPE_stride` 0,
//! `PE_size` 4), so the root is PE 4. The root's own target is not written, and PEs 0–3
//! are not in the set and do not call. 64-bit data is `u64`; no pSync to size or
//! initialise, and no barrier before the call.
//!
//! Each PE prints its target and checks it: PE 4's source on PEs 5–7, untouched (all
//! zero) everywhere else. The example needs at least 8 PEs and says so otherwise.
//!
//! Run: `cargo run --release --example broadcast` (8 PEs unless `SHMEM_NPES` says
//! otherwise) or `shmemrun -n 8 target/release/examples/broadcast`.

use std::error::Error;

use shmem_typed::prelude::*;

/// `nlong`: elements broadcast.
const NLONG: usize = 4;

#[symmetric]
static SOURCE: [u64; NLONG] = [0; NLONG];
/// Zero until the broadcast writes it.
#[symmetric]
static TARGET: [u64; NLONG] = [0; NLONG];

/// PE `p`'s source: its number in the hundreds, the element index in the units.
fn source(p: usize) -> [u64; NLONG] {
    std::array::from_fn(|i| (100 * p + i) as u64)
}

#[shmem_typed::main(npes = 8)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    if n < 8 {
        return Err(format!(
            "this example needs at least 8 PEs (its active set is PEs 4 to 7), not {n}: \
             run it with SHMEM_NPES=8 or shmemrun -n 8"
        )
        .into());
    }
    SOURCE.write(pe, source(me));

    let set = ActiveSet::new(4, 0, 4)?; // PE_start 4, logPE_stride 0, PE_size 4
    let root = 0; // PE_root: an index within the set, so the root is PE 4
    let (role, expected) = match set.index_of(me) {
        None => ("not in the active set, target untouched", [0; NLONG]),
        Some(index) => {
            broadcast::<u64>(pe, &set, root, &TARGET, &SOURCE)?;
            if index == root {
                ("the root, target untouched", [0; NLONG])
            } else {
                ("from the root PE 4", source(4))
            }
        }
    };
    let target = TARGET.read(pe);
    println!("PE {me}: target = {target:?} ({role})");
    if target != expected {
        return Err(format!("the target should be {expected:?}").into());
    }
    Ok(())
}
