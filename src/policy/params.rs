//! Policy parameter structs that carry their own documentation.
//!
//! `params!` declares a parameter struct once — fields with `///` docs and default
//! values — and derives serde (with `deny_unknown_fields`), `Default`, and
//! [`Params::DOCS`], so `tiersim policies` prints the same text the source shows.

/// Documentation of a parameter struct's fields, in declaration order.
pub trait Params {
    const DOCS: &'static [(&'static str, &'static str)];
}

/// Declares a documented parameter struct:
/// ```text
/// params! {
///     /// Parameters of the round-robin baseline.
///     pub struct RoundRobinConfig {
///         /// Consecutive pages placed in the fast tier per round.
///         pub fast_pages: u32 = 4,
///     }
/// }
/// ```
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $doc:literal])* pub $field:ident : $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $crate::policy::params::Params for $name {
            const DOCS: &'static [(&'static str, &'static str)] = &[
                $( (stringify!($field), concat!($($doc, "\n"),*)), )*
            ];
        }
    };
}

/// Renders a policy's parameters as `name = default` lines, each followed by its doc.
pub fn describe<P: Params + serde::Serialize + Default>() -> String {
    let values = toml::Table::try_from(P::default()).unwrap_or_default();
    if P::DOCS.is_empty() {
        return "    (no parameters)\n".into();
    }
    let mut out = String::new();
    for (field, doc) in P::DOCS {
        let v = values.get(*field).map_or_else(|| "(unset)".to_string(), |v| v.to_string());
        out += &format!("    {field} = {v}\n");
        for line in doc.lines() {
            out += &format!("        {}\n", line.trim());
        }
    }
    out
}
