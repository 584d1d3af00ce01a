//! Procedural macros of `shmem-typed`. Each is parse → validate → expand; every error is
//! a `syn::Error` spanned on the user's offending tokens, and expansions name paths
//! absolutely (`::shmem_typed::…`). Use them through `shmem_typed`, which re-exports them.

mod crate_path;
mod main_attr;
mod pod;
mod symmetric;
mod test_attr;

use proc_macro::TokenStream;

/// Makes a `static` symmetric: it exists at the same offset on every PE, starts with its
/// initialiser on every PE, and can be the target or source of puts, gets and
/// collectives.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static TARGET: [u64; 256] = [0; 256];
///
/// #[shmem_typed::main(npes = 2)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     // Every PE writes element `my_pe` of PE 0's copy.
///     TARGET.p(pe, 0, pe.my_pe(), 1)?;
///     pe.barrier_all()?;
///     assert_eq!(TARGET.g(pe, 0, 1)?, 1);
///     Ok(())
/// }
/// ```
///
/// The type must be `bytemuck::Pod` (no references, `bool`, `char`, padding or heap
/// pointers), the item an immutable `static` with an initialiser; everything else is a
/// compile error at the offending token (see `ui-tests/ui/fail/symmetric_*.rs`). The
/// static may stand in any module, inside a function, or in a library crate the program
/// links: the runtime places every registered static by its key (module path, name,
/// position in the source), so placement agrees on every PE whatever the link order.
///
/// A program that renamed the dependency (`my_shmem = { package = "shmem-typed", … }`)
/// writes `#[symmetric(crate = my_shmem)]`.
#[proc_macro_attribute]
pub fn symmetric(args: TokenStream, item: TokenStream) -> TokenStream {
    symmetric::expand(args.into(), item.into()).into()
}

/// Marks the SPMD entry point: `fn main(pe: &mut Pe)`, optionally returning
/// `Result<(), E>` with a printable `E`. The program then needs nothing else: started
/// directly it starts its own PEs (`SHMEM_NPES`, else `npes = N` given here, else one per
/// CPU), each a fork of the program made before the body runs (a program with more than
/// one thread at that point starts each PE anew instead); started by `shmemrun` it joins
/// the job. Each PE initialises SHMEM, runs the body, and finalizes; an `Err` is printed
/// with the PE number and exits non-zero.
/// With a renamed dependency: `#[my_shmem::main(crate = my_shmem)]`.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     assert_eq!(pe.n_pes(), 4);
///     pe.barrier_all()
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    main_attr::expand(args.into(), item.into()).into()
}

/// `#[derive(Zeroable)]` as `shmem_typed::prelude` exports it: bytemuck's derive, found
/// through `shmem_typed` (a program needs no `bytemuck` dependency). For a renamed
/// dependency add `#[shmem(crate = my_shmem)]`.
#[proc_macro_derive(Zeroable, attributes(shmem))]
pub fn derive_zeroable(input: TokenStream) -> TokenStream {
    pod::expand(input.into(), pod::Trait::Zeroable).into()
}

/// `#[derive(Pod)]` as `shmem_typed::prelude` exports it: bytemuck's derive (every field
/// `Pod`, no padding, `#[repr(C)]` or `#[repr(transparent)]`), found through
/// `shmem_typed`. The type also derives `Clone`, `Copy` and `Zeroable`.
#[proc_macro_derive(Pod, attributes(shmem))]
pub fn derive_pod(input: TokenStream) -> TokenStream {
    pod::expand(input.into(), pod::Trait::Pod).into()
}

/// Marks a test that runs on several PEs: `#[shmem_typed::test(npes = N)]` on
/// `fn name(pe: &mut Pe)`, optionally returning `Result<(), E>` with a printable `E`, and
/// optionally with `env = ["NAME=VALUE", …]` for the PEs' environment and `crate = path`
/// for a renamed `shmem_typed` dependency. Under
/// `cargo test` it is an ordinary `#[test]` that starts a job of `N` PEs on this node,
/// each running the test binary filtered to this one test; each PE initialises SHMEM,
/// runs the body and finalizes. The test fails if any PE fails (an `Err`, a panic, a
/// crash) and if not every PE ran the body. Other attributes (`#[ignore]`, doc comments)
/// apply to the test.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[shmem_typed::test(npes = 4)]
/// fn ring_sum(pe: &mut Pe) -> Result<(), ShmemError> {
///     let team = pe.team_world();
///     let total = team.reduce_local::<Sum, u64>(pe, &[1])?;
///     assert_eq!(total, [4]);
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let runner = |krate: &proc_macro2::TokenStream| quote::quote!(#krate::__private::run_test);
    test_attr::expand(args.into(), item.into(), runner).into()
}

/// The test kit's form of [`macro@test`] (its jobs can also run under `mpirun`); used
/// through `shmem_testkit::test`.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn __testkit_test(args: TokenStream, item: TokenStream) -> TokenStream {
    let runner = |_: &proc_macro2::TokenStream| quote::quote!(::shmem_testkit::run_on_pes);
    test_attr::expand(args.into(), item.into(), runner).into()
}
