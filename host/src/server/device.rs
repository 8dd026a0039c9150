//! The Device object the host serves, with the properties Clause 12.11
//! requires of it.

use bacnet::enums::{DeviceStatus, ObjectType, PropertyIdentifier as P, Segmentation};
use bacnet::{AnyValue, BitString, CharacterString, Element, ObjectIdentifier, Value};

/// Protocol_Revision this device claims: 22 (ASHRAE 135-2016).
pub const PROTOCOL_REVISION: u64 = 22;

/// Identity of the served device.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    /// Device instance (0..=4,194,302).
    pub instance: u32,
    /// Object_Name, unique on the internetwork.
    pub name: String,
    /// Vendor_Identifier. 999 is not assigned by ASHRAE; set yours.
    pub vendor_id: u16,
    /// Description.
    pub description: String,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            instance: 389_001,
            name: "Trellis gateway".into(),
            vendor_id: 999,
            description: "Trellis BACnet gateway (device object only; object models arrive with plugins)".into(),
        }
    }
}

/// Services this device executes, as Protocol_Services_Supported bit numbers.
pub const SERVICES_SUPPORTED: [usize; 4] = [
    12, // readProperty
    14, // readPropertyMultiple
    26, // i-Am (initiated)
    34, // who-Is
];

impl DeviceConfig {
    /// The Device object's identifier.
    pub fn object_id(&self) -> ObjectIdentifier {
        ObjectIdentifier::from_u32((ObjectType::DEVICE.0 << 22) | (self.instance & ObjectIdentifier::MAX_INSTANCE))
    }

    /// Every property the Device object has, in Property_List order
    /// (Object_Identifier, Object_Name, Object_Type and Property_List come
    /// first, as RPM `all` expects).
    pub fn properties(&self) -> &'static [P] {
        &[
            P::OBJECT_IDENTIFIER,
            P::OBJECT_NAME,
            P::OBJECT_TYPE,
            P::PROPERTY_LIST,
            P::SYSTEM_STATUS,
            P::VENDOR_NAME,
            P::VENDOR_IDENTIFIER,
            P::MODEL_NAME,
            P::FIRMWARE_REVISION,
            P::APPLICATION_SOFTWARE_VERSION,
            P::DESCRIPTION,
            P::PROTOCOL_VERSION,
            P::PROTOCOL_REVISION,
            P::PROTOCOL_SERVICES_SUPPORTED,
            P::PROTOCOL_OBJECT_TYPES_SUPPORTED,
            P::OBJECT_LIST,
            P::MAX_APDU_LENGTH_ACCEPTED,
            P::SEGMENTATION_SUPPORTED,
            P::APDU_TIMEOUT,
            P::NUMBER_OF_APDU_RETRIES,
            P::DEVICE_ADDRESS_BINDING,
            P::DATABASE_REVISION,
        ]
    }

    /// Properties that are BACnetARRAYs (indexable).
    pub fn is_array(&self, p: P) -> bool {
        matches!(p, P::OBJECT_LIST)
    }

    /// The value of `p`, or `None` if the Device has no such property.
    pub fn read(&self, p: P) -> Option<AnyValue> {
        let s = |t: &str| Value::CharacterString(CharacterString::utf8(t)).into();
        Some(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(self.object_id()).into(),
            P::OBJECT_NAME => s(&self.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::DEVICE.0).into(),
            P::PROPERTY_LIST => AnyValue(
                self.properties()[4..] // Property_List omits the first three and itself
                    .iter()
                    .chain(&[])
                    .map(|p| Element::Application(Value::Enumerated(p.0)))
                    .collect(),
            ),
            P::SYSTEM_STATUS => Value::Enumerated(DeviceStatus::OPERATIONAL.0).into(),
            P::VENDOR_NAME => s("Trellis"),
            P::VENDOR_IDENTIFIER => Value::Unsigned(self.vendor_id as u64).into(),
            P::MODEL_NAME => s("trellis"),
            P::FIRMWARE_REVISION => s(env!("CARGO_PKG_VERSION")),
            P::APPLICATION_SOFTWARE_VERSION => s(env!("CARGO_PKG_VERSION")),
            P::DESCRIPTION => s(&self.description),
            P::PROTOCOL_VERSION => Value::Unsigned(1).into(),
            P::PROTOCOL_REVISION => Value::Unsigned(PROTOCOL_REVISION).into(),
            P::PROTOCOL_SERVICES_SUPPORTED => {
                let mut b = BitString::with_len(44);
                for bit in SERVICES_SUPPORTED {
                    b.set(bit, true);
                }
                Value::BitString(b).into()
            }
            P::PROTOCOL_OBJECT_TYPES_SUPPORTED => {
                let mut b = BitString::with_len(65);
                b.set(ObjectType::DEVICE.0 as usize, true);
                Value::BitString(b).into()
            }
            P::OBJECT_LIST => Value::ObjectIdentifier(self.object_id()).into(),
            P::MAX_APDU_LENGTH_ACCEPTED => Value::Unsigned(1476).into(),
            P::SEGMENTATION_SUPPORTED => Value::Enumerated(Segmentation::NO_SEGMENTATION.0).into(),
            P::APDU_TIMEOUT => Value::Unsigned(3000).into(),
            P::NUMBER_OF_APDU_RETRIES => Value::Unsigned(3).into(),
            P::DEVICE_ADDRESS_BINDING => AnyValue(vec![]),
            P::DATABASE_REVISION => Value::Unsigned(0).into(),
            _ => return None,
        })
    }
}
