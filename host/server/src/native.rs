//! A Device object with no other objects, served natively: the model
//! `trellis run --no-plugin` uses, and the reference implementation of the
//! [`ObjectModel`] contract for tests.

use bacnet::enums::{DeviceStatus, ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::BacnetError;
use bacnet::{AnyValue, CharacterString, Element, ObjectIdentifier, Value};
use trellis_model::{ModelError, ObjectInfo, ObjectModel, PropertyRead, PropertyTarget, PropertyWrite};

/// A device with only its Device object.
#[derive(Debug, Clone)]
pub struct DeviceOnlyModel {
    id: ObjectIdentifier,
    name: String,
}

impl DeviceOnlyModel {
    /// A device `instance` named `name`.
    pub fn new(instance: u32, name: &str) -> Self {
        let id = ObjectIdentifier::from_u32((ObjectType::DEVICE.0 << 22) | (instance & ObjectIdentifier::MAX_INSTANCE));
        DeviceOnlyModel { id, name: name.to_string() }
    }

    const PROPERTIES: [P; 10] = [
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
    ];

    fn value(&self, p: P) -> Option<AnyValue> {
        let s = |t: &str| Value::CharacterString(CharacterString::utf8(t)).into();
        Some(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(self.id).into(),
            P::OBJECT_NAME => s(&self.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::DEVICE.0).into(),
            P::PROPERTY_LIST => {
                AnyValue(Self::PROPERTIES[4..].iter().map(|p| Element::Application(Value::Enumerated(p.0))).collect())
            }
            P::SYSTEM_STATUS => Value::Enumerated(DeviceStatus::OPERATIONAL.0).into(),
            P::VENDOR_NAME => s("Trellis"),
            P::VENDOR_IDENTIFIER => Value::Unsigned(999).into(),
            P::MODEL_NAME => s("trellis"),
            P::FIRMWARE_REVISION | P::APPLICATION_SOFTWARE_VERSION => s(env!("CARGO_PKG_VERSION")),
            P::OBJECT_LIST => Value::ObjectIdentifier(self.id).into(),
            _ => return None,
        })
    }

    fn read_one(&self, t: PropertyTarget) -> Vec<PropertyRead> {
        let err = |class, code| Err(BacnetError { class, code });
        if t.object != self.id {
            return vec![PropertyRead { target: t, outcome: err(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT) }];
        }
        if matches!(t.property, P::ALL | P::REQUIRED | P::OPTIONAL) {
            let mut props: Vec<P> = Self::PROPERTIES.to_vec();
            props.push(P::OBJECT_LIST);
            return props
                .into_iter()
                .filter(|_| t.property != P::OPTIONAL)
                .map(|p| PropertyRead {
                    target: PropertyTarget { property: p, array_index: None, ..t },
                    outcome: self
                        .value(p)
                        .ok_or(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::UNKNOWN_PROPERTY }),
                })
                .collect();
        }
        let outcome = match (self.value(t.property), t.array_index) {
            (None, _) => err(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY),
            (Some(v), None) => Ok(v),
            (Some(v), Some(i)) if matches!(t.property, P::OBJECT_LIST | P::PROPERTY_LIST) => match i {
                0 => Ok(Value::Unsigned(v.0.len() as u64).into()),
                i => {
                    v.0.get(i as usize - 1)
                        .map(|e| AnyValue(vec![e.clone()]))
                        .ok_or(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::INVALID_ARRAY_INDEX })
                }
            },
            (Some(_), Some(_)) => err(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY),
        };
        vec![PropertyRead { target: t, outcome }]
    }
}

impl ObjectModel for DeviceOnlyModel {
    async fn objects(&self) -> Result<Vec<ObjectInfo>, ModelError> {
        Ok(vec![ObjectInfo { id: self.id, name: self.name.clone() }])
    }

    async fn read(&self, targets: &[PropertyTarget]) -> Result<Vec<Vec<PropertyRead>>, ModelError> {
        Ok(targets.iter().map(|t| self.read_one(*t)).collect())
    }

    async fn write(&self, writes: Vec<PropertyWrite>) -> Result<Vec<Result<(), BacnetError>>, ModelError> {
        Ok(writes
            .iter()
            .map(|w| {
                let (class, code) = if w.target.object != self.id {
                    (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)
                } else if self.value(w.target.property).is_none() {
                    (ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)
                } else {
                    (ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
                };
                Err(BacnetError { class, code })
            })
            .collect())
    }
}
