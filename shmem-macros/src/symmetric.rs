//! `#[symmetric]`: parse the item, reject what cannot be symmetric, expand to a
//! `Symmetric<T>` static registered in the runtime's link-time registry.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Item, ItemStatic, StaticMutability, Type};

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !args.is_empty() {
        return Err(syn::Error::new(
            args.span(),
            "#[symmetric] takes no arguments; write `#[symmetric] static NAME: T = VALUE;`",
        ));
    }
    let item = parse_static(item)?;
    validate(&item)?;
    Ok(emit(&item))
}

/// Parses the item, turning every non-`static` form into an error that says what to write.
fn parse_static(item: TokenStream) -> syn::Result<ItemStatic> {
    let parsed: Item = match syn::parse2(item.clone()) {
        Ok(parsed) => parsed,
        Err(_) => return Err(missing_initialiser_or(item)),
    };
    let what = match parsed {
        Item::Static(s) => return Ok(s),
        Item::Const(c) => {
            return Err(syn::Error::new(
                c.const_token.span,
                "#[symmetric] needs a `static`, not a `const`: a const has no address, so other PEs cannot reach it; write `#[symmetric] static NAME: T = VALUE;`",
            ))
        }
        Item::Fn(f) => ("a function", f.sig.fn_token.span()),
        Item::Struct(s) => ("a struct definition", s.struct_token.span()),
        Item::Enum(e) => ("an enum definition", e.enum_token.span()),
        Item::Type(t) => ("a type alias", t.type_token.span()),
        Item::Mod(m) => ("a module", m.mod_token.span()),
        Item::Impl(i) => ("an impl block", i.impl_token.span()),
        Item::Verbatim(v) => return Err(missing_initialiser_or(v)),
        other => ("this item", other.span()),
    };
    Err(syn::Error::new(
        what.1,
        format!(
            "#[symmetric] applies to `static` items only, not to {}; write `#[symmetric] static NAME: T = VALUE;`",
            what.0
        ),
    ))
}

/// The error for tokens that do not parse as an item: most often `static NAME: T;`.
fn missing_initialiser_or(tokens: TokenStream) -> syn::Error {
    let text = tokens.to_string();
    if text.contains("static") && !text.contains('=') {
        syn::Error::new(
            tokens.span(),
            "a symmetric static needs an initial value: every PE starts with it; write `#[symmetric] static NAME: T = VALUE;`",
        )
    } else {
        syn::Error::new(
            tokens.span(),
            "#[symmetric] applies to `static` items only; write `#[symmetric] static NAME: T = VALUE;`",
        )
    }
}

fn validate(item: &ItemStatic) -> syn::Result<()> {
    if let StaticMutability::Mut(m) = &item.mutability {
        return Err(syn::Error::new(
            m.span,
            "a symmetric static cannot be `static mut`: remove `mut`; local writes go through `NAME.set(pe, ..)` or `NAME.local_mut(pe)`, which borrow the PE handle so they cannot race a collective",
        ));
    }
    reject_references(&item.ty)
}

/// Symmetric data is copied between processes as bytes, so it cannot hold references or
/// lifetimes (which would point into one PE's private memory).
fn reject_references(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(r) => Err(syn::Error::new(
            r.and_token.span,
            "a symmetric static cannot hold a reference: it would point into one PE's private memory; store the data itself",
        )),
        Type::Ptr(p) => Err(syn::Error::new(
            p.star_token.span,
            "a symmetric static cannot hold a raw pointer: it would point into one PE's private memory; store the data itself",
        )),
        Type::Array(a) => reject_references(&a.elem),
        Type::Paren(p) => reject_references(&p.elem),
        Type::Group(g) => reject_references(&g.elem),
        Type::Tuple(t) => t.elems.iter().try_for_each(reject_references),
        Type::Path(p) => {
            for seg in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &seg.arguments {
                    for arg in &args.args {
                        match arg {
                            syn::GenericArgument::Lifetime(l) => {
                                return Err(syn::Error::new(
                                    l.span(),
                                    "a symmetric static cannot have a lifetime parameter: symmetric data cannot borrow; store the data itself",
                                ))
                            }
                            syn::GenericArgument::Type(t) => reject_references(t)?,
                            _ => {}
                        }
                    }
                }
            }
            Ok(())
        }
        Type::ImplTrait(t) => Err(syn::Error::new(
            t.span(),
            "a symmetric static needs a concrete type",
        )),
        Type::TraitObject(t) => Err(syn::Error::new(
            t.span(),
            "a symmetric static cannot be a trait object: it needs a concrete `Pod` type",
        )),
        _ => Ok(()),
    }
}

fn emit(item: &ItemStatic) -> TokenStream {
    let ItemStatic {
        attrs,
        vis,
        ident,
        ty,
        expr,
        ..
    } = item;
    let key = ident.to_string();
    let pod_check = quote_spanned! {ty.span()=>
        const _: () = ::shmem_typed::__private::assert_symmetric_type::<#ty>();
    };
    quote! {
        #(#attrs)*
        #vis static #ident: ::shmem_typed::Symmetric<#ty> = ::shmem_typed::Symmetric::__new(
            #expr,
            ::core::concat!(::core::module_path!(), "::", #key),
        );
        #pod_check
        const _: () = {
            #[::shmem_typed::__private::linkme::distributed_slice(::shmem_typed::__private::SYMMETRIC_STATICS)]
            #[linkme(crate = ::shmem_typed::__private::linkme)]
            static REGISTRATION: &'static dyn ::shmem_typed::__private::StaticSlot = &#ident;
        };
    }
}
