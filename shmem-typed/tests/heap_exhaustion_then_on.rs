//! The symmetric heap used up and given back, again and again: every PE fills a 4 MiB heap
//! with blocks until the allocation fails (`HeapExhausted`, on every PE at the same
//! block), collectives of 40 B per PE run in the last block, a team is split and used,
//! the blocks are freed in a scattered order, and the next round gets as many blocks
//! again — every byte comes back — and finally one block of nearly all of it.

use shmem_typed::prelude::*;
use shmem_typed::ErrorKind;

/// Elements (`u64`) of one block: 256 KiB.
const BLOCK: usize = 32 * 1024;

#[symmetric]
static COUNT: [u64; 1] = [0];
#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

/// Fills the heap with blocks until the allocation fails; checks the failure and that
/// every PE got as many blocks. Returns the blocks.
fn fill(pe: &mut Pe) -> Result<Vec<SymSlice<u64>>, ShmemError> {
    let me = pe.my_pe();
    let mut blocks = Vec::new();
    let err = loop {
        match pe.alloc_slice::<u64>(BLOCK) {
            Ok(block) => blocks.push(block),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::HeapExhausted, "PE {me}: {err}");
    COUNT.write(pe, [blocks.len() as u64]);
    let world = pe.world();
    let n = pe.n_pes();
    fcollect::<u64>(pe, &world, &COUNTS.range(..n)?, &COUNT)?;
    let counts = COUNTS.read(pe);
    assert!(
        counts[..n].iter().all(|&c| c == counts[0]),
        "PE {me}: blocks per PE {:?}",
        &counts[..n]
    );
    Ok(blocks)
}

/// An fcollect of 5 elements (40 B) per PE and a team's reduction in `block`, checked.
fn use_block(pe: &mut Pe, block: &SymSlice<u64>, tag: u64) -> Result<(), ShmemError> {
    let me = pe.my_pe() as u64;
    let n = pe.n_pes();
    let world = pe.world();
    let src: Vec<u64> = (0..5).map(|i| tag << 16 | me << 8 | i).collect();
    block.range(..5)?.write_local(pe, &src)?;
    fcollect::<u64>(pe, &world, &block.range(8..8 + 5 * n)?, &block.range(..5)?)?;
    let got = block.range(8..8 + 5 * n)?.to_vec(pe);
    let want: Vec<u64> = (0..n as u64)
        .flat_map(|p| (0..5).map(move |i| tag << 16 | p << 8 | i))
        .collect();
    assert_eq!(got, want, "PE {me}: fcollect in the last block");
    let team = pe
        .team_world()
        .split_strided(pe, 0, 1, n)?
        .expect("every PE");
    team.reduce::<Sum, u64>(pe, &block.range(100..105)?, &block.range(..5)?)?;
    let sums = block.range(100..105)?.to_vec(pe);
    let want: Vec<u64> = (0..5)
        .map(|i| (0..n as u64).map(|p| tag << 16 | p << 8 | i).sum())
        .collect();
    assert_eq!(sums, want, "PE {me}: team sum in the last block");
    Ok(())
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_SYMMETRIC_SIZE=4M"])]
fn an_exhausted_heap_freed_gives_every_block_back_round_after_round(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let mut first = None;
    for round in 0..5u64 {
        let blocks = fill(pe)?;
        assert!(
            blocks.len() >= 8,
            "PE {me}: {} blocks in 4 MiB",
            blocks.len()
        );
        assert_eq!(
            *first.get_or_insert(blocks.len()),
            blocks.len(),
            "PE {me}: round {round}: blocks after freeing them all"
        );
        use_block(pe, blocks.last().expect("a block"), round)?;
        // Odd blocks first, then the even ones from the last: holes, then merges.
        let (odd, even): (Vec<_>, Vec<_>) = blocks
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 1);
        for (_, block) in odd.into_iter().chain(even.into_iter().rev()) {
            pe.free(block)?;
        }
    }
    // The freed blocks merge again: one block of all but one of them.
    let count = first.expect("five rounds");
    let big = pe.alloc_slice::<u64>(BLOCK * (count - 1))?;
    use_block(pe, &big, 99)?;
    pe.free(big)?;
    Ok(())
}
