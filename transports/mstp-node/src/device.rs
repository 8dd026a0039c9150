//! The device's objects: a Device object and a handful of points, in a table
//! the application owns, with the standard's required properties
//! (Clause 12) read and written here.
//!
//! Points are Analog Input, Analog Value, Binary Input and Binary Value
//! objects. Present_Value of a value object is writable from the network
//! (not commandable: a priority is accepted and ignored, as 15.9.1.1.5 says
//! for a non-commandable property); an input's only while Out_Of_Service is
//! true. Out_Of_Service is writable on every point. A successful write sets
//! [`Point::changed`] for the application to act on.

use crate::write::Writer;
use bacnet::codec::tag::{TagClass, TagKind, app};
use bacnet::enums::{
    DeviceStatus, EngineeringUnits, ErrorClass, ErrorCode, EventState, ObjectType, Polarity, PropertyIdentifier as P,
    Segmentation,
};

/// Protocol_Revision claimed (ASHRAE 135-2016), as the gateway does.
pub const PROTOCOL_REVISION: u32 = 22;
/// Max_APDU_Length_Accepted: what fits a standard MS/TP frame.
pub const MAX_APDU: u32 = 480;
/// The instance a ReadProperty may name instead of the device's own
/// (Clause 15.5.2: "the device that receives it").
const WILDCARD_INSTANCE: u32 = 4_194_303;

/// What kind of point, with its kind's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// Analog Input: Present_Value is a REAL read from hardware.
    AnalogInput(EngineeringUnits),
    /// Analog Value: a REAL the network may write.
    AnalogValue(EngineeringUnits),
    /// Binary Input: Present_Value is inactive/active, with a Polarity.
    BinaryInput,
    /// Binary Value: inactive/active, writable.
    BinaryValue,
}

impl PointKind {
    fn object_type(self) -> ObjectType {
        match self {
            PointKind::AnalogInput(_) => ObjectType::ANALOG_INPUT,
            PointKind::AnalogValue(_) => ObjectType::ANALOG_VALUE,
            PointKind::BinaryInput => ObjectType::BINARY_INPUT,
            PointKind::BinaryValue => ObjectType::BINARY_VALUE,
        }
    }

    fn is_analog(self) -> bool {
        matches!(self, PointKind::AnalogInput(_) | PointKind::AnalogValue(_))
    }

    fn is_input(self) -> bool {
        matches!(self, PointKind::AnalogInput(_) | PointKind::BinaryInput)
    }
}

/// One object of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Its type and units.
    pub kind: PointKind,
    /// Its instance number (0..=4,194,302).
    pub instance: u32,
    /// Object_Name (unique in the device).
    pub name: &'static str,
    /// Present_Value: an analog point's REAL; a binary point's is non-zero
    /// for active.
    pub present_value: f32,
    /// Out_Of_Service.
    pub out_of_service: bool,
    /// Set when the network wrote Present_Value or Out_Of_Service; the
    /// application clears it.
    pub changed: bool,
}

impl Point {
    /// A point of `kind`, in service.
    pub const fn new(kind: PointKind, instance: u32, name: &'static str, present_value: f32) -> Point {
        Point { kind, instance, name, present_value, out_of_service: false, changed: false }
    }

    fn id(&self) -> u32 {
        object_id(self.kind.object_type(), self.instance)
    }

    fn active(&self) -> bool {
        self.present_value != 0.0
    }
}

/// The Device object's identity and the point table.
#[derive(Debug)]
pub struct Device<'a> {
    /// The device instance (0..=4,194,302).
    pub instance: u32,
    /// Object_Name, unique on the internetwork.
    pub name: &'static str,
    /// Vendor_Name.
    pub vendor_name: &'static str,
    /// Vendor_Identifier, as ASHRAE assigned it.
    pub vendor_identifier: u16,
    /// Model_Name.
    pub model_name: &'static str,
    /// Firmware_Revision.
    pub firmware_revision: &'static str,
    /// Application_Software_Version.
    pub application_software_version: &'static str,
    /// Database_Revision; the application raises it when the table's
    /// configuration changes.
    pub database_revision: u32,
    /// The points.
    pub points: &'a mut [Point],
}

/// The data link's settings the Device object shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    pub max_master: u8,
}

/// An Error PDU's class and code.
pub(crate) type Failure = (ErrorClass, ErrorCode);

const DEVICE_PROPERTIES: [P; 19] = [
    P::SYSTEM_STATUS,
    P::VENDOR_NAME,
    P::VENDOR_IDENTIFIER,
    P::MODEL_NAME,
    P::FIRMWARE_REVISION,
    P::APPLICATION_SOFTWARE_VERSION,
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
    P::MAX_MASTER,
    P::MAX_INFO_FRAMES,
];

/// The points' Property_Lists: what every point has, then Units (analog)
/// or Polarity (Binary Input).
const ANALOG_PROPERTIES: [P; 5] = [P::PRESENT_VALUE, P::STATUS_FLAGS, P::EVENT_STATE, P::OUT_OF_SERVICE, P::UNITS];
const BINARY_INPUT_PROPERTIES: [P; 5] =
    [P::PRESENT_VALUE, P::STATUS_FLAGS, P::EVENT_STATE, P::OUT_OF_SERVICE, P::POLARITY];

/// Protocol_Services_Supported: readProperty (12), writeProperty (15),
/// i-Am (26), who-Is (34), in 47 bits as Protocol_Revision 22 has them.
const SERVICES: [u8; 5] = [0x00, 0x09, 0x00, 0x20, 0x20];
const SERVICES_BITS: usize = 47;
/// Protocol_Object_Types_Supported: analog-input (0), analog-value (2),
/// binary-input (3), binary-value (5), device (8), in 63 bits.
const OBJECT_TYPES: [u8; 2] = [0xB4, 0x80];
const OBJECT_TYPE_BITS: usize = 63;

/// An Object_Identifier's 32 bits.
pub(crate) fn object_id(t: ObjectType, instance: u32) -> u32 {
    (t.0 << 22) | (instance & 0x3F_FFFF)
}

/// Which object a request names.
#[derive(Clone, Copy)]
enum Target {
    Device,
    Point(usize),
}

impl Device<'_> {
    /// The Device object's identifier.
    pub fn object_identifier(&self) -> u32 {
        object_id(ObjectType::DEVICE, self.instance)
    }

    fn target(&self, id: u32, wildcard: bool) -> Result<Target, Failure> {
        let device = self.object_identifier();
        if id == device || (wildcard && id == object_id(ObjectType::DEVICE, WILDCARD_INSTANCE)) {
            return Ok(Target::Device);
        }
        match self.points.iter().position(|p| p.id() == id) {
            Some(i) => Ok(Target::Point(i)),
            None => Err((ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)),
        }
    }

    /// Encode property `p` (element `index` of an array) of object `id`.
    pub(crate) fn read(
        &self,
        id: u32,
        p: P,
        index: Option<u32>,
        link: Link,
        w: &mut Writer<'_>,
    ) -> Result<(), Failure> {
        let target = self.target(id, true)?;
        let (id, name, t) = match target {
            Target::Device => (self.object_identifier(), self.name, ObjectType::DEVICE),
            Target::Point(i) => {
                let point = &self.points[i];
                (point.id(), point.name, point.kind.object_type())
            }
        };
        let array_len = match p {
            P::OBJECT_LIST if matches!(target, Target::Device) => Some(1 + self.points.len()),
            P::PROPERTY_LIST => Some(self.property_list(target).len()),
            _ => None,
        };
        if let Some(len) = array_len {
            return match index {
                None => {
                    for i in 0..len {
                        self.array_element(target, p, i, w);
                    }
                    Ok(())
                }
                Some(0) => {
                    w.app_unsigned(len as u32);
                    Ok(())
                }
                Some(i) if (i as usize) <= len => {
                    self.array_element(target, p, i as usize - 1, w);
                    Ok(())
                }
                Some(_) => Err((ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)),
            };
        }
        match p {
            P::OBJECT_IDENTIFIER => w.app_object_id(id),
            P::OBJECT_NAME => w.app_character_string(name),
            P::OBJECT_TYPE => w.app_enumerated(t.0),
            _ => match target {
                Target::Device => self.read_device(p, link, w)?,
                Target::Point(i) => read_point(&self.points[i], p, w)?,
            },
        }
        if index.is_some() {
            return Err((ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        Ok(())
    }

    fn property_list(&self, target: Target) -> &'static [P] {
        match target {
            Target::Device => &DEVICE_PROPERTIES,
            Target::Point(i) => match self.points[i].kind {
                PointKind::AnalogInput(_) | PointKind::AnalogValue(_) => &ANALOG_PROPERTIES,
                PointKind::BinaryInput => &BINARY_INPUT_PROPERTIES,
                PointKind::BinaryValue => &ANALOG_PROPERTIES[..4],
            },
        }
    }

    fn array_element(&self, target: Target, p: P, i: usize, w: &mut Writer<'_>) {
        if p == P::PROPERTY_LIST {
            w.app_enumerated(self.property_list(target)[i].0);
        } else if i == 0 {
            w.app_object_id(self.object_identifier());
        } else {
            w.app_object_id(self.points[i - 1].id());
        }
    }

    fn read_device(&self, p: P, link: Link, w: &mut Writer<'_>) -> Result<(), Failure> {
        match p {
            P::SYSTEM_STATUS => w.app_enumerated(DeviceStatus::OPERATIONAL.0),
            P::VENDOR_NAME => w.app_character_string(self.vendor_name),
            P::VENDOR_IDENTIFIER => w.app_unsigned(u32::from(self.vendor_identifier)),
            P::MODEL_NAME => w.app_character_string(self.model_name),
            P::FIRMWARE_REVISION => w.app_character_string(self.firmware_revision),
            P::APPLICATION_SOFTWARE_VERSION => w.app_character_string(self.application_software_version),
            P::PROTOCOL_VERSION => w.app_unsigned(1),
            P::PROTOCOL_REVISION => w.app_unsigned(PROTOCOL_REVISION),
            P::PROTOCOL_SERVICES_SUPPORTED => w.app_bit_string(SERVICES_BITS, &SERVICES),
            P::PROTOCOL_OBJECT_TYPES_SUPPORTED => w.app_bit_string(OBJECT_TYPE_BITS, &OBJECT_TYPES),
            P::MAX_APDU_LENGTH_ACCEPTED => w.app_unsigned(MAX_APDU),
            P::SEGMENTATION_SUPPORTED => w.app_enumerated(Segmentation::NO_SEGMENTATION.0),
            // This device sends no confirmed requests; these describe how it
            // would.
            P::APDU_TIMEOUT => w.app_unsigned(3000),
            P::NUMBER_OF_APDU_RETRIES => w.app_unsigned(0),
            // An empty list: it binds to no device.
            P::DEVICE_ADDRESS_BINDING => {}
            P::DATABASE_REVISION => w.app_unsigned(self.database_revision),
            P::MAX_MASTER => w.app_unsigned(u32::from(link.max_master)),
            P::MAX_INFO_FRAMES => w.app_unsigned(1),
            _ => return Err(unknown_property()),
        }
        Ok(())
    }

    /// Write property `p` of object `id` from its application-tagged
    /// `value` (the octets between the opening and closing tag 3).
    pub(crate) fn write(&mut self, id: u32, p: P, index: Option<u32>, value: &[u8]) -> Result<(), Failure> {
        let point = match self.target(id, false)? {
            Target::Device => {
                return Err(if DEVICE_PROPERTIES.contains(&p) || is_common(p) { denied() } else { unknown_property() });
            }
            Target::Point(i) => &mut self.points[i],
        };
        let known = is_common(p) || p == P::PROPERTY_LIST || read_point(point, p, &mut Writer::new(&mut [])).is_ok();
        if !known {
            return Err(unknown_property());
        }
        if index.is_some() && p != P::PROPERTY_LIST {
            return Err((ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        match p {
            P::PRESENT_VALUE if point.kind.is_input() && !point.out_of_service => Err(denied()),
            P::PRESENT_VALUE if point.kind.is_analog() => {
                let v = f32::from_be_bytes(primitive::<4>(value, app::REAL)?);
                if v.is_nan() {
                    return Err((ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE));
                }
                point.present_value = v;
                point.changed = true;
                Ok(())
            }
            P::PRESENT_VALUE => {
                let [v] = primitive::<1>(value, app::ENUMERATED)?;
                if v > 1 {
                    return Err((ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE));
                }
                point.present_value = f32::from(v);
                point.changed = true;
                Ok(())
            }
            P::OUT_OF_SERVICE => {
                let v = boolean(value)?;
                point.out_of_service = v;
                point.changed = true;
                Ok(())
            }
            _ => Err(denied()),
        }
    }
}

fn is_common(p: P) -> bool {
    matches!(p, P::OBJECT_IDENTIFIER | P::OBJECT_NAME | P::OBJECT_TYPE | P::PROPERTY_LIST)
}

fn unknown_property() -> Failure {
    (ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)
}

fn denied() -> Failure {
    (ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
}

fn invalid_data_type() -> Failure {
    (ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE)
}

fn read_point(point: &Point, p: P, w: &mut Writer<'_>) -> Result<(), Failure> {
    match (p, point.kind) {
        (P::PRESENT_VALUE, kind) if kind.is_analog() => w.app_real(point.present_value),
        (P::PRESENT_VALUE, _) => w.app_enumerated(u32::from(point.active())),
        // in-alarm, fault, overridden, out-of-service.
        (P::STATUS_FLAGS, _) => w.app_bit_string(4, &[if point.out_of_service { 0x10 } else { 0 }]),
        (P::EVENT_STATE, _) => w.app_enumerated(EventState::NORMAL.0),
        (P::OUT_OF_SERVICE, _) => w.app_boolean(point.out_of_service),
        (P::UNITS, PointKind::AnalogInput(u) | PointKind::AnalogValue(u)) => w.app_enumerated(u.0),
        (P::POLARITY, PointKind::BinaryInput) => w.app_enumerated(Polarity::NORMAL.0),
        _ => return Err(unknown_property()),
    }
    Ok(())
}

/// The one primitive of application tag `tag` with exactly `N` content
/// octets (an ENUMERATED of up to `N`, zero-extended) that `value` holds.
fn primitive<const N: usize>(value: &[u8], tag: u8) -> Result<[u8; N], Failure> {
    let mut r = bacnet::codec::Reader::new(value);
    let (t, content) = bacnet::codec::tag::read_tagged(&mut r).map_err(|_| invalid_data_type())?;
    if t.class != TagClass::Application || t.number != tag || !r.is_empty() {
        return Err(invalid_data_type());
    }
    let mut out = [0; N];
    if tag == app::REAL {
        if content.len() != N {
            return Err(invalid_data_type());
        }
        out.copy_from_slice(content);
        return Ok(out);
    }
    // An unsigned-like content: leading zeros allowed, the value must fit.
    let significant = content.iter().position(|&b| b != 0).map_or(&[][..], |i| &content[i..]);
    if significant.len() > N || content.is_empty() {
        return Err((ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE));
    }
    out[N - significant.len()..].copy_from_slice(significant);
    Ok(out)
}

fn boolean(value: &[u8]) -> Result<bool, Failure> {
    let mut r = bacnet::codec::Reader::new(value);
    let t = bacnet::codec::tag::read_tag(&mut r).map_err(|_| invalid_data_type())?;
    match (t.class, t.number, t.kind) {
        (TagClass::Application, app::BOOLEAN, TagKind::Primitive(v)) if r.is_empty() && v <= 1 => Ok(v == 1),
        _ => Err(invalid_data_type()),
    }
}
