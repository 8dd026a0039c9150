//! The objects of the store: what a model declares ([`ObjectSpec`],
//! [`Device`]) and what the store keeps (`Object`).

use bacnet::{
    BinaryPV, DeviceStatus, EngineeringUnits, EventState, ObjectIdentifier, ObjectType, Polarity, Reliability,
};
use bacnet::{Value, codec::BitString};
use core::fmt;

/// The Present_Value of a point object, typed by its object type: REAL for
/// analog, BACnetBinaryPV for binary (`true` = active), Unsigned 1..=N for
/// multi-state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PresentValue {
    /// Analog Input, Output or Value.
    Analog(f32),
    /// Binary Input, Output or Value: `true` is active.
    Binary(bool),
    /// Multi-state Input, Output or Value: a state number 1..=Number_Of_States.
    MultiState(u32),
}

impl PresentValue {
    /// The value as it is encoded.
    pub fn to_value(self) -> Value {
        match self {
            PresentValue::Analog(x) => Value::Real(x),
            PresentValue::Binary(b) => Value::Enumerated(if b { BinaryPV::ACTIVE.0 } else { BinaryPV::INACTIVE.0 }),
            PresentValue::MultiState(n) => Value::Unsigned(n as u64),
        }
    }
}

impl From<f32> for PresentValue {
    fn from(x: f32) -> Self {
        PresentValue::Analog(x)
    }
}

impl From<f64> for PresentValue {
    fn from(x: f64) -> Self {
        PresentValue::Analog(x as f32)
    }
}

impl From<bool> for PresentValue {
    fn from(b: bool) -> Self {
        PresentValue::Binary(b)
    }
}

impl From<u32> for PresentValue {
    fn from(n: u32) -> Self {
        PresentValue::MultiState(n)
    }
}

/// An integer literal is a multi-state number (negative numbers are out of
/// range); the store accepts it for an analog object too.
impl From<i32> for PresentValue {
    fn from(n: i32) -> Self {
        PresentValue::MultiState(u32::try_from(n).unwrap_or(0))
    }
}

impl From<BinaryPV> for PresentValue {
    fn from(b: BinaryPV) -> Self {
        PresentValue::Binary(b == BinaryPV::ACTIVE)
    }
}

/// The Device object's properties that the model serves. The host adds the
/// protocol properties (Protocol_Revision, Max_APDU_Length_Accepted, …) and
/// Vendor_Identifier, which must match its I-Am.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// The Device object's instance (0..=4,194,302).
    pub instance: u32,
    /// Object_Name: unique on the whole internetwork, by convention.
    pub name: String,
    /// Description.
    pub description: String,
    /// Location.
    pub location: String,
    /// Vendor_Name.
    pub vendor_name: String,
    /// Model_Name.
    pub model_name: String,
    /// Firmware_Revision.
    pub firmware_revision: String,
    /// Application_Software_Version.
    pub application_software_version: String,
    /// System_Status.
    pub system_status: DeviceStatus,
}

impl Device {
    /// Instance of the Device object a model gets when it sets none.
    pub const DEFAULT_INSTANCE: u32 = 389_001;

    /// A Device object with this instance and name, vendor "Trellis" and
    /// the other properties empty.
    pub fn new(instance: u32, name: &str) -> Self {
        Device {
            instance,
            name: name.into(),
            description: String::new(),
            location: String::new(),
            vendor_name: "Trellis".into(),
            model_name: "Trellis gateway".into(),
            firmware_revision: env!("CARGO_PKG_VERSION").into(),
            application_software_version: String::new(),
            system_status: DeviceStatus::OPERATIONAL,
        }
    }

    /// The Device object's identifier.
    pub fn id(&self) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::DEVICE, instance: self.instance }
    }
}

impl Default for Device {
    fn default() -> Self {
        Device::new(Self::DEFAULT_INSTANCE, "Trellis device")
    }
}

/// Whether a point object senses, drives or holds its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Input,
    Output,
    Value,
}

/// What kind of value a point object has, with its class's own properties.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Class {
    Analog { units: EngineeringUnits, cov_increment: f32 },
    Binary { active_text: String, inactive_text: String, polarity: Option<Polarity> },
    MultiState { states: Vec<String> },
}

/// The object types the store implements, with their class and role.
pub(crate) fn classify(t: ObjectType) -> Option<(Role, Kind)> {
    Some(match t {
        ObjectType::ANALOG_INPUT => (Role::Input, Kind::Analog),
        ObjectType::ANALOG_OUTPUT => (Role::Output, Kind::Analog),
        ObjectType::ANALOG_VALUE => (Role::Value, Kind::Analog),
        ObjectType::BINARY_INPUT => (Role::Input, Kind::Binary),
        ObjectType::BINARY_OUTPUT => (Role::Output, Kind::Binary),
        ObjectType::BINARY_VALUE => (Role::Value, Kind::Binary),
        ObjectType::MULTI_STATE_INPUT => (Role::Input, Kind::MultiState),
        ObjectType::MULTI_STATE_OUTPUT => (Role::Output, Kind::MultiState),
        ObjectType::MULTI_STATE_VALUE => (Role::Value, Kind::MultiState),
        _ => return None,
    })
}

/// The three classes of point object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Analog,
    Binary,
    MultiState,
}

/// A commandable object's Priority_Array and Relinquish_Default.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Command {
    pub(crate) slots: [Option<PresentValue>; 16],
    pub(crate) relinquish_default: PresentValue,
}

impl Command {
    /// The highest-priority command and its priority, if any slot is set.
    pub(crate) fn active(&self) -> Option<(u8, PresentValue)> {
        self.slots.iter().enumerate().find_map(|(i, s)| s.map(|v| (i as u8 + 1, v)))
    }
}

/// Which properties a client wrote, so state handed across a hot swap keeps
/// them while configuration changes in the new version still take effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Written {
    pub(crate) name: bool,
    pub(crate) description: bool,
    pub(crate) location: bool,
    pub(crate) cov_increment: bool,
}

/// Status_Flags: in-alarm, fault, overridden, out-of-service (bits 0..=3).
pub(crate) type StatusFlags = [bool; 4];

/// A point object as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Object {
    pub(crate) id: ObjectIdentifier,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) role: Role,
    pub(crate) class: Class,
    /// Present_Value of a non-commandable object.
    pub(crate) value: PresentValue,
    pub(crate) command: Option<Command>,
    pub(crate) event_state: EventState,
    pub(crate) reliability: Reliability,
    pub(crate) out_of_service: bool,
    pub(crate) overridden: bool,
    pub(crate) written: Written,
    /// Present_Value and Status_Flags as last reported to the host.
    pub(crate) reported: (PresentValue, StatusFlags),
    /// Intrinsic reporting, when the spec named alarm conditions.
    pub(crate) reporting: Option<Box<super::alarm::Reporting>>,
}

impl Object {
    /// Present_Value: for a commandable object the highest-priority command
    /// or Relinquish_Default.
    pub(crate) fn present_value(&self) -> PresentValue {
        match &self.command {
            Some(c) => c.active().map(|(_, v)| v).unwrap_or(c.relinquish_default),
            None => self.value,
        }
    }

    /// Status_Flags as Clause 12 computes them: IN_ALARM when Event_State is
    /// not NORMAL, FAULT when Reliability is not NO_FAULT_DETECTED,
    /// OVERRIDDEN as the model says, OUT_OF_SERVICE from Out_Of_Service.
    pub(crate) fn status_flags(&self) -> StatusFlags {
        [
            self.event_state != EventState::NORMAL,
            self.effective_reliability() != Reliability::NO_FAULT_DETECTED,
            self.overridden,
            self.out_of_service,
        ]
    }

    pub(crate) fn status_flags_value(&self) -> Value {
        Value::BitString(BitString::from_bits(&self.status_flags()))
    }

    /// The datatype Present_Value takes, for checking values.
    pub(crate) fn check_value(&self, v: PresentValue) -> Result<(), ValueProblem> {
        match (&self.class, v) {
            (Class::Analog { .. }, PresentValue::Analog(x)) if x.is_finite() => Ok(()),
            (Class::Analog { .. }, PresentValue::Analog(_)) => Err(ValueProblem::OutOfRange),
            (Class::Binary { .. }, PresentValue::Binary(_)) => Ok(()),
            (Class::MultiState { states }, PresentValue::MultiState(n)) => {
                if n >= 1 && n as usize <= states.len() {
                    Ok(())
                } else {
                    Err(ValueProblem::OutOfRange)
                }
            }
            _ => Err(ValueProblem::WrongDatatype),
        }
    }

    pub(crate) fn expected_datatype(&self) -> &'static str {
        match self.class {
            Class::Analog { .. } => "a REAL",
            Class::Binary { .. } => "a BACnetBinaryPV (bool)",
            Class::MultiState { .. } => "an Unsigned state number",
        }
    }
}

/// Why a value does not fit a Present_Value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueProblem {
    WrongDatatype,
    OutOfRange,
}

/// The declaration of a point object, for [`Store::add`](crate::Store::add).
///
/// ```
/// use trellis_guest_sdk::ObjectSpec;
/// use trellis_guest_sdk::bacnet::EngineeringUnits;
///
/// let setpoint = ObjectSpec::analog_value(1, "Zone Setpoint")
///     .description("Occupied heating setpoint")
///     .units(EngineeringUnits::DEGREES_CELSIUS)
///     .commandable()
///     .relinquish_default(21.0);
/// let mode = ObjectSpec::multi_state_value(2, "Mode", ["Off", "Heat", "Cool", "Auto"]).value(4);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectSpec {
    pub(crate) object_type: ObjectType,
    pub(crate) instance: u32,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) value: Option<PresentValue>,
    pub(crate) relinquish_default: Option<PresentValue>,
    pub(crate) commandable: bool,
    pub(crate) units: EngineeringUnits,
    pub(crate) cov_increment: f32,
    pub(crate) states: Vec<String>,
    pub(crate) active_text: String,
    pub(crate) inactive_text: String,
    pub(crate) polarity: Polarity,
    pub(crate) out_of_service: bool,
    pub(crate) reliability: Reliability,
    pub(crate) alarm: Option<super::AlarmSpec>,
}

impl ObjectSpec {
    /// An object of any type the store implements (Analog, Binary and
    /// Multi-state Input, Output and Value); [`Store::add`](crate::Store::add)
    /// refuses others. Outputs are commandable.
    pub fn new(object_type: ObjectType, instance: u32, name: &str) -> Self {
        ObjectSpec {
            object_type,
            instance,
            name: name.into(),
            description: String::new(),
            value: None,
            relinquish_default: None,
            commandable: matches!(classify(object_type), Some((Role::Output, _))),
            units: EngineeringUnits::NO_UNITS,
            cov_increment: 0.0,
            states: Vec::new(),
            active_text: "Active".into(),
            inactive_text: "Inactive".into(),
            polarity: Polarity::NORMAL,
            out_of_service: false,
            reliability: Reliability::NO_FAULT_DETECTED,
            alarm: None,
        }
    }

    /// An Analog Input.
    pub fn analog_input(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::ANALOG_INPUT, instance, name)
    }
    /// An Analog Output (commandable).
    pub fn analog_output(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::ANALOG_OUTPUT, instance, name)
    }
    /// An Analog Value.
    pub fn analog_value(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::ANALOG_VALUE, instance, name)
    }
    /// A Binary Input.
    pub fn binary_input(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::BINARY_INPUT, instance, name)
    }
    /// A Binary Output (commandable).
    pub fn binary_output(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::BINARY_OUTPUT, instance, name)
    }
    /// A Binary Value.
    pub fn binary_value(instance: u32, name: &str) -> Self {
        Self::new(ObjectType::BINARY_VALUE, instance, name)
    }
    /// A Multi-state Input with these State_Text entries (state 1 first).
    pub fn multi_state_input<S: Into<String>>(instance: u32, name: &str, states: impl IntoIterator<Item = S>) -> Self {
        Self::new(ObjectType::MULTI_STATE_INPUT, instance, name).states(states)
    }
    /// A Multi-state Output (commandable) with these State_Text entries.
    pub fn multi_state_output<S: Into<String>>(instance: u32, name: &str, states: impl IntoIterator<Item = S>) -> Self {
        Self::new(ObjectType::MULTI_STATE_OUTPUT, instance, name).states(states)
    }
    /// A Multi-state Value with these State_Text entries.
    pub fn multi_state_value<S: Into<String>>(instance: u32, name: &str, states: impl IntoIterator<Item = S>) -> Self {
        Self::new(ObjectType::MULTI_STATE_VALUE, instance, name).states(states)
    }

    /// The identifier this spec will have.
    pub fn id(&self) -> ObjectIdentifier {
        ObjectIdentifier { object_type: self.object_type, instance: self.instance }
    }

    /// Description.
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.into();
        self
    }

    /// The initial Present_Value. For a commandable object it is the
    /// Relinquish_Default, unless [`relinquish_default`](Self::relinquish_default)
    /// sets that. Defaults: 0.0, inactive, state 1.
    pub fn value(mut self, v: impl Into<PresentValue>) -> Self {
        self.value = Some(v.into());
        self
    }

    /// Make an Analog, Binary or Multi-state Value commandable: it gets a
    /// Priority_Array, Relinquish_Default and Current_Command_Priority, and
    /// Present_Value writes take a priority. (Outputs always are.)
    pub fn commandable(mut self) -> Self {
        self.commandable = true;
        self
    }

    /// Relinquish_Default of a commandable object (makes a Value object
    /// commandable).
    pub fn relinquish_default(mut self, v: impl Into<PresentValue>) -> Self {
        self.relinquish_default = Some(v.into());
        self.commandable = true;
        self
    }

    /// Units of an analog object.
    pub fn units(mut self, units: EngineeringUnits) -> Self {
        self.units = units;
        self
    }

    /// COV_Increment of an analog object: the change of Present_Value that
    /// is reported to the host (0.0, the default, reports every change).
    pub fn cov_increment(mut self, increment: f32) -> Self {
        self.cov_increment = increment;
        self
    }

    /// State_Text of a multi-state object; Number_Of_States is its length.
    pub fn states<S: Into<String>>(mut self, states: impl IntoIterator<Item = S>) -> Self {
        self.states = states.into_iter().map(Into::into).collect();
        self
    }

    /// Active_Text of a binary object.
    pub fn active_text(mut self, text: &str) -> Self {
        self.active_text = text.into();
        self
    }

    /// Inactive_Text of a binary object.
    pub fn inactive_text(mut self, text: &str) -> Self {
        self.inactive_text = text.into();
        self
    }

    /// Polarity of a Binary Input or Output.
    pub fn polarity(mut self, polarity: Polarity) -> Self {
        self.polarity = polarity;
        self
    }

    /// Start out of service.
    pub fn out_of_service(mut self, oos: bool) -> Self {
        self.out_of_service = oos;
        self
    }

    /// Initial Reliability.
    pub fn reliability(mut self, reliability: Reliability) -> Self {
        self.reliability = reliability;
        self
    }

    /// Intrinsic reporting (Clause 13.2): the object gains the alarm
    /// properties and its Event_State follows `alarm`'s algorithm (see
    /// [`AlarmSpec`](super::AlarmSpec) for which fits which object type).
    pub fn alarm(mut self, alarm: super::AlarmSpec) -> Self {
        self.alarm = Some(alarm);
        self
    }
}

/// Why the store refused a model's request. These are programming or
/// configuration errors of the model, not BACnet Errors for a client.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// No such object.
    UnknownObject(ObjectIdentifier),
    /// The store implements Analog, Binary and Multi-state Input, Output
    /// and Value objects (and the Device object).
    UnsupportedObjectType(ObjectType),
    /// An object with this identifier exists.
    DuplicateObject(ObjectIdentifier),
    /// Another object has this Object_Name.
    DuplicateName(String),
    /// Object_Name must not be empty.
    EmptyName,
    /// Instances are 0..=4,194,302 (4,194,303 is the wildcard).
    InvalidInstance(u32),
    /// A value of the wrong datatype for this object.
    WrongDatatype {
        /// The object.
        object: ObjectIdentifier,
        /// What it takes.
        expected: &'static str,
    },
    /// A value outside the object's range (a state beyond Number_Of_States,
    /// a non-finite REAL, a negative COV_Increment).
    OutOfRange {
        /// The object.
        object: ObjectIdentifier,
    },
    /// `command` on an object that is not commandable.
    NotCommandable(ObjectIdentifier),
    /// `update` on a commandable object: use `command`.
    Commandable(ObjectIdentifier),
    /// An input cannot be commandable.
    InputNotCommandable(ObjectIdentifier),
    /// A multi-state object needs at least one state.
    NoStates(ObjectIdentifier),
    /// Command priorities are 1..=16.
    InvalidPriority(u8),
    /// The alarm spec does not fit the object type (OUT_OF_RANGE is for
    /// analog objects, an alarm value for binary, alarm values for
    /// multi-state; Binary and Multi-state Outputs have none), or its
    /// limits are not finite.
    AlarmDoesNotFit(ObjectIdentifier),
    /// Event_State of an object with intrinsic reporting is its
    /// algorithm's.
    EventStateIsReported(ObjectIdentifier),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::UnknownObject(id) => write!(f, "no object {id}"),
            StoreError::UnsupportedObjectType(t) => write!(f, "the object store does not implement {t} objects"),
            StoreError::DuplicateObject(id) => write!(f, "{id} exists already"),
            StoreError::DuplicateName(n) => write!(f, "another object is named {n:?}"),
            StoreError::EmptyName => f.write_str("Object_Name must not be empty"),
            StoreError::InvalidInstance(i) => write!(f, "instance {i} is out of range (0..=4194302)"),
            StoreError::WrongDatatype { object, expected } => write!(f, "{object} takes {expected}"),
            StoreError::OutOfRange { object } => write!(f, "value out of range for {object}"),
            StoreError::NotCommandable(id) => write!(f, "{id} is not commandable"),
            StoreError::Commandable(id) => write!(f, "{id} is commandable: command it at a priority"),
            StoreError::InputNotCommandable(id) => write!(f, "{id} is an input and cannot be commandable"),
            StoreError::NoStates(id) => write!(f, "{id} needs at least one state text"),
            StoreError::InvalidPriority(p) => write!(f, "priority {p} is outside 1..=16"),
            StoreError::AlarmDoesNotFit(id) => write!(f, "the alarm spec does not fit {id}"),
            StoreError::EventStateIsReported(id) => {
                write!(f, "{id} has intrinsic reporting: its Event_State is its algorithm's")
            }
        }
    }
}

impl core::error::Error for StoreError {}

impl From<StoreError> for String {
    fn from(e: StoreError) -> String {
        e.to_string()
    }
}
