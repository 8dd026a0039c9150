//! Presenting the model's Device object under the instance the operator
//! configured: requests are translated on the way in, answers on the way
//! out. The wildcard instance 4,194,303 always means "this device".

use bacnet::value::{Element, Value};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType};
use trellis_model::{PropertyRead, PropertyTarget};

/// The Device object's identifier on the network and inside the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceIdMap {
    /// As clients see it.
    pub network: ObjectIdentifier,
    /// As the model knows it.
    pub model: ObjectIdentifier,
}

impl DeviceIdMap {
    /// True for the identifiers that address this Device object.
    pub fn is_device(&self, o: ObjectIdentifier) -> bool {
        o == self.network || (o.object_type == ObjectType::DEVICE && o.instance == ObjectIdentifier::MAX_INSTANCE)
    }

    /// A client's object identifier as the model knows it.
    pub fn inbound(&self, o: ObjectIdentifier) -> ObjectIdentifier {
        if self.is_device(o) {
            self.model
        } else if o == self.model && self.model != self.network {
            // The model's own id is not this device's name on the network.
            ObjectIdentifier::from_u32(u32::MAX)
        } else {
            o
        }
    }

    /// A target as the model knows it.
    pub fn inbound_target(&self, t: PropertyTarget) -> PropertyTarget {
        PropertyTarget { object: self.inbound(t.object), ..t }
    }

    fn outbound_id(&self, o: ObjectIdentifier) -> ObjectIdentifier {
        if o == self.model { self.network } else { o }
    }

    /// A model's answer as clients see it: the target and every object
    /// identifier inside the value (Object_Identifier, Object_List…).
    pub fn outbound_read(&self, mut r: PropertyRead) -> PropertyRead {
        r.target.object = self.outbound_id(r.target.object);
        if self.model != self.network
            && let Ok(v) = &mut r.outcome
        {
            self.outbound_value(v);
        }
        r
    }

    fn outbound_value(&self, v: &mut AnyValue) {
        fn walk(map: &DeviceIdMap, es: &mut [Element]) {
            for e in es {
                match e {
                    Element::Application(Value::ObjectIdentifier(o)) => *o = map.outbound_id(*o),
                    Element::Constructed { elements, .. } => walk(map, elements),
                    _ => {}
                }
            }
        }
        walk(self, &mut v.0);
    }
}
