//! The example of `shmem_barrier(3)`: a barrier over a subset of the PEs, called many
//! times with the same work array ("the same pSync array may be reused on consecutive
//! calls to shmem_barrier if the same active PE set is used").
//!
//! The subset is the even PEs (`PE_start` 0, `logPE_stride` 1). The work array is a
//! symmetric static, ready by its declaration: no `SHMEM_BARRIER_SYNC_SIZE`, no
//! initialisation loop, no `shmem_barrier_all` before the first use. Each round, every
//! member puts the round number into the next member's mailbox and meets the others in
//! the barrier; since the barrier completes every earlier remote update, each member
//! must then find that round's number from the member before it. Two mailboxes, used
//! in turn, make one barrier per round enough: the next round's put goes to the other
//! one, and the put after that happens only after this round's read (one barrier later).
//!
//! Each member prints how many barriers it passed and checks every round's token; the
//! odd PEs take no part.
//!
//! Run: `cargo run --release --example barrier [-- ROUNDS]` (5 PEs unless `SHMEM_NPES`
//! says otherwise; 1000 rounds by default) or `shmemrun -n 4 target/release/examples/barrier`.

use std::error::Error;

use shmem_typed::prelude::*;

/// The barrier's work array (pSync), reused by every call.
#[symmetric]
static SYNC: BarrierSync = BarrierSync::new();
/// Mailboxes for the tokens, used in turn by odd and even rounds.
#[symmetric]
static MAILBOX: [u64; 2] = [0; 2];

#[shmem_typed::main(npes = 5)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let rounds: u64 = match std::env::args().nth(1) {
        None => 1000,
        Some(text) => text
            .parse()
            .map_err(|_| format!("the argument is the number of rounds, not {text:?}"))?,
    };
    let me = pe.my_pe();
    let evens = ActiveSet::new(0, 1, pe.n_pes().div_ceil(2))?;
    let Some(index) = evens.index_of(me) else {
        println!("PE {me}: not an even PE, no barriers");
        return Ok(());
    };
    let members: Vec<usize> = evens.members().collect();
    let next = members[(index + 1) % members.len()];
    let previous = members[(index + members.len() - 1) % members.len()];

    for round in 1..=rounds {
        let slot = (round % 2) as usize;
        MAILBOX.p(pe, next, slot, round)?;
        barrier_with(pe, &evens, &SYNC)?;
        let token = MAILBOX.read(pe)[slot];
        if token != round {
            return Err(format!(
                "after barrier {round} the token from PE {previous} is {token}, not {round}"
            )
            .into());
        }
    }
    println!(
        "PE {me}: {rounds} barriers over the even PEs {members:?}, every token from PE {previous} arrived"
    );
    Ok(())
}
