//! `bacnet_enum!`: protocol enumerations as newtypes with named constants.
//!
//! BACnet enumerations are open: vendors add proprietary values and newer
//! revisions add standard ones. A Rust `enum` would drop or reject them, so each
//! enumeration is a newtype over its wire integer with associated constants.
//! Unknown values decode, round-trip and print as their number.
//!
//! Names are the standard's, spelled the way ASHRAE 135 spells them in its
//! ASN.1 (`analog-value`, `present-value`, `degrees-celsius`). `from_name`
//! also accepts the camelCase and SCREAMING_CASE spellings other stacks use,
//! and plain decimal numbers.

/// Compare a user-supplied name with a canonical hyphenated name, ignoring
/// case, `-`, `_` and spaces.
pub(crate) fn name_matches(input: &str, canonical: &str) -> bool {
    let mut a = input.bytes().filter(|b| !matches!(b, b'-' | b'_' | b' '));
    let mut b = canonical.bytes().filter(|b| !matches!(b, b'-' | b'_' | b' '));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x.eq_ignore_ascii_case(&y) => {}
            _ => return false,
        }
    }
}

/// Parse a decimal number or a name from `table`.
pub(crate) fn parse_name_or_number<T: Copy>(
    input: &str,
    table: &[(T, &'static str)],
    from_u32: impl Fn(u32) -> Option<T>,
) -> Option<T> {
    let trimmed = input.trim();
    if let Ok(n) = trimmed.parse::<u32>() {
        return from_u32(n);
    }
    table.iter().find(|(_, name)| name_matches(trimmed, name)).map(|(v, _)| *v)
}

/// Define an open BACnet enumeration.
///
/// ```text
/// bacnet_enum! {
///     /// Doc.
///     pub struct ErrorClass(u32) {
///         DEVICE = 0 => "device",
///     }
/// }
/// ```
macro_rules! bacnet_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) {
            $( $(#[$cmeta:meta])* $konst:ident = $val:literal => $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $repr);

        #[allow(missing_docs)]
        impl $name {
            $( $(#[$cmeta])* pub const $konst: $name = $name($val); )*

            /// Every value this crate names, with its standard name.
            pub const KNOWN: &'static [($name, &'static str)] = &[ $( ($name($val), $text), )* ];

            /// The standard's name for this value, if this crate knows it.
            pub fn name(self) -> Option<&'static str> {
                #[allow(unreachable_patterns)]
                match self.0 {
                    $( $val => Some($text), )*
                    _ => None,
                }
            }

            /// Parse a standard name (any case, `-`/`_` optional) or a number.
            pub fn from_name(input: &str) -> Option<Self> {
                $crate::enums::macros::parse_name_or_number(input, Self::KNOWN, |n| {
                    <$repr>::try_from(n).ok().map($name)
                })
            }

            /// True when the value is one this crate names.
            pub fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}", self.0),
                }
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}({})", stringify!($name), n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                $name(v)
            }
        }

        impl From<$name> for $repr {
            fn from(v: $name) -> $repr {
                v.0
            }
        }
    };
}

pub(crate) use bacnet_enum;
