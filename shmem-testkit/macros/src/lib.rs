//! `#[shmem_testkit::test(npes = N)]`: a multi-process test whose name comes from the
//! function itself. Parse → validate → expand; every error is spanned on the user's
//! tokens.
//!
//! ```ignore
//! #[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=0"])]
//! fn ring(pe: &mut Pe) -> Result<(), ShmemError> { Ok(()) }
//! ```
//! expands to a `#[test] fn ring()` that runs the body on every PE of a 4-PE job (see
//! `shmem_testkit::run_on_pes`).

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, ItemFn, Lit, LitInt, LitStr};

const SIGNATURE: &str = "#[shmem_testkit::test] applies to `fn name(pe: &mut Pe)`, optionally returning `Result<(), E>` with a printable `E`";

/// The attribute's arguments.
struct TestArgs {
    npes: LitInt,
    env: Vec<(String, String, Span)>,
}

fn parse_args(args: proc_macro2::TokenStream) -> syn::Result<TestArgs> {
    let mut npes: Option<LitInt> = None;
    let mut env: Option<Vec<(String, String, Span)>> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("npes") {
            if npes.is_some() {
                return Err(meta.error("`npes` is given twice"));
            }
            let lit: LitInt = meta.value()?.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`npes` takes a whole number of PEs, e.g. `npes = 4`",
                )
            })?;
            if lit.base10_parse::<usize>()? == 0 {
                return Err(syn::Error::new(lit.span(), "`npes` must be at least 1"));
            }
            npes = Some(lit);
            Ok(())
        } else if meta.path.is_ident("env") {
            if env.is_some() {
                return Err(meta.error("`env` is given twice; list every variable in one array"));
            }
            let array: ExprArray = meta.value()?.parse()?;
            let mut vars = Vec::new();
            for elem in &array.elems {
                let Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) = elem
                else {
                    return Err(syn::Error::new(
                        elem.span(),
                        "`env` takes string literals of the form \"NAME=VALUE\"",
                    ));
                };
                vars.push(split_var(s)?);
            }
            env = Some(vars);
            Ok(())
        } else {
            Err(meta.error(
                "unknown argument of #[shmem_testkit::test]; the arguments are `npes = N` and `env = [\"NAME=VALUE\", …]`",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    let npes = npes.ok_or_else(|| {
        syn::Error::new(
            Span::call_site(),
            "#[shmem_testkit::test] needs the job size: `npes = N`",
        )
    })?;
    Ok(TestArgs {
        npes,
        env: env.unwrap_or_default(),
    })
}

fn split_var(s: &LitStr) -> syn::Result<(String, String, Span)> {
    let text = s.value();
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => {
            Ok((name.to_string(), value.to_string(), s.span()))
        }
        _ => Err(syn::Error::new(
            s.span(),
            "an `env` entry is \"NAME=VALUE\" with a non-empty NAME",
        )),
    }
}

fn validate(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(a.span(), SIGNATURE));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(sig.generics.span(), SIGNATURE));
    }
    if sig.inputs.len() != 1 {
        return Err(syn::Error::new(sig.inputs.span(), SIGNATURE));
    }
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        return Err(syn::Error::new(r.span(), SIGNATURE));
    }
    Ok(())
}

/// Marks a multi-process test: `#[shmem_testkit::test(npes = N)]` on `fn name(pe: &mut
/// Pe)` (optionally returning `Result<(), E>` with `E: Display`, and optionally with
/// `env = ["NAME=VALUE", …]` for the PEs). The test starts a job of `N` PEs, each running
/// the body, and fails unless every PE returned `Ok` and finalized.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse(item) {
        Ok(f) => f,
        Err(e) => {
            return syn::Error::new(e.span(), SIGNATURE)
                .into_compile_error()
                .into()
        }
    };
    let parsed = parse_args(args.into()).and_then(|a| validate(&func).map(|()| a));
    let args = match parsed {
        Ok(a) => a,
        Err(e) => return e.into_compile_error().into(),
    };
    let mut seen = std::collections::HashSet::new();
    for (name, _, span) in &args.env {
        if !seen.insert(name.clone()) {
            return syn::Error::new(*span, format!("`{name}` is set twice in `env`"))
                .into_compile_error()
                .into();
        }
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = func;
    let name = &sig.ident;
    let inputs = &sig.inputs;
    let output = &sig.output;
    let npes = &args.npes;
    let env = args.env.iter().map(|(k, v, _)| quote!((#k, #v)));
    quote! {
        #(#attrs)*
        #[test]
        #vis fn #name() {
            fn __shmem_pe_body(#inputs) #output #block
            ::shmem_testkit::run_on_pes(
                ::shmem_testkit::test_name!(),
                #npes,
                &[#(#env),*],
                __shmem_pe_body,
            );
        }
    }
    .into()
}
