//! `shmemrun --help`, `--version` and `--mpi --dry-run`, and the one list of `SHMEM_*`
//! variables: the help names every variable the runtime reads, and the README's table
//! names the same set.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use shmem_rt::__private::env::USER_VARIABLES;

fn shmemrun(arg: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_shmemrun"))
        .arg(arg)
        .output()
        .expect("shmemrun starts");
    assert!(out.status.success(), "shmemrun {arg}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn listed() -> BTreeSet<String> {
    USER_VARIABLES
        .iter()
        .map(|(n, _, _)| n.to_string())
        .collect()
}

/// Every `SHMEM_…` name (not the launcher's own `SHMEM_RT_…`) quoted in `text`.
fn quoted_names(text: &str, quote: char) -> BTreeSet<String> {
    text.split(quote)
        .filter(|w| {
            w.starts_with("SHMEM_")
                && !w.starts_with("SHMEM_RT_")
                && w.len() > "SHMEM_".len()
                && w.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn version_prints_the_crate_version() {
    assert_eq!(
        shmemrun("--version"),
        format!("shmemrun {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(shmemrun("-V"), shmemrun("--version"));
}

#[test]
fn help_lists_every_variable_with_its_default() {
    let help = shmemrun("--help");
    for (name, default, _) in USER_VARIABLES {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("--help does not list {name}:\n{help}"));
        assert!(line.ends_with(&format!("[{default}]")), "{line}");
    }
}

#[test]
fn the_list_names_every_variable_the_runtime_reads() {
    // Every `"SHMEM_…"` string literal in the runtime's sources and the fabric's (reads,
    // the launcher's forwarding, the selection overrides) must be in the list, and
    // nothing else.
    let mut read = BTreeSet::new();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![here.join("src"), here.join("../shmem-fabric/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("source is UTF-8");
                // The code, not its unit tests (which make up names of their own).
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                read.extend(quoted_names(code, '"'));
            }
        }
    }
    assert_eq!(
        read,
        listed(),
        "string literals in shmem-rt/src and shmem-fabric/src vs USER_VARIABLES"
    );
}

#[test]
fn the_readme_table_names_the_same_variables() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(readme).expect("README.md is readable");
    // The first column of every table headed `| variable | default | …`.
    let mut table = String::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| variable | default |") {
            in_table = true;
        } else if !line.starts_with('|') {
            in_table = false;
        } else if in_table {
            table.push_str(line.split(" | ").next().unwrap_or(""));
        }
    }
    assert_eq!(
        quoted_names(&table, '`'),
        listed(),
        "README tables vs USER_VARIABLES"
    );
}

/// `shmemrun --mpi --dry-run` prints the command the test kit and the benchmark use
/// (`__private::mpirun::local_command`), followed by the program; `--tcp` needs `--mpi`.
#[test]
fn the_dry_run_prints_the_command_the_tools_use() {
    let out = Command::new(env!("CARGO_BIN_EXE_shmemrun"))
        .args(["--tcp", "./prog"])
        .output()
        .expect("shmemrun starts");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tcp needs --mpi"));

    let out = Command::new(env!("CARGO_BIN_EXE_shmemrun"))
        .args([
            "--mpi",
            "--tcp",
            "--dry-run",
            "-n",
            "3",
            "--",
            "./prog",
            "a b",
        ])
        .env("SHMEM_CHECKED", "1")
        .output()
        .expect("shmemrun starts");
    let env_names: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("SHMEM_"))
        .chain(["SHMEM_CHECKED".to_string()])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    match shmem_rt::__private::mpirun::local_command(3, true, &env_names) {
        Ok(words) => {
            assert!(out.status.success(), "{out:?}");
            let mut argv = words;
            argv.extend(["./prog".to_string(), "a b".to_string()]);
            let expected = shmem_rt::__private::mpirun::shell_line(&argv);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), expected);
            assert!(expected.contains("-x SHMEM_CHECKED"), "{expected}");
        }
        Err(why) => {
            assert_eq!(out.status.code(), Some(2), "{out:?}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(&why),
                "{out:?}"
            );
        }
    }
}
