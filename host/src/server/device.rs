//! The Device object properties the host owns, whatever the object model
//! says: they describe the protocol stack, which the host implements.

use bacnet::enums::{ObjectType, PropertyIdentifier as P, Segmentation};
use bacnet::{AnyValue, BitString, Element, ObjectIdentifier, Value};

/// Protocol_Revision this device claims: 22 (ASHRAE 135-2016).
pub const PROTOCOL_REVISION: u64 = 22;

/// Max_APDU_Length_Accepted on BACnet/IP.
pub const MAX_APDU: u32 = 1476;

/// Bits in Protocol_Services_Supported and Protocol_Object_Types_Supported
/// at Protocol_Revision 22 (as bacnet-stack's revision table has them).
pub const SERVICES_BITS: usize = 47;
/// See [`SERVICES_BITS`].
pub const OBJECT_TYPE_BITS: usize = 63;

/// Services this device executes, as Protocol_Services_Supported bit
/// numbers (Clause 21 `BACnetServicesSupported`).
pub const SERVICES_SUPPORTED: [usize; 8] = [
    12, // readProperty
    14, // readPropertyMultiple
    15, // writeProperty
    16, // writePropertyMultiple
    26, // i-Am
    27, // i-Have
    33, // who-Has
    34, // who-Is
];

/// Host settings for the served device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Device instance to present on the network; `None` keeps the model's.
    pub instance: Option<u32>,
    /// APDU_Timeout in milliseconds.
    pub apdu_timeout_ms: u32,
    /// Number_Of_APDU_Retries.
    pub apdu_retries: u8,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig { instance: None, apdu_timeout_ms: 3000, apdu_retries: 3 }
    }
}

/// The host-owned part of the Device object.
#[derive(Debug)]
pub struct HostDevice {
    /// The Device object identifier on the network.
    pub id: ObjectIdentifier,
    /// Settings.
    pub config: DeviceConfig,
    /// Object types the model serves.
    pub object_types: Vec<ObjectType>,
    /// Database_Revision: bumped whenever an Object_Name is written (Clause
    /// 12.11.35). Object creation and deletion will bump it too once the
    /// host consumes the model's objects-changed feed.
    pub database_revision: std::sync::atomic::AtomicU32,
    /// Vendor_Identifier, the same in the I-Am and in the property.
    pub vendor_id: u16,
}

impl HostDevice {
    /// The properties the host answers for the Device object.
    pub const OWNED: [P; 11] = [
        P::VENDOR_IDENTIFIER,
        P::PROTOCOL_VERSION,
        P::PROTOCOL_REVISION,
        P::PROTOCOL_SERVICES_SUPPORTED,
        P::PROTOCOL_OBJECT_TYPES_SUPPORTED,
        P::MAX_APDU_LENGTH_ACCEPTED,
        P::SEGMENTATION_SUPPORTED,
        P::APDU_TIMEOUT,
        P::NUMBER_OF_APDU_RETRIES,
        P::DEVICE_ADDRESS_BINDING,
        P::DATABASE_REVISION,
    ];

    /// True when the host answers `p` for the Device object.
    pub fn owns(p: P) -> bool {
        Self::OWNED.contains(&p)
    }

    /// The value of a host-owned property.
    pub fn read(&self, p: P) -> Option<AnyValue> {
        Some(match p {
            P::VENDOR_IDENTIFIER => Value::Unsigned(self.vendor_id as u64).into(),
            P::PROTOCOL_VERSION => Value::Unsigned(1).into(),
            P::PROTOCOL_REVISION => Value::Unsigned(PROTOCOL_REVISION).into(),
            P::PROTOCOL_SERVICES_SUPPORTED => {
                let mut b = BitString::with_len(SERVICES_BITS);
                for bit in SERVICES_SUPPORTED {
                    b.set(bit, true);
                }
                Value::BitString(b).into()
            }
            P::PROTOCOL_OBJECT_TYPES_SUPPORTED => {
                let mut b = BitString::with_len(OBJECT_TYPE_BITS);
                b.set(ObjectType::DEVICE.0 as usize, true);
                for t in &self.object_types {
                    if (t.0 as usize) < OBJECT_TYPE_BITS {
                        b.set(t.0 as usize, true);
                    }
                }
                Value::BitString(b).into()
            }
            P::MAX_APDU_LENGTH_ACCEPTED => Value::Unsigned(MAX_APDU as u64).into(),
            P::SEGMENTATION_SUPPORTED => Value::Enumerated(Segmentation::NO_SEGMENTATION.0).into(),
            P::APDU_TIMEOUT => Value::Unsigned(self.config.apdu_timeout_ms as u64).into(),
            P::NUMBER_OF_APDU_RETRIES => Value::Unsigned(self.config.apdu_retries as u64).into(),
            P::DEVICE_ADDRESS_BINDING => AnyValue(vec![]),
            P::DATABASE_REVISION => {
                Value::Unsigned(self.database_revision.load(std::sync::atomic::Ordering::Relaxed) as u64).into()
            }
            _ => return None,
        })
    }

    /// Add the host-owned properties to a Property_List value from the model.
    pub fn extend_property_list(list: &mut AnyValue) {
        for p in Self::OWNED {
            let e = Element::Application(Value::Enumerated(p.0));
            if !list.0.contains(&e) {
                list.0.push(e);
            }
        }
    }
}
