//! Leak checks: what a test process holds that a job could leak, compared before and
//! after running jobs.

use std::path::Path;

/// What a test process holds that a job could leak: compared before and after running
/// jobs (equal snapshots = nothing leaked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// Targets of the open descriptors (`memfd:…`, `anon_inode:[pidfd]`, pipes, files),
    /// sorted.
    pub fds: Vec<String>,
    /// Mappings of a symmetric heap in this process.
    pub heap_mappings: usize,
    /// Children of any thread of this process (running or zombie).
    pub children: usize,
    /// Entries of /dev/shm.
    pub dev_shm: std::collections::BTreeSet<String>,
    /// This process's [`FaultCase`](crate::FaultCase) directories left in the temporary directory (other
    /// test processes on the machine may have cases of their own under way).
    pub case_dirs: usize,
}

impl Resources {
    /// A snapshot of this process's resources.
    pub fn snapshot() -> Resources {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let children = names_in("/proc/self/task")
            .iter()
            .map(|task| {
                std::fs::read_to_string(format!("/proc/self/task/{task}/children"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .count()
            })
            .sum();
        let my_cases = format!("shmem-fault-{}-", std::process::id());
        Resources {
            fds: fd_targets(),
            heap_mappings: maps
                .lines()
                .filter(|l| l.contains("shmem-symmetric-heap"))
                .count(),
            children,
            dev_shm: names_in("/dev/shm"),
            case_dirs: names_in(std::env::temp_dir())
                .iter()
                .filter(|n| n.starts_with(&my_cases))
                .count(),
        }
    }
}

/// Targets of this process's open descriptors, sorted.
pub fn fd_targets() -> Vec<String> {
    let mut targets: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        // The directory being listed is itself an open descriptor.
        .filter(|t| !t.starts_with("/proc/") || !t.ends_with("/fd"))
        .collect();
    targets.sort();
    targets
}

/// Names of the entries of `dir` (empty if it cannot be read).
fn names_in(dir: impl AsRef<Path>) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
