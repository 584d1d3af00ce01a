//! Procedural macros of `shmem-typed`. Each is parse → validate → expand; every error is
//! a `syn::Error` spanned on the user's offending tokens, and expansions name paths
//! absolutely (`::shmem_typed::…`). Use them through `shmem_typed`, which re-exports them.

mod crate_path;
mod main_attr;
mod pod;
mod symmetric;

use proc_macro::TokenStream;

/// Makes a `static` symmetric: it exists at the same offset on every PE, starts with its
/// initialiser on every PE, and can be the target or source of puts, gets and
/// collectives.
///
/// ```ignore
/// #[symmetric]
/// static TARGET: [u64; 256] = [0; 256];
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
/// CPU); started by `shmemrun` it joins the job. Each PE initialises SHMEM, runs the
/// body, and finalizes; an `Err` is printed with the PE number and exits non-zero.
/// With a renamed dependency: `#[my_shmem::main(crate = my_shmem)]`.
///
/// ```ignore
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> { Ok(()) }
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
