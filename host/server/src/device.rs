//! The Device object properties the host owns, whatever the object model
//! says: they describe the protocol stack, which the host implements.

use bacnet::enums::{ObjectType, PropertyIdentifier as P, Segmentation};
use bacnet::{AnyValue, BitString, Element, ObjectIdentifier, Value};

/// Protocol_Revision this device claims: 22 (ASHRAE 135-2016).
pub const PROTOCOL_REVISION: u64 = 22;

/// Max_APDU_Length_Accepted on BACnet/IP.
pub const MAX_APDU: u32 = 1476;

/// Max_Segments_Accepted: segments of a request this device reassembles.
pub const MAX_SEGMENTS: u32 = 64;

/// Bits in Protocol_Services_Supported and Protocol_Object_Types_Supported
/// at Protocol_Revision 22 (as bacnet-stack's revision table has them).
pub const SERVICES_BITS: usize = 47;
/// See [`SERVICES_BITS`].
pub const OBJECT_TYPE_BITS: usize = 63;

/// Services this device executes, as Protocol_Services_Supported bit
/// numbers (Clause 21 `BACnetServicesSupported`).
pub const SERVICES_SUPPORTED: [usize; 22] = [
    0,  // acknowledgeAlarm
    3,  // getAlarmSummary
    4,  // getEnrollmentSummary
    5,  // subscribeCOV
    6,  // atomicReadFile
    7,  // atomicWriteFile
    12, // readProperty
    14, // readPropertyMultiple
    15, // writeProperty
    16, // writePropertyMultiple
    17, // deviceCommunicationControl
    20, // reinitializeDevice
    26, // i-Am
    27, // i-Have
    32, // timeSynchronization
    33, // who-Has
    34, // who-Is
    35, // readRange
    36, // utcTimeSynchronization
    38, // subscribeCOVProperty
    39, // getEventInformation
    41, // subscribeCOVPropertyMultiple
];

/// Host settings for the served device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    /// Device instance to present on the network; `None` keeps the model's.
    pub instance: Option<u32>,
    /// APDU_Timeout in milliseconds.
    pub apdu_timeout_ms: u32,
    /// Number_Of_APDU_Retries.
    pub apdu_retries: u8,
    /// APDU_Segment_Timeout (T_seg) in milliseconds.
    pub segment_timeout_ms: u32,
    /// The password DeviceCommunicationControl and ReinitializeDevice must
    /// carry; `None` accepts any.
    pub password: Option<String>,
    /// Let Time/UTCTimeSynchronization set the clock the model sees.
    pub accept_time_sync: bool,
    /// Bounds on what one peer, and one answer, may take.
    pub limits: Limits,
    /// The Network Port objects the host serves for this device (Clause
    /// 12.56), one per port it is reached through.
    pub network_ports: Vec<super::network_port::NetworkPort>,
    /// The File objects the host serves for this device, from files in
    /// `data_dir` ([`super::file_object`]).
    pub files: Vec<super::file_object::FileConfig>,
    /// The directory the File objects' paths are relative to (the plugin's
    /// data directory); required when `files` is not empty.
    pub data_dir: Option<std::path::PathBuf>,
    /// The Notification Class objects the host serves for this device
    /// ([`super::notification_class`]).
    pub notification_classes: Vec<super::notification_class::NotificationClassConfig>,
    /// The Schedule objects the host serves for this device ([`super::schedule`]).
    pub schedules: Vec<super::schedule::ScheduleConfig>,
    /// The Calendar objects the host serves for this device.
    pub calendars: Vec<super::schedule::CalendarConfig>,
    /// Restart_Notification_Recipients as configured ([`super::restart`]).
    pub restart_recipients: Vec<bacnet::cov::Recipient>,
    /// The object types CreateObject may create (Schedule, Calendar).
    pub creatable: Vec<ObjectType>,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            instance: None,
            apdu_timeout_ms: 3000,
            apdu_retries: 3,
            segment_timeout_ms: 2000,
            password: None,
            accept_time_sync: true,
            limits: Limits::default(),
            network_ports: Vec::new(),
            files: Vec::new(),
            data_dir: None,
            notification_classes: Vec::new(),
            schedules: Vec::new(),
            calendars: Vec::new(),
            restart_recipients: Vec::new(),
            creatable: Vec::new(),
        }
    }
}

/// Admission control and answer bounds for one served device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Confirmed requests in progress per peer; more are refused with
    /// Abort out-of-resources.
    pub max_requests_per_peer: usize,
    /// Confirmed requests in progress over all peers.
    pub max_requests: usize,
    /// Results in one ReadPropertyMultiple answer; more → Abort.
    pub max_rpm_results: usize,
    /// Service-data octets in one ReadPropertyMultiple answer, however
    /// segmented; more → Abort.
    pub max_rpm_octets: usize,
    /// Objects the model may serve; a model with more is refused at load.
    pub max_objects: usize,
    /// COV subscriptions one subscriber address may hold; more are refused
    /// with resources/no-space-to-add-list-element.
    pub max_cov_per_subscriber: usize,
    /// COV subscriptions over all subscribers.
    pub max_cov_subscriptions: usize,
    /// COV subscriptions one IP address may hold over all its ports (an
    /// MS/TP station: over its processes); more are refused with
    /// resources/no-space-to-add-list-element.
    pub max_cov_per_address: usize,
    /// The last places of the COV table, kept for addresses holding fewer
    /// than `max_cov_per_subscriber`: a new front end still subscribes when
    /// heavy ones have filled the rest.
    pub reserved_cov_subscriptions: usize,
    /// The longest finite COV lifetime accepted, in seconds (`None`: no
    /// maximum); longer → services/parameter-out-of-range.
    pub max_cov_lifetime: Option<u32>,
    /// Accept indefinite COV subscriptions (lifetime 0 or none).
    pub allow_indefinite_cov: bool,
    /// Octets of segmented answers one origin (a requester's IP address,
    /// whatever its port; an MS/TP station) may draw per second; 0: no
    /// bound. Beyond it, segmented answers are refused with Abort
    /// out-of-resources. See [`bacnet::tsm::AnswerBudget`].
    pub answer_octets_per_second: u32,
    /// What an origin may draw at once after a quiet spell.
    pub answer_burst_octets: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests_per_peer: 16,
            max_requests: 1024,
            max_rpm_results: 256,
            max_rpm_octets: 16_384,
            max_objects: 10_000,
            max_cov_per_subscriber: 64,
            max_cov_subscriptions: 4096,
            max_cov_per_address: 1024,
            reserved_cov_subscriptions: 256,
            max_cov_lifetime: None,
            allow_indefinite_cov: true,
            answer_octets_per_second: bacnet::tsm::AnswerBudget::default().octets_per_second,
            answer_burst_octets: bacnet::tsm::AnswerBudget::default().burst_octets,
        }
    }
}

impl DeviceConfig {
    /// The server transaction state machine's settings for this device.
    pub fn tsm_config(&self) -> bacnet::tsm::ServerTsmConfig {
        bacnet::tsm::ServerTsmConfig {
            max_in_flight_per_peer: self.limits.max_requests_per_peer.max(1),
            max_transactions: self.limits.max_requests.max(1),
            max_apdu: MAX_APDU as usize,
            segment_timeout: std::time::Duration::from_millis(self.segment_timeout_ms.max(10) as u64),
            retries: self.apdu_retries,
            max_request_segments: MAX_SEGMENTS as usize,
            answer_budget: (self.limits.answer_octets_per_second > 0).then_some(bacnet::tsm::AnswerBudget {
                octets_per_second: self.limits.answer_octets_per_second,
                burst_octets: self.limits.answer_burst_octets.max(1),
            }),
            ..bacnet::tsm::ServerTsmConfig::default()
        }
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
    /// How many objects the model serves (its Object_List's length), for
    /// the Network Port objects the host appends to it.
    pub model_objects: std::sync::atomic::AtomicUsize,
    /// The File objects, opened over the data directory.
    pub files: Option<super::file_object::FileObjects>,
    /// The Notification Class objects.
    pub notification_classes: std::sync::Arc<super::notification_class::NotificationClasses>,
    /// The Schedule and Calendar objects.
    pub schedules: super::schedule::Schedules,
    /// How the device last started, and whom to tell.
    pub restart: super::restart::Restart,
    /// Taken by the first station's notifier: the one that evaluates the
    /// schedules and sends the restart notification (once per device,
    /// whatever its ports).
    pub first_notifier: std::sync::atomic::AtomicBool,
}

impl HostDevice {
    /// The properties the host answers for the Device object.
    pub const OWNED: [P; 19] = [
        P::VENDOR_IDENTIFIER,
        P::PROTOCOL_VERSION,
        P::PROTOCOL_REVISION,
        P::PROTOCOL_SERVICES_SUPPORTED,
        P::PROTOCOL_OBJECT_TYPES_SUPPORTED,
        P::MAX_APDU_LENGTH_ACCEPTED,
        P::SEGMENTATION_SUPPORTED,
        P::MAX_SEGMENTS_ACCEPTED,
        P::APDU_SEGMENT_TIMEOUT,
        P::APDU_TIMEOUT,
        P::NUMBER_OF_APDU_RETRIES,
        P::DEVICE_ADDRESS_BINDING,
        P::DATABASE_REVISION,
        P::ACTIVE_COV_SUBSCRIPTIONS,
        P::ACTIVE_COV_MULTIPLE_SUBSCRIPTIONS,
        P::LAST_RESTART_REASON,
        P::TIME_OF_DEVICE_RESTART,
        P::RESTART_NOTIFICATION_RECIPIENTS,
        P::DAYLIGHT_SAVINGS_STATUS,
    ];

    /// The object types the device serves or lets clients create
    /// (Protocol_Object_Types_Supported).
    pub fn object_types_supported(&self) -> Vec<ObjectType> {
        let mut types = vec![ObjectType::DEVICE];
        if !self.config.network_ports.is_empty() {
            types.push(ObjectType::NETWORK_PORT);
        }
        if self.files.is_some() {
            types.push(ObjectType::FILE);
        }
        if !self.config.notification_classes.is_empty() {
            types.push(ObjectType::NOTIFICATION_CLASS);
        }
        if self.schedules.has_schedules() {
            types.push(ObjectType::SCHEDULE);
        }
        if self.schedules.has_calendars() {
            types.push(ObjectType::CALENDAR);
        }
        types.extend(self.object_types.iter().copied());
        types
    }

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
                if self.schedules.creates() {
                    b.set(10, true); // createObject
                    b.set(11, true); // deleteObject
                }
                Value::BitString(b).into()
            }
            P::PROTOCOL_OBJECT_TYPES_SUPPORTED => {
                let mut b = BitString::with_len(OBJECT_TYPE_BITS);
                for t in self.object_types_supported() {
                    if (t.0 as usize) < OBJECT_TYPE_BITS {
                        b.set(t.0 as usize, true);
                    }
                }
                Value::BitString(b).into()
            }
            P::MAX_APDU_LENGTH_ACCEPTED => Value::Unsigned(MAX_APDU as u64).into(),
            P::SEGMENTATION_SUPPORTED => Value::Enumerated(Segmentation::SEGMENTED_BOTH.0).into(),
            P::MAX_SEGMENTS_ACCEPTED => Value::Unsigned(MAX_SEGMENTS as u64).into(),
            P::APDU_SEGMENT_TIMEOUT => Value::Unsigned(self.config.segment_timeout_ms as u64).into(),
            P::APDU_TIMEOUT => Value::Unsigned(self.config.apdu_timeout_ms as u64).into(),
            P::NUMBER_OF_APDU_RETRIES => Value::Unsigned(self.config.apdu_retries as u64).into(),
            P::DEVICE_ADDRESS_BINDING => AnyValue(vec![]),
            P::LAST_RESTART_REASON | P::TIME_OF_DEVICE_RESTART | P::RESTART_NOTIFICATION_RECIPIENTS => {
                return self.restart.read(p);
            }
            // The device clock keeps a fixed offset from UTC (what
            // TimeSynchronization and the configuration give it): no
            // daylight-saving rules are applied.
            P::DAYLIGHT_SAVINGS_STATUS => Value::Boolean(false).into(),
            P::DATABASE_REVISION => {
                Value::Unsigned(self.database_revision.load(std::sync::atomic::Ordering::Relaxed) as u64).into()
            }
            _ => return None,
        })
    }

    /// The Network Port object `o`, if the host serves it.
    pub fn network_port(&self, o: ObjectIdentifier) -> Option<&super::network_port::NetworkPort> {
        if o.object_type != ObjectType::NETWORK_PORT {
            return None;
        }
        self.config.network_ports.iter().find(|p| p.instance == o.instance)
    }

    /// The File object `o`'s server, if the host serves it.
    pub fn file(&self, o: ObjectIdentifier) -> Option<&super::file_object::FileObjects> {
        self.files.as_ref().filter(|f| f.has(o))
    }

    /// The Notification Class object `o`, if the host serves it.
    pub fn notification_class(&self, o: ObjectIdentifier) -> Option<&super::notification_class::NotificationClasses> {
        Some(&*self.notification_classes).filter(|c| c.has(o))
    }

    /// The Schedule or Calendar object `o`'s server, if the host serves it.
    pub fn schedule(&self, o: ObjectIdentifier) -> Option<&super::schedule::Schedules> {
        Some(&self.schedules).filter(|s| s.has(o))
    }

    /// True when the host, not the model, serves object `o` (a Network
    /// Port, a File, a Notification Class, a Schedule or a Calendar object).
    pub fn serves(&self, o: ObjectIdentifier) -> bool {
        self.network_port(o).is_some()
            || self.file(o).is_some()
            || self.notification_class(o).is_some()
            || self.schedules.has(o)
    }

    /// The objects the host serves, in Object_List order after the model's.
    fn host_objects(&self) -> Vec<ObjectIdentifier> {
        let ports = self.config.network_ports.iter().map(|p| p.id());
        let files = self.files.iter().flat_map(|f| f.ids());
        ports.chain(files).chain(self.notification_classes.ids()).chain(self.schedules.ids()).collect()
    }

    /// Add the host's objects (Network Ports, Files, Notification Classes) to the model's
    /// Object_List (the whole array, or element `index`: 0 is the length,
    /// the host's objects follow the model's). `from_model` is the model's
    /// answer.
    pub fn extend_object_list(
        &self,
        index: Option<u32>,
        from_model: &mut Result<AnyValue, bacnet::services::BacnetError>,
    ) {
        let ours = self.host_objects();
        if ours.is_empty() {
            return;
        }
        let model = self.model_objects.load(std::sync::atomic::Ordering::Relaxed);
        match (index, from_model.as_mut()) {
            (None, Ok(list)) => list.0.extend(ours.iter().map(|o| Element::Application(Value::ObjectIdentifier(*o)))),
            (Some(0), Ok(_)) => *from_model = Ok(Value::Unsigned((model + ours.len()) as u64).into()),
            (Some(i), _) if (i as usize) > model => {
                *from_model = match ours.get(i as usize - model - 1) {
                    Some(o) => Ok(Value::ObjectIdentifier(*o).into()),
                    None => Err(bacnet::services::BacnetError {
                        class: bacnet::enums::ErrorClass::PROPERTY,
                        code: bacnet::enums::ErrorCode::INVALID_ARRAY_INDEX,
                    }),
                }
            }
            _ => {}
        }
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
