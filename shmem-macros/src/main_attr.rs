//! `#[shmem_typed::main]`: parse `fn main(pe: &mut Pe) [-> R]`, validate it, and wrap it
//! in a real `main` that starts or joins the job.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{ItemFn, LitInt};

/// Parsed `#[main(npes = N)]` arguments.
struct MainArgs {
    npes: Option<LitInt>,
}

fn parse_args(args: TokenStream) -> syn::Result<MainArgs> {
    let mut out = MainArgs { npes: None };
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("npes") {
            let lit: LitInt = meta.value()?.parse()?;
            let n: usize = lit.base10_parse()?;
            if n == 0 {
                return Err(syn::Error::new(lit.span(), "`npes` must be at least 1"));
            }
            out.npes = Some(lit);
            Ok(())
        } else {
            Err(meta.error(
                "unknown argument of #[shmem_typed::main]; the only argument is `npes = N` (PEs to start when run directly)",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(out)
}

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = parse_args(args)?;
    let func: ItemFn = syn::parse2(item)?;
    validate(&func)?;
    let default_npes = match &args.npes {
        Some(n) => quote!(#n),
        None => quote!(::shmem_typed::__private::default_npes()),
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = func;
    let mut inner_sig = sig.clone();
    inner_sig.ident = syn::Ident::new("__shmem_spmd_main", sig.ident.span());
    let inner_ident = &inner_sig.ident;
    let outer_ident = &sig.ident;
    Ok(quote! {
        #(#attrs)*
        #vis fn #outer_ident() {
            #inner_sig #block
            ::shmem_typed::__private::run_main(#default_npes, #inner_ident)
        }
    })
}

fn validate(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(
            a.span,
            "the SPMD main cannot be `async`; each PE runs it on its main thread",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "the SPMD main cannot be generic",
        ));
    }
    if sig.inputs.len() != 1 {
        return Err(syn::Error::new(
            if sig.inputs.is_empty() {
                sig.paren_token.span.join()
            } else {
                sig.inputs.span()
            },
            "the SPMD main takes exactly one parameter, the PE handle: `fn main(pe: &mut Pe)`",
        ));
    }
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        return Err(syn::Error::new(
            r.span(),
            "the SPMD main is a free function taking the PE handle: `fn main(pe: &mut Pe)`",
        ));
    }
    Ok(())
}
