//! With the `mpi` feature: compiles the transport's MPI calls (`src/transport/mpi/shim.c`)
//! with the MPI's own compiler wrapper and links the MPI library it names. Without the
//! feature this does nothing, so the default build needs no MPI.
//!
//! The wrapper is `$MPICC` if set, else `mpicc`. Its link line comes from
//! `--showme:link` (Open MPI) or `-link_info` (MPICH); the header and the library then
//! always belong to the same MPI.

fn main() {
    #[cfg(feature = "mpi")]
    mpi::build();
}

#[cfg(feature = "mpi")]
mod mpi {
    use std::process::Command;

    const SHIM: &str = "src/transport/mpi/shim.c";

    pub(super) fn build() {
        println!("cargo:rerun-if-env-changed=MPICC");
        println!("cargo:rerun-if-changed={SHIM}");
        let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
        let link = link_line(&mpicc).unwrap_or_else(|why| {
            panic!(
                "the `mpi` feature needs an MPI C compiler wrapper: {why}. Install Open MPI \
                 (Debian: apt-get install libopenmpi-dev openmpi-bin) or MPICH, or point \
                 MPICC at the wrapper"
            )
        });
        cc::Build::new()
            .compiler(&mpicc)
            .file(SHIM)
            .warnings(true)
            .extra_warnings(true)
            .compile("shmem_mpi_shim");
        for word in link.split_whitespace() {
            if let Some(dir) = word.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = word.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={lib}");
            } else if word.starts_with("-Wl,") {
                println!("cargo:rustc-link-arg={word}");
            }
        }
    }

    /// The wrapper's flags for linking against its MPI.
    fn link_line(mpicc: &str) -> Result<String, String> {
        let run = |args: &[&str]| -> Option<String> {
            let out = Command::new(mpicc).args(args).output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .filter(|s| !s.is_empty())
        };
        if Command::new(mpicc).arg("--version").output().is_err() {
            return Err(format!("`{mpicc}` cannot be run"));
        }
        // Open MPI, then MPICH (whose line starts with the compiler itself).
        run(&["--showme:link"])
            .or_else(|| run(&["-link_info"]))
            .ok_or_else(|| format!("`{mpicc}` prints no link line (--showme:link, -link_info)"))
    }
}
