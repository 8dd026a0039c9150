//! The Trellis routing-policy SDK: what a routing-policy plugin is written
//! against.
//!
//! A routing policy is a WebAssembly component (`wasm32-wasip2`) exporting
//! `trellis:routing/policy@0.1.0`. The gateway's router asks it about every
//! NPDU it is about to send on towards another network and does what it
//! answers: forward, drop (counted under one of the policy's named
//! reasons), answer the sender with Reject-Message-To-Network, or forward at
//! another network priority. The router's own checks come first (hop count,
//! unknown networks, lengths): a policy only ever narrows what is routed.
//!
//! A plugin implements [`Policy`] over the core's own types — the
//! [`RoutedNpdu`] the router builds, the [`Verdict`] it acts on — and
//! exports it with [`register_policy!`]. Everything runs natively too (the
//! log falls back to stderr), so a policy's logic is unit-tested with
//! `cargo test` and no WebAssembly; the README is the author's guide.

extern crate self as trellis_routing_sdk;

mod convert;
pub mod log;
#[doc(hidden)]
pub mod runtime;

pub use bacnet;
pub use bacnet::enums::{
    ConfirmedServiceChoice, NetworkMessageType, NetworkPriority, RejectMessageReason, UnconfirmedServiceChoice,
};
pub use bacnet::router::{ApduSummary, Content, Destination, PortId, RoutedNpdu, Verdict};
pub use bacnet::{ObjectIdentifier, ObjectType};

/// What a policy says it is, once configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyInfo {
    /// Its name, e.g. "firewall".
    pub name: String,
    /// Its version.
    pub version: String,
    /// One line on what this configuration does.
    pub summary: String,
    /// The names of its drop reasons: [`Verdict::Drop`]`(n)` is counted
    /// under `drop_reasons[n]`.
    pub drop_reasons: Vec<String>,
}

/// A routing policy.
///
/// The host calls [`Policy::configure`] once per instance, then
/// [`Policy::decide`] for every routed NPDU, [`Policy::tick`] about once a
/// second, and the state calls around restarts and hot swaps. Every call
/// must return at once: a policy that loops is stopped at its deadline and
/// the router fails closed (or open, as the operator configured).
pub trait Policy: Sized + 'static {
    /// Build the policy from the operator's settings (TOML text, maybe
    /// empty). An error names what is wrong; the host refuses to load.
    fn configure(settings: &str) -> Result<Self, String>;

    /// What this policy is and does.
    fn info(&self) -> PolicyInfo;

    /// The verdict on one routed NPDU; `now_ms` is the router's monotonic
    /// clock in milliseconds.
    fn decide(&mut self, now_ms: u64, npdu: &RoutedNpdu<'_>) -> Verdict;

    /// Time passes (about once a second).
    fn tick(&mut self, _now_ms: u64) {}

    /// The state worth keeping across a restart or a hot swap.
    fn export_state(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Take over an exported state (maybe an earlier version's); an error
    /// refuses it.
    fn import_state(&mut self, _state: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Export a [`Policy`] as this component's `policy`.
///
/// Use it once, at the crate root of a `cdylib` built for `wasm32-wasip2`:
///
/// ```
/// use trellis_routing_sdk::{Policy, PolicyInfo, RoutedNpdu, Verdict};
///
/// struct ForwardEverything;
///
/// impl Policy for ForwardEverything {
///     fn configure(_: &str) -> Result<Self, String> {
///         Ok(ForwardEverything)
///     }
///     fn info(&self) -> PolicyInfo {
///         PolicyInfo { name: "forward-everything".into(), version: "1.0.0".into(), ..PolicyInfo::default() }
///     }
///     fn decide(&mut self, _now_ms: u64, _npdu: &RoutedNpdu<'_>) -> Verdict {
///         Verdict::Forward
///     }
/// }
///
/// trellis_routing_sdk::register_policy!(ForwardEverything);
/// # fn main() {}
/// ```
///
/// A call before `configure` succeeded (the host never makes one) traps.
#[macro_export]
macro_rules! register_policy {
    ($policy:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            ::std::thread_local! {
                static RUNTIME: $crate::runtime::Slot<$policy> = const { $crate::runtime::Slot::new() };
            }

            struct TrellisRoutingPolicyExport;

            impl $crate::__private::Guest for TrellisRoutingPolicyExport {
                fn configure(
                    settings: ::std::string::String,
                ) -> ::core::result::Result<$crate::__private::wit::PolicyInfo, ::std::string::String> {
                    RUNTIME.with(|slot| slot.configure(&settings))
                }
                fn decide(now_ms: u64, npdu: $crate::__private::wit::RoutedNpdu) -> $crate::__private::wit::Verdict {
                    RUNTIME.with(|slot| slot.decide(now_ms, &npdu))
                }
                fn tick(now_ms: u64) {
                    RUNTIME.with(|slot| slot.tick(now_ms))
                }
                fn export_state() -> ::std::vec::Vec<u8> {
                    RUNTIME.with(|slot| slot.export_state())
                }
                fn import_state(state: ::std::vec::Vec<u8>) -> ::core::result::Result<(), ::std::string::String> {
                    RUNTIME.with(|slot| slot.import_state(&state))
                }
            }

            $crate::__private::bindings::export!(
                TrellisRoutingPolicyExport with_types_in $crate::__private::bindings
            );
        };
    };
}

/// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// What `register_policy!` expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    /// The generated bindings of `trellis:routing/routing-policy@0.1.0`.
    #[allow(unsafe_code, missing_docs, dead_code, clippy::all)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "../wit/routing",
            world: "routing-policy",
            pub_export_macro: true,
            export_macro_name: "export",
            default_bindings_module: "::trellis_routing_sdk::__private::bindings",
            runtime_path: "::trellis_routing_sdk::__private::wit_bindgen::rt",
        });
    }

    pub use bindings::exports::trellis::routing::policy::Guest;
    pub use wit_bindgen;

    /// The interface's types, as `register_policy!` names them.
    pub mod wit {
        pub use super::bindings::trellis::routing::types::{PolicyInfo, RoutedNpdu, Verdict};
    }
}
