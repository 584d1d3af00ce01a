//! Seeing a job from outside: the table of where every PE is (on Ctrl-C and from the
//! watchdog), and the timeline (`SHMEM_TRACE`) with its summary and picture. Each case
//! runs real PE processes under `shmemrun` and checks what it printed or wrote.

use std::time::Duration;

use serde_json::Value;
use shmem_rt::__private::observe;
use shmem_testkit::{mark_ready, table_row, test_name, Ended, FaultCase};
use shmem_typed::prelude::*;

/// The launcher under test.
const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

/// The PE that is late in every case.
const LATE: usize = 1;

/// The PE program of the hung cases: every PE but [`LATE`] enters a barrier at the line
/// returned by [`barrier_line`]; [`LATE`] stays in its own code until it is stopped.
fn hung_barrier() {
    let mut pe = Pe::init().expect("init");
    if pe.my_pe() == LATE {
        // Give the others time to publish their waits before the observer is told.
        std::thread::sleep(Duration::from_millis(300));
        mark_ready();
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    mark_ready();
    let _ = pe.barrier_all(); // the barrier of the table
}

/// `file:line` of the line of this file that ends with `marker`.
fn line_of(marker: &str) -> String {
    let text = include_str!("observe.rs");
    let line = text
        .lines()
        .position(|l| l.ends_with(marker) && !l.contains("line_of"))
        .expect("the marked line")
        + 1;
    format!("shmem-rt/tests/observe.rs:{line}")
}

/// The line of the barrier of [`hung_barrier`] in this file.
fn barrier_line() -> String {
    line_of("// the barrier of the table")
}

/// Checks the rows of the PEs waiting for [`LATE`], and that they name the program's
/// line if `with_line` (observation on; else they have none).
fn assert_waiting_rows(stderr: &str, npes: usize, with_line: bool) {
    let line = if with_line {
        barrier_line()
    } else {
        "  -".into()
    };
    for pe in (0..npes).filter(|&pe| pe != LATE) {
        let row = table_row(stderr, pe);
        for part in [
            "waiting",
            "barrier",
            "on world",
            &format!("PE {LATE}"),
            &line,
        ] {
            assert!(
                row.contains(part),
                "PE {pe}'s row lacks {part:?}:\n{stderr}"
            );
        }
    }
    assert_eq!(
        stderr.matches("where every PE is:").count(),
        1,
        "one table:\n{stderr}"
    );
}

/// Sends `sig` to the launcher of a hung barrier; checks the table and the exit status.
fn interrupt_prints_the_table(name: String, sig: i32, sig_name: &str) {
    let npes = 3;
    let report = FaultCase::new(name, npes)
        .via_launcher(SHMEMRUN)
        .signal_supervisor(sig)
        .run(hung_barrier);
    if let Some(r) = report {
        // Shown by `cargo test -- --nocapture`: the table as printed.
        println!("{}", r.stderr);
        assert_eq!(r.ended, Ended::Code(128 + sig), "{}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("shmemrun: {sig_name}: where every PE is:")),
            "{}",
            r.stderr
        );
        assert_waiting_rows(&r.stderr, npes, false);
        assert!(
            table_row(&r.stderr, LATE).contains("running"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn ctrl_c_prints_whom_each_pe_waits_for() {
    interrupt_prints_the_table(test_name!(), libc::SIGINT, "SIGINT");
}

#[test]
fn sigquit_prints_whom_each_pe_waits_for() {
    interrupt_prints_the_table(test_name!(), libc::SIGQUIT, "SIGQUIT");
}

/// Gap between the first and the second Ctrl-C.
const SECOND_CTRL_C: Duration = Duration::from_millis(100);

/// A second Ctrl-C ends a job at once: its PEs ignore SIGINT and stay in their own code,
/// so the first one (which the launcher passes on to them) ends the job only when the
/// grace after it runs out; the second kills them before that.
#[test]
fn second_ctrl_c_ends_the_job_at_once() {
    let npes = 2;
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .signal_supervisor_twice(libc::SIGINT, SECOND_CTRL_C)
        .run(|| {
            let _pe = Pe::init().expect("init");
            // SAFETY: setting a signal's disposition to "ignore" touches no memory.
            unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
            mark_ready();
            std::thread::sleep(Duration::from_secs(60));
        });
    if let Some(r) = report {
        println!("{}", r.stderr);
        assert_eq!(r.ready_pes, npes);
        assert!(!r.hung, "{}", r.stderr);
        assert_eq!(r.ended, Ended::Code(128 + libc::SIGINT), "{}", r.stderr);
        assert_eq!(r.stderr_lines_with("where every PE is:"), 1, "{}", r.stderr);
        let after = r.supervisor_exit_after_fault;
        assert!(
            after >= SECOND_CTRL_C && after < shmem_rt::__private::ABORT_GRACE,
            "the job ended {after:?} after the first Ctrl-C (second {SECOND_CTRL_C:?} after it; grace {:?}):\n{}",
            shmem_rt::__private::ABORT_GRACE,
            r.stderr
        );
        assert!(r.survivors.is_empty(), "{:?}", r.survivors);
    }
}

#[test]
fn watchdog_prints_the_table_and_ends_the_job() {
    let npes = 3;
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_WATCHDOG", "1")
        .run(hung_barrier);
    if let Some(r) = report {
        println!("{}", r.stderr);
        assert!(!r.hung, "{}", r.stderr);
        assert_eq!(r.ended, Ended::Code(128 + libc::SIGALRM), "{}", r.stderr);
        assert!(
            r.stderr
                .contains("shmemrun: watchdog: no PE has completed a call for 1.0 s"),
            "{}",
            r.stderr
        );
        assert_waiting_rows(&r.stderr, npes, true);
        // Observation is on: the late PE is known to be in its own code since its last
        // call (init's barrier is no call of the program, so there is none).
        assert!(
            table_row(&r.stderr, LATE).contains("running")
                || table_row(&r.stderr, LATE).contains("in its own code"),
            "{}",
            r.stderr
        );
    }
}

/// Barriers each PE makes in the late-PE case.
const ROUNDS: usize = 30;

#[test]
fn late_pe_is_named_by_the_trace_summary() {
    let npes = 4;
    let dir = std::env::temp_dir().join(format!("shmem-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("trace directory");
    let path = dir.join("trace.json");
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_TRACE", &path)
        .run(|| {
            let mut pe = Pe::init().expect("init");
            mark_ready();
            for _ in 0..ROUNDS {
                if pe.my_pe() == 2 {
                    std::thread::sleep(Duration::from_millis(3));
                }
                pe.barrier_all().expect("barrier"); // the late barrier
            }
            pe.finalize().expect("finalize");
        });
    let Some(r) = report else { return };
    assert_eq!(r.ended, Ended::Code(0), "{}", r.stderr);
    assert_eq!(r.ready_pes, npes);
    let text = std::fs::read_to_string(&path).expect("the trace is written");
    let trace: Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let count = |f: &dyn Fn(&Value) -> bool| events.iter().filter(|e| f(e)).count();
    let late_line = line_of("// the late barrier");
    assert_eq!(count(&|e| e["name"] == "thread_name"), npes);
    assert_eq!(
        count(&|e| e["ph"] == "X"
            && e["name"] == "barrier_all"
            && e["args"]["site"] == late_line.as_str()),
        npes * ROUNDS
    );
    assert!(count(&|e| e["cat"] == "wait") >= ROUNDS, "waits are marked");
    let starts = count(&|e| e["ph"] == "s");
    assert!(
        starts >= ROUNDS,
        "flow arrows from the last arriver: {starts}"
    );
    assert_eq!(starts, count(&|e| e["ph"] == "f"));
    assert!(
        !dir.read_dir().expect("dir").any(|e| e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .contains(".pe")),
        "the parts are merged and removed"
    );
    let summary = observe::summary(&path).expect("summary");
    println!("{summary}");
    let site = format!("barrier_all at {late_line}");
    let block: Vec<&str> = summary
        .lines()
        .skip_while(|l| *l != site)
        .take(npes + 3)
        .collect();
    assert!(
        block
            .last()
            .is_some_and(|l| l.contains("arrived last most often: PE 2 (")),
        "{summary}"
    );
    let svg = observe::svg(&path).expect("picture");
    assert!(svg.starts_with("<svg") && svg.contains(">PE 3<") && svg.contains("url(#wait)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[shmem_typed::symmetric]
static FIRST: Lock = Lock::new();
#[shmem_typed::symmetric]
static SECOND: Lock = Lock::new();

/// PE 0 takes FIRST then SECOND, PE 1 SECOND then FIRST: the deadlock watch's verdict
/// prints the table once (from the PE that found the cycle), naming each PE's wait and
/// the PE it waits for.
#[test]
fn hang_verdict_prints_the_table_once() {
    let npes = 2;
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .run(|| {
            let mut pe = Pe::init().expect("init");
            let me = pe.my_pe();
            let (mine, theirs) = if me == 0 {
                (&FIRST, &SECOND)
            } else {
                (&SECOND, &FIRST)
            };
            mine.set_lock(&mut pe).expect("own lock");
            pe.barrier_all().expect("barrier");
            mark_ready();
            // The cycle is an error on the PEs that find it; a PE that leaves first may
            // be what the other hears of instead.
            assert!(theirs.set_lock(&mut pe).is_err());
            let _ = pe.finalize();
        });
    if let Some(r) = report {
        println!("{}", r.stderr);
        assert!(!r.hung, "{}", r.stderr);
        assert_eq!(r.ready_pes, npes);
        assert!(
            r.stderr
                .contains(": hang: a cycle of waits that can never end; where every PE is:"),
            "{}",
            r.stderr
        );
        for pe in 0..npes {
            let row = table_row(&r.stderr, pe);
            for part in ["set_lock", &format!("PE {}", 1 - pe)] {
                assert!(
                    row.contains(part),
                    "PE {pe}'s row lacks {part:?}:\n{}",
                    r.stderr
                );
            }
        }
        assert_eq!(
            r.stderr.matches("where every PE is:").count(),
            1,
            "{}",
            r.stderr
        );
    }
}

/// A job that fails still leaves its trace: each PE writes what it recorded when a call
/// fails (or it panics), and the launcher merges the parts.
#[test]
fn a_failed_job_leaves_its_trace() {
    let npes = 3;
    let dir = std::env::temp_dir().join(format!("shmem-trace-failed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("trace directory");
    let path = dir.join("trace.json");
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_TRACE", &path)
        .run(|| {
            let mut pe = Pe::init().expect("init");
            mark_ready();
            for _ in 0..ROUNDS {
                pe.barrier_all().expect("barrier");
            }
            if pe.my_pe() == LATE {
                panic!("this PE fails after its barriers");
            }
            // The others' wait fails when PE LATE's panic ends the job.
            let err = pe.barrier_all().expect_err("the job is aborted");
            shmem_rt::__private::print_line(&format!("PE {}: {err}", pe.my_pe()));
            std::process::exit(1);
        });
    let Some(r) = report else { return };
    assert_eq!(r.ended, Ended::Code(101), "{}", r.stderr);
    assert_eq!(r.ready_pes, npes);
    let text = std::fs::read_to_string(&path).expect("the launcher merged the trace");
    let trace: Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let tracks = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(tracks, npes, "every PE's part");
    let barriers = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "barrier_all" && e["args"]["ok"] == true)
        .count();
    assert_eq!(barriers, npes * ROUNDS, "every completed barrier");
    let failed = events
        .iter()
        .filter(|e| e["name"] == "barrier_all" && e["args"]["ok"] == false)
        .count();
    assert_eq!(failed, npes - 1, "the failed calls");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Puts, gets and fetch-adds each PE makes to the next PE in the one-sided case.
const PUTS: usize = 3;
const GETS: usize = 2;
const ADDS: usize = 4;
/// Elements (`u64`) per put and get.
const WORDS: usize = 4;

/// The runtime observes the one-sided calls itself: with `SHMEM_STATS` each PE's
/// statistics count its puts and gets with the bytes they moved, and the trace has a
/// slice per call naming the line of the program that made it.
#[test]
fn statistics_count_the_bytes_of_puts_and_gets() {
    let npes = 2;
    let dir = std::env::temp_dir().join(format!("shmem-trace-rma-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("trace directory");
    let path = dir.join("trace.json");
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_STATS", "1")
        .env("SHMEM_TRACE", &path)
        .run(|| {
            let mut pe = Pe::init().expect("init");
            let me = pe.my_pe() as u64;
            let next = (pe.my_pe() + 1) % pe.n_pes();
            let data = pe.alloc_slice::<u64>(WORDS).expect("alloc");
            let word = pe.alloc_slice::<u64>(1).expect("alloc");
            mark_ready();
            for round in 0..PUTS as u64 {
                let value = [me * 100 + round; WORDS];
                data.put(&mut pe, next, &value).expect("put"); // the put
            }
            for _ in 0..ADDS {
                word.atomic_fetch_add(&mut pe, next, 1).expect("add"); // the fetch-add
            }
            pe.barrier_all().expect("barrier");
            let mut got = [0; WORDS];
            for _ in 0..GETS {
                data.get(&pe, next, &mut got).expect("get"); // the get
            }
            // PE `next` holds what `next - 1`, this PE's own number for 2 PEs, put last.
            assert_eq!(got, [me * 100 + PUTS as u64 - 1; WORDS]);
            pe.finalize().expect("finalize");
        });
    let Some(r) = report else { return };
    println!("{}", r.stderr);
    assert_eq!(r.ended, Ended::Code(0), "{}", r.stderr);
    assert_eq!(r.ready_pes, npes);
    let bytes = WORDS * 8;
    for pe in 0..npes {
        // "PE p   op   calls   ms in calls   ms waiting   bytes"
        let stats = |op: &str| -> (usize, usize) {
            let line = r
                .stderr
                .lines()
                .find(|l| l.split_whitespace().take(3).eq(["PE", &pe.to_string(), op]))
                .unwrap_or_else(|| panic!("PE {pe} counts no {op}:\n{}", r.stderr));
            let f: Vec<&str> = line.split_whitespace().collect();
            (f[3].parse().expect("calls"), f[6].parse().expect("bytes"))
        };
        assert_eq!(stats("put"), (PUTS, PUTS * bytes), "{}", r.stderr);
        assert_eq!(stats("get"), (GETS, GETS * bytes), "{}", r.stderr);
        assert_eq!(stats("atomic_fetch_add"), (ADDS, ADDS * 8), "{}", r.stderr);
    }
    let text = std::fs::read_to_string(&path).expect("the trace is written");
    let trace: Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let slices = |name: &str| -> Vec<&Value> {
        let named = |e: &&Value| e["ph"] == "X" && e["name"] == name;
        events.iter().filter(named).collect()
    };
    // The site of a one-sided call is its frame's file as the debug information has it,
    // relative to the working directory (this package's, under `cargo test`).
    let at = |e: &Value, line: &str| {
        let line = line
            .strip_prefix("shmem-rt/")
            .expect("a file of this package");
        e["args"]["site"]
            .as_str()
            .is_some_and(|s| s.ends_with(line))
    };
    let (put_line, get_line) = (line_of("// the put"), line_of("// the get"));
    let add_line = line_of("// the fetch-add");
    let puts = slices("put");
    assert_eq!(puts.len(), npes * PUTS);
    assert!(
        puts.iter()
            .all(|e| e["args"]["nelems"] == bytes && at(e, &put_line)),
        "{puts:?}"
    );
    let gets = slices("get");
    assert_eq!(gets.len(), npes * GETS);
    assert!(gets.iter().all(|e| at(e, &get_line)), "{gets:?}");
    let adds = slices("atomic_fetch_add");
    assert_eq!(adds.len(), npes * ADDS);
    assert!(adds.iter().all(|e| at(e, &add_line)), "{adds:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls each PE makes on contexts in the unobserved case: puts and fetch-adds on a
/// context of a worker thread, and as many on a context of the PE's own thread.
const CTX_CALLS: usize = 5;

/// Calls on a context are not observed, from whichever thread: with `SHMEM_STATS` and
/// `SHMEM_TRACE` on, a PE's statistics and trace count only the calls made on the `Pe`
/// (the records belong to the PE's thread), while the contexts' calls still arrive.
#[test]
fn calls_on_contexts_are_not_observed() {
    let npes = 2;
    let dir = std::env::temp_dir().join(format!("shmem-trace-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("trace directory");
    let path = dir.join("trace.json");
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_STATS", "1")
        .env("SHMEM_TRACE", &path)
        .run(|| {
            let mut pe = Pe::init().expect("init");
            let next = (pe.my_pe() + 1) % pe.n_pes();
            let data = pe.alloc_slice::<u64>(WORDS).expect("alloc");
            let word = pe.alloc_slice::<u64>(1).expect("alloc");
            mark_ready();
            data.put(&mut pe, next, &[7; WORDS]).expect("put");
            word.atomic_fetch_add(&mut pe, next, 1).expect("fetch-add");
            std::thread::scope(|s| {
                let mut worker = pe.create_ctx(CtxOptions::new()).expect("ctx");
                let mut own = pe.create_ctx(CtxOptions::new()).expect("ctx");
                let (data, word) = (&data, &word);
                s.spawn(move || {
                    for _ in 0..CTX_CALLS {
                        data.put(&mut worker, next, &[7; WORDS]).expect("ctx put");
                        word.atomic_fetch_add(&mut worker, next, 1)
                            .expect("ctx fetch-add");
                    }
                });
                for _ in 0..CTX_CALLS {
                    data.put(&mut own, next, &[7; WORDS]).expect("ctx put");
                    word.atomic_fetch_add(&mut own, next, 1)
                        .expect("ctx fetch-add");
                }
            });
            pe.barrier_all().expect("barrier");
            // Every PE's adds arrived at the next PE, the contexts' included.
            let me = pe.my_pe();
            let adds = word.atomic_fetch(&pe, me).expect("fetch");
            assert_eq!(adds, 1 + 2 * CTX_CALLS as u64);
            pe.finalize().expect("finalize");
        });
    let Some(r) = report else { return };
    println!("{}", r.stderr);
    assert_eq!(r.ended, Ended::Code(0), "{}", r.stderr);
    assert_eq!(r.ready_pes, npes);
    for pe in 0..npes {
        // "PE p   op   calls   ms in calls   ms waiting   bytes"
        let calls = |op: &str| -> usize {
            let line = r
                .stderr
                .lines()
                .find(|l| l.split_whitespace().take(3).eq(["PE", &pe.to_string(), op]))
                .unwrap_or_else(|| panic!("PE {pe} counts no {op}:\n{}", r.stderr));
            line.split_whitespace()
                .nth(3)
                .expect("calls")
                .parse()
                .expect("calls")
        };
        assert_eq!(calls("put"), 1, "{}", r.stderr);
        assert_eq!(calls("atomic_fetch_add"), 1, "{}", r.stderr);
    }
    let text = std::fs::read_to_string(&path).expect("the trace is written");
    let trace: Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let puts = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "put")
        .count();
    assert_eq!(puts, npes);
    let _ = std::fs::remove_dir_all(&dir);
}
