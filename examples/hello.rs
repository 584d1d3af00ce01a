//! Every PE greets its right-hand neighbour in the world team, then says who greeted it.
//! Runs on any number of PEs (one greets itself).
//!
//! Run: `cargo run --release --example hello` (starts its own PEs; set `SHMEM_NPES` to
//! choose how many) or `shmemrun -n 3 target/release/examples/hello`.

use shmem_typed::prelude::*;

/// What a PE leaves in its neighbour's inbox. `Pod` (plain data, no padding) is what
/// symmetric memory holds; the derives come from the prelude.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Greeting {
    from: u32,
    team_size: u32,
}

/// Every PE's inbox, at the same place on every PE.
#[symmetric]
static INBOX: Greeting = Greeting {
    from: u32::MAX,
    team_size: 0,
};

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.team_world();
    let (me, n) = (world.my_pe(), world.n_pes());
    let right = world.global_pe((me + 1) % n).expect("a member of the team");
    let hello = Greeting {
        from: me as u32,
        team_size: n as u32,
    };
    INBOX.put_value(pe, right, &hello)?;
    // Completes every PE's put and makes it visible.
    pe.barrier_all()?;
    let got = INBOX.read(pe);
    assert_eq!(
        got.from as usize,
        (me + n - 1) % n,
        "greeted by the left neighbour"
    );
    assert_eq!(got.team_size as usize, n);
    println!("hello from PE {me} of {n}");
    Ok(())
}
