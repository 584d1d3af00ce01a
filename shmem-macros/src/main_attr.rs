//! `#[shmem_typed::main]`: parse `fn main(pe: &mut Pe) [-> R]`, validate it, and wrap it
//! in a real `main` that starts or joins the job.
//!
//! On an error the user's function is still emitted (renamed, inside a `main` that does
//! nothing) so that its body is checked and the crate still has a `main`: the user sees
//! the attribute's error, not "`main` function not found" or unused-import warnings.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, LitInt, ReturnType, Type};

use crate::crate_path::CratePath;

const SIGNATURE: &str = "`fn main(pe: &mut Pe)`, optionally returning `Result<(), E>`";

/// Parsed `#[main(npes = N, crate = path)]` arguments.
#[derive(Default)]
struct MainArgs {
    npes: Option<LitInt>,
    krate: CratePath,
}

fn parse_args(args: TokenStream) -> syn::Result<MainArgs> {
    let mut out = MainArgs::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("npes") {
            if out.npes.is_some() {
                return Err(meta
                    .error("`npes` is given twice; give the number of PEs once, e.g. `npes = 4`"));
            }
            let value = meta.value()?;
            let lit: LitInt = value.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`npes` takes a whole number of PEs, e.g. `npes = 4`",
                )
            })?;
            let n: usize = lit.base10_parse()?;
            if n == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "`npes` must be at least 1: it is the number of PEs started when the program is run directly",
                ));
            }
            out.npes = Some(lit);
            Ok(())
        } else if meta.path.is_ident("crate") {
            out.krate.parse(&meta)
        } else {
            Err(meta.error(
                "unknown argument of #[shmem_typed::main]; the arguments are `npes = N`, the number of PEs started when the program is run directly, and `crate = path`, where a renamed shmem_typed is",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(out)
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                format!(
                    "#[shmem_typed::main] applies to the program's entry function: {SIGNATURE}"
                ),
            )
            .into_compile_error();
            return quote! { #error #item };
        }
    };
    let args = parse_args(args);
    let checked = validate(&func);
    match (args, checked) {
        (Ok(args), Ok(())) => emit(&args, func),
        (Err(mut e), Err(e2)) => {
            e.combine(e2);
            emit_with_error(e, func)
        }
        (Err(e), Ok(())) | (Ok(_), Err(e)) => emit_with_error(e, func),
    }
}

/// The name the user's function gets inside the generated `main`.
fn inner_ident(func: &ItemFn) -> syn::Ident {
    syn::Ident::new("__shmem_spmd_main", func.sig.ident.span())
}

fn emit(args: &MainArgs, func: ItemFn) -> TokenStream {
    let krate = args.krate.tokens();
    let default_npes = match &args.npes {
        Some(n) => quote!(#n),
        None => quote!(#krate::__private::default_npes()),
    };
    let inner = inner_ident(&func);
    // Spanned on the return type, so that a return type that is neither `()` nor
    // `Result<(), E: Display>` is reported there.
    let run_span = match &func.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => func.sig.ident.span(),
    };
    let krate = args.krate.tokens_at(run_span);
    let run = quote_spanned! {run_span=>
        #krate::__private::run_main(#default_npes, #inner)
    };
    wrapped_main(func, quote!(), run)
}

fn emit_with_error(error: syn::Error, func: ItemFn) -> TokenStream {
    let error = error.into_compile_error();
    // The function is kept (unused) so that the user sees only the attribute's error,
    // not "main not found" or unused-import warnings besides it.
    let main = wrapped_main(func, quote!(#[allow(dead_code)]), quote!());
    quote! {
        #error
        #main
    }
}

/// The generated `main`: the user's function, renamed to [`inner_ident`] and carrying
/// `inner_attr`, nested inside a `main` of the user's name and visibility, then `call`.
fn wrapped_main(func: ItemFn, inner_attr: TokenStream, call: TokenStream) -> TokenStream {
    let inner = inner_ident(&func);
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = func;
    let outer = std::mem::replace(&mut sig.ident, inner);
    quote! {
        #(#attrs)*
        #vis fn #outer() {
            #inner_attr
            #sig #block
            #call
        }
    }
}

fn validate(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    let reject = |span: Span, msg: &str| Err(syn::Error::new(span, msg));
    if let Some(a) = &sig.asyncness {
        return reject(
            a.span,
            "the SPMD main cannot be `async`: each PE runs it on its main thread; start an async runtime inside it if you need one",
        );
    }
    if let Some(c) = &sig.constness {
        return reject(c.span, "the SPMD main cannot be `const`");
    }
    if let Some(u) = &sig.unsafety {
        return reject(
            u.span,
            "the SPMD main cannot be `unsafe`: put `unsafe { .. }` blocks inside it instead",
        );
    }
    if let Some(abi) = &sig.abi {
        return reject(
            abi.extern_token.span,
            "the SPMD main cannot have an `extern` ABI: it is called from Rust",
        );
    }
    if let Some(lt) = &sig.generics.lt_token {
        return reject(
            lt.span,
            "the SPMD main cannot be generic: the runtime calls it once per PE with concrete types; name the error type, e.g. `-> Result<(), ShmemError>`",
        );
    }
    if let Some(w) = &sig.generics.where_clause {
        return reject(
            w.where_token.span,
            "the SPMD main cannot have a `where` clause",
        );
    }
    if let Some(v) = &sig.variadic {
        return reject(v.dots.spans[0], "the SPMD main cannot be variadic");
    }
    let mut inputs = sig.inputs.iter();
    let Some(first) = inputs.next() else {
        return reject(
            sig.paren_token.span.join(),
            "the SPMD main takes the PE handle as its one parameter: write `fn main(pe: &mut Pe)`",
        );
    };
    if let Some(extra) = inputs.next() {
        return reject(
            extra.span(),
            "the SPMD main takes only the PE handle: `fn main(pe: &mut Pe)`; read program arguments with `std::env::args()`",
        );
    }
    match first {
        FnArg::Receiver(r) => reject(
            r.self_token.span,
            "the SPMD main is a free function taking the PE handle: `fn main(pe: &mut Pe)`",
        ),
        FnArg::Typed(arg) => match &*arg.ty {
            Type::Reference(r) if r.mutability.is_some() => Ok(()),
            Type::Reference(r) => reject(
                r.and_token.span,
                "the SPMD main takes the PE handle mutably: write `pe: &mut Pe` (puts, barriers and collectives need `&mut Pe`)",
            ),
            other => reject(
                other.span(),
                "the SPMD main borrows the PE handle: write `pe: &mut Pe` (the runtime finalizes the PE after main returns)",
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> String {
        expand(args.parse().unwrap(), item.parse().unwrap()).to_string()
    }

    #[test]
    fn a_valid_main_runs_the_job() {
        let out = expand_str("npes = 3", "fn main(pe: &mut Pe) {}");
        assert!(out.contains("run_main (3 , __shmem_spmd_main)"));
        assert!(!out.contains("compile_error"));
    }

    #[test]
    fn without_npes_the_runtime_default_applies() {
        let out = expand_str("", "fn main(pe: &mut Pe) -> Result<(), E> { Ok(()) }");
        assert!(out.contains("default_npes ()"));
    }

    #[test]
    fn an_invalid_main_keeps_a_main_and_the_body() {
        let out = expand_str("", "async fn main(pe: &mut Pe) { work(pe) }");
        assert!(out.contains("compile_error"));
        assert!(out.contains("fn main ()"));
        assert!(out.contains("work (pe)"));
        assert!(!out.contains("run_main"));
    }

    #[test]
    fn errors_in_arguments_and_signature_are_both_reported() {
        let out = expand_str("npes = 0", "fn main() {}");
        assert_eq!(out.matches("compile_error").count(), 2);
    }
}
