//! With the `mpi` feature: builds the transport's MPI calls (`src/transport/mpi/shim.c`)
//! into a shared library with the MPI's own compiler wrapper, which links it against its
//! MPI (so the header and the library always belong to the same MPI). The program carries
//! the library and loads it only when it joins an MPI job, so nothing of MPI is mapped
//! otherwise. Without the feature this does nothing: the default build needs no MPI.
//!
//! The wrapper is `$MPICC` if set, else `mpicc`.

fn main() {
    #[cfg(feature = "mpi")]
    mpi::build();
}

#[cfg(feature = "mpi")]
mod mpi {
    use std::path::PathBuf;
    use std::process::Command;

    const SHIM: &str = "src/transport/mpi/shim.c";

    pub(super) fn build() {
        println!("cargo:rerun-if-env-changed=MPICC");
        println!("cargo:rerun-if-changed={SHIM}");
        let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let library = out.join("libshmem_mpi_shim.so");
        let status = Command::new(&mpicc)
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o"])
            .arg(&library)
            .arg(SHIM)
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "the `mpi` feature needs an MPI C compiler wrapper: `{mpicc}` cannot be run \
                     ({e}). Install Open MPI (Debian: apt-get install libopenmpi-dev \
                     openmpi-bin) or MPICH, or point MPICC at the wrapper"
                )
            });
        assert!(
            status.success(),
            "`{mpicc} -shared {SHIM}` failed ({status}): the MPI shim cannot be built"
        );
    }
}
