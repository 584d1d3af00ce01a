//! The example of `shmem_collect(3)` / `shmem_fcollect(3)`: every member's source,
//! concatenated in PE order, lands in every member's target.
//!
//! The man page collects 64 32-bit elements per PE. Here 32- and 64-bit data are
//! collected over all PEs and over the even PEs (`PE_start` 0, `logPE_stride` 1), with a
//! different count on every PE for `collect` (PE p gives `p % 4 + 1` elements) and the
//! man page's 64 on every PE for `fcollect`. No pSync to size or initialise: the library
//! owns the work arrays.
//!
//! Each PE prints the blocks its targets received, in order — `p:k` is k elements from
//! PE p — and checks every element against the sources it came from.
//!
//! Run: `cargo run --release --example collect` (4 PEs unless `SHMEM_NPES` says
//! otherwise) or `shmemrun -n 5 target/release/examples/collect`.

use std::error::Error;

use shmem_typed::prelude::*;

/// Elements per PE in the man page's example (`nelems` = 64).
const NELEMS: usize = 64;

#[symmetric]
static SOURCE32: [u32; NELEMS] = [0; NELEMS];
#[symmetric]
static SOURCE64: [u64; NELEMS] = [0; NELEMS];

/// Element `i` of PE `p`'s source: both numbers can be read back from the value.
fn value(p: usize, i: usize) -> u32 {
    (p * 1000 + i) as u32
}

/// Which collective, and so how many elements PE `p` contributes.
#[derive(Clone, Copy)]
enum Gather {
    /// `shmem_collect`: PE p gives `p % 4 + 1` elements.
    Collect,
    /// `shmem_fcollect`: every PE gives all `NELEMS`.
    Fcollect,
}

impl Gather {
    fn count(self, p: usize) -> usize {
        match self {
            Gather::Collect => p % 4 + 1,
            Gather::Fcollect => NELEMS,
        }
    }
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    SOURCE32.write(pe, std::array::from_fn(|i| value(me, i)));
    SOURCE64.write(pe, std::array::from_fn(|i| value(me, i).into()));
    // Targets sized for the largest result (an fcollect over all PEs). Allocation is
    // collective, so every PE allocates, members of the strided set or not.
    let target32 = pe.alloc_slice::<u32>(NELEMS * n)?;
    let target64 = pe.alloc_slice::<u64>(NELEMS * n)?;

    let world = pe.world();
    let evens = ActiveSet::new(0, 1, n.div_ceil(2))?;
    let mut line = format!(
        "PE {me}: world collect32 {} fcollect64 {}",
        gather(pe, &world, Gather::Collect, &target32, &SOURCE32)?,
        gather(pe, &world, Gather::Fcollect, &target64, &SOURCE64)?,
    );
    if evens.contains(me) {
        line += &format!(
            "; even PEs collect64 {} fcollect32 {}",
            gather(pe, &evens, Gather::Collect, &target64, &SOURCE64)?,
            gather(pe, &evens, Gather::Fcollect, &target32, &SOURCE32)?,
        );
    } else {
        line += "; not an even PE";
    }
    println!("{line}");

    pe.free(target32)?;
    pe.free(target64)?;
    Ok(())
}

/// Runs `how` over `set` from `source` into `target`, checks the result element by
/// element, and describes what arrived as `[p:k …]`.
fn gather<T>(
    pe: &mut Pe,
    set: &ActiveSet,
    how: Gather,
    target: &SymSlice<T>,
    source: &Symmetric<[T; NELEMS]>,
) -> Result<String, Box<dyn Error>>
where
    T: Pod + From<u32> + Into<u64>,
{
    let mine = source.range(..how.count(pe.my_pe()))?;
    let written = match how {
        Gather::Collect => collect::<T>(pe, set, target, &mine)?,
        Gather::Fcollect => {
            fcollect::<T>(pe, set, target, &mine)?;
            NELEMS * set.size()
        }
    };
    let got: Vec<u64> = target.to_vec(pe)[..written]
        .iter()
        .map(|&v| v.into())
        .collect();
    let expected: Vec<u64> = set
        .members()
        .flat_map(|p| (0..how.count(p)).map(move |i| value(p, i).into()))
        .collect();
    if got != expected {
        return Err(format!(
            "{} over {set} gave {} instead of the members' sources in PE order, {}",
            match how {
                Gather::Collect => "collect",
                Gather::Fcollect => "fcollect",
            },
            describe(&got),
            describe(&expected)
        )
        .into());
    }
    Ok(describe(&got))
}

/// `[p:k …]`: runs of k consecutive elements that came from PE p.
fn describe(values: &[u64]) -> String {
    let mut runs: Vec<(u64, usize)> = Vec::new();
    for v in values {
        let from = v / 1000;
        match runs.last_mut() {
            Some((p, k)) if *p == from => *k += 1,
            _ => runs.push((from, 1)),
        }
    }
    let runs: Vec<String> = runs.iter().map(|(p, k)| format!("{p}:{k}")).collect();
    format!("[{}]", runs.join(" "))
}
