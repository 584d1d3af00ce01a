//! Every entry of the README's table "From OpenSHMEM C to typed calls", as written
//! there, compiled and run on 2 PEs.

use shmem_typed::prelude::*;

const N: usize = 4;

#[symmetric]
static X: [i64; N] = [0; N];
#[symmetric]
static T: [u64; 8] = [0; 8];
#[symmetric]
static S: [u64; 4] = [0; 4];
#[symmetric]
static T32: [u32; 8] = [0; 8];
#[symmetric]
static S32: [u32; 4] = [0; 4];
#[symmetric]
static T16: [i16; 3] = [0; 3];
#[symmetric]
static S16: [i16; 3] = [0; 3];
#[symmetric]
static IVAR: [i32; 1] = [0];
#[symmetric]
static C: u64 = 0;
#[symmetric]
static F: f64 = 0.0;
#[symmetric]
static W: reduce_work!(i16, 3) = ReduceWork::new();
#[symmetric]
static SIG: u64 = 0;
#[symmetric]
static LOCK: Lock = Lock::new();
#[symmetric]
static SYNC: BarrierSync = BarrierSync::new();
#[symmetric]
static A2A: AlltoallSync = AlltoallSync::new();
#[symmetric]
static X2: [i64; N] = [0; N];
#[symmetric]
static LOCKS: [Lock; 16] = [const { Lock::new() }; 16];
#[symmetric]
static D: [i64; N] = [0; N];

#[shmem_typed::main(npes = 2)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let (to_pe, from_pe, pe_no) = ((me + 1) % n, (me + 1) % n, 0);
    let (i, v) = (1, 5i64);

    // Memory management.
    let mut s = pe.alloc_slice::<u64>(16)?;
    let aligned = pe.alloc_slice_aligned::<u64>(4, 4096)?;
    pe.realloc(&mut s, 32)?;
    pe.free(s)?;
    pe.free(aligned)?;

    // Local copies.
    X.write(pe, [1, 2, 3, 4]);
    assert_eq!(X.read(pe), [1, 2, 3, 4]);
    X.update(pe, |x| x[0] = 10);
    let src = [me as i64; N];
    X.write_local(pe, &src)?;
    let mut dst = [0i64; N];
    X.read_local(pe, &mut dst)?;
    assert_eq!(X.to_vec(pe), dst.to_vec());
    // SAFETY: no other PE writes X until the barrier below.
    let local = unsafe { X.local(pe) };
    assert_eq!(local[0], me as i64);
    pe.barrier_all()?;

    // RMA.
    let data = [7i64; N];
    X.put(pe, to_pe, &data)?;
    pe.barrier_all()?;
    let mut buf = [0i64; N];
    X.get(pe, from_pe, &mut buf)?;
    X.p(pe, to_pe, i, v)?;
    pe.barrier_all()?;
    assert_eq!(X.g(pe, from_pe, i)?, v);
    let _raw: *mut i64 = X.remote_ptr(pe, pe_no)?;
    X.put_value(pe, to_pe, &[1; N])?;
    pe.barrier_all()?;
    let whole: [i64; N] = X.get_value(pe, from_pe)?;
    assert_eq!(whole, [1; N]);
    pe.fence();
    pe.quiet();
    X.put_nbi(pe, to_pe, &data)?;
    let f = X.get_nbi(pe, from_pe)?;
    pe.quiet();
    let v_all = f.into_value(pe)?;
    assert_eq!(v_all.len(), N);
    let (tst, sst, n2) = (2, 1, 2);
    let src2 = [3i64, 4];
    X.iput(pe, to_pe, tst, &src2, sst, n2)?;
    let mut dst2 = [0i64; 4];
    let dst_stride = 2;
    X.iget(pe, from_pe, sst, &mut dst2, dst_stride, n2)?;
    pe.barrier_all()?;
    X.put_signal(pe, to_pe, &data, &SIG, 1, SignalOp::Add)?;
    X.put_signal_nbi(pe, to_pe, &data, &SIG, 1, SignalOp::Set)?;
    pe.quiet();
    assert!(pe.signal_wait_until(&SIG, Cmp::Ge, 1)? >= 1);
    let _sig = pe.signal_fetch(&SIG)?;
    assert!(pe.pe_accessible(pe_no));
    LOCK.set_lock(pe)?;
    LOCK.clear_lock(pe)?;
    LOCK.with_lock(pe, |pe| X.p(pe, 0, 0, 1))?;
    if LOCK.test_lock(pe)? {
        LOCK.clear_lock(pe)?;
    }
    assert!(X.accessible(pe, pe_no));
    pe.barrier_all()?;

    // Atomics.
    let ticket = C.atomic_fetch_inc(pe, pe_no)?;
    C.atomic_add(pe, pe_no, 2)?;
    let cond = 0;
    let _was = X.atomic_compare_swap(pe, pe_no, cond, v)?;
    let _elem = X.at(i)?.atomic_fetch_add(pe, pe_no, 1)?;
    pe.barrier_all()?;
    let _f = F.atomic_fetch(pe, pe_no)?;
    F.atomic_set(pe, pe_no, 2.5)?;
    let _old = F.atomic_swap(pe, pe_no, 3.5)?;
    let _bits = C.atomic_fetch_xor(pe, pe_no, 0b10)?;
    C.atomic_or(pe, pe_no, 0b100)?;
    let f = C.atomic_fetch_add_nbi(pe, pe_no, 1)?;
    pe.quiet();
    let _value = f.value(pe)?;
    assert!(ticket <= 3, "two increments and one add of 2 before this one: {ticket}");

    // Point-to-point synchronization.
    if me == 0 {
        IVAR.p(pe, 1, 0, 1)?;
    } else {
        pe.wait_until(&IVAR, Cmp::Eq, 1)?;
        pe.wait_until_at(&IVAR, 0, Cmp::Ge, 1)?;
        let status = [false];
        pe.wait_until_all(&IVAR, &status, Cmp::Eq, 1)?;
        assert_eq!(pe.wait_until_any(&IVAR, &[], Cmp::Eq, 1)?, Some(0));
        assert_eq!(pe.wait_until_some(&IVAR, &[], Cmp::Eq, 1)?, vec![0]);
        assert!(pe.test(&IVAR, Cmp::Eq, 1)?);
        assert!(pe.test_all(&IVAR, &[], Cmp::Eq, 1)?);
        assert_eq!(pe.test_any(&IVAR, &[], Cmp::Eq, 1)?, Some(0));
        assert_eq!(pe.test_some(&IVAR, &[], Cmp::Eq, 1)?, vec![0]);
    }

    // Collectives.
    pe.barrier_all()?;
    let (start, logstride, size) = (0, 0, n);
    let set = ActiveSet::new(start, logstride, size)?;
    barrier(pe, &ActiveSet::new(start, logstride, size)?)?;
    let root = 0;
    broadcast::<u64>(pe, &set, root, &T, &S)?;
    fcollect::<u32>(pe, &set, &T32, &S32)?;
    let n_mine = me + 1;
    let total = collect::<u64>(pe, &set, &T, &S.range(..n_mine)?)?;
    assert_eq!(total, 3);
    reduce::<Xor, i16>(pe, &set, &T16, &S16)?;
    reduce_with::<Xor, i16>(pe, &set, &T16, &S16, &W)?;
    pe.sync_all()?;
    sync(pe, &set)?;
    sync_with(pe, &set, &SYNC)?;
    let n1 = 2;
    alltoall::<u64>(pe, &set, &T, &S, n1)?;
    alltoalls::<u32>(pe, &set, &T32, &S32, 2, 1, 1)?;
    alltoall_with::<u64>(pe, &set, &T, &S, 1, &A2A)?;
    let (k, i) = (3, 2);
    let syncs: WorkArrays<BarrierSync> = pe.alloc_work(k)?;
    barrier_with(pe, &set, &syncs.get(i)?)?;
    pe.free_work(syncs)?;
    let (a, b) = (set, ActiveSet::new(0, 0, 1)?);
    barrier_with(pe, &a, &SYNC)?;
    pe.barrier_all()?;
    if b.contains(me) {
        barrier_with(pe, &b, &SYNC)?;
    }
    let world = pe.team_world();
    let shared = pe.team_shared();
    assert_eq!((world.my_pe(), world.n_pes(), shared.n_pes()), (me, 2, 2));
    let (start, stride, size) = (0, 1, 2);
    let parent = world;
    let t: Option<Team> = parent.split_strided(pe, start, stride, size)?;
    let t = t.expect("every PE is in the team");
    let (pe_a, a, b) = (1, &parent, &t);
    assert_eq!(a.translate_pe(pe_a, b), Some(1));
    let xrange = 1;
    let (x, y) = parent.split_2d(pe, xrange)?;
    assert_eq!((x.n_pes(), y.n_pes()), (1, 2));
    x.destroy();
    let (root, dst, sst, n) = (1, 2, 1, 1);
    t.sync(pe)?;
    t.broadcast(pe, root, &T, &S)?;
    t.fcollect(pe, &T, &S)?;
    t.collect(pe, &T, &S)?;
    t.alltoall(pe, &T, &S, n)?;
    t.alltoalls(pe, &T, &S, dst, sst, n)?;
    t.reduce::<Sum, i64>(pe, &X, &X2)?;
    t.inscan::<Sum, i64>(pe, &D, &X2)?;
    t.exscan::<Sum, i64>(pe, &D, &X2)?;
    inscan::<Sum, i64>(pe, &set, &D, &X2)?;
    set.barrier(pe)?;
    set.sync(pe)?;
    set.broadcast::<u64>(pe, root, &T, &S)?;
    set.fcollect::<u32>(pe, &T32, &S32)?;
    set.collect::<u64>(pe, &T, &S)?;
    set.alltoall::<u64>(pe, &T, &S, 1)?;
    set.alltoalls::<u64>(pe, &T, &S, 1, 1, 1)?;
    set.reduce::<Xor, i16>(pe, &T16, &S16)?;
    set.inscan::<Xor, i16>(pe, &T16, &S16)?;
    set.exscan::<Xor, i16>(pe, &T16, &S16)?;
    let mine = [1.0f64, 2.0];
    let _sum: Vec<f64> = t.reduce_local::<Sum, f64>(pe, &mine)?;
    let mut buf = mine;
    t.broadcast_local::<f64>(pe, root, &mut buf)?;
    let _all = t.fcollect_local::<u32>(pe, &[me as u32])?;
    let _some = t.collect_local::<u8>(pe, &vec![1u8; me])?;
    let _upto = t.inscan_local::<Sum, u64>(pe, &[1])?;
    let _before: Option<Vec<u64>> = t.exscan_local::<Sum, u64>(pe, &[1])?;
    let (i, n) = (3, 4);
    LOCKS.at(i)?.set_lock(pe)?;
    LOCKS.at(i)?.clear_lock(pe)?;
    let locks = pe.alloc_locks(n)?;
    locks.at(i)?.with_lock(pe, |_pe| Ok(()))?;
    pe.free_locks(locks)?;
    drop(y);

    // Threads and contexts.
    assert_eq!(pe.query_thread(), ThreadLevel::Multiple);
    pe.barrier_all()?;
    {
        let mut ctx = pe.create_ctx(CtxOptions::new().serialized())?;
        let data = [me as i64; N];
        X.put(&mut ctx, to_pe, &data)?;
        let f = C.atomic_fetch_add_nbi(&mut ctx, pe_no, 1)?;
        ctx.fence();
        ctx.quiet();
        let _old: u64 = f.value(&ctx)?;
        let t = pe.team_world();
        let mut on_team = t.create_ctx(pe, CtxOptions::new().private().nostore())?;
        C.atomic_fetch_add(&mut on_team, pe_no, 1)?;
    }
    pe.barrier_all()?;
    Ok(())
}

