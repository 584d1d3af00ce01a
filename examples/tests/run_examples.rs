//! Runs every example as a user does — started directly (it starts its own PEs;
//! `SHMEM_NPES` picks how many, else the example's own default) and under a launcher —
//! at the PE counts it supports, and checks its exit status and what it printed.
//!
//! `cargo test` builds the examples before running tests, into `examples/` beside the
//! `deps/` folder that holds this test binary, so they are found from
//! `std::env::current_exe()`. Runs are one at a time: each job's PEs then have the cores
//! to themselves, as in a user's run, and a hanging example fails its test after
//! [`TIMEOUT`] instead of hanging the suite.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one example run may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Serializes the example runs of this binary's tests (which libtest runs in parallel).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The launcher test's own name: its binary re-runs only this test to act as launcher.
const LAUNCHER_TEST: &str = "examples_run_under_the_launcher";
/// Set for the launcher process: the example program it starts as PEs.
const LAUNCH_PROGRAM: &str = "EXAMPLES_TEST_LAUNCH_PROGRAM";
/// Set for the launcher process: how many PEs (its `-n`).
const LAUNCH_NPES: &str = "EXAMPLES_TEST_LAUNCH_NPES";
/// Set for the launcher process: the example's arguments, one per line.
const LAUNCH_ARGS: &str = "EXAMPLES_TEST_LAUNCH_ARGS";

/// How an example is started.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// `example` with `SHMEM_NPES` set to the count, or unset for `None`.
    Direct(Option<usize>),
    /// `shmemrun -n N example`.
    Launcher(usize),
}

/// What a finished run left behind.
struct Run {
    what: String,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn assert_success(&self) {
        assert_eq!(
            self.code, 0,
            "{} exited with status {}\nstdout:\n{}\nstderr:\n{}",
            self.what, self.code, self.stdout, self.stderr
        );
    }

    /// The lines that start with `PE <n>: `, by PE; fails on a PE that printed two.
    fn pe_lines(&self) -> BTreeMap<usize, String> {
        let mut lines = BTreeMap::new();
        for line in self.stdout.lines() {
            let Some(rest) = line.strip_prefix("PE ") else {
                continue;
            };
            let Some((number, _)) = rest.split_once(": ") else {
                continue;
            };
            let Ok(pe) = number.parse::<usize>() else {
                continue;
            };
            let earlier = lines.insert(pe, line.to_string());
            assert!(
                earlier.is_none(),
                "{}: PE {pe} printed two lines",
                self.what
            );
        }
        lines
    }

    /// The one line that starts with `prefix`.
    fn line_starting(&self, prefix: &str) -> &str {
        let found: Vec<&str> = self
            .stdout
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{}: expected one line starting with {prefix:?}\nstdout:\n{}\nstderr:\n{}",
            self.what,
            self.stdout,
            self.stderr
        );
        found[0]
    }

    /// Asserts success and exactly the per-PE lines `expected(pe)` for PEs `0..npes`.
    fn assert_pe_lines(&self, npes: usize, expected: impl Fn(usize) -> String) {
        self.assert_success();
        let want: BTreeMap<usize, String> = (0..npes).map(|p| (p, expected(p))).collect();
        let got = self.pe_lines();
        for p in 0..npes {
            assert_eq!(
                got.get(&p),
                want.get(&p),
                "{}: line of PE {p}\nstdout:\n{}\nstderr:\n{}",
                self.what,
                self.stdout,
                self.stderr
            );
        }
        assert_eq!(
            got.len(),
            npes,
            "{}: lines of PEs that do not exist",
            self.what
        );
    }
}

/// The path of the built example `name`.
fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<this test> → target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lies in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "example {name} is not built at {}: `cargo test` builds the examples before the \
         tests, but not with a target filter such as `--test run_examples`; build them \
         with `cargo build -p examples --examples` first",
        path.display()
    );
    path
}

/// Runs `cmd` to the end (or kills it after [`TIMEOUT`]) and collects its output.
fn finish(mut cmd: Command, what: String) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).expect("output is UTF-8");
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the example") {
            break status;
        }
        if Instant::now() > deadline {
            // The PEs die with their supervisor (PR_SET_PDEATHSIG).
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        what,
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Runs example `name` with `args`, started as `start` says.
fn run(name: &str, start: Start, args: &[&str]) -> Run {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let program = example_path(name);
    let what = format!("{name} {args:?} ({start:?})");
    let mut cmd = match start {
        // Under SHMEM_TEST_LAUNCHER=mpirun, a run with a PE count is an MPI job.
        Start::Direct(Some(npes)) | Start::Launcher(npes)
            if shmem_testkit::mpi_launcher(npes).is_some() =>
        {
            let mut cmd = shmem_testkit::mpi_launcher(npes).expect("selected");
            cmd.arg(&program).args(args);
            cmd
        }
        Start::Direct(npes) => {
            let mut cmd = Command::new(&program);
            cmd.args(args);
            match npes {
                Some(n) => cmd.env("SHMEM_NPES", n.to_string()),
                None => cmd.env_remove("SHMEM_NPES"),
            };
            cmd
        }
        Start::Launcher(npes) => {
            let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
            cmd.args(shmem_testkit::pe_args(LAUNCHER_TEST))
                .env(LAUNCH_PROGRAM, &program)
                .env(LAUNCH_NPES, npes.to_string())
                .env(LAUNCH_ARGS, args.join("\n"));
            cmd
        }
    };
    // Not a PE of some outer job, whatever the environment of the test run.
    cmd.env_remove("SHMEM_RT_HEAP_FD");
    finish(cmd, what)
}

/// The launcher process: does what `shmemrun -n N PROGRAM ARGS…` does (the same
/// `JobSpec::from_env` and `launch::run_job` as its `main`) and exits with the job's status.
fn act_as_launcher(program: OsString) -> ! {
    let npes = std::env::var(LAUNCH_NPES)
        .ok()
        .and_then(|n| n.parse().ok())
        .expect("EXAMPLES_TEST_LAUNCH_NPES is a PE count");
    let args: Vec<OsString> = std::env::var(LAUNCH_ARGS)
        .unwrap_or_default()
        .lines()
        .map(OsString::from)
        .collect();
    let spec = shmem_rt::__private::JobSpec::from_env(program.into(), args, Some(npes), 1);
    let code = match spec.and_then(|mut spec| {
        spec.label = "shmemrun".into();
        shmem_rt::__private::run_job(&spec)
    }) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("shmemrun: {e}");
            2
        }
    };
    std::process::exit(code)
}

// ---- what the man-page examples must print ----

fn hello_lines(run: &Run, npes: usize) {
    run.assert_success();
    let mut got: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("hello"))
        .collect();
    got.sort_unstable();
    let mut want: Vec<String> = (0..npes)
        .map(|p| format!("hello from PE {p} of {npes}"))
        .collect();
    want.sort_unstable();
    assert_eq!(got, want, "{}", run.what);
}

/// `[p:k …]` for the members `members` contributing `count(p)` elements each.
fn blocks(members: &[usize], count: impl Fn(usize) -> usize) -> String {
    let parts: Vec<String> = members
        .iter()
        .map(|&p| format!("{p}:{}", count(p)))
        .collect();
    format!("[{}]", parts.join(" "))
}

fn evens(npes: usize) -> Vec<usize> {
    (0..npes).step_by(2).collect()
}

fn collect_line(npes: usize, p: usize) -> String {
    let world: Vec<usize> = (0..npes).collect();
    let varying = |q: usize| q % 4 + 1;
    let fixed = |_| 64;
    let mut line = format!(
        "PE {p}: world collect32 {} fcollect64 {}",
        blocks(&world, varying),
        blocks(&world, fixed)
    );
    if p % 2 == 0 {
        let evens = evens(npes);
        line += &format!(
            "; even PEs collect64 {} fcollect32 {}",
            blocks(&evens, varying),
            blocks(&evens, fixed)
        );
    } else {
        line += "; not an even PE";
    }
    line
}

fn xor_line(npes: usize, p: usize) -> String {
    let foo_of = |q: usize| 1i64 << (q % 63);
    let source = |q: usize| [(q + 1) as i16, (q * 37 % 101) as i16, -(1i16 << (q % 15))];
    let part1 = if p % 2 == 0 {
        let xor = evens(npes).into_iter().fold(0, |acc, q| acc ^ foo_of(q));
        format!("XOR over even PEs = {xor:#b}")
    } else {
        "not an even PE".into()
    };
    let xor3 = (0..npes)
        .map(source)
        .fold([0i16; 3], |a, s| [a[0] ^ s[0], a[1] ^ s[1], a[2] ^ s[2]]);
    format!(
        "PE {p}: FOO = {:#b}, {part1}; nreduce=3 gives {xor3:?}, three single calls give {xor3:?}",
        foo_of(p)
    )
}

fn max_line(npes: usize, p: usize) -> String {
    let int = |q: usize| (q * 37 % 11) as i32 - 5;
    let real = |q: usize| (q as f64 * 0.7).sin();
    let source = |q: usize| [q as i32, -(q as i32), (q as i32 - 2) * (q as i32 - 2)];
    let part1 = if p % 2 == 0 {
        let max_int = evens(npes).into_iter().map(int).max().unwrap();
        let max_real = evens(npes).into_iter().map(real).fold(f64::MIN, f64::max);
        format!("max over even PEs = {max_int} and {max_real}")
    } else {
        "not an even PE".into()
    };
    let max3 = (0..npes).map(source).fold([i32::MIN; 3], |a, s| {
        [a[0].max(s[0]), a[1].max(s[1]), a[2].max(s[2])]
    });
    format!(
        "PE {p}: FOO = {} and {}, {part1}; nreduce=3 gives {max3:?}, three single calls give {max3:?}",
        int(p),
        real(p)
    )
}

fn broadcast_line(p: usize) -> String {
    match p {
        5..=7 => format!("PE {p}: target = [400, 401, 402, 403] (from the root PE 4)"),
        4 => "PE 4: target = [0, 0, 0, 0] (the root, target untouched)".into(),
        _ => format!("PE {p}: target = [0, 0, 0, 0] (not in the active set, target untouched)"),
    }
}

fn barrier_line(npes: usize, rounds: usize, p: usize) -> String {
    if p % 2 == 1 {
        return format!("PE {p}: not an even PE, no barriers");
    }
    let members = evens(npes);
    let index = p / 2;
    let previous = members[(index + members.len() - 1) % members.len()];
    format!(
        "PE {p}: {rounds} barriers over the even PEs {members:?}, every token from PE {previous} arrived"
    )
}

// ---- the tests ----

#[test]
fn hello() {
    for npes in [1, 3] {
        hello_lines(&run("hello", Start::Direct(Some(npes)), &[]), npes);
    }
}

#[test]
fn collect() {
    for npes in [1, 3, 4] {
        run("collect", Start::Direct(Some(npes)), &[])
            .assert_pe_lines(npes, |p| collect_line(npes, p));
    }
}

#[test]
fn xor_to_all() {
    for npes in [2, 3, 8] {
        run("xor_to_all", Start::Direct(Some(npes)), &[])
            .assert_pe_lines(npes, |p| xor_line(npes, p));
    }
}

#[test]
fn max_to_all() {
    // No SHMEM_NPES: the example's own default of 6 PEs.
    for (start, npes) in [(Some(1), 1), (Some(3), 3), (None, 6)] {
        run("max_to_all", Start::Direct(start), &[]).assert_pe_lines(npes, |p| max_line(npes, p));
    }
}

#[test]
fn broadcast() {
    // No SHMEM_NPES: the example's own default of 8 PEs, as in the man page.
    for (start, npes) in [(None, 8), (Some(9), 9)] {
        run("broadcast", Start::Direct(start), &[]).assert_pe_lines(npes, broadcast_line);
    }
}

#[test]
fn broadcast_on_too_few_pes_fails_and_says_why() {
    let run = run("broadcast", Start::Direct(Some(3)), &[]);
    assert_eq!(run.code, 1, "{}: status\nstderr:\n{}", run.what, run.stderr);
    assert!(
        run.stderr
            .contains("this example needs at least 8 PEs (its active set is PEs 4 to 7), not 3"),
        "{}: stderr:\n{}",
        run.what,
        run.stderr
    );
    assert!(run.pe_lines().is_empty(), "{}: printed a result", run.what);
}

#[test]
fn barrier() {
    for npes in [2, 5] {
        run("barrier", Start::Direct(Some(npes)), &["300"])
            .assert_pe_lines(npes, |p| barrier_line(npes, 300, p));
    }
}

/// The summary line with its `on N PEs (…)` part removed, which is all that may differ
/// between PE counts.
fn without_pe_count(line: &str) -> String {
    let (before, after) = line.split_once(" on ").expect("`on N PEs` in the summary");
    let (_, rest) = after.split_once(" PEs").expect("`N PEs` in the summary");
    let rest = match rest.strip_prefix(" (") {
        Some(r) => r.split_once(')').expect("closing parenthesis").1,
        None => rest,
    };
    format!("{before}{rest}")
}

/// The checksum of the run's compute-time line (`examples::workload`), which must be
/// that of the same computation in one process, `single_process`.
fn assert_checksum(run: &Run, single_process: u64) {
    let (_, checksum) = examples::workload::parse(&run.stdout)
        .unwrap_or_else(|| panic!("{}: no compute-time line in\n{}", run.what, run.stdout));
    assert_eq!(checksum, single_process, "{}: checksum", run.what);
}

#[test]
fn heat2d() {
    let mut summaries = Vec::new();
    for (npes, rows) in [(1, "20"), (2, "10/10"), (3, "7/7/6")] {
        let run = run("heat2d", Start::Direct(Some(npes)), &["20"]);
        run.assert_success();
        let line = run.line_starting("heat2d:");
        assert!(
            line.starts_with(&format!(
                "heat2d: 20x20 plate on {npes} PEs (rows {rows}): converged in "
            )),
            "{line}"
        );
        assert!(line.ends_with("; equal to the sequential solver"), "{line}");
        let plate = examples::heat2d::solve_sequentially(20).plate;
        assert_checksum(&run, examples::heat2d::checksum(&plate));
        summaries.push(without_pe_count(line));
    }
    // Same iterations, same last change, same centre temperature on any PE count.
    assert!(summaries.windows(2).all(|w| w[0] == w[1]), "{summaries:#?}");
}

#[test]
fn heat2d_with_a_bad_size_fails_and_says_why() {
    let run = run("heat2d", Start::Direct(Some(2)), &["twenty"]);
    assert_eq!(run.code, 1, "{}: status\nstderr:\n{}", run.what, run.stderr);
    assert!(
        run.stderr
            .contains("SIZE is the plate's width in points (1 or more), not \"twenty\""),
        "{}: stderr:\n{}",
        run.what,
        run.stderr
    );
}

#[test]
fn samplesort() {
    for npes in [1, 3, 4] {
        let run = run("samplesort", Start::Direct(Some(npes)), &["5000"]);
        run.assert_success();
        let line = run.line_starting("samplesort:");
        assert!(
            line.starts_with(&format!("samplesort: 5000 keys on {npes} PEs, shares ")),
            "{line}"
        );
        assert!(line.ends_with("; equal to the sequential sort"), "{line}");
        let shares: usize = line["samplesort: 5000 keys on 1 PEs, shares ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .split('/')
            .map(|s| s.parse::<usize>().unwrap())
            .sum();
        assert_eq!(shares, 5000, "{line}");
        let sorted = examples::samplesort::sort_sequentially(5000);
        assert_checksum(&run, examples::workload::checksum(sorted));
    }
}

#[test]
fn histogram() {
    let mut outputs = Vec::new();
    for npes in [1, 2, 3] {
        let run = run("histogram", Start::Direct(Some(npes)), &["20000"]);
        run.assert_success();
        let summary = run.line_starting("histogram:");
        assert!(
            summary.starts_with(&format!("histogram: 20000 samples on {npes} PEs, ")),
            "{summary}"
        );
        assert!(summary.ends_with(" in the fullest bin; equal to the sequential count"));
        let bars: Vec<&str> = run.stdout.lines().filter(|l| l.contains(" | ")).collect();
        assert_eq!(bars.len(), 16, "{}", run.stdout);
        let counted: u64 = bars
            .iter()
            .map(|b| {
                b.split(" | ")
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap()
            })
            .map(|c| c.parse::<u64>().unwrap())
            .sum();
        assert_eq!(counted, 20000, "{}", run.stdout);
        let counts = examples::histogram::count_sequentially(20000);
        assert_checksum(&run, examples::workload::checksum(counts));
        outputs.push((bars.join("\n"), without_pe_count(summary)));
    }
    // The samples do not depend on the PE count, so neither does the histogram.
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{outputs:#?}");
}

#[test]
fn histogram_threads() {
    for (npes, threads) in [(1, 3), (2, 2), (3, 8)] {
        let threads_arg = threads.to_string();
        let run = run(
            "histogram_threads",
            Start::Direct(Some(npes)),
            &["20000", &threads_arg],
        );
        run.assert_success();
        let summary = run.line_starting("histogram_threads:");
        assert_eq!(
            summary,
            format!(
                "histogram_threads: 20000 samples on {npes} PEs of {threads} threads, {} in the fullest bin; equal to the sequential count",
                examples::histogram::count_sequentially(20000).iter().max().unwrap()
            )
        );
        let counts = examples::histogram::count_sequentially(20000);
        assert_checksum(&run, examples::workload::checksum(counts));
    }
}

#[test]
fn workqueue() {
    let mut checksums = Vec::new();
    for npes in [1, 3, 8] {
        let run = run("workqueue", Start::Direct(Some(npes)), &["3000", "5"]);
        run.assert_success();
        let summary = run.line_starting("workqueue:");
        let head = format!("workqueue: 3000 tasks in chunks of 5 on {npes} PEs, taken ");
        let shares = summary
            .strip_prefix(&head)
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_else(|| panic!("{summary}"));
        let shares: Vec<u64> = shares.split('/').map(|s| s.parse().unwrap()).collect();
        assert_eq!(shares.len(), npes, "{summary}");
        assert_eq!(shares.iter().sum::<u64>(), 3000, "{summary}");
        assert!(
            summary.ends_with(" equal to the sequential one"),
            "{summary}"
        );
        checksums.push(summary.rsplit("checksum ").next().unwrap().to_string());
    }
    // The tasks' results do not depend on who ran them.
    assert!(checksums.windows(2).all(|w| w[0] == w[1]), "{checksums:?}");
}

#[test]
fn workqueue_with_a_bad_chunk_fails_and_says_why() {
    let run = run("workqueue", Start::Direct(Some(2)), &["100", "0"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("CHUNK is a positive number, not \"0\""),
        "{}",
        run.stderr
    );
}

#[test]
fn transpose() {
    for (npes, n) in [(1, 7), (3, 60), (8, 96)] {
        let run = run("transpose", Start::Direct(Some(npes)), &[&n.to_string()]);
        run.assert_success();
        assert_eq!(
            run.line_starting("transpose:"),
            format!(
                "transpose: {n}x{n} matrix on {npes} PEs ({} rows each), transposed twice by alltoall; every element in place",
                n / npes
            )
        );
    }
}

#[test]
fn transpose_with_a_size_the_pes_do_not_divide_fails_and_says_why() {
    let run = run("transpose", Start::Direct(Some(3)), &["100"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("N is a positive multiple of the PE count 3, not \"100\""),
        "{}",
        run.stderr
    );
}

#[test]
fn summa() {
    for (npes, n, grid, kb) in [
        (1, 5, "1x1", 5),
        (4, 48, "2x2", 24),
        (6, 36, "3x2", 6),
        (9, 45, "3x3", 15),
    ] {
        let run = run("summa", Start::Direct(Some(npes)), &[&n.to_string()]);
        run.assert_success();
        assert_eq!(
            run.line_starting("summa:"),
            format!(
                "summa: {n}x{n} matrices on a {grid} grid of PEs (row and column teams, panels of {kb}); C = A·B exactly"
            )
        );
    }
}

#[test]
fn summa_with_a_size_the_grid_does_not_divide_fails_and_says_why() {
    let run = run("summa", Start::Direct(Some(6)), &["20"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("N is a positive multiple of the grid's 3 rows and 2 columns, not \"20\""),
        "{}",
        run.stderr
    );
}

#[test]
fn kvstore() {
    for npes in [1, 2, 3, 4] {
        let run = run("kvstore", Start::Direct(Some(npes)), &["1500"]);
        run.assert_success();
        let line = run.line_starting("kvstore:");
        let head = format!("kvstore: {} updates of ", 1500 * npes);
        assert!(line.starts_with(&head), "{line}");
        assert!(
            line.ends_with(&format!(
                " keys on {npes} PEs; every key's count and sum equal to the sequential map"
            )),
            "{line}"
        );
    }
}

#[test]
fn halo() {
    for npes in [1, 2, 3, 4] {
        let run = run("halo", Start::Direct(Some(npes)), &["60", "300"]);
        run.assert_success();
        let line = run.line_starting("halo:");
        assert!(
            line.starts_with(&format!(
                "halo: 60 points on {npes} PEs, 300 sweeps with put_signal halos and no barrier; equal to the sequential sweeps"
            )),
            "{line}"
        );
    }
}

#[test]
fn halo_with_fewer_points_than_pes_fails_and_says_why() {
    let run = run("halo", Start::Direct(Some(3)), &["2"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("POINTS is at least the PE count 3, not 2"),
        "{}",
        run.stderr
    );
}

#[test]
fn grid() {
    // 3 PEs: a grid 2 wide whose second row is one PE.
    for (npes, width) in [(1, 1), (2, 2), (3, 2), (4, 2)] {
        let run = run("grid", Start::Direct(Some(npes)), &["6"]);
        run.assert_success();
        let line = run.line_starting("grid:");
        assert!(
            line.starts_with(&format!(
                "grid: {npes} tiles of 6x6 on a grid {width} wide (row and column teams from split_2d); row sums, column maxima and "
            )),
            "{line}"
        );
        assert!(
            line.ends_with(" packed entries equal to the sequential ones"),
            "{line}"
        );
    }
}

/// Runs examples under a launcher, as `shmemrun -n N example ARGS…` does. The launcher
/// is this test binary, started again to run only this test with `EXAMPLES_TEST_LAUNCH_*`
/// set: it then calls what shmemrun's `main` calls (`JobSpec::from_env`, `run_job`), and
/// the PEs' output reaches this test through its pipes. (The `shmemrun` binary itself
/// is not a dependency of this package: `cargo test -p examples` does not build it.)
#[test]
fn examples_run_under_the_launcher() {
    if let Some(program) = std::env::var_os(LAUNCH_PROGRAM) {
        act_as_launcher(program);
    }
    hello_lines(&run("hello", Start::Launcher(2), &[]), 2);
    run("collect", Start::Launcher(5), &[]).assert_pe_lines(5, |p| collect_line(5, p));
    run("broadcast", Start::Launcher(8), &[]).assert_pe_lines(8, broadcast_line);
    let heat = run("heat2d", Start::Launcher(3), &["20"]);
    heat.assert_success();
    assert!(heat
        .line_starting("heat2d:")
        .starts_with("heat2d: 20x20 plate on 3 PEs (rows 7/7/6): converged in "));
    let failed = run("broadcast", Start::Launcher(4), &[]);
    assert_eq!(
        failed.code, 1,
        "{}: stderr:\n{}",
        failed.what, failed.stderr
    );
    assert!(
        failed
            .stderr
            .contains("error: this example needs at least 8 PEs"),
        "{}: stderr:\n{}",
        failed.what,
        failed.stderr
    );
    // The supervisor names the PE that ended the job (mpirun words it its own way).
    if shmem_testkit::mpi_launcher(4).is_none() {
        assert!(
            failed.stderr.contains("shmemrun: PE "),
            "{}: stderr:\n{}",
            failed.what,
            failed.stderr
        );
    }
}

// ---- the Parallel Research Kernels and ISx ----

/// The PE counts every port validates at.
const PORT_PE_COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// Asserts a PRK port's run validated and printed the PRK's result line for `unit`.
fn assert_prk_validates(run: &Run, unit: &str) {
    run.assert_success();
    run.line_starting("Solution validates");
    let rate = run.line_starting(&format!("Rate ({unit}): "));
    let figures: Vec<f64> = rate
        .split(": ")
        .skip(1)
        .map(|f| {
            f.split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("{}: figure in {rate:?}", run.what))
        })
        .collect();
    assert_eq!(figures.len(), 2, "{}: {rate}", run.what);
    assert!(
        figures.iter().all(|f| f.is_finite() && *f >= 0.0),
        "{}: {rate}",
        run.what
    );
}

#[test]
fn prk_stencil() {
    for npes in PORT_PE_COUNTS {
        let run = run("prk_stencil", Start::Direct(Some(npes)), &["4", "40"]);
        assert_prk_validates(&run, "MFlops/s");
        run.line_starting("Radius of stencil      = 2");
    }
    // The radius is an argument.
    let run = run("prk_stencil", Start::Direct(Some(3)), &["3", "45", "4"]);
    assert_prk_validates(&run, "MFlops/s");
    run.line_starting("Radius of stencil      = 4");
}

#[test]
fn prk_stencil_with_a_radius_wider_than_a_tile_fails_and_says_why() {
    let run = run("prk_stencil", Start::Direct(Some(8)), &["2", "20", "6"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("smaller than the stencil radius 6"),
        "{}",
        run.stderr
    );
}

#[test]
fn prk_synch_p2p() {
    for npes in PORT_PE_COUNTS {
        let run = run(
            "prk_synch_p2p",
            Start::Direct(Some(npes)),
            &["5", "50", "30"],
        );
        assert_prk_validates(&run, "MFlops/s");
    }
}

#[test]
fn prk_transpose() {
    // A tile of 5 does not divide the blocks; 0 is untiled.
    for npes in PORT_PE_COUNTS {
        let run = run(
            "prk_transpose",
            Start::Direct(Some(npes)),
            &["4", "48", "5"],
        );
        assert_prk_validates(&run, "MB/s");
    }
    let run = run("prk_transpose", Start::Direct(Some(4)), &["2", "40", "0"]);
    assert_prk_validates(&run, "MB/s");
    run.line_starting("Untiled");
}

#[test]
fn prk_transpose_with_an_order_the_pes_do_not_divide_fails_and_says_why() {
    let run = run("prk_transpose", Start::Direct(Some(3)), &["2", "40"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("matrix order 40 should be at least and divisible by # procs 3"),
        "{}",
        run.stderr
    );
}

/// Runs an ISx port on `npes` PEs with `keys` and 2 timed iterations, and checks that
/// it verified its sort, reported, and logged `npes` rows an iteration.
fn isx_run(example: &str, npes: usize, keys: usize, keys_per_pe: usize) {
    let log = std::env::temp_dir().join(format!("{example}-{npes}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let run = run(
        example,
        Start::Direct(Some(npes)),
        &[&keys.to_string(), "2", log.to_str().expect("a UTF-8 path")],
    );
    run.assert_success();
    run.line_starting("ISx v1.1");
    assert_eq!(
        run.line_starting("  Number of Keys per PE: "),
        format!("  Number of Keys per PE: {keys_per_pe}")
    );
    assert_eq!(
        run.line_starting("  Number of PEs: "),
        format!("  Number of PEs: {npes}")
    );
    for report in [
        "Average total time (per PE): ",
        "Average all2all time (per PE): ",
    ] {
        let line = run.line_starting(report);
        let seconds: f64 = line[report.len()..]
            .trim_end_matches(" seconds")
            .parse()
            .unwrap_or_else(|_| panic!("{}: {line}", run.what));
        assert!(seconds.is_finite() && seconds >= 0.0, "{line}");
    }
    let logged = std::fs::read_to_string(&log).expect("the log file");
    std::fs::remove_file(&log).expect("removing the log file");
    let lines: Vec<&str> = logged.lines().collect();
    assert!(
        lines[0].starts_with(&format!("SHMEM\tNUM_PES {npes}\t")),
        "{logged}"
    );
    assert!(
        lines[1].starts_with("TOTAL (sec)\tATA_KEYS (sec)\tATA_KEYS_COUNTS\t"),
        "{logged}"
    );
    assert_eq!(lines.len(), 2 + 2 * npes, "{logged}");
}

#[test]
fn isx_weak() {
    for npes in PORT_PE_COUNTS {
        isx_run("isx_weak", npes, 20_000, 20_000);
    }
}

#[test]
fn isx_strong() {
    // Few PEs mean wide buckets: ISx's count array is as wide as a bucket (2^28 / PEs).
    for npes in [3, 8] {
        isx_run("isx_strong", npes, 50_000, 50_000usize.div_ceil(npes));
    }
}
