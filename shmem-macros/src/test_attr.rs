//! `#[shmem_typed::test(npes = N)]`: a test that runs its body on every PE of an `N`-PE
//! job. The test binary is the PE program: the test starts a job whose PEs run the same
//! binary filtered to that one test, and fails unless every PE returned `Ok` and
//! finalized. Parse → validate → expand; every error is spanned on the user's tokens.
//! The test's name comes from the function itself (no string to mistype).

use proc_macro2::{Span, TokenStream};

use crate::crate_path::CratePath;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, ItemFn, Lit, LitInt, LitStr};

const SIGNATURE: &str = "#[shmem_typed::test] applies to `fn name(pe: &mut Pe)`, optionally returning `Result<(), E>` with a printable `E`";

/// The attribute's arguments.
struct TestArgs {
    npes: LitInt,
    env: Vec<(String, String, Span)>,
    krate: CratePath,
}

fn parse_args(args: TokenStream) -> syn::Result<TestArgs> {
    let mut npes: Option<LitInt> = None;
    let mut env: Option<Vec<(String, String, Span)>> = None;
    let mut krate = CratePath::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate.parse(&meta)
        } else if meta.path.is_ident("npes") {
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
                "unknown argument of #[shmem_typed::test]; the arguments are `npes = N`, `env = [\"NAME=VALUE\", …]` and `crate = path`",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    let npes = npes.ok_or_else(|| {
        syn::Error::new(
            Span::call_site(),
            "#[shmem_typed::test] needs the number of PEs: `npes = N`",
        )
    })?;
    Ok(TestArgs {
        npes,
        env: env.unwrap_or_default(),
        krate,
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

/// Expands the attribute on `item`; the body runs through the function `runner` names
/// (given where the expansion finds `shmem_typed`): `(test_name, npes, env, body)`, the
/// published one, or the test kit's, which can also launch the job under `mpirun`.
pub(crate) fn expand(
    args: TokenStream,
    item: TokenStream,
    runner: impl FnOnce(&TokenStream) -> TokenStream,
) -> TokenStream {
    let func: ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => return syn::Error::new(e.span(), SIGNATURE).into_compile_error(),
    };
    let parsed = parse_args(args).and_then(|a| validate(&func).map(|()| a));
    let args = match parsed {
        Ok(a) => a,
        Err(e) => return e.into_compile_error(),
    };
    let mut seen = std::collections::HashSet::new();
    for (name, _, span) in &args.env {
        if !seen.insert(name.clone()) {
            return syn::Error::new(*span, format!("`{name}` is set twice in `env`"))
                .into_compile_error();
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
    let krate = args.krate.tokens();
    let runner = runner(&krate);
    quote! {
        #(#attrs)*
        #[test]
        #vis fn #name() {
            fn __shmem_pe_body(#inputs) #output #block
            #runner(
                #krate::__private::libtest_name({
                    fn __here() {}
                    ::std::any::type_name_of_val(&__here)
                }),
                #npes,
                &[#(#env),*],
                __shmem_pe_body,
            );
        }
    }
}
