//! Notification Class objects (Clause 12.21): who is told of an object's
//! event transitions, at which priority, and whether the transition waits
//! for an acknowledgment.
//!
//! The host owns them, not the object model: a recipient is a network
//! address or a device the host reaches, the operator configures them
//! (`[[device.notification_class]]`), and, where the operator allows it
//! (`writable`), a commissioning tool rewrites Recipient_List, Priority and
//! Ack_Required with WriteProperty (at most [`MAX_RECIPIENTS`] recipients).
//! WritePropertyMultiple does not reach them (write-access-denied, as for
//! every host-served object). Objects of
//! the model name their class by number (their Notification_Class
//! property); the host looks the class up when it sends their
//! notifications. They are appended to the model's Object_List like the
//! Network Port and File objects.
//!
//! Written values last until the gateway restarts: the configuration is
//! what a start begins from (persisting a commissioning tool's writes is
//! not built yet).
//!
//! Must never: accept a Recipient_List entry that does not decode as a
//! BACnetDestination (property/invalid-data-type), or a priority above 255
//! (property/value-out-of-range).

use bacnet::codec::Reader;
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::{BacnetError, Destination, ServiceCodec};
use bacnet::{AnyValue, BitString, CharacterString, Element, ObjectIdentifier, Value};
use std::sync::{Mutex, PoisonError};

/// One configured Notification Class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationClassConfig {
    /// Its instance, which is also its Notification_Class number.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description, if any.
    pub description: Option<String>,
    /// Priority of to-offnormal, to-fault and to-normal notifications
    /// (0 highest … 255 lowest).
    pub priority: [u32; 3],
    /// Which transitions wait for an AcknowledgeAlarm (to-offnormal,
    /// to-fault, to-normal).
    pub ack_required: [bool; 3],
    /// Recipient_List.
    pub recipients: Vec<Destination>,
    /// Let WriteProperty change Priority, Ack_Required and Recipient_List
    /// (whoever writes them can redirect or silence alarms).
    pub writable: bool,
}

/// The most entries a written Recipient_List may hold.
pub const MAX_RECIPIENTS: usize = 64;

/// The Notification Class objects of one device.
#[derive(Debug)]
pub struct NotificationClasses {
    classes: Vec<Mutex<NotificationClassConfig>>,
}

fn error(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError { class, code }
}

fn id(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: ObjectType::NOTIFICATION_CLASS, instance }
}

impl NotificationClasses {
    /// The classes `classes`.
    pub fn new(classes: Vec<NotificationClassConfig>) -> Self {
        NotificationClasses { classes: classes.into_iter().map(Mutex::new).collect() }
    }

    /// Their object identifiers, in Object_List order.
    pub fn ids(&self) -> Vec<ObjectIdentifier> {
        self.classes.iter().map(|c| id(lock(c).instance)).collect()
    }

    /// True when `o` is one of them.
    pub fn has(&self, o: ObjectIdentifier) -> bool {
        self.find(o).is_some()
    }

    /// The class numbered `number`, as it stands now.
    pub fn class(&self, number: u32) -> Option<NotificationClassConfig> {
        self.find(id(number)).map(|c| lock(c).clone())
    }

    fn find(&self, o: ObjectIdentifier) -> Option<&Mutex<NotificationClassConfig>> {
        if o.object_type != ObjectType::NOTIFICATION_CLASS {
            return None;
        }
        self.classes.iter().find(|c| lock(c).instance == o.instance)
    }

    /// Property_List order.
    fn properties(c: &NotificationClassConfig) -> Vec<P> {
        let mut list = vec![
            P::OBJECT_IDENTIFIER,
            P::OBJECT_NAME,
            P::OBJECT_TYPE,
            P::NOTIFICATION_CLASS,
            P::PRIORITY,
            P::ACK_REQUIRED,
            P::RECIPIENT_LIST,
            P::PROPERTY_LIST,
        ];
        if c.description.is_some() {
            list.push(P::DESCRIPTION);
        }
        list
    }

    /// The properties ALL, REQUIRED or OPTIONAL names.
    pub fn expand(&self, o: ObjectIdentifier, which: P) -> Vec<P> {
        let Some(c) = self.find(o) else { return Vec::new() };
        crate::host_object::expand(&Self::properties(&lock(c)), &[P::DESCRIPTION], which)
    }

    /// Read property `p` (element `index` of an array) of class `o`.
    pub fn read(&self, o: ObjectIdentifier, p: P, index: Option<u32>) -> Result<AnyValue, BacnetError> {
        let Some(c) = self.find(o) else { return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)) };
        let c = lock(c);
        let properties = Self::properties(&c);
        if !properties.contains(&p) {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
        }
        match p {
            P::PROPERTY_LIST => return crate::host_object::property_list(&properties, index),
            P::PRIORITY => {
                return match index {
                    None => Ok(AnyValue(
                        c.priority.iter().map(|p| Element::Application(Value::Unsigned(u64::from(*p)))).collect(),
                    )),
                    Some(0) => Ok(Value::Unsigned(3).into()),
                    Some(i @ 1..=3) => Ok(Value::Unsigned(u64::from(c.priority[i as usize - 1])).into()),
                    Some(_) => Err(error(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)),
                };
            }
            _ => {}
        }
        if index.is_some() {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        let text = |s: &str| Value::CharacterString(CharacterString::utf8(s)).into();
        Ok(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(o).into(),
            P::OBJECT_NAME => text(&c.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::NOTIFICATION_CLASS.0).into(),
            P::DESCRIPTION => text(c.description.as_deref().unwrap_or_default()),
            P::NOTIFICATION_CLASS => Value::Unsigned(u64::from(c.instance)).into(),
            P::ACK_REQUIRED => Value::BitString(BitString::from_bits(&c.ack_required)).into(),
            _ => recipient_list(&c.recipients)?,
        })
    }

    /// Write property `p` (element `index` of Priority) of class `o`:
    /// Priority, Ack_Required and Recipient_List are writable.
    pub fn write(&self, o: ObjectIdentifier, p: P, index: Option<u32>, value: &AnyValue) -> Result<(), BacnetError> {
        let Some(c) = self.find(o) else { return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)) };
        let invalid = || error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE);
        let priority = |e: &Element| match e {
            Element::Application(Value::Unsigned(v)) => u32::try_from(*v)
                .ok()
                .filter(|v| *v <= 255)
                .ok_or(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE)),
            _ => Err(invalid()),
        };
        let mut c = lock(c);
        if !Self::properties(&c).contains(&p) {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
        }
        let denied = error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED);
        if !c.writable || ![P::PRIORITY, P::ACK_REQUIRED, P::RECIPIENT_LIST].contains(&p) {
            return Err(denied);
        }
        match (p, index) {
            (P::PRIORITY, None) => {
                let [a, b, d] = value.0.as_slice() else { return Err(invalid()) };
                c.priority = [priority(a)?, priority(b)?, priority(d)?];
            }
            (P::PRIORITY, Some(i @ 1..=3)) => {
                let [e] = value.0.as_slice() else { return Err(invalid()) };
                c.priority[i as usize - 1] = priority(e)?;
            }
            // Index 0, the length of a fixed array, is not written.
            (P::PRIORITY, Some(0)) => return Err(denied),
            (P::PRIORITY, Some(_)) => return Err(error(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)),
            (_, Some(_)) => return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)),
            (P::ACK_REQUIRED, None) => match value.as_primitive() {
                Some(Value::BitString(bits)) if bits.len() == 3 => {
                    c.ack_required = [bits.get(0), bits.get(1), bits.get(2)];
                }
                Some(Value::BitString(_)) => return Err(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE)),
                _ => return Err(invalid()),
            },
            _ => c.recipients = decode_recipient_list(value)?,
        }
        tracing::info!(class = c.instance, property = %p, "Notification Class written");
        Ok(())
    }
}

fn lock(c: &Mutex<NotificationClassConfig>) -> std::sync::MutexGuard<'_, NotificationClassConfig> {
    c.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Recipient_List as a value: the encoded destinations one after the other.
fn recipient_list(recipients: &[Destination]) -> Result<AnyValue, BacnetError> {
    crate::host_object::encoded(|out| recipients.iter().for_each(|d| d.encode(out)))
}

/// A written Recipient_List: every entry a whole BACnetDestination with
/// seven valid days and three transitions.
fn decode_recipient_list(value: &AnyValue) -> Result<Vec<Destination>, BacnetError> {
    let invalid = error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE);
    let octets = crate::host_object::octets(value);
    let mut r = Reader::new(&octets);
    let mut list = Vec::new();
    while !r.is_empty() {
        if list.len() == MAX_RECIPIENTS {
            return Err(error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_WRITE_PROPERTY));
        }
        let d = Destination::decode_from(&mut r).map_err(|_| invalid)?;
        if d.valid_days.len() != 7 || d.transitions.len() != 3 {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE));
        }
        list.push(d);
    }
    Ok(list)
}
