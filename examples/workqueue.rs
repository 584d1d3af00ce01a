//! Dynamic load balancing with a shared task counter: tasks of very different costs are
//! handed out in chunks by `atomic_fetch_add` on a counter on PE 0, so a PE that drew
//! cheap tasks simply takes more.
//!
//! Task `t` hashes its number through a chain whose length varies from 1 to 4096 steps
//! (most tasks are short, a few are long). Each PE claims the next `CHUNK` task numbers
//! until none are left, XORs every result into a checksum on PE 0 (`atomic_xor`: the
//! order of the PEs' updates does not matter) and counts its tasks there
//! (`atomic_add`). PE 0 checks that every task ran exactly once and that the checksum
//! equals a sequential run, and prints how many tasks each PE took.
//!
//! Run: `cargo run --release --example workqueue [-- TASKS [CHUNK]]` (4 PEs unless
//! `SHMEM_NPES` says otherwise; 20,000 tasks in chunks of 4 by default) or
//! `shmemrun -n 3 target/release/examples/workqueue 5000 8`.

use std::error::Error;

use shmem_typed::prelude::*;

/// The next task number nobody has claimed (used on PE 0).
#[symmetric]
static NEXT: u64 = 0;

/// Tasks done, in all (used on PE 0).
#[symmetric]
static DONE: u64 = 0;

/// XOR of every task's result (used on PE 0).
#[symmetric]
static CHECKSUM: u64 = 0;

/// Tasks each PE took, gathered on every PE at the end.
#[symmetric]
static TAKEN: [u64; 1] = [0];
#[symmetric]
static ALL_TAKEN: [u64; MAX_PES] = [0; MAX_PES];

/// Most PEs this example reports on.
const MAX_PES: usize = 256;

/// splitmix64: a well-mixed 64-bit value for every input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Task `t`'s result: a hash chain of 1 to 4096 steps (the length skewed to short).
fn run_task(t: u64) -> u64 {
    let r = mix(t);
    let steps = 1 + (((r & 0xfff) * ((r >> 12) & 0xfff)) >> 12);
    (0..steps).fold(r, |h, _| mix(h))
}

/// A number from the command line, or `default`.
fn arg(index: usize, name: &str, default: u64) -> Result<u64, String> {
    match std::env::args().nth(index) {
        None => Ok(default),
        Some(text) => match text.parse() {
            Ok(value) if value > 0 => Ok(value),
            _ => Err(format!("{name} is a positive number, not {text:?}")),
        },
    }
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let tasks = arg(1, "TASKS", 20_000)?;
    let chunk = arg(2, "CHUNK", 4)?;
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if n > MAX_PES {
        return Err(format!("this example reports on at most {MAX_PES} PEs").into());
    }

    let (mut taken, mut checksum) = (0u64, 0u64);
    loop {
        let first = NEXT.atomic_fetch_add(pe, 0, chunk)?;
        if first >= tasks {
            break;
        }
        let claimed = first..(first + chunk).min(tasks);
        taken += claimed.end - claimed.start;
        checksum = claimed.fold(checksum, |c, t| c ^ run_task(t));
    }
    CHECKSUM.atomic_xor(pe, 0, checksum)?;
    DONE.atomic_add(pe, 0, taken)?;
    TAKEN.write(pe, [taken]);
    pe.barrier_all()?;
    fcollect::<u64>(pe, &pe.world(), &ALL_TAKEN.range(..n)?, &TAKEN)?;

    if me == 0 {
        let done = DONE.atomic_fetch(pe, 0)?;
        let per_pe = &ALL_TAKEN.read(pe)[..n];
        if done != tasks || per_pe.iter().sum::<u64>() != tasks {
            return Err(format!("{done} tasks done ({per_pe:?} per PE), not {tasks}").into());
        }
        let sequential = (0..tasks).fold(0, |c, t| c ^ run_task(t));
        let parallel = CHECKSUM.atomic_fetch(pe, 0)?;
        if parallel != sequential {
            return Err(format!(
                "checksum {parallel:#x} differs from the sequential {sequential:#x}"
            )
            .into());
        }
        let shares: Vec<String> = per_pe.iter().map(u64::to_string).collect();
        println!(
            "workqueue: {tasks} tasks in chunks of {chunk} on {n} PEs, taken {}; checksum {sequential:#018x} equal to the sequential one",
            shares.join("/")
        );
    }
    Ok(())
}
