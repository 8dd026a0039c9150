//! Printing property values the way an integrator reads them: enumerations
//! by their standard names, flags by name, units after numbers.
//!
//! The property (and the object type) decide how an Enumerated or a
//! BitString is named; anything not known here prints as its plain value.

use bacnet::enums::*;
use bacnet::value::{AnyValue, Element, Value};
use bacnet::{BitString, ObjectType};

/// Names of the Status_Flags bits.
const STATUS_FLAGS: [&str; 4] = ["in-alarm", "fault", "overridden", "out-of-service"];

/// True for the object types whose Present_Value is a BACnetBinaryPV.
pub fn is_binary(t: ObjectType) -> bool {
    matches!(t, ObjectType::BINARY_INPUT | ObjectType::BINARY_OUTPUT | ObjectType::BINARY_VALUE)
}

/// True for the object types with a Units property on a numeric Present_Value.
pub fn is_analog(t: ObjectType) -> bool {
    matches!(t, ObjectType::ANALOG_INPUT | ObjectType::ANALOG_OUTPUT | ObjectType::ANALOG_VALUE)
}

/// The standard name of an Enumerated value of `property` (of an object of
/// `object_type`), or its number when this property's enumeration is not
/// known here.
pub fn enum_name(object_type: ObjectType, property: PropertyIdentifier, v: u32) -> String {
    match property {
        PropertyIdentifier::OBJECT_TYPE => ObjectType(v).to_string(),
        PropertyIdentifier::UNITS => EngineeringUnits(v).to_string(),
        PropertyIdentifier::EVENT_STATE => EventState(v).to_string(),
        PropertyIdentifier::RELIABILITY => Reliability(v).to_string(),
        PropertyIdentifier::SEGMENTATION_SUPPORTED => Segmentation(v).to_string(),
        PropertyIdentifier::SYSTEM_STATUS => DeviceStatus(v).to_string(),
        PropertyIdentifier::POLARITY => Polarity(v).to_string(),
        PropertyIdentifier::LAST_RESTART_REASON => RestartReason(v).to_string(),
        PropertyIdentifier::EVENT_TYPE => EventType(v).to_string(),
        PropertyIdentifier::NOTIFY_TYPE => NotifyType(v).to_string(),
        PropertyIdentifier::PROPERTY_LIST => PropertyIdentifier(v).to_string(),
        PropertyIdentifier::PRESENT_VALUE
        | PropertyIdentifier::RELINQUISH_DEFAULT
        | PropertyIdentifier::PRIORITY_ARRAY
            if is_binary(object_type) =>
        {
            BinaryPV(v).to_string()
        }
        _ => v.to_string(),
    }
}

fn bits(property: PropertyIdentifier, b: &BitString) -> String {
    let set: Vec<String> = b
        .iter()
        .enumerate()
        .filter(|(_, on)| *on)
        .map(|(i, _)| match property {
            PropertyIdentifier::STATUS_FLAGS => STATUS_FLAGS.get(i).map_or_else(|| i.to_string(), |s| s.to_string()),
            PropertyIdentifier::PROTOCOL_OBJECT_TYPES_SUPPORTED => ObjectType(i as u32).to_string(),
            PropertyIdentifier::PROTOCOL_SERVICES_SUPPORTED => service_name(i),
            _ => i.to_string(),
        })
        .collect();
    match property {
        PropertyIdentifier::STATUS_FLAGS
        | PropertyIdentifier::PROTOCOL_OBJECT_TYPES_SUPPORTED
        | PropertyIdentifier::PROTOCOL_SERVICES_SUPPORTED => format!("{{{}}}", set.join(", ")),
        _ => Value::BitString(b.clone()).to_string(),
    }
}

/// BACnetServicesSupported bit positions (Clause 21).
fn service_name(bit: usize) -> String {
    const NAMES: [&str; 44] = [
        "acknowledgeAlarm",
        "confirmedCOVNotification",
        "confirmedEventNotification",
        "getAlarmSummary",
        "getEnrollmentSummary",
        "subscribeCOV",
        "atomicReadFile",
        "atomicWriteFile",
        "addListElement",
        "removeListElement",
        "createObject",
        "deleteObject",
        "readProperty",
        "readPropertyConditional",
        "readPropertyMultiple",
        "writeProperty",
        "writePropertyMultiple",
        "deviceCommunicationControl",
        "confirmedPrivateTransfer",
        "confirmedTextMessage",
        "reinitializeDevice",
        "vtOpen",
        "vtClose",
        "vtData",
        "authenticate",
        "requestKey",
        "i-Am",
        "i-Have",
        "unconfirmedCOVNotification",
        "unconfirmedEventNotification",
        "unconfirmedPrivateTransfer",
        "unconfirmedTextMessage",
        "timeSynchronization",
        "who-Has",
        "who-Is",
        "readRange",
        "utcTimeSynchronization",
        "lifeSafetyOperation",
        "subscribeCOVProperty",
        "getEventInformation",
        "writeGroup",
        "subscribeCOVPropertyMultiple",
        "confirmedCOVNotificationMultiple",
        "unconfirmedCOVNotificationMultiple",
    ];
    NAMES.get(bit).map_or_else(|| bit.to_string(), |s| s.to_string())
}

fn primitive(object_type: ObjectType, property: PropertyIdentifier, v: &Value) -> String {
    match v {
        Value::Enumerated(e) => enum_name(object_type, property, *e),
        Value::BitString(b) => bits(property, b),
        Value::CharacterString(s) => s.to_string(),
        other => other.to_string(),
    }
}

fn element(object_type: ObjectType, property: PropertyIdentifier, e: &Element) -> String {
    match e {
        Element::Application(v) => primitive(object_type, property, v),
        other => AnyValue(vec![other.clone()]).to_string(),
    }
}

/// Format a property value.
pub fn value(object_type: ObjectType, property: PropertyIdentifier, v: &AnyValue) -> String {
    match v.0.as_slice() {
        [single] => element(object_type, property, single),
        many => {
            let parts: Vec<String> = many.iter().map(|e| element(object_type, property, e)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// A notification's values, `property: value` joined by commas.
pub fn property_values(object_type: ObjectType, values: &[bacnet::services::PropertyValue]) -> String {
    let each: Vec<String> =
        values.iter().map(|v| format!("{}: {}", v.property, value(object_type, v.property, &v.value))).collect();
    each.join(", ")
}

/// Format a value followed by its units, when `units` is known.
pub fn with_units(text: String, units: Option<EngineeringUnits>) -> String {
    match units {
        Some(u) if u != EngineeringUnits::NO_UNITS => format!("{text} {u}"),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::Value;

    #[test]
    fn enumerations_print_by_their_standard_names() {
        let bv = ObjectType::BINARY_VALUE;
        let pv = AnyValue::primitive(Value::Enumerated(1));
        assert_eq!(value(bv, PropertyIdentifier::PRESENT_VALUE, &pv), "active");
        let units = AnyValue::primitive(Value::Enumerated(62));
        assert_eq!(value(ObjectType::ANALOG_INPUT, PropertyIdentifier::UNITS, &units), "degrees-celsius");
        let flags = AnyValue::primitive(Value::BitString(BitString::from_bits(&[false, true, false, true])));
        assert_eq!(value(bv, PropertyIdentifier::STATUS_FLAGS, &flags), "{fault, out-of-service}");
        let reason = AnyValue::primitive(Value::Enumerated(2));
        assert_eq!(value(ObjectType::DEVICE, PropertyIdentifier::LAST_RESTART_REASON, &reason), "warmstart");
        assert_eq!(with_units("21.5".into(), Some(EngineeringUnits::DEGREES_CELSIUS)), "21.5 degrees-celsius");
    }
}
