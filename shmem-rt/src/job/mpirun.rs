//! `shmemrun --mpi`: hands the job to the MPI launcher on this machine instead of starting
//! the PEs itself. Which MPI `mpirun` is decides the flags: Open MPI's `mpirun` or
//! MPICH's Hydra (`mpiexec`).
//!
//! The pure part, tested below: reading a launcher's `--version` output ([`identify`]),
//! `--hosts` ([`parse_hosts`]), the launcher's command line ([`launcher_argv`]) and its
//! shell-quoted form for `--dry-run` ([`shell_line`]). The rest runs `--version` and
//! execs the launcher ([`launch`]).

use std::fmt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The MPI implementations whose launchers `shmemrun --mpi` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MpiKind {
    /// Open MPI's `mpirun` (ORTE in 4.x, PRRTE in 5.x).
    OpenMpi,
    /// MPICH's process manager, Hydra (`mpiexec`, also installed as `mpirun`).
    Hydra,
}

impl fmt::Display for MpiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MpiKind::OpenMpi => "Open MPI",
            MpiKind::Hydra => "MPICH (Hydra)",
        })
    }
}

/// A release number: `4.1.4`, `5.0.0rc12` (suffixes dropped), `4.0` (patch 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version {
    pub(crate) major: u32,
    pub(crate) minor: u32,
    pub(crate) patch: u32,
}

impl Version {
    /// Parses `MAJOR[.MINOR[.PATCH]]`, each part's leading digits; `None` unless the
    /// word starts with a digit.
    pub(crate) fn parse(word: &str) -> Option<Version> {
        let mut parts = word.split('.').map(|part| {
            let digits = part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            part[..digits].parse::<u32>().ok()
        });
        let major = parts.next()??;
        let minor = parts.next().flatten().unwrap_or(0);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Version {
            major,
            minor,
            patch,
        })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// An MPI found on this machine: what it is, and the command that launches its jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mpi {
    pub(crate) kind: MpiKind,
    pub(crate) version: Version,
    /// `mpirun` or `mpiexec`, run through `PATH`.
    pub(crate) launcher: String,
}

/// What a launcher's `--version` output says it is: `mpirun (Open MPI) 4.1.4` (Open
/// MPI's `mpiexec` says `(OpenRTE)`), or Hydra's build details with a `Version:` line.
/// `None` for anything else, or when the version cannot be read.
pub(crate) fn identify(version_output: &str) -> Option<(MpiKind, Version)> {
    let number_after = |text: &str| text.split_whitespace().find_map(Version::parse);
    for marker in ["(Open MPI)", "(OpenRTE)", "Open MPI"] {
        if let Some(at) = version_output.find(marker) {
            let line_rest = version_output[at + marker.len()..].lines().next()?;
            return Some((MpiKind::OpenMpi, number_after(line_rest)?));
        }
    }
    if version_output.contains("HYDRA") {
        let version = version_output
            .lines()
            .find_map(|line| line.trim_start().strip_prefix("Version:"))
            .and_then(number_after)?;
        return Some((MpiKind::Hydra, version));
    }
    None
}

/// One entry of `--hosts`: a host name and, optionally, how many PEs (slots) it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Host {
    pub(crate) name: String,
    pub(crate) slots: Option<usize>,
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.slots {
            Some(slots) => write!(f, "{}:{slots}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Parses `--hosts H1:S1,H2:S2,...` (`:S` optional, S at least 1), the syntax both Open
/// MPI's `--host` and Hydra's `-hosts` take.
pub(crate) fn parse_hosts(text: &str) -> Result<Vec<Host>, String> {
    let bad = |why: String| format!("invalid --hosts {text:?}: {why} (expected H1:S1,H2:S2,...)");
    if text.trim().is_empty() {
        return Err(bad("no host given".into()));
    }
    text.split(',')
        .map(|entry| {
            let (name, slots) = match entry.split_once(':') {
                Some((name, slots)) => (name, Some(slots)),
                None => (entry, None),
            };
            if name.is_empty() {
                return Err(bad(format!("entry {entry:?} has no host name")));
            }
            if name.contains(|c: char| c.is_whitespace() || c == ':') {
                return Err(bad(format!("host name {name:?} is not a host name")));
            }
            let slots = match slots {
                None => None,
                Some(s) => match s.parse::<usize>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => {
                        return Err(bad(format!(
                            "slots {s:?} of {name} are not a number from 1"
                        )))
                    }
                },
            };
            Ok(Host {
                name: name.to_owned(),
                slots,
            })
        })
        .collect()
}

/// The PEs `hosts` hold when every entry says its slots (the PE count `--hosts` alone
/// implies), else `None`.
pub(crate) fn total_slots(hosts: &[Host]) -> Option<usize> {
    if hosts.is_empty() {
        return None;
    }
    hosts.iter().map(|h| h.slots).sum()
}

/// Everything the launcher's command line depends on.
#[derive(Clone, Debug)]
pub(crate) struct MpiJob<'a> {
    pub(crate) mpi: &'a Mpi,
    pub(crate) npes: usize,
    /// Running as root (effective uid 0): Open MPI refuses unless told.
    pub(crate) is_root: bool,
    /// `--hosts`; empty: the launcher's default (this machine).
    pub(crate) hosts: &'a [Host],
    /// Names of the variables to forward to every PE (the `SHMEM_*` ones set).
    pub(crate) env_names: &'a [String],
    pub(crate) program: &'a str,
    pub(crate) args: &'a [String],
}

/// The launcher's command line, the launcher first.
///
/// Open MPI: `mpirun -np N [--host H] --bind-to none --oversubscribe [--mca osc pt2pt]
/// [--allow-run-as-root] [-x VAR ...] PROGRAM ARGS...`
/// * `--bind-to none`: Open MPI binds each rank to a core (or socket) by default; with
///   more PEs than cores, several PEs waiting for each other share one core while others
///   idle, and latency grows by orders of magnitude (500x measured here).
/// * `--oversubscribe`, always: plain `shmemrun -n N` starts any N up to the limit
///   whatever the CPUs, and `--mpi` keeps that; Open MPI counts slots by cores, not
///   hardware threads, so no CPU count known here would predict its refusal; and the flag
///   changes nothing when the PEs fit.
/// * `--mca osc pt2pt` for Open MPI up to 4.x: 4.1.4's default one-sided component,
///   osc/rdma, crashes in `MPI_Compare_and_swap` and fails in `MPI_Win_allocate` over
///   TCP. Open MPI 5 has no pt2pt component (and a rewritten osc/rdma), so not there.
/// * `-x VAR` forwards each variable; `--allow-run-as-root` when root.
///
/// Hydra: `mpiexec -n N [-hosts H] [-genvlist VAR,...] PROGRAM ARGS...` (Hydra binds
/// nothing by default, does not limit processes to slots, and runs as root).
pub(crate) fn launcher_argv(job: &MpiJob<'_>) -> Vec<String> {
    let mut argv = vec![job.mpi.launcher.clone()];
    let hosts = job
        .hosts
        .iter()
        .map(Host::to_string)
        .collect::<Vec<_>>()
        .join(",");
    match job.mpi.kind {
        MpiKind::OpenMpi => {
            argv.extend(["-np".into(), job.npes.to_string()]);
            if !hosts.is_empty() {
                argv.extend(["--host".into(), hosts]);
            }
            argv.extend(["--bind-to", "none", "--oversubscribe"].map(String::from));
            if job.mpi.version.major <= 4 {
                argv.extend(["--mca", "osc", "pt2pt"].map(String::from));
            }
            if job.is_root {
                argv.push("--allow-run-as-root".into());
            }
            for name in job.env_names {
                argv.extend(["-x".into(), name.clone()]);
            }
        }
        MpiKind::Hydra => {
            argv.extend(["-n".into(), job.npes.to_string()]);
            if !hosts.is_empty() {
                argv.extend(["-hosts".into(), hosts]);
            }
            if !job.env_names.is_empty() {
                argv.extend(["-genvlist".into(), job.env_names.join(",")]);
            }
        }
    }
    argv.push(job.program.to_owned());
    argv.extend(job.args.iter().cloned());
    argv
}

/// `argv` as one line a POSIX shell reads back into the same words: words of only safe
/// characters as they are, others in single quotes (`'` as `'\''`).
pub(crate) fn shell_line(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-+=:,./@%".contains(c);
    argv.iter()
        .map(|word| {
            if !word.is_empty() && word.chars().all(safe) {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The names of the `SHMEM_*` variables set in this process's environment, sorted.
pub(crate) fn shmem_env_names() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("SHMEM_"))
        .collect();
    names.sort();
    names
}

/// `COMMAND --version`'s output (stdout then stderr), `None` if COMMAND is not on `PATH`.
fn version_output(command: &str) -> Result<Option<String>, String> {
    match Command::new(command)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => Ok(Some(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("could not run `{command} --version`: {e}")),
    }
}

/// Finds the MPI on this machine: Open MPI if `mpirun --version` says so, else Hydra if
/// `mpiexec --version` (or `mpirun --version`) says so.
pub(crate) fn detect() -> Result<Mpi, String> {
    let mpirun = version_output("mpirun")?;
    if let Some((MpiKind::OpenMpi, version)) = mpirun.as_deref().and_then(identify) {
        return Ok(Mpi {
            kind: MpiKind::OpenMpi,
            version,
            launcher: "mpirun".into(),
        });
    }
    let mpiexec = version_output("mpiexec")?;
    for (launcher, output) in [("mpiexec", &mpiexec), ("mpirun", &mpirun)] {
        if let Some((MpiKind::Hydra, version)) = output.as_deref().and_then(identify) {
            return Ok(Mpi {
                kind: MpiKind::Hydra,
                version,
                launcher: launcher.into(),
            });
        }
    }
    let first_line = |output: &str| {
        output
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_owned()
    };
    match (mpirun, mpiexec) {
        (None, None) => Err(
            "--mpi needs an MPI launcher, but neither mpirun nor mpiexec is on PATH: \
             install Open MPI (e.g. apt-get install openmpi-bin) or MPICH (apt-get install mpich)"
                .into(),
        ),
        (Some(out), _) => Err(format!(
            "unknown MPI: `mpirun --version` printed {:?}; shmemrun --mpi knows Open MPI's mpirun \
             and MPICH's Hydra (mpiexec)",
            first_line(&out)
        )),
        (None, Some(out)) => Err(format!(
            "unknown MPI: no mpirun on PATH and `mpiexec --version` printed {:?}; shmemrun --mpi \
             knows Open MPI's mpirun and MPICH's Hydra (mpiexec)",
            first_line(&out)
        )),
    }
}

/// True when running with effective uid 0.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// Prints `argv` (`dry_run`) or replaces this process with it, so the launcher's exit
/// status is shmemrun's and signals reach it directly. Returns only on failure.
pub(crate) fn launch(argv: &[String], dry_run: bool) -> Result<(), String> {
    if dry_run {
        println!("{}", shell_line(argv));
        return Ok(());
    }
    let err = Command::new(&argv[0]).args(&argv[1..]).exec();
    Err(format!("could not start {}: {err}", argv[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn open_mpi(version: &str) -> Mpi {
        Mpi {
            kind: MpiKind::OpenMpi,
            version: Version::parse(version).unwrap(),
            launcher: "mpirun".into(),
        }
    }

    fn hydra() -> Mpi {
        Mpi {
            kind: MpiKind::Hydra,
            version: Version::parse("4.0.2").unwrap(),
            launcher: "mpiexec".into(),
        }
    }

    /// The command line for `mpi` with the given fields, as one string.
    fn line(
        mpi: &Mpi,
        npes: usize,
        is_root: bool,
        hosts: &str,
        env: &[&str],
        args: &[&str],
    ) -> String {
        let hosts = if hosts.is_empty() {
            vec![]
        } else {
            parse_hosts(hosts).unwrap()
        };
        let env_names = strings(env);
        let args = strings(args);
        let job = MpiJob {
            mpi,
            npes,
            is_root,
            hosts: &hosts,
            env_names: &env_names,
            program: "./prog",
            args: &args,
        };
        launcher_argv(&job).join(" ")
    }

    #[test]
    fn open_mpi_4_local() {
        assert_eq!(
            line(&open_mpi("4.1.4"), 3, false, "", &[], &[]),
            "mpirun -np 3 --bind-to none --oversubscribe --mca osc pt2pt ./prog"
        );
    }

    #[test]
    fn open_mpi_4_as_root_with_hosts_env_and_args() {
        assert_eq!(
            line(
                &open_mpi("4.1.4"),
                4,
                true,
                "h1:2,h2:2",
                &["SHMEM_CHECKED", "SHMEM_SYMMETRIC_SIZE"],
                &["-n", "5", "--hosts"],
            ),
            "mpirun -np 4 --host h1:2,h2:2 --bind-to none --oversubscribe --mca osc pt2pt \
             --allow-run-as-root -x SHMEM_CHECKED -x SHMEM_SYMMETRIC_SIZE ./prog -n 5 --hosts"
        );
    }

    #[test]
    fn open_mpi_5_has_no_pt2pt() {
        let l = line(&open_mpi("5.0.3"), 2, false, "", &["SHMEM_NPES"], &[]);
        assert_eq!(
            l,
            "mpirun -np 2 --bind-to none --oversubscribe -x SHMEM_NPES ./prog"
        );
        // Before 5, pt2pt is there (and osc/rdma the default).
        assert!(line(&open_mpi("3.1.6"), 2, false, "", &[], &[]).contains("--mca osc pt2pt"));
    }

    #[test]
    fn hydra_flags() {
        assert_eq!(
            line(&hydra(), 2, true, "", &[], &["x"]),
            "mpiexec -n 2 ./prog x"
        );
        assert_eq!(
            line(&hydra(), 6, false, "a:4,b", &["SHMEM_A", "SHMEM_B"], &[]),
            "mpiexec -n 6 -hosts a:4,b -genvlist SHMEM_A,SHMEM_B ./prog"
        );
    }

    #[test]
    fn identifies_launchers() {
        let v = |s| Version::parse(s).unwrap();
        let ompi4 =
            "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n";
        assert_eq!(identify(ompi4), Some((MpiKind::OpenMpi, v("4.1.4"))));
        assert_eq!(
            identify("mpiexec (OpenRTE) 4.1.4\n"),
            Some((MpiKind::OpenMpi, v("4.1.4")))
        );
        assert_eq!(
            identify("mpirun (Open MPI) 5.0.0rc12\n"),
            Some((
                MpiKind::OpenMpi,
                Version {
                    major: 5,
                    minor: 0,
                    patch: 0
                }
            ))
        );
        let hydra =
            "HYDRA build details:\n    Version:                                 4.0.2\n    \
                     Release Date:                            Thu Apr  2 11:09:27 CDT 2020\n    \
                     CC:                              gcc\n";
        assert_eq!(identify(hydra), Some((MpiKind::Hydra, v("4.0.2"))));
        assert_eq!(
            identify("Intel(R) MPI Library for Linux* OS, Version 2021.6\n"),
            None
        );
        assert_eq!(identify(""), None);
        assert_eq!(identify("mpirun (Open MPI) unknown\n"), None);
        assert_eq!(identify("HYDRA build details:\n"), None);
    }

    #[test]
    fn parses_versions() {
        let v = |s| Version::parse(s).map(|v| v.to_string());
        assert_eq!(v("4.1.4").as_deref(), Some("4.1.4"));
        assert_eq!(v("4.0").as_deref(), Some("4.0.0"));
        assert_eq!(v("3.3a2").as_deref(), Some("3.3.0"));
        assert_eq!(v("v4"), None);
        assert_eq!(v(""), None);
    }

    #[test]
    fn parses_hosts() {
        let hosts = parse_hosts("h1:2,h2:3").unwrap();
        assert_eq!(
            hosts[1],
            Host {
                name: "h2".into(),
                slots: Some(3)
            }
        );
        assert_eq!(total_slots(&hosts), Some(5));
        let hosts = parse_hosts("node-a.cluster,10.0.0.2:4").unwrap();
        assert_eq!(hosts[0].slots, None);
        assert_eq!(total_slots(&hosts), None);
        assert_eq!(total_slots(&[]), None);
        for bad in [
            "", " ", "h1:0", "h1:x", "h1:", ":2", "h1,,h2", "h 1:2", "h1:2:3", "h1:-1",
        ] {
            let err = parse_hosts(bad).unwrap_err();
            assert!(err.contains("invalid --hosts"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(
            shell_line(&strings(&[
                "mpirun",
                "-x",
                "SHMEM_A",
                "./a b",
                "it's",
                "",
                "*",
                "h1:2,h2:2"
            ])),
            r#"mpirun -x SHMEM_A './a b' 'it'\''s' '' '*' h1:2,h2:2"#
        );
    }
}
