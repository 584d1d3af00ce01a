//! The program `scripts/instructions.sh` runs under callgrind: every PE makes each
//! measured call `CALLS` times in a row inside [`measured_calls`] (the only code whose
//! instructions callgrind collects; one profile dump per row), after warm-up calls that
//! bring the row to its steady state.
//!
//! Usage (as PEs of a job, e.g. `shmemrun -n 2 -- valgrind … harness [--elems K] CALLS
//! ROW…`): prints nothing; the rows' profiles come in the order of the arguments. Each
//! PE's message is `K` elements of 8 bytes (default 1: the 8 B rows); put, get and
//! fetch-add move one element whatever `K`. With `--list` (outside a job) it prints the
//! rows this build has, one a line.
//!
//! The source compiles against the library of every commit the tool measures: the rows
//! of operations an older library lacks sit behind the harness features `atomics` and
//! `teams`, which the script enables when the library has them.

use shmem_typed::prelude::*;

/// Warm-up calls of each row before its measured calls.
const WARMUP: usize = 64;

/// The reductions measured: on `i64` every operation, and the sum on `f64`.
const REDUCTIONS: [&str; 8] = [
    "reduce_and_i64",
    "reduce_or_i64",
    "reduce_xor_i64",
    "reduce_min_i64",
    "reduce_max_i64",
    "reduce_sum_i64",
    "reduce_prod_i64",
    "reduce_sum_f64",
];

/// Every row this build measures, in table order.
fn rows() -> Vec<String> {
    let mut rows: Vec<String> = ["barrier", "broadcast", "fcollect", "collect"]
        .iter()
        .chain(REDUCTIONS.iter())
        .chain(["put", "get"].iter())
        .map(|s| s.to_string())
        .collect();
    if cfg!(feature = "atomics") {
        rows.push("fetch_add".to_string());
    }
    if cfg!(feature = "teams") {
        for name in ["sync", "broadcast", "fcollect", "collect"]
            .iter()
            .chain(REDUCTIONS.iter())
        {
            rows.push(format!("team_{name}"));
        }
    }
    rows
}

/// The symmetric buffers of the rows: `elems` elements per message (`npes` times that in
/// the collects' target).
struct Buffers {
    src: SymSlice<i64>,
    dst: SymSlice<i64>,
    dst_all: SymSlice<i64>,
    fsrc: SymSlice<f64>,
    fdst: SymSlice<f64>,
    #[cfg_attr(not(feature = "atomics"), allow(dead_code))]
    word: SymSlice<i64>,
    put_src: Vec<i64>,
    get_dst: Vec<i64>,
    world: ActiveSet,
    next: usize,
}

/// `n` calls of `call`, and nothing else: the code callgrind measures (the script toggles
/// collection and dumps a profile on `harness::measured_calls`, every instance of it).
#[inline(never)]
fn measured_calls<F>(pe: &mut Pe, n: usize, call: &mut F) -> Result<(), ShmemError>
where
    F: FnMut(&mut Pe) -> Result<(), ShmemError>,
{
    for _ in 0..n {
        call(pe)?;
    }
    Ok(())
}

/// Warm-up, then the measured calls of one row, between barriers.
fn run<F>(pe: &mut Pe, n: usize, mut call: F) -> Result<(), ShmemError>
where
    F: FnMut(&mut Pe) -> Result<(), ShmemError>,
{
    for _ in 0..WARMUP {
        call(pe)?;
    }
    pe.barrier_all()?;
    measured_calls(pe, n, &mut call)?;
    pe.barrier_all()
}

/// Runs row `name` `n` times; `Err` for a row this build does not have.
fn run_row(pe: &mut Pe, b: &mut Buffers, name: &str, n: usize) -> Result<(), String> {
    let world = b.world;
    let (src, dst, dst_all, fsrc, fdst) = (&b.src, &b.dst, &b.dst_all, &b.fsrc, &b.fdst);
    let next = b.next;
    let e = |e: ShmemError| format!("{name}: {e}");
    match name {
        "barrier" => run(pe, n, |pe| barrier(pe, &world)),
        "broadcast" => run(pe, n, |pe| broadcast(pe, &world, 0, dst, src)),
        "fcollect" => run(pe, n, |pe| fcollect(pe, &world, dst_all, src)),
        "collect" => run(pe, n, |pe| collect(pe, &world, dst_all, src).map(|_| ())),
        "reduce_and_i64" => run(pe, n, |pe| reduce::<And, i64>(pe, &world, dst, src)),
        "reduce_or_i64" => run(pe, n, |pe| reduce::<Or, i64>(pe, &world, dst, src)),
        "reduce_xor_i64" => run(pe, n, |pe| reduce::<Xor, i64>(pe, &world, dst, src)),
        "reduce_min_i64" => run(pe, n, |pe| reduce::<Min, i64>(pe, &world, dst, src)),
        "reduce_max_i64" => run(pe, n, |pe| reduce::<Max, i64>(pe, &world, dst, src)),
        "reduce_sum_i64" => run(pe, n, |pe| reduce::<Sum, i64>(pe, &world, dst, src)),
        "reduce_prod_i64" => run(pe, n, |pe| reduce::<Prod, i64>(pe, &world, dst, src)),
        "reduce_sum_f64" => run(pe, n, |pe| reduce::<Sum, f64>(pe, &world, fdst, fsrc)),
        "put" => {
            let put_src = &b.put_src;
            run(pe, n, |pe| {
                dst.put(pe, next, put_src)?;
                pe.quiet();
                Ok(())
            })
        }
        "get" => {
            let get_dst = &mut b.get_dst;
            run(pe, n, |pe| src.get(pe, next, get_dst))
        }
        #[cfg(feature = "atomics")]
        "fetch_add" => {
            let word = &b.word;
            run(pe, n, |pe| word.atomic_fetch_add(pe, next, 1).map(|_| ()))
        }
        #[cfg(feature = "teams")]
        team if team.starts_with("team_") => {
            let t = pe.team_world();
            match &team[5..] {
                "sync" => run(pe, n, |pe| t.sync(pe)),
                "broadcast" => run(pe, n, |pe| t.broadcast(pe, 0, dst, src)),
                "fcollect" => run(pe, n, |pe| t.fcollect(pe, dst_all, src)),
                "collect" => run(pe, n, |pe| t.collect(pe, dst_all, src).map(|_| ())),
                "reduce_and_i64" => run(pe, n, |pe| t.reduce::<And, i64>(pe, dst, src)),
                "reduce_or_i64" => run(pe, n, |pe| t.reduce::<Or, i64>(pe, dst, src)),
                "reduce_xor_i64" => run(pe, n, |pe| t.reduce::<Xor, i64>(pe, dst, src)),
                "reduce_min_i64" => run(pe, n, |pe| t.reduce::<Min, i64>(pe, dst, src)),
                "reduce_max_i64" => run(pe, n, |pe| t.reduce::<Max, i64>(pe, dst, src)),
                "reduce_sum_i64" => run(pe, n, |pe| t.reduce::<Sum, i64>(pe, dst, src)),
                "reduce_prod_i64" => run(pe, n, |pe| t.reduce::<Prod, i64>(pe, dst, src)),
                "reduce_sum_f64" => run(pe, n, |pe| t.reduce::<Sum, f64>(pe, fdst, fsrc)),
                _ => return Err(format!("no row {name} in this build")),
            }
        }
        _ => return Err(format!("no row {name} in this build")),
    }
    .map_err(e)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for row in rows() {
            println!("{row}");
        }
        return;
    }
    let usage = "usage: harness [--elems K] CALLS ROW... (as the PEs of a job) | harness --list";
    let (elems, args) = match args.first().map(String::as_str) {
        Some("--elems") => (
            args.get(1).and_then(|a| a.parse::<usize>().ok()),
            args.get(2..).unwrap_or(&[]),
        ),
        _ => (Some(1), &args[..]),
    };
    let (Some(elems @ 1..), Some(n)) = (elems, args.first().and_then(|a| a.parse::<usize>().ok()))
    else {
        eprintln!("{usage}");
        std::process::exit(2)
    };
    let mut pe = Pe::init().unwrap_or_else(|e| {
        eprintln!("harness: cannot start SHMEM: {e}");
        std::process::exit(2)
    });
    let me = pe.my_pe();
    let result = buffers(&mut pe, elems)
        .map_err(|e| e.to_string())
        .and_then(|mut b| {
            args[1..]
                .iter()
                .try_for_each(|row| run_row(&mut pe, &mut b, row, n))
        });
    if let Err(msg) = result {
        eprintln!("harness: PE {me}: {msg}");
        std::process::exit(1)
    }
    if let Err(e) = pe.finalize() {
        eprintln!("harness: PE {me}: {e}");
        std::process::exit(1)
    }
}

/// Allocates the buffers (collective) of `elems` elements per message and fills the
/// sources.
fn buffers(pe: &mut Pe, elems: usize) -> Result<Buffers, ShmemError> {
    let npes = pe.n_pes();
    let me = pe.my_pe();
    let b = Buffers {
        src: pe.alloc_slice(elems)?,
        dst: pe.alloc_slice(elems)?,
        dst_all: pe.alloc_slice(npes * elems)?,
        fsrc: pe.alloc_slice(elems)?,
        fdst: pe.alloc_slice(elems)?,
        word: pe.alloc_slice(1)?,
        put_src: vec![me as i64; 1],
        get_dst: vec![0; 1],
        world: pe.world(),
        next: (me + 1) % npes,
    };
    let ints: Vec<i64> = (0..elems).map(|k| (me * elems + k) as i64 + 1).collect();
    let floats: Vec<f64> = ints.iter().map(|&v| v as f64 + 0.5).collect();
    b.src.put(pe, me, &ints)?;
    b.fsrc.put(pe, me, &floats)?;
    pe.barrier_all()?;
    Ok(b)
}
