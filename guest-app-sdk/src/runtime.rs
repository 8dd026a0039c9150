//! The exports over an [`App`]: what `register_app!` forwards to. Not part
//! of the API.
//!
//! The application lives in a thread-local [`Slot`] (a component instance
//! is single-threaded and never re-entered), built by `start`. On `wasm32`
//! the gateway is the host's imports; natively (the SDK's own tests) there
//! is none, and a call panics.

use crate::__private::wit as t;
use crate::{App, Gateway, Point, Value};
use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier};
use std::cell::RefCell;

/// The started application, once `start` built it.
pub struct Slot<A>(RefCell<Option<A>>);

impl<A: App> Slot<A> {
    /// Nothing started yet.
    pub const fn new() -> Self {
        Slot(RefCell::new(None))
    }

    /// `start`.
    pub fn start(&self, settings: &str) -> Result<t::AppInfo, String> {
        let app = A::start(settings, &mut *gateway())?;
        let info = app.info();
        *self.0.borrow_mut() = Some(app);
        Ok(t::AppInfo { name: info.name, version: info.version, summary: info.summary })
    }

    /// `on-change`.
    pub fn on_change(&self, point: t::Point, value: t::Value) {
        let (point, value) = (point_from_wit(point), value_from_wit(value));
        self.with(|a| a.on_change(&mut *gateway(), &point, &value))
    }

    /// `on-timer`.
    pub fn on_timer(&self, id: u32) {
        self.with(|a| a.on_timer(&mut *gateway(), id))
    }

    /// `on-message`.
    pub fn on_message(&self, topic: &str, payload: &[u8]) {
        self.with(|a| a.on_message(&mut *gateway(), topic, payload))
    }

    /// `export-state`.
    pub fn export_state(&self) -> Vec<u8> {
        self.with(|a| a.export_state())
    }

    /// `import-state`.
    pub fn import_state(&self, state: &[u8]) -> Result<(), String> {
        self.with(|a| a.import_state(state))
    }

    fn with<R>(&self, f: impl FnOnce(&mut A) -> R) -> R {
        let mut slot = self.0.borrow_mut();
        match slot.as_mut() {
            Some(a) => f(a),
            None => panic!("trellis:app/app called before start"),
        }
    }
}

impl<A: App> Default for Slot<A> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(target_arch = "wasm32")]
fn gateway() -> Box<dyn Gateway> {
    Box::new(crate::wasm::WasmGateway)
}

#[cfg(not(target_arch = "wasm32"))]
fn gateway() -> Box<dyn Gateway> {
    panic!("the host's gateway exists only in a wasm32 component; test with testing::FakeGateway")
}

/// A point from the host's record.
pub fn point_from_wit(p: t::Point) -> Point {
    match p {
        t::Point::Named(n) => Point::Named(n),
        t::Point::Address(a) => Point::Address {
            device: a.device,
            object: object_from_wit(a.object),
            property: PropertyIdentifier::from(a.property),
            array_index: a.array_index,
        },
    }
}

/// A point as the host's record.
pub fn point_to_wit(p: &Point) -> t::Point {
    match p {
        Point::Named(n) => t::Point::Named(n.clone()),
        Point::Address { device, object, property, array_index } => t::Point::Address(t::PointAddress {
            device: *device,
            object: object_to_wit(*object),
            property: u32::from(*property),
            array_index: *array_index,
        }),
    }
}

/// An object identifier as the host's record.
pub fn object_to_wit(o: ObjectIdentifier) -> t::ObjectId {
    t::ObjectId { object_type: u32::from(o.object_type) as u16, instance: o.instance }
}

/// An object identifier from the host's record.
pub fn object_from_wit(o: t::ObjectId) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::from(u32::from(o.object_type)), o.instance)
        .unwrap_or(ObjectIdentifier::from_u32((u32::from(o.object_type) << 22) | (o.instance & 0x3F_FFFF)))
}

/// A value from the host's record.
pub fn value_from_wit(v: t::Value) -> Value {
    match v {
        t::Value::Null => Value::Null,
        t::Value::Boolean(b) => Value::Boolean(b),
        t::Value::Unsigned(u) => Value::Unsigned(u),
        t::Value::Signed(i) => Value::Signed(i),
        t::Value::Real(r) => Value::Real(r),
        t::Value::Double(d) => Value::Double(d),
        t::Value::Enumerated(e) => Value::Enumerated(e),
        t::Value::CharacterString(s) => Value::Text(s),
        t::Value::OctetString(o) => Value::Octets(o),
        t::Value::Encoded(e) => Value::Encoded(e),
    }
}

/// A value as the host's record.
pub fn value_to_wit(v: Value) -> t::Value {
    match v {
        Value::Null => t::Value::Null,
        Value::Boolean(b) => t::Value::Boolean(b),
        Value::Unsigned(u) => t::Value::Unsigned(u),
        Value::Signed(i) => t::Value::Signed(i),
        Value::Real(r) => t::Value::Real(r),
        Value::Double(d) => t::Value::Double(d),
        Value::Enumerated(e) => t::Value::Enumerated(e),
        Value::Text(s) => t::Value::CharacterString(s),
        Value::Octets(o) => t::Value::OctetString(o),
        Value::Encoded(e) => t::Value::Encoded(e),
    }
}

/// An error from the host's record.
pub fn error_from_wit(e: t::PointError) -> crate::PointError {
    match e {
        t::PointError::NotPermitted(s) => crate::PointError::NotPermitted(s),
        t::PointError::UnknownPoint(s) => crate::PointError::UnknownPoint(s),
        t::PointError::Bacnet((class, code)) => crate::PointError::Bacnet(class, code),
        t::PointError::Failed(s) => crate::PointError::Failed(s),
    }
}
