//! `#[derive(Pod)]` and `#[derive(Zeroable)]` of the prelude: bytemuck's derives, found
//! through `shmem_typed` so that a program needs no `bytemuck` dependency of its own.
//!
//! bytemuck's derives name `::bytemuck` unless told otherwise, and a derive cannot
//! change the item it is applied to. So the expansion declares, inside an anonymous
//! `const`, a twin of the item (same fields, same `repr`) and applies bytemuck's own
//! derive to the twin with `#[bytemuck(crate = …)]` pointing into `shmem_typed`: every
//! check bytemuck makes (every field `Pod`/`Zeroable`, no padding, a `repr` that fixes
//! the layout) is made on a type of the identical layout, and only if it passes does the
//! `unsafe impl` for the user's item compile.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, DeriveInput};

use crate::crate_path::CratePath;

/// Which of bytemuck's traits to derive.
#[derive(Clone, Copy)]
pub(crate) enum Trait {
    Zeroable,
    Pod,
}

pub(crate) fn expand(input: TokenStream, which: Trait) -> TokenStream {
    match derive(input, which) {
        Ok(tokens) => tokens,
        Err(e) => e.into_compile_error(),
    }
}

/// The `crate = path` of a `#[shmem(crate = path)]` helper attribute, if any.
fn crate_path(attrs: &[Attribute]) -> syn::Result<CratePath> {
    let mut krate = CratePath::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("shmem")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate.parse(&meta)
            } else {
                Err(meta
                    .error("`#[shmem(..)]` takes `crate = path` (where a renamed shmem_typed is)"))
            }
        })?;
    }
    Ok(krate)
}

fn derive(input: TokenStream, which: Trait) -> syn::Result<TokenStream> {
    let item: DeriveInput = syn::parse2(input)?;
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &item.generics,
            "the prelude's `Pod`/`Zeroable` derives take types without generic parameters; \
             for a generic type, depend on bytemuck and use its derives",
        ));
    }
    let krate = crate_path(&item.attrs)?.tokens();
    let bytemuck = quote!(#krate::__private::bytemuck);
    let bytemuck_path = bytemuck.to_string().replace(' ', "");
    let name = &item.ident;
    let mut twin = item.clone();
    twin.ident = format_ident!("__ShmemLayoutOf{}", name);
    // The twin keeps what fixes its layout (`repr`) and bytemuck's own options; docs and
    // other derives' helpers stay with the user's item.
    twin.attrs.retain(|a| a.path().is_ident("repr"));
    twin.vis = syn::Visibility::Inherited;
    strip_field_attributes(&mut twin.data);
    let (derives, trait_path) = match which {
        Trait::Zeroable => (quote!(#bytemuck::Zeroable), quote!(#bytemuck::Zeroable)),
        Trait::Pod => (
            quote!(::core::clone::Clone, ::core::marker::Copy, #bytemuck::Zeroable, #bytemuck::Pod),
            quote!(#bytemuck::Pod),
        ),
    };
    Ok(quote! {
        const _: () = {
            #[derive(#derives)]
            #[bytemuck(crate = #bytemuck_path)]
            #[allow(dead_code, non_camel_case_types)]
            #twin
        };
        // SAFETY: bytemuck's derive accepted the twin above, whose fields, field types
        // and `repr` are this type's, so this type meets the same requirements.
        unsafe impl #trait_path for #name {}
    })
}

/// Removes the attributes of the twin's fields and variants (other derives' helpers,
/// which would not resolve on the twin) and their visibility (the twin is private).
fn strip_field_attributes(data: &mut syn::Data) {
    let fields: Vec<&mut syn::Field> = match data {
        syn::Data::Struct(s) => s.fields.iter_mut().collect(),
        syn::Data::Union(u) => u.fields.named.iter_mut().collect(),
        syn::Data::Enum(e) => e
            .variants
            .iter_mut()
            .flat_map(|v| {
                v.attrs.clear();
                v.fields.iter_mut()
            })
            .collect(),
    };
    for field in fields {
        field.attrs.clear();
        field.vis = syn::Visibility::Inherited;
    }
}
