//! The exports over a [`Policy`]: what `register_policy!` forwards to.
//! Not part of the API.
//!
//! The policy lives in a thread-local [`Slot`] (a component instance is
//! single-threaded and never re-entered), built by `configure`.

use crate::__private::wit as t;
use crate::Policy;
use crate::convert;
use std::cell::RefCell;

/// The configured policy, once `configure` built it.
pub struct Slot<P>(RefCell<Option<P>>);

impl<P: Policy> Slot<P> {
    /// Nothing configured yet.
    pub const fn new() -> Self {
        Slot(RefCell::new(None))
    }

    /// `configure`: build the policy, replacing any earlier one.
    pub fn configure(&self, settings: &str) -> Result<t::PolicyInfo, String> {
        let policy = P::configure(settings)?;
        let info = convert::info_to_wit(policy.info());
        *self.0.borrow_mut() = Some(policy);
        Ok(info)
    }

    /// `decide`.
    pub fn decide(&self, now_ms: u64, npdu: &t::RoutedNpdu) -> t::Verdict {
        self.with(|p| convert::verdict_to_wit(convert::with_routed(npdu, |n| p.decide(now_ms, n))))
    }

    /// `tick`.
    pub fn tick(&self, now_ms: u64) {
        self.with(|p| p.tick(now_ms))
    }

    /// `export-state`.
    pub fn export_state(&self) -> Vec<u8> {
        self.with(|p| p.export_state())
    }

    /// `import-state`.
    pub fn import_state(&self, state: &[u8]) -> Result<(), String> {
        self.with(|p| p.import_state(state))
    }

    fn with<R>(&self, f: impl FnOnce(&mut P) -> R) -> R {
        let mut slot = self.0.borrow_mut();
        match slot.as_mut() {
            Some(p) => f(p),
            None => panic!("trellis:routing/policy called before configure"),
        }
    }
}

impl<P: Policy> Default for Slot<P> {
    fn default() -> Self {
        Self::new()
    }
}
