//! OPC 30030's BACnet object types, by the NodeIds of its V2 nodeset
//! (namespace `http://opcfoundation.org/UA/BACnet_V2/`, model 2.00.1 of
//! 2023-05-17): a device is a `BACnetDeviceType`, an Analog Input a
//! `BACnetAnalogInputType`, the internetwork object a
//! `BACnetInternetworkType`, so a client that knows the companion
//! specification finds the objects by their type.
//!
//! Partial, on purpose and said so in the README: the types are made with
//! their NodeIds, names and subtype hierarchy only, not the nodeset's
//! instance declarations (its Status_Flags is a `BACnetStatusFlags`
//! OptionSet and Object_Identifier a `BACnetObjectIdentifier`, where the
//! gateway's variables are UInt32 bit sets and numbers; its Event_State
//! sits in an `EventReporting` object). Object types the gateway does not
//! map are `BACnetObjectTypeUnknown`, as the specification says.
//!
//! Must never: give a node a type id that is not the nodeset's, or an
//! abstract type.

use bacnet::enums::ObjectType;
use opcua::server::address_space::{AddressSpace, ObjectTypeBuilder};
use opcua::types::{NodeId, ObjectTypeId, QualifiedName};

/// The companion specification's namespace.
pub const NAMESPACE_URI: &str = "http://opcfoundation.org/UA/BACnet_V2/";

/// `BACnetInternetworkType`.
pub const INTERNETWORK_TYPE: u32 = 1030;
/// `BACnetDeviceType`.
pub const DEVICE_TYPE: u32 = 1011;
/// `BACnetObjectTypeUnknown`: an object type with no type of its own here.
pub const UNKNOWN_TYPE: u32 = 101024;

/// A type of the nodeset: (NodeId number, BrowseName, abstract, supertype:
/// another row's number, or 0 for BaseObjectType).
type Row = (u32, &'static str, bool, u32);

/// The types made, supertypes before subtypes.
const TYPES: &[Row] = &[
    (1002, "BACnetObjectType", true, 0),
    (1004, "BACnetAnalogType", true, 1002),
    (1005, "BACnetAnalogInputType", false, 1004),
    (1006, "BACnetAnalogOutputType", false, 1004),
    (1007, "BACnetAnalogValueType", false, 1004),
    (1012, "BACnetBinaryType", true, 1002),
    (1013, "BACnetBinaryInputType", false, 1012),
    (1014, "BACnetBinaryOutputType", false, 1012),
    (1015, "BACnetBinaryValueType", false, 1012),
    (1018, "BACnetMultiStateType", true, 1002),
    (1019, "BACnetMultiStateInputType", false, 1018),
    (1020, "BACnetMultiStateOutputType", false, 1018),
    (1021, "BACnetMultiStateValueType", false, 1018),
    (1008, "BACnetCalendarType", false, 1002),
    (DEVICE_TYPE, "BACnetDeviceType", false, 1002),
    (101006, "BACnetEventEnrollmentType", false, 1002),
    (101001, "BACnetLoopType", false, 1002),
    (1022, "BACnetScheduleType", false, 1002),
    (1048, "BACnetNotifierType", true, 1002),
    (1024, "BACnetNotificationClassType", false, 1048),
    (101014, "BACnetLogType", true, 1002),
    (101018, "BACnetEventLogType", false, 101014),
    (101026, "BACnetTrendLogBaseType", true, 101014),
    (101017, "BACnetTrendLogType", false, 101026),
    (101027, "BACnetTrendLogMultipleType", false, 101026),
    (UNKNOWN_TYPE, "BACnetObjectTypeUnknown", false, 1002),
    (INTERNETWORK_TYPE, "BACnetInternetworkType", false, 0),
];

/// The NodeId number of the type an object of type `t` has.
pub fn type_of(t: ObjectType) -> u32 {
    use ObjectType as T;
    match t {
        T::ANALOG_INPUT => 1005,
        T::ANALOG_OUTPUT => 1006,
        T::ANALOG_VALUE => 1007,
        T::BINARY_INPUT => 1013,
        T::BINARY_OUTPUT => 1014,
        T::BINARY_VALUE => 1015,
        T::MULTI_STATE_INPUT => 1019,
        T::MULTI_STATE_OUTPUT => 1020,
        T::MULTI_STATE_VALUE => 1021,
        T::CALENDAR => 1008,
        T::DEVICE => DEVICE_TYPE,
        T::EVENT_ENROLLMENT => 101006,
        T::LOOP => 101001,
        T::SCHEDULE => 1022,
        T::NOTIFICATION_CLASS => 1024,
        T::EVENT_LOG => 101018,
        T::TREND_LOG => 101017,
        T::TREND_LOG_MULTIPLE => 101027,
        _ => UNKNOWN_TYPE,
    }
}

/// Make the types in `space`, in namespace `namespace` (the index the
/// server gave [`NAMESPACE_URI`]).
pub fn add_types(space: &mut AddressSpace, namespace: u16) {
    for &(id, name, is_abstract, supertype) in TYPES {
        let supertype = match supertype {
            0 => NodeId::from(ObjectTypeId::BaseObjectType),
            n => NodeId::new(namespace, n),
        };
        ObjectTypeBuilder::new(&NodeId::new(namespace, id), QualifiedName::new(namespace, name), name)
            .is_abstract(is_abstract)
            .subtype_of(supertype)
            .insert(space);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_gets_a_concrete_type_of_the_table() {
        let concrete = |n: u32| TYPES.iter().any(|&(id, _, is_abstract, _)| id == n && !is_abstract);
        for t in 0..64u32 {
            let t = ObjectType(t);
            assert!(concrete(type_of(t)), "{t}: {}", type_of(t));
        }
        assert!(concrete(INTERNETWORK_TYPE));
        // Supertypes come first, and are in the table.
        for (i, &(_, name, _, supertype)) in TYPES.iter().enumerate() {
            assert!(supertype == 0 || TYPES[..i].iter().any(|r| r.0 == supertype), "{name}");
        }
    }
}
