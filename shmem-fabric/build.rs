//! With the `mpi` feature: builds the transport's MPI calls (`src/transport/mpi/shim.c`)
//! into a shared library with the MPI's own compiler wrapper, which links it against its
//! MPI (so the header and the library always belong to the same MPI). The program carries
//! the library and loads it only when it joins an MPI job, so nothing of MPI is mapped
//! otherwise. Without the feature this does nothing: the default build needs no MPI.
//!
//! The wrapper is `$MPICC` if set, else `mpicc`. The shim carries a digest of its source
//! (`shmem_mpi_shim_digest`), and so does the crate (`SHIM_SOURCE_DIGEST`): a shim
//! loaded in its place (`SHMEM_MPI_SHIM`, one built against another MPI by this same
//! script, e.g. `CARGO_TARGET_DIR=target/mpich MPICC=mpicc.mpich cargo build -p
//! shmem-fabric --features mpi`) must be built from the same source.

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
        let source = std::fs::read(SHIM).unwrap_or_else(|e| panic!("reading {SHIM}: {e}"));
        let digest = fnv1a(&source);
        println!("cargo:rustc-env=SHIM_SOURCE_DIGEST={digest}");
        let status = Command::new(&mpicc)
            .arg(format!("-DSHIM_SOURCE_DIGEST={digest}ULL"))
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

    /// The 64-bit FNV-1a hash of `bytes`: the shim source's digest.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
            (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}
