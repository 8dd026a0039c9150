//! The gateway's devices as OPC UA nodes, after OPC 30030 "OPC UA for BACnet":
//!
//! ```text
//! Objects/
//!   BACnet                                  (the internetwork: every device the gateway shows; BACnetInternetworkType)
//!     <Device_Object_Name>                  (a device; Object_Identifier property; BACnetDeviceType)
//!       <Object_Name>                       (a BACnet object, of OPC 30030's type for its object type; Description → Description attribute)
//!         Object_Identifier                 (property, UInt32: type << 22 | instance)
//!         Present_Value                     (component; an AnalogItem with EngineeringUnits when the object has Units)
//!         Status_Flags, Out_Of_Service, …   (properties, BACnet's names with underscores)
//! ```
//!
//! Every node's NodeId is numeric, from the persisted [`NodeIdTable`], so a
//! restart or a hot swap that keeps an object keeps its nodes' ids. The
//! [`Registry`] maps the value-bearing variables to their BACnet points.
//!
//! Must never: drop a node id's number (a removed object's numbers wait for
//! it to come back), or show two siblings under one BrowseName.

use crate::convert::Kind;
use crate::node_ids::NodeIdTable;
use crate::source::{DeviceView, ObjectView, PointRef};
use crate::units::eu_information;
use bacnet::enums::{ObjectType, PropertyIdentifier as P};
use bacnet::{AnyValue, ObjectIdentifier};
use opcua::server::address_space::{AccessLevel, AddressSpace, ObjectBuilder, VariableBuilder};
use opcua::types::{
    DataTypeId, DataValue, DateTime, ExtensionObject, NodeId, ObjectId, QualifiedName, StatusCode, VariableTypeId,
    Variant,
};
use std::collections::{BTreeMap, HashMap};

/// The fixed number of the `BACnet` internetwork object.
pub const INTERNETWORK: u32 = 1;

/// A variable that stands for a BACnet point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointNode {
    /// The point.
    pub point: PointRef,
    /// What its values are converted to.
    pub kind: Kind,
}

/// Which nodes exist and what they stand for.
#[derive(Debug)]
pub struct Registry {
    /// Our namespace's index in the server.
    pub namespace: u16,
    /// OPC 30030's namespace's index (its object types, [`crate::types`]).
    pub types_namespace: u16,
    ids: NodeIdTable,
    points: HashMap<NodeId, PointNode>,
    by_point: HashMap<PointRef, NodeId>,
    /// Device instance → every node made for it (removed with it).
    nodes: BTreeMap<u32, Vec<NodeId>>,
    /// Present_Value variables writable only while their object is out of
    /// service, by object.
    out_of_service_pv: HashMap<(u32, ObjectIdentifier), NodeId>,
}

/// The OPC 30030 name of a BACnet property: `present-value` → `Present_Value`.
pub fn browse_name_of(p: P) -> String {
    let name = p.name().map(str::to_owned).unwrap_or_else(|| format!("proprietary-{}", p.0));
    name.split('-')
        .map(|word| match word {
            "cov" => "COV".to_owned(),
            w => {
                let mut c = w.chars();
                c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
            }
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// What a client may do with a property's variable: write it only where
/// the BACnet side accepts a write (ASHRAE 135's property tables, as the
/// guest SDK's store applies them; the device still decides and its error
/// comes back as a status code):
///
/// - Present_Value of a commandable object (it has a Priority_Array) or of
///   a value object (`…-value`): always; of any other object (an input, a
///   schedule…) only while Out_Of_Service is TRUE, which
///   [`Registry::follows_out_of_service`] tracks;
/// - Out_Of_Service and COV_Increment: always;
/// - everything else, Relinquish_Default included: never.
pub fn access_of(object: ObjectType, p: P, commandable: bool, out_of_service: bool) -> AccessLevel {
    let write = match p {
        P::PRESENT_VALUE => commandable || is_value_object(object) || out_of_service,
        P::OUT_OF_SERVICE | P::COV_INCREMENT => true,
        _ => false,
    };
    if write { AccessLevel::CURRENT_READ | AccessLevel::CURRENT_WRITE } else { AccessLevel::CURRENT_READ }
}

/// Analog Value, Binary Value, Integer Value, …: a Present_Value written
/// directly (Clause 12: "value" objects).
fn is_value_object(t: ObjectType) -> bool {
    t.to_string().ends_with("-value")
}

/// Whether a Present_Value's writability follows Out_Of_Service.
fn follows_out_of_service(object: ObjectType, commandable: bool) -> bool {
    !commandable && !is_value_object(object)
}

/// Out_Of_Service as a COV notification reports it: the property itself,
/// or Status_Flags' OUT_OF_SERVICE bit (bit 3).
pub fn out_of_service_in(p: P, value: &AnyValue) -> Option<bool> {
    match (p, value.as_primitive()?) {
        (P::OUT_OF_SERVICE, bacnet::Value::Boolean(b)) => Some(*b),
        (P::STATUS_FLAGS, bacnet::Value::BitString(bits)) => bits.iter().nth(3),
        _ => None,
    }
}

fn object_key(device: u32, o: ObjectIdentifier) -> String {
    format!("{device}/{},{}", o.object_type, o.instance)
}

impl Registry {
    /// An empty registry over `ids`.
    pub fn new(namespace: u16, ids: NodeIdTable) -> Self {
        Registry {
            namespace,
            types_namespace: 0,
            ids,
            points: HashMap::new(),
            by_point: HashMap::new(),
            nodes: BTreeMap::new(),
            out_of_service_pv: HashMap::new(),
        }
    }

    /// The internetwork object's NodeId.
    pub fn internetwork(&self) -> NodeId {
        NodeId::new(self.namespace, INTERNETWORK)
    }

    /// The point a variable stands for.
    pub fn point(&self, node: &NodeId) -> Option<&PointNode> {
        self.points.get(node)
    }

    /// The variable that stands for a point, with its kind.
    pub fn node_of(&self, point: &PointRef) -> Option<(&NodeId, Kind)> {
        let id = self.by_point.get(point)?;
        Some((id, self.points.get(id)?.kind))
    }

    /// The Present_Value variable of `object` if its writability follows
    /// Out_Of_Service (see [`access_of`]).
    pub fn follows_out_of_service(&self, device: u32, object: ObjectIdentifier) -> Option<&NodeId> {
        self.out_of_service_pv.get(&(device, object))
    }

    /// Variables standing for points.
    pub fn point_count(&self) -> usize {
        self.points.len()
    }

    fn qualified(&self, name: &str) -> QualifiedName {
        QualifiedName::new(self.namespace, name)
    }

    fn id(&mut self, key: &str) -> NodeId {
        NodeId::new(self.namespace, self.ids.id(key))
    }

    /// Make `space` show exactly `devices`: nodes of devices and objects no
    /// longer there go, new ones come (an object whose properties changed
    /// is remade). Persists newly numbered nodes.
    pub fn sync(
        &mut self,
        space: &mut AddressSpace,
        devices: &[DeviceView],
    ) -> Result<(), crate::node_ids::NodeIdError> {
        let gone: Vec<u32> = self.nodes.keys().copied().collect();
        for device in gone {
            self.remove_device(space, device);
        }
        // Devices with the same Object_Name (a misconfiguration BACnet
        // tolerates) would share a BrowseName: the later ones get their
        // instance added.
        let mut names = std::collections::HashSet::new();
        for d in devices {
            if names.insert(d.name.clone()) {
                self.add_device(space, d);
            } else {
                let renamed = DeviceView { name: format!("{} ({})", d.name, d.instance), ..d.clone() };
                names.insert(renamed.name.clone());
                self.add_device(space, &renamed);
            }
        }
        self.ids.save()
    }

    fn remove_device(&mut self, space: &mut AddressSpace, device: u32) {
        self.out_of_service_pv.retain(|(d, _), _| *d != device);
        for node in self.nodes.remove(&device).unwrap_or_default() {
            if let Some(p) = self.points.remove(&node) {
                self.by_point.remove(&p.point);
            }
            space.delete(&node, true);
        }
    }

    fn add_device(&mut self, space: &mut AddressSpace, d: &DeviceView) {
        let mut made = Vec::new();
        let device_node = self.id(&d.instance.to_string());
        ObjectBuilder::new(&device_node, self.qualified(&d.name), d.name.as_str())
            .description(format!("BACnet device {}", d.instance))
            .has_type_definition(NodeId::new(self.types_namespace, crate::types::DEVICE_TYPE))
            .component_of(self.internetwork())
            .insert(space);
        made.push(device_node.clone());
        let device_oid = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: d.instance };
        let oid_node = self.id(&format!("{}/Object_Identifier", object_key(d.instance, device_oid)));
        property(
            space,
            &oid_node,
            self.qualified("Object_Identifier"),
            Variant::UInt32(device_oid.to_u32()),
            DataTypeId::UInt32,
            &device_node,
        );
        made.push(oid_node);
        let mut names = std::collections::HashSet::new();
        for o in &d.objects {
            if !names.insert(o.name.as_str()) {
                tracing::warn!(device = d.instance, object = %o.id, "OPC UA: a second object named {:?} is not shown", o.name);
                continue;
            }
            self.add_object(space, d.instance, &device_node, o, &mut made);
        }
        self.nodes.insert(d.instance, made);
    }

    fn add_object(
        &mut self,
        space: &mut AddressSpace,
        device: u32,
        parent: &NodeId,
        o: &ObjectView,
        made: &mut Vec<NodeId>,
    ) {
        let key = object_key(device, o.id);
        let node = self.id(&key);
        let mut b = ObjectBuilder::new(&node, self.qualified(&o.name), o.name.as_str())
            .has_type_definition(NodeId::new(self.types_namespace, crate::types::type_of(o.id.object_type)))
            .component_of(parent.clone());
        if let Some(text) = &o.description {
            b = b.description(text.as_str());
        }
        b.insert(space);
        made.push(node.clone());
        let oid_node = self.id(&format!("{key}/Object_Identifier"));
        property(
            space,
            &oid_node,
            self.qualified("Object_Identifier"),
            Variant::UInt32(o.id.to_u32()),
            DataTypeId::UInt32,
            &node,
        );
        made.push(oid_node);
        let commandable = o.properties.iter().any(|(p, _)| *p == P::PRIORITY_ARRAY);
        // Out_Of_Service itself, else Status_Flags' bit.
        let out_of_service = [P::OUT_OF_SERVICE, P::STATUS_FLAGS]
            .iter()
            .find_map(|want| o.properties.iter().find(|(p, _)| p == want).and_then(|(p, v)| out_of_service_in(*p, v)))
            .unwrap_or(false);
        for (p, value) in &o.properties {
            let Some(kind) = Kind::of(o.id.object_type, *p, value) else { continue };
            let name = browse_name_of(*p);
            let var = self.id(&format!("{key}/{name}"));
            let initial = kind.variant(value).unwrap_or(Variant::Empty);
            let access = access_of(o.id.object_type, *p, commandable, out_of_service);
            if *p == P::PRESENT_VALUE && follows_out_of_service(o.id.object_type, commandable) {
                self.out_of_service_pv.insert((device, o.id), var.clone());
            }
            let mut vb = VariableBuilder::new(&var, self.qualified(&name), name.as_str())
                .data_type(kind.data_type())
                .value(initial)
                .access_level(access)
                .user_access_level(access);
            vb = if *p == P::PRESENT_VALUE {
                let t = if o.units.is_some() {
                    VariableTypeId::AnalogItemType
                } else {
                    VariableTypeId::BaseDataVariableType
                };
                vb.has_type_definition(t).component_of(node.clone())
            } else {
                vb.has_type_definition(VariableTypeId::PropertyType).property_of(node.clone())
            };
            vb.insert(space);
            made.push(var.clone());
            let point = PointRef { device, object: o.id, property: *p };
            self.points.insert(var.clone(), PointNode { point, kind });
            self.by_point.insert(point, var.clone());
            if *p == P::PRESENT_VALUE
                && let Some(units) = o.units
            {
                let eu = self.id(&format!("{key}/{name}/EngineeringUnits"));
                let value = Variant::from(ExtensionObject::from_message(eu_information(units)));
                property(space, &eu, QualifiedName::new(0, "EngineeringUnits"), value, DataTypeId::EUInformation, &var);
                made.push(eu);
            }
        }
    }
}

/// A read-only property variable.
fn property(
    space: &mut AddressSpace,
    id: &NodeId,
    name: QualifiedName,
    value: Variant,
    data_type: DataTypeId,
    of: &NodeId,
) {
    let display = name.name.to_string();
    VariableBuilder::new(id, name, display.as_str())
        .data_type(data_type)
        .value(value)
        .access_level(AccessLevel::CURRENT_READ)
        .user_access_level(AccessLevel::CURRENT_READ)
        .has_type_definition(VariableTypeId::PropertyType)
        .property_of(of.clone())
        .insert(space);
}

/// Make the fixed nodes: the `BACnet` internetwork object under Objects
/// (a `BACnetInternetworkType` of OPC 30030's namespace `types`).
pub fn add_fixed_nodes(space: &mut AddressSpace, namespace: u16, types: u16) {
    let id = NodeId::new(namespace, INTERNETWORK);
    ObjectBuilder::new(&id, QualifiedName::new(namespace, "BACnet"), "BACnet")
        .description(
            "The BACnet internetwork of this gateway: the devices it serves and the remote devices bound to it",
        )
        .has_type_definition(NodeId::new(types, crate::types::INTERNETWORK_TYPE))
        .organized_by(NodeId::from(ObjectId::ObjectsFolder))
        .insert(space);
}

/// A value as a DataValue stamped now.
pub fn data_value(kind: Kind, value: &AnyValue) -> DataValue {
    let now = DateTime::now();
    match kind.variant(value) {
        Ok(v) => DataValue {
            value: Some(v),
            status: Some(StatusCode::Good),
            source_timestamp: Some(now),
            server_timestamp: Some(now),
            ..Default::default()
        },
        Err(status) => DataValue {
            status: Some(status),
            source_timestamp: Some(now),
            server_timestamp: Some(now),
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_levels_follow_what_bacnet_accepts() {
        let rw = (AccessLevel::CURRENT_READ | AccessLevel::CURRENT_WRITE).bits();
        let r = AccessLevel::CURRENT_READ.bits();
        let level = |t, p, commandable, oos| access_of(t, p, commandable, oos).bits();
        assert_eq!(level(ObjectType::ANALOG_INPUT, P::PRESENT_VALUE, false, false), r, "an input in service");
        assert_eq!(level(ObjectType::ANALOG_INPUT, P::PRESENT_VALUE, false, true), rw, "an input out of service");
        assert_eq!(level(ObjectType::ANALOG_OUTPUT, P::PRESENT_VALUE, true, false), rw, "commandable");
        assert_eq!(level(ObjectType::BINARY_VALUE, P::PRESENT_VALUE, false, false), rw, "a value object");
        assert_eq!(level(ObjectType::ANALOG_VALUE, P::RELINQUISH_DEFAULT, true, false), r);
        assert_eq!(level(ObjectType::ANALOG_INPUT, P::OUT_OF_SERVICE, false, false), rw);
        assert_eq!(level(ObjectType::ANALOG_INPUT, P::STATUS_FLAGS, false, true), r);
        assert!(follows_out_of_service(ObjectType::MULTI_STATE_INPUT, false));
        assert!(!follows_out_of_service(ObjectType::MULTI_STATE_VALUE, false));
        let flags = |oos| {
            AnyValue::primitive(bacnet::Value::BitString(bacnet::BitString::from_bits(&[false, false, false, oos])))
        };
        assert_eq!(out_of_service_in(P::STATUS_FLAGS, &flags(true)), Some(true));
        assert_eq!(out_of_service_in(P::STATUS_FLAGS, &flags(false)), Some(false));
        assert_eq!(
            out_of_service_in(P::OUT_OF_SERVICE, &AnyValue::primitive(bacnet::Value::Boolean(true))),
            Some(true)
        );
        assert_eq!(out_of_service_in(P::PRESENT_VALUE, &AnyValue::primitive(bacnet::Value::Real(1.0))), None);
    }

    #[test]
    fn property_names_follow_opc_30030() {
        assert_eq!(browse_name_of(P::PRESENT_VALUE), "Present_Value");
        assert_eq!(browse_name_of(P::STATUS_FLAGS), "Status_Flags");
        assert_eq!(browse_name_of(P::OUT_OF_SERVICE), "Out_Of_Service");
        assert_eq!(browse_name_of(P::COV_INCREMENT), "COV_Increment");
    }
}
