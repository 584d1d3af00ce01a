//! How a job starts under an MPI launcher: which MPI `mpirun` is (Open MPI's `mpirun` or
//! MPICH's Hydra, `mpiexec`) decides the flags. The one place that knows them:
//! `shmemrun --mpi` (and its `--dry-run`), the test kit and the benchmark all build their
//! launcher command here.
//!
//! The pure part, tested below: reading a launcher's `--version` output ([`identify`]),
//! `--hosts` ([`parse_hosts`]), the launcher's command line ([`launcher_argv`]) and its
//! shell-quoted form for `--dry-run` ([`shell_line`]). The rest runs `--version`
//! ([`detect`]) and execs the launcher ([`launch`]).

use std::fmt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The MPI implementations whose launchers `shmemrun --mpi` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpiKind {
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
pub struct Version {
    /// The major release.
    pub major: u32,
    /// The minor release.
    pub minor: u32,
    /// The patch release.
    pub patch: u32,
}

impl Version {
    /// Parses `MAJOR[.MINOR[.PATCH]]`, each part's leading digits; `None` unless the
    /// word starts with a digit.
    pub fn parse(word: &str) -> Option<Version> {
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
pub struct Mpi {
    /// Which MPI.
    pub kind: MpiKind,
    /// Its release.
    pub version: Version,
    /// `mpirun` or `mpiexec`, run through `PATH`.
    pub launcher: String,
}

/// What a launcher's `--version` output says it is: `mpirun (Open MPI) 4.1.4` (Open
/// MPI's `mpiexec` says `(OpenRTE)`), or Hydra's build details with a `Version:` line.
/// `None` for anything else, or when the version cannot be read.
pub fn identify(version_output: &str) -> Option<(MpiKind, Version)> {
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
pub struct Host {
    /// The host name.
    pub name: String,
    /// The PEs it takes, if given.
    pub slots: Option<usize>,
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
pub fn parse_hosts(text: &str) -> Result<Vec<Host>, String> {
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
pub fn total_slots(hosts: &[Host]) -> Option<usize> {
    if hosts.is_empty() {
        return None;
    }
    hosts.iter().map(|h| h.slots).sum()
}

/// Everything the launcher's command line depends on.
#[derive(Clone, Debug)]
pub struct MpiJob<'a> {
    /// The MPI that launches it.
    pub mpi: &'a Mpi,
    /// Ranks (PEs).
    pub npes: usize,
    /// Running as root (effective uid 0): Open MPI refuses unless told.
    pub is_root: bool,
    /// `--hosts`; empty: the launcher's default (this machine).
    pub hosts: &'a [Host],
    /// Names of the variables to forward to every PE (the `SHMEM_*` ones set).
    pub env_names: &'a [String],
    /// Every pair of ranks talks over TCP, even on one node (Open MPI only: `ob1` with
    /// `btl self,tcp`): how the tests and the benchmark make every peer a network peer.
    pub tcp: bool,
    /// The program the ranks run.
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [String],
}

/// The launcher's command line, the launcher first.
///
/// Open MPI: `mpirun -np N [--host H] --bind-to none --oversubscribe [--mca pml ob1
/// --mca btl self,tcp] [--mca osc pt2pt] [--allow-run-as-root] [-x VAR ...] PROGRAM
/// ARGS...`
/// * `--bind-to none`: Open MPI binds each rank to a core (or socket) by default; with
///   more PEs than cores, several PEs waiting for each other share one core while others
///   idle, and latency grows by orders of magnitude (500x measured here).
/// * `--oversubscribe`, always: plain `shmemrun -n N` starts any N up to the limit
///   whatever the CPUs, and `--mpi` keeps that; Open MPI counts slots by cores, not
///   hardware threads, so no CPU count known here would predict its refusal; and the flag
///   changes nothing when the PEs fit.
/// * `--mca osc pt2pt` for Open MPI up to 4.x: 4.1.4's default one-sided component,
///   osc/rdma, crashes in `MPI_Compare_and_swap` and fails in `MPI_Win_create` over
///   TCP. Open MPI 5 has no pt2pt component (and a rewritten osc/rdma), so not there.
///   A rank whose launcher line lacks it chooses pt2pt itself before `MPI_Init` (the
///   shim's `choose_settings`); the flag shows the choice in the line.
/// * `--mca pml ob1 --mca btl self,tcp` with [`MpiJob::tcp`]: TCP between every pair of
///   ranks, no shared memory.
/// * `-x VAR` forwards each variable; `--allow-run-as-root` when root.
///
/// Hydra: `mpiexec -n N [-hosts H] [-genvlist VAR,...] PROGRAM ARGS...` (Hydra binds
/// nothing by default, does not limit processes to slots, and runs as root); it has no
/// flag for [`MpiJob::tcp`], which [`check_job`] refuses.
pub fn launcher_argv(job: &MpiJob<'_>) -> Vec<String> {
    let count = match job.mpi.kind {
        MpiKind::OpenMpi => "-np",
        MpiKind::Hydra => "-n",
    };
    let mut argv = vec![job.mpi.launcher.clone(), count.into(), job.npes.to_string()];
    argv.extend(launcher_flags(job));
    argv.push(job.program.to_owned());
    argv.extend(job.args.iter().cloned());
    argv
}

/// The launcher's flags for `job` between the rank count and the program (see
/// [`launcher_argv`]).
pub fn launcher_flags(job: &MpiJob<'_>) -> Vec<String> {
    let mut flags = Vec::new();
    let hosts = job
        .hosts
        .iter()
        .map(Host::to_string)
        .collect::<Vec<_>>()
        .join(",");
    match job.mpi.kind {
        MpiKind::OpenMpi => {
            if !hosts.is_empty() {
                flags.extend(["--host".into(), hosts]);
            }
            flags.extend(["--bind-to", "none", "--oversubscribe"].map(String::from));
            if job.tcp {
                flags.extend(["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"].map(String::from));
            }
            if job.mpi.version.major <= 4 {
                flags.extend(["--mca", "osc", "pt2pt"].map(String::from));
            }
            if job.is_root {
                flags.push("--allow-run-as-root".into());
            }
            for name in job.env_names {
                flags.extend(["-x".into(), name.clone()]);
            }
        }
        MpiKind::Hydra => {
            if !hosts.is_empty() {
                flags.extend(["-hosts".into(), hosts]);
            }
            if !job.env_names.is_empty() {
                flags.extend(["-genvlist".into(), job.env_names.join(",")]);
            }
        }
    }
    flags
}

/// Refuses what the launcher of `job` cannot do: [`MpiJob::tcp`] under Hydra.
pub fn check_job(job: &MpiJob<'_>) -> Result<(), String> {
    if job.tcp && job.mpi.kind == MpiKind::Hydra {
        return Err(format!(
            "--tcp is known for Open MPI only; {} {} has no launcher flag for it",
            job.mpi.kind, job.mpi.version
        ));
    }
    Ok(())
}

/// The MPI on this machine ([`detect`], once per process).
pub fn this_machine() -> Result<&'static Mpi, String> {
    static MPI: std::sync::OnceLock<Result<Mpi, String>> = std::sync::OnceLock::new();
    MPI.get_or_init(detect).as_ref().map_err(Clone::clone)
}

/// A job of `npes` ranks on this machine's MPI (no `--hosts`), with `-x` for each of
/// `env_names`, checked ([`check_job`]); its program is empty.
fn local_job(npes: usize, tcp: bool, env_names: &[String]) -> Result<MpiJob<'_>, String> {
    let job = MpiJob {
        mpi: this_machine()?,
        npes,
        is_root: is_root(),
        hosts: &[],
        env_names,
        tcp,
        program: "",
        args: &[],
    };
    check_job(&job)?;
    Ok(job)
}

/// The command line of a job of `npes` ranks on this machine, up to the program (which
/// follows, with its arguments): what `shmemrun --mpi [--tcp] --dry-run -n NPES` prints
/// before the program, with `-x` for each of `env_names`.
pub fn local_command(npes: usize, tcp: bool, env_names: &[String]) -> Result<Vec<String>, String> {
    let mut argv = launcher_argv(&local_job(npes, tcp, env_names)?);
    argv.pop();
    Ok(argv)
}

/// The flags of a job on this machine, between the rank count and the program (for a
/// script that writes `mpirun FLAGS -np N PROGRAM` itself).
pub fn local_flags(tcp: bool) -> Result<Vec<String>, String> {
    Ok(launcher_flags(&local_job(1, tcp, &[])?))
}

/// `argv` as one line a POSIX shell reads back into the same words: words of only safe
/// characters as they are, others in single quotes (`'` as `'\''`).
pub fn shell_line(argv: &[String]) -> String {
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
pub fn shmem_env_names() -> Vec<String> {
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
pub fn detect() -> Result<Mpi, String> {
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
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// Prints `argv` (`dry_run`) or replaces this process with it, so the launcher's exit
/// status is shmemrun's and signals reach it directly. Returns only on failure.
pub fn launch(argv: &[String], dry_run: bool) -> Result<(), String> {
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
            tcp: false,
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
    fn tcp_between_every_pair_on_open_mpi_only() {
        let env_names = strings(&["SHMEM_A"]);
        let mut job = MpiJob {
            mpi: &open_mpi("4.1.4"),
            npes: 2,
            is_root: true,
            hosts: &[],
            env_names: &env_names,
            tcp: true,
            program: "./prog",
            args: &[],
        };
        assert_eq!(
            launcher_argv(&job).join(" "),
            "mpirun -np 2 --bind-to none --oversubscribe --mca pml ob1 --mca btl self,tcp \
             --mca osc pt2pt --allow-run-as-root -x SHMEM_A ./prog"
        );
        assert_eq!(check_job(&job), Ok(()));
        let hydra = hydra();
        job.mpi = &hydra;
        assert!(check_job(&job)
            .unwrap_err()
            .contains("--tcp is known for Open MPI only"));
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
