//! The `crate = path` argument both attributes take: where the expansion finds
//! `shmem_typed` when a program renamed the dependency (`my_shmem = { package =
//! "shmem-typed" }`) or re-exports it from a crate of its own.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

/// The path the expansions name `shmem_typed` by: `::shmem_typed` unless overridden.
#[derive(Default)]
pub(crate) struct CratePath(Option<syn::Path>);

impl CratePath {
    /// Parses the value of `crate = …` (a path such as `my_shmem` or `::deps::shmem`).
    /// Errors if it is given twice.
    pub(crate) fn parse(&mut self, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        if self.0.is_some() {
            return Err(meta.error("`crate` is given twice"));
        }
        self.0 = Some(meta.value()?.parse()?);
        Ok(())
    }

    /// The path as tokens.
    pub(crate) fn tokens(&self) -> TokenStream {
        self.tokens_at(Span::call_site())
    }

    /// The path as tokens, the default spanned at `span` (so that an error in an
    /// expansion spanned there keeps pointing at the user's tokens).
    pub(crate) fn tokens_at(&self, span: Span) -> TokenStream {
        match &self.0 {
            Some(path) => quote!(#path),
            None => quote_spanned!(span=> ::shmem_typed),
        }
    }
}
