//! `#[symmetric]`: parse the item, reject what cannot be symmetric, expand to a
//! `Symmetric<T>` static registered in the runtime's link-time registry.
//!
//! On an error the expansion still declares what it can (the original item, or the static
//! without its registration), so that the user sees the one error that matters and not a
//! cascade of "cannot find value" errors at every use.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Item, ItemStatic, StaticMutability, Type};

use crate::crate_path::CratePath;

const USAGE: &str = "write `#[symmetric] static NAME: T = VALUE;`";

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match parse_static(item) {
        Ok(item) => item,
        Err(rejected) => return rejected.into_tokens(),
    };
    let (krate, mut errors) = match parse_args(args) {
        Ok(krate) => (krate, None),
        Err(e) => (CratePath::default(), Some(e)),
    };
    if let Err(e) = validate(&item) {
        combine(&mut errors, e);
    }
    match errors {
        None => emit(&item, &krate),
        Some(errors) => {
            let fallback = declare_unregistered(&item, &krate);
            let errors = errors.into_compile_error();
            quote! { #errors #fallback }
        }
    }
}

fn combine(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(errors) => errors.combine(e),
        None => *errors = Some(e),
    }
}

/// The one argument, `crate = path` (for a renamed `shmem_typed`).
fn parse_args(args: TokenStream) -> syn::Result<CratePath> {
    let mut krate = CratePath::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate.parse(&meta)
        } else {
            Err(meta.error(format!(
                "#[symmetric] takes no arguments but `crate = path` (where a renamed shmem_typed is); {USAGE}"
            )))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(krate)
}

/// An item that is not a `static` with an initialiser: the error, and what to emit
/// beside it.
struct Rejected {
    error: syn::Error,
    /// The user's tokens, re-emitted when they are a valid item on their own (a `fn`, a
    /// `struct`, …) so that code using them still resolves.
    keep: Option<TokenStream>,
}

impl Rejected {
    fn into_tokens(self) -> TokenStream {
        let mut out = self.error.into_compile_error();
        out.extend(self.keep);
        out
    }
}

/// Parses the item, turning every non-`static` form into an error that says what to write.
fn parse_static(tokens: TokenStream) -> Result<ItemStatic, Rejected> {
    let parsed: Item = match syn::parse2(tokens.clone()) {
        Ok(parsed) => parsed,
        Err(_) => return Err(unparsable(tokens)),
    };
    let (what, span) = match &parsed {
        Item::Static(s) => return Ok(s.clone()),
        Item::Const(c) => {
            return Err(Rejected {
                error: syn::Error::new(
                    c.const_token.span,
                    format!(
                        "#[symmetric] needs a `static`, not a `const`: a const has no address, so other PEs cannot reach it; {USAGE}"
                    ),
                ),
                keep: Some(tokens),
            })
        }
        Item::Fn(f) => ("a function", f.sig.fn_token.span()),
        Item::Struct(s) => ("a struct definition", s.struct_token.span()),
        Item::Enum(e) => ("an enum definition", e.enum_token.span()),
        Item::Union(u) => ("a union definition", u.union_token.span()),
        Item::Type(t) => ("a type alias", t.type_token.span()),
        Item::Mod(m) => ("a module", m.mod_token.span()),
        Item::Impl(i) => ("an impl block", i.impl_token.span()),
        Item::Trait(t) => ("a trait", t.trait_token.span()),
        Item::Use(u) => ("a `use` declaration", u.use_token.span()),
        Item::Verbatim(v) => return Err(unparsable(v.clone())),
        other => ("this item", other.span()),
    };
    Err(Rejected {
        error: syn::Error::new(
            span,
            format!("#[symmetric] applies to `static` items only, not to {what}; {USAGE}"),
        ),
        keep: Some(tokens),
    })
}

/// Tokens that are not a complete item: `static NAME: T;`, `static NAME<T>: …`, or a
/// statement such as `let`.
fn unparsable(tokens: TokenStream) -> Rejected {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let is_ident = |tree: &TokenTree, name: &str| matches!(tree, TokenTree::Ident(i) if i == name);
    let is_punct =
        |tree: &TokenTree, ch: char| matches!(tree, TokenTree::Punct(p) if p.as_char() == ch);

    if let Some(let_token) = trees.iter().find(|t| is_ident(t, "let")) {
        return Rejected {
            error: syn::Error::new(
                let_token.span(),
                format!(
                    "#[symmetric] applies to `static` items only, not to a `let` binding: a local variable lives in one PE's private memory; {USAGE} (it may stand inside the function)"
                ),
            ),
            keep: Some(tokens),
        };
    }
    let Some(static_at) = trees.iter().position(|t| is_ident(t, "static")) else {
        return Rejected {
            error: syn::Error::new(
                tokens.span(),
                format!("#[symmetric] applies to `static` items only; {USAGE}"),
            ),
            keep: None,
        };
    };
    // `static [mut] NAME <` : generic parameters.
    let after_static = &trees[static_at + 1..];
    let name_at = usize::from(after_static.first().is_some_and(|t| is_ident(t, "mut")));
    if let Some(lt) = after_static.get(name_at + 1).filter(|t| is_punct(t, '<')) {
        return Rejected {
            error: syn::Error::new(
                lt.span(),
                "a symmetric static cannot be generic: it is one object at one symmetric offset; give it a concrete `Pod` type (declare one static per type)",
            ),
            keep: None,
        };
    }
    // `static NAME: T;` : no `=` at the top level.
    let has_initialiser = after_static.iter().any(|t| is_punct(t, '='));
    if !has_initialiser {
        let end = trees
            .iter()
            .rev()
            .find(|t| is_punct(t, ';'))
            .map_or_else(|| tokens.span(), TokenTree::span);
        return Rejected {
            error: syn::Error::new(
                end,
                "a symmetric static needs an initial value, which every PE starts with: add `= VALUE` before the `;`",
            ),
            keep: None,
        };
    }
    let first_group = trees.iter().find_map(|t| match t {
        TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => Some(g.span()),
        _ => None,
    });
    Rejected {
        error: syn::Error::new(
            first_group.unwrap_or_else(|| tokens.span()),
            format!("#[symmetric] could not read this `static`; {USAGE}"),
        ),
        keep: None,
    }
}

fn validate(item: &ItemStatic) -> syn::Result<()> {
    let mut errors = None;
    if let StaticMutability::Mut(m) = &item.mutability {
        combine(
            &mut errors,
            syn::Error::new(
                m.span,
                "a symmetric static cannot be `static mut`: remove `mut`; local writes go through `NAME.write(pe, ..)`, `NAME.update(pe, ..)` or `NAME.local_mut(pe)`, which borrow the PE handle so they cannot race a collective",
            ),
        );
    }
    if let Err(e) = check_type(&item.ty) {
        combine(&mut errors, e);
    }
    errors.map_or(Ok(()), Err)
}

/// Rejects what is visibly not plain old data in the written type: references, pointers,
/// lifetimes (they would point into one PE's private memory), trait objects, `impl
/// Trait` and `_`. Everything else is left to the `Pod` bound, checked by the compiler.
fn check_type(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(r) => Err(syn::Error::new(
            r.and_token.span,
            "a symmetric static cannot hold a reference: it would point into one PE's private memory; store the data itself (e.g. `[u64; 3]`, not `&[u64]`)",
        )),
        Type::Ptr(p) => Err(syn::Error::new(
            p.star_token.span,
            "a symmetric static cannot hold a raw pointer: it would point into one PE's private memory; store the data itself, or an index into a symmetric array",
        )),
        Type::Array(a) => check_type(&a.elem),
        Type::Paren(p) => check_type(&p.elem),
        Type::Group(g) => check_type(&g.elem),
        Type::Tuple(t) => t.elems.iter().try_for_each(check_type),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                check_type(&q.ty)?;
            }
            for seg in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &seg.arguments {
                    for arg in &args.args {
                        match arg {
                            syn::GenericArgument::Lifetime(l) => {
                                return Err(syn::Error::new(
                                    l.span(),
                                    "a symmetric static cannot have a lifetime parameter: symmetric data cannot borrow from one PE's private memory; store the data itself",
                                ))
                            }
                            syn::GenericArgument::Type(t) => check_type(t)?,
                            _ => {}
                        }
                    }
                }
            }
            Ok(())
        }
        Type::ImplTrait(t) => Err(syn::Error::new(
            t.impl_token.span,
            "a symmetric static needs a concrete `Pod` type, not `impl Trait`",
        )),
        Type::TraitObject(t) => Err(syn::Error::new(
            t.span(),
            "a symmetric static cannot be a trait object: it needs a concrete `Pod` type",
        )),
        Type::Infer(u) => Err(syn::Error::new(
            u.underscore_token.span,
            "a symmetric static needs its type written out (e.g. `[u64; 4]`): every PE reserves `size_of::<T>()` bytes for it",
        )),
        Type::BareFn(f) => Err(syn::Error::new(
            f.fn_token.span,
            "a symmetric static cannot hold a function pointer: it is an address in one PE's program image; store data, or an index that selects the function",
        )),
        _ => Ok(()),
    }
}

/// The key under which the runtime places the static: unique in the program (the
/// module path, the name and the position of the name, so that statics of the same name
/// in different functions of one module stay apart), identical on every PE (same binary).
fn key(item: &ItemStatic) -> TokenStream {
    let name = item.ident.to_string();
    quote_spanned! {item.ident.span()=>
        ::core::concat!(
            ::core::module_path!(), "::", #name,
            " (", ::core::file!(), ":", ::core::line!(), ":", ::core::column!(), ")"
        )
    }
}

/// The static itself, without registration: also what an erroneous item falls back to,
/// so that its uses keep resolving.
fn declare_unregistered(item: &ItemStatic, krate: &CratePath) -> TokenStream {
    if matches!(*item.ty, Type::Infer(_)) {
        return TokenStream::new();
    }
    let krate = krate.tokens();
    let ItemStatic {
        attrs,
        vis,
        ident,
        ty,
        expr,
        ..
    } = item;
    quote! {
        #(#attrs)*
        #vis static #ident: #krate::Symmetric<#ty> =
            #krate::Symmetric::__new(#expr);
    }
}

/// Whether an initialiser is visibly all zero bytes: a zero integer or float literal
/// (`0`, `0u64`, `0.0`, not `-0.0`), an array of such (`[0; N]`, `[0, 0]`, nested), or
/// a struct literal whose fields all are (the type is plain data, so it has no padding).
fn is_zero(expr: &syn::Expr) -> bool {
    use syn::{Expr, Lit};
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<u128>().is_ok_and(|v| v == 0),
            Lit::Float(f) => f
                .base10_parse::<f64>()
                .is_ok_and(|v| v == 0.0 && v.is_sign_positive()),
            _ => false,
        },
        Expr::Repeat(r) => is_zero(&r.expr),
        Expr::Array(a) => a.elems.iter().all(is_zero),
        Expr::Paren(p) => is_zero(&p.expr),
        Expr::Group(g) => is_zero(&g.expr),
        Expr::Struct(s) => s.rest.is_none() && s.fields.iter().all(|f| is_zero(&f.expr)),
        _ => false,
    }
}

/// `E` of `[[E; N]; M]` (or of `(E)`), as written.
fn innermost_element(ty: &Type) -> &Type {
    match ty {
        Type::Array(a) => innermost_element(&a.elem),
        Type::Paren(p) => innermost_element(&p.elem),
        Type::Group(g) => innermost_element(&g.elem),
        other => other,
    }
}

fn emit(item: &ItemStatic, krate_path: &CratePath) -> TokenStream {
    let declaration = declare_unregistered(item, krate_path);
    let krate = krate_path.tokens();
    // The registration is the one place where `T: Pod` is required, so a type that is
    // not plain old data yields exactly one error, pointing at the type.
    let ty = &item.ty;
    let elem = innermost_element(ty);
    let ty_span = ty.span();
    let this = syn::Ident::new(&item.ident.to_string(), ty_span);
    let key = key(item);
    // A visibly zero initialiser needs no copy at start-up (the static itself is then all
    // zero bytes, which the compiler keeps out of the executable whatever the form).
    let zeroed = is_zero(&item.expr);
    let krate_at_ty = krate_path.tokens_at(ty_span);
    let registration = quote_spanned! {ty_span=>
        &#krate_at_ty::__private::Registration::new(&#this, #key, #zeroed)
    };
    // An array static registers through its element type alone (arrays of
    // runtime-owned objects, such as locks, are symmetric statics too).
    let register = if matches!(**ty, Type::Array(_)) {
        quote_spanned! {ty_span=>
            &#krate_at_ty::__private::register_array::<#elem, #ty>(#registration)
        }
    } else {
        quote_spanned! {ty_span=>
            &#krate_at_ty::__private::register::<#elem, #ty>(#registration)
        }
    };
    let mut out = declaration;
    // SAFETY (of the expansion's `unsafe` block): the registration is this static's own,
    // with its key, registered once here.
    out.extend(quote! {
        const _: () = {
            #[#krate::__private::linkme::distributed_slice(#krate::__private::SYMMETRIC_STATICS)]
            #[linkme(crate = #krate::__private::linkme)]
            static REGISTRATION: &'static dyn #krate::__private::StaticSlot = unsafe { #register };
        };
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(item: &str) -> String {
        expand(TokenStream::new(), item.parse().unwrap()).to_string()
    }

    #[test]
    fn a_valid_static_is_declared_and_registered() {
        let out = expand_str("static A: [u64; 4] = [0; 4];");
        assert!(out.contains("static A : :: shmem_typed :: Symmetric < [u64 ; 4] >"));
        assert!(out.contains("distributed_slice"));
        assert!(!out.contains("compile_error"));
    }

    #[test]
    fn a_zero_initialiser_is_registered_as_zeroed() {
        for zero in [
            "0",
            "0u64",
            "0.0",
            "[0; 1 << 25]",
            "[[0.0; 4]; 2]",
            "[0, 0x0]",
            "P { x: 0, y: [0; 2] }",
        ] {
            let out = expand_str(&format!("static A: T = {zero};"));
            assert!(
                out.contains("new (& A ,") && out.ends_with("true)) } ; } ;"),
                "{zero}: {out}"
            );
        }
        for nonzero in [
            "1",
            "-0.0",
            "[0, 1]",
            "[1; 4]",
            "Lock::new()",
            "P { x: 0, ..Q }",
            "f(0)",
        ] {
            let out = expand_str(&format!("static A: T = {nonzero};"));
            assert!(out.ends_with("false)) } ; } ;"), "{nonzero}: {out}");
        }
    }

    #[test]
    fn a_rejected_static_is_declared_but_not_registered() {
        let out = expand_str("static mut A: [u64; 4] = [0; 4];");
        assert!(out.contains("compile_error"));
        assert!(out.contains("static A : :: shmem_typed :: Symmetric"));
        assert!(!out.contains("distributed_slice"));
    }

    #[test]
    fn a_function_is_kept_beside_the_error() {
        let out = expand_str("fn f() {}");
        assert!(out.contains("compile_error"));
        assert!(out.contains("fn f"));
    }

    #[test]
    fn a_missing_initialiser_is_named() {
        let out = expand_str("static A: u64;");
        assert!(out.contains("needs an initial value"));
    }

    #[test]
    fn generic_parameters_are_named() {
        let out = expand_str("static A<T>: [T; 4] = [0; 4];");
        assert!(out.contains("cannot be generic"));
    }
}
