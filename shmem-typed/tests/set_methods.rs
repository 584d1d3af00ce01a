//! The active-set collectives as methods (the teams' shape) on a strided set of a 5-PE
//! job: each gives what its free function gives, checked against the members' inputs.

use shmem_typed::prelude::*;

#[symmetric]
static SRC: [u64; 4] = [0; 4];
#[symmetric]
static DST: [u64; 16] = [0; 16];

fn input(pe: usize, i: usize) -> u64 {
    (pe as u64 + 1) * 100 + i as u64
}

#[shmem_typed::test(npes = 5)]
fn set_methods_match_the_free_functions(pe: &mut Pe) -> Result<(), ShmemError> {
    let set = ActiveSet::new(1, 1, 2)?; // PEs 1 and 3
    let me = pe.my_pe();
    let Some(k) = set.index_of(me) else {
        return Ok(());
    };
    let members: Vec<usize> = set.members().collect();
    SRC.write(pe, std::array::from_fn(|i| input(me, i)));
    let reset = |pe: &mut Pe| DST.write(pe, [0; 16]);

    reset(pe);
    set.broadcast::<u64>(pe, 1, &DST.range(..4)?, &SRC)?;
    let want: Vec<u64> = if k == 1 {
        vec![0; 4]
    } else {
        (0..4).map(|i| input(members[1], i)).collect()
    };
    assert_eq!(DST.read(pe)[..4], want[..], "broadcast");

    reset(pe);
    set.fcollect::<u64>(pe, &DST.range(..8)?, &SRC)?;
    let want: Vec<u64> = members
        .iter()
        .flat_map(|&p| (0..4).map(move |i| input(p, i)))
        .collect();
    assert_eq!(DST.read(pe)[..8], want[..], "fcollect");

    reset(pe);
    let n = set.collect::<u64>(pe, &DST.range(..8)?, &SRC.range(..k + 1)?)?;
    assert_eq!(n, 3, "collect count");
    let want = [
        input(members[0], 0),
        input(members[1], 0),
        input(members[1], 1),
    ];
    assert_eq!(DST.read(pe)[..3], want, "collect");

    reset(pe);
    set.alltoall::<u64>(pe, &DST.range(..4)?, &SRC, 2)?;
    let want: Vec<u64> = members
        .iter()
        .flat_map(|&p| (0..2).map(move |i| input(p, 2 * k + i)))
        .collect();
    assert_eq!(DST.read(pe)[..4], want[..], "alltoall");

    reset(pe);
    set.reduce::<Sum, u64>(pe, &DST.range(..4)?, &SRC)?;
    let want: Vec<u64> = (0..4)
        .map(|i| members.iter().map(|&p| input(p, i)).sum())
        .collect();
    assert_eq!(DST.read(pe)[..4], want[..], "reduce");

    reset(pe);
    set.inscan::<Max, u64>(pe, &DST.range(..4)?, &SRC)?;
    let want: Vec<u64> = (0..4).map(|i| input(members[k], i)).collect();
    assert_eq!(DST.read(pe)[..4], want[..], "inscan");

    reset(pe);
    set.exscan::<Sum, u64>(pe, &DST.range(..4)?, &SRC)?;
    let want: Vec<u64> = (0..4)
        .map(|i| if k == 0 { 0 } else { input(members[0], i) })
        .collect();
    assert_eq!(DST.read(pe)[..4], want[..], "exscan");

    set.barrier(pe)?;
    set.sync(pe)
}
