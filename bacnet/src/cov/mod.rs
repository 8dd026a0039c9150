//! Change-of-value reporting on the server side (Clause 13.1): the table of
//! COV subscriptions made with SubscribeCOV (Clause 13.14) and
//! SubscribeCOVProperty (Clause 13.15), the decision of when a value has
//! changed enough to be reported, and the notifications that follow.
//!
//! Sans-IO in quinn-proto's shape, like [`crate::tsm`]: the table reads no
//! clock and reads no property. Time comes in as a `now: Duration` since any
//! epoch the driver chooses; property values come in through
//! [`CovTable::observe`]. The table is generic over the subscriber's address
//! `A` (for BACnet/IP, the peer's network number and socket address).
//!
//! # Calling order
//!
//! - For a decoded SubscribeCOV or SubscribeCOVProperty request, look the
//!   monitored object (and property) up, say what was found as a [`Target`],
//!   and call [`CovTable::subscribe_cov`] or
//!   [`CovTable::subscribe_cov_property`]. `Err(refusal)` is answered with
//!   the Error PDU [`Refusal::error`]; `Ok` with a SimpleACK. When
//!   [`Subscribed::initial_notification_due`], read
//!   [`CovTable::properties_to_read`] for the object and hand the values to
//!   [`CovTable::observe`]: that produces the initial notification, which
//!   the service procedures (Clauses 13.14.2, 13.15.2) require whatever the
//!   increment. Send the SimpleACK first.
//! - Whenever a monitored object's values may have changed (a write, a
//!   plugin's values-changed), read [`CovTable::properties_to_read`] and call
//!   [`CovTable::observe`]. [`CovTable::is_monitored`] tells which objects
//!   need it.
//! - After each call, drain [`CovTable::poll_notification`] and send each as
//!   a ConfirmedCOVNotification or UnconfirmedCOVNotification
//!   ([`Notification::into_request`] builds the body).
//! - Call [`CovTable::handle_timeout`] when the instant from
//!   [`CovTable::poll_timeout`] has passed: subscriptions whose lifetime
//!   ended are removed. Every other input expires them too, so a late timer
//!   never lets an expired subscription notify.
//! - For SubscribeCOVPropertyMultiple (135-2016), look up every reference
//!   and call [`CovTable::subscribe_cov_property_multiple`] with the
//!   targets in the request's order: it subscribes to all of them or to
//!   none, and a refusal names the first reference that failed
//!   ([`MultipleRefusal`]). Its notifications come out of
//!   [`CovTable::poll_notification`] with [`Notification::multiple`] set,
//!   one per object: the driver gathers those of one subscriber process
//!   drained together into one COVNotificationMultiple.
//! - When an object is deleted, call [`CovTable::remove_object`].
//! - To answer Active_COV_Subscriptions, use
//!   [`CovTable::encode_active_cov_subscriptions`].
//!
//! # What is decided here
//!
//! - A subscription is identified by subscriber address, subscriber process
//!   identifier, monitored object and, for SubscribeCOVProperty, the
//!   monitored property reference. Subscribing again with the same key
//!   replaces its parameters, restarts its lifetime and makes its initial
//!   notification due again; it never takes another slot.
//! - Cancellation (issueConfirmedNotifications and lifetime both absent)
//!   of a subscription that does not exist succeeds (Clause 13.14.2:
//!   cancellations for which no matching context exists succeed as if it
//!   had existed). The object and property are still checked first, as for
//!   any request, so a cancellation naming an unknown object is refused with
//!   unknown-object.
//! - Lifetime 0, or a subscription without lifetime, is indefinite. Time
//!   remaining is reported in whole seconds rounded up (a subscription with
//!   0.2 s left reports 1, because 0 would mean "indefinite").
//! - Refusals, in the order they are checked: the [`Target`]'s verdict; for
//!   SubscribeCOV, an object type outside [`SUBSCRIBE_COV_OBJECT_TYPES`]
//!   (`object: optional-functionality-not-supported`); a covIncrement that is
//!   negative or NaN (`services: parameter-out-of-range`, see
//!   [`Refusal::CovIncrementOutOfRange`]); a lifetime without
//!   issueConfirmedNotifications (`services: inconsistent-parameters`, only
//!   for a request built by hand: the decoder rejects it); the per-subscriber
//!   and then the table's limit (`resources: no-space-to-add-list-element`).
//!   A cancellation or a renewal is never refused for the limits.
//! - What is reported: SubscribeCOV reports Present_Value and Status_Flags;
//!   SubscribeCOVProperty reports the monitored property and, when the
//!   object has one (the host includes it in `observe`), Status_Flags.
//! - When: the monitored value is compared with the value last notified to
//!   this subscription (not the value last observed, so slow drift adds up).
//!   A numeric primitive (Real, Double, Unsigned, Signed) is reported when it
//!   moved by at least the increment in force: the subscription's
//!   covIncrement; else the object's COV_Increment as last observed, for
//!   SubscribeCOV on the types [`reports_by_cov_increment`] names and for
//!   SubscribeCOVProperty on Present_Value (as Clause 13.15 describes the
//!   covIncrement parameter); else any change. Any other value (Enumerated,
//!   BitString, strings, constructed data, a change of datatype) is reported
//!   on any change. A change of Status_Flags always triggers a notification,
//!   for SubscribeCOVProperty too (a choice: the Table 13-1 criterion for
//!   Status_Flags, applied to the Status_Flags every notification carries).
//! - The initial notification after a subscription or renewal goes with
//!   the next `observe` of the object whatever the values, once the
//!   monitored value is known.
//!
//! # Deliberately absent
//!
//! - The Table 13-1 rows with other criteria or other reported properties
//!   (Loop, Pulse_Converter, Trend_Log, life-safety and access-control
//!   objects…): see [`SUBSCRIBE_COV_OBJECT_TYPES`].
//! - What happens when confirmed notifications go unanswered (the host's
//!   transaction state machine retries them; the subscription stays).
//! - A bound on the notification queue: the driver drains it after every
//!   call.

mod change;
mod multiple;
mod notify;
mod table;
mod wire;

pub use change::{SUBSCRIBE_COV_OBJECT_TYPES, reports_by_cov_increment, supports_subscribe_cov};
pub use multiple::MultipleRefusal;
pub use table::CovTable;
pub use wire::{COVMultipleSubscription, COVSubscription, Recipient, RecipientProcess};

use crate::codec::ObjectIdentifier;
use crate::enums::{ErrorClass, ErrorCode};
use crate::services::{BacnetError, COVNotification, ObjectPropertyReference, PropertyValue};
use alloc::vec::Vec;

/// Limits of a [`CovTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CovConfig {
    /// Subscriptions one subscriber address may hold, over all its
    /// processes and objects.
    pub max_subscriptions_per_subscriber: usize,
    /// Subscriptions the table holds in all.
    pub max_subscriptions: usize,
    /// Subscriptions one origin may hold over all its subscriber addresses:
    /// for B/IP an IP address, whatever its ports (see
    /// [`CovTable::with_origin`]), so one host cannot take the table by
    /// subscribing from many source ports.
    pub max_subscriptions_per_origin: usize,
    /// The last this many places of the table go only to origins holding
    /// fewer than [`CovConfig::max_subscriptions_per_subscriber`]: when a
    /// few heavy origins have filled the rest, a new subscriber still gets
    /// a place.
    pub reserved_subscriptions: usize,
    /// The longest finite lifetime accepted, in seconds; a longer one is
    /// refused with `services: parameter-out-of-range`. `None`: no maximum.
    pub max_lifetime: Option<u32>,
    /// Accept an indefinite lifetime (0, or none given). Front ends use
    /// it; refuse it only where every subscriber renews.
    pub allow_indefinite: bool,
}

impl Default for CovConfig {
    fn default() -> Self {
        CovConfig {
            max_subscriptions_per_subscriber: 64,
            max_subscriptions: 1024,
            max_subscriptions_per_origin: 256,
            reserved_subscriptions: 64,
            max_lifetime: None,
            allow_indefinite: true,
        }
    }
}

/// What the host found when it looked up the object (and, for
/// SubscribeCOVProperty, the property) a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The object exists and the host reports its changes: for SubscribeCOV,
    /// the object supports COV reporting; for SubscribeCOVProperty, the
    /// property (and array element) exists and can be monitored.
    Monitorable,
    /// No such object.
    UnknownObject,
    /// The object exists but does not support COV reporting.
    ObjectNotCovCapable,
    /// The object has no such property.
    UnknownProperty,
    /// The property exists but its changes are not reported.
    NotCovProperty,
    /// An array index was given for a property that is not an array.
    PropertyIsNotAnArray,
    /// The array index is beyond the array.
    InvalidArrayIndex,
}

impl Target {
    /// `Ok` for a monitorable target, else the refusal it calls for.
    pub fn verdict(self) -> Result<(), Refusal> {
        match self {
            Target::Monitorable => Ok(()),
            Target::UnknownObject => Err(Refusal::UnknownObject),
            Target::ObjectNotCovCapable => Err(Refusal::ObjectNotCovCapable),
            Target::UnknownProperty => Err(Refusal::UnknownProperty),
            Target::NotCovProperty => Err(Refusal::NotCovProperty),
            Target::PropertyIsNotAnArray => Err(Refusal::PropertyIsNotAnArray),
            Target::InvalidArrayIndex => Err(Refusal::InvalidArrayIndex),
        }
    }
}

/// Refuse a covIncrement that is negative or NaN.
fn check_increment(increment: Option<f32>) -> Result<(), Refusal> {
    match increment {
        Some(i) if i.is_nan() || i < 0.0 => Err(Refusal::CovIncrementOutOfRange),
        _ => Ok(()),
    }
}

/// Why a subscription request was refused. [`Refusal::error`] is the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Refusal {
    /// `object: unknown-object`.
    UnknownObject,
    /// `object: optional-functionality-not-supported`: the host does not
    /// report COV for the object, or SubscribeCOV names an object type
    /// outside [`SUBSCRIBE_COV_OBJECT_TYPES`].
    ObjectNotCovCapable,
    /// `property: unknown-property`.
    UnknownProperty,
    /// `property: not-cov-property`.
    NotCovProperty,
    /// `property: property-is-not-an-array`.
    PropertyIsNotAnArray,
    /// `property: invalid-array-index`.
    InvalidArrayIndex,
    /// `services: parameter-out-of-range`: the covIncrement of a
    /// SubscribeCOVProperty request is negative or NaN.
    ///
    /// The production (`covIncrement [5] REAL OPTIONAL`) gives no range, so
    /// the request decodes, and a Reject (which answers a request that does
    /// not parse) would be wrong; but a "minimum change" below zero means
    /// nothing, and NaN would silence the subscription for good. 0 is
    /// accepted and reports every change, as a COV_Increment of 0 does.
    CovIncrementOutOfRange,
    /// `services: inconsistent-parameters`: a lifetime without
    /// issueConfirmedNotifications. The decoder already refuses it
    /// ([`crate::DecodeError::Inconsistent`]); a hand-built request gets
    /// this.
    InconsistentParameters,
    /// `resources: no-space-to-add-list-element`: the subscriber holds
    /// [`CovConfig::max_subscriptions_per_subscriber`] subscriptions already.
    SubscriberLimit,
    /// `resources: no-space-to-add-list-element`: the table holds
    /// [`CovConfig::max_subscriptions`] subscriptions already, or all but
    /// the reserved ones and this origin is not a light one.
    TableFull,
    /// `resources: no-space-to-add-list-element`: the subscriber's origin
    /// (its IP address) holds [`CovConfig::max_subscriptions_per_origin`]
    /// subscriptions already.
    OriginLimit,
    /// `services: parameter-out-of-range`: a lifetime longer than
    /// [`CovConfig::max_lifetime`], or an indefinite one where
    /// [`CovConfig::allow_indefinite`] is false.
    LifetimeOutOfRange,
}

impl Refusal {
    /// Every refusal, in declaration order.
    pub const ALL: [Refusal; 12] = [
        Refusal::UnknownObject,
        Refusal::ObjectNotCovCapable,
        Refusal::UnknownProperty,
        Refusal::NotCovProperty,
        Refusal::PropertyIsNotAnArray,
        Refusal::InvalidArrayIndex,
        Refusal::CovIncrementOutOfRange,
        Refusal::InconsistentParameters,
        Refusal::SubscriberLimit,
        Refusal::TableFull,
        Refusal::OriginLimit,
        Refusal::LifetimeOutOfRange,
    ];

    /// The error class and code the request is answered with.
    pub fn error(self) -> BacnetError {
        let (class, code) = match self {
            Refusal::UnknownObject => (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT),
            Refusal::ObjectNotCovCapable => (ErrorClass::OBJECT, ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED),
            Refusal::UnknownProperty => (ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY),
            Refusal::NotCovProperty => (ErrorClass::PROPERTY, ErrorCode::NOT_COV_PROPERTY),
            Refusal::PropertyIsNotAnArray => (ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY),
            Refusal::InvalidArrayIndex => (ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX),
            Refusal::CovIncrementOutOfRange | Refusal::LifetimeOutOfRange => {
                (ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE)
            }
            Refusal::InconsistentParameters => (ErrorClass::SERVICES, ErrorCode::INCONSISTENT_PARAMETERS),
            Refusal::SubscriberLimit | Refusal::TableFull | Refusal::OriginLimit => {
                (ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT)
            }
        };
        BacnetError::new(class, code)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl From<Refusal> for BacnetError {
    fn from(r: Refusal) -> BacnetError {
        r.error()
    }
}

/// What a successful subscription request did. Every variant is answered
/// with a SimpleACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subscribed {
    /// A new subscription; its initial notification is due.
    Created,
    /// An existing subscription got new parameters and a fresh lifetime; its
    /// initial notification is due again.
    Renewed,
    /// The subscription was cancelled.
    Cancelled,
    /// A cancellation for a subscription that did not exist: it succeeds all
    /// the same (Clause 13.14.2).
    NothingToCancel,
}

impl Subscribed {
    /// True when the driver must now read [`CovTable::properties_to_read`]
    /// and call [`CovTable::observe`] to produce the initial notification.
    pub fn initial_notification_due(self) -> bool {
        matches!(self, Subscribed::Created | Subscribed::Renewed)
    }
}

/// A COV notification to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification<A> {
    /// Where to send it.
    pub subscriber: A,
    /// The subscriber's process identifier.
    pub subscriber_process_identifier: u32,
    /// Send a ConfirmedCOVNotification (true) or an
    /// UnconfirmedCOVNotification (false).
    pub confirmed: bool,
    /// The monitored object.
    pub monitored_object: ObjectIdentifier,
    /// Seconds left in the subscription (0 = indefinite).
    pub time_remaining: u32,
    /// The values reported: the monitored value (Present_Value, or the
    /// monitored property), then Status_Flags when known (never for
    /// COV-multiple, which reports exactly the monitored properties).
    pub values: Vec<PropertyValue>,
    /// Made by SubscribeCOVPropertyMultiple: send it as (part of) a
    /// COVNotificationMultiple.
    pub multiple: bool,
    /// The subscriber asked for the time of each change (COV-multiple's
    /// `timestamped`); the driver, which owns the clock, fills it in.
    pub timestamped: bool,
    /// The subscription's initial notification (a new or renewed
    /// subscription): a driver may hold it until the subscriber has had
    /// its answer, and then must hold the subscription's later ones behind it.
    pub initial: bool,
}

impl<A> Notification<A> {
    /// The notification's service body, naming `initiating_device` (this
    /// device's Device object).
    pub fn into_request(self, initiating_device: ObjectIdentifier) -> COVNotification {
        COVNotification {
            subscriber_process_identifier: self.subscriber_process_identifier,
            initiating_device,
            monitored_object: self.monitored_object,
            time_remaining: self.time_remaining,
            values: self.values,
        }
    }
}

/// One subscription as Active_COV_Subscriptions shows it, with the
/// subscriber's address still in the driver's type.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveSubscription<'a, A> {
    /// The subscriber's address.
    pub subscriber: &'a A,
    /// The subscriber's process identifier.
    pub subscriber_process_identifier: u32,
    /// The monitored object and property (Present_Value for SubscribeCOV).
    pub monitored_property: ObjectPropertyReference,
    /// Confirmed (true) or unconfirmed notifications.
    pub issue_confirmed_notifications: bool,
    /// Seconds left (0 = indefinite).
    pub time_remaining: u32,
    /// The covIncrement the subscriber gave (SubscribeCOVProperty only).
    pub cov_increment: Option<f32>,
}

impl<A> ActiveSubscription<'_, A> {
    /// The `BACnetCOVSubscription`, with the subscriber turned into a
    /// [`Recipient`] by `recipient`.
    pub fn to_wire(&self, recipient: impl FnOnce(&A) -> Recipient) -> COVSubscription {
        COVSubscription {
            recipient: RecipientProcess {
                recipient: recipient(self.subscriber),
                process_identifier: self.subscriber_process_identifier,
            },
            monitored_property: self.monitored_property,
            issue_confirmed_notifications: self.issue_confirmed_notifications,
            time_remaining: self.time_remaining,
            cov_increment: self.cov_increment,
        }
    }
}

/// Refused requests, by [`Refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefusalCounts([u64; Refusal::ALL.len()]);

impl RefusalCounts {
    /// Requests refused for `reason`.
    pub fn get(&self, reason: Refusal) -> u64 {
        self.0[reason.index()]
    }

    /// Requests refused for any reason.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, b| a.saturating_add(*b))
    }

    fn bump(&mut self, reason: Refusal) {
        let c = &mut self.0[reason.index()];
        *c = c.saturating_add(1);
    }
}

/// What the table has done since it was made; every counter saturates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CovCounters {
    /// Subscriptions created.
    pub created: u64,
    /// Subscriptions renewed by a request with the same key.
    pub renewed: u64,
    /// Subscriptions cancelled by a request (cancellations of nothing are
    /// not counted).
    pub cancelled: u64,
    /// Subscriptions removed because their lifetime ended.
    pub expired: u64,
    /// Subscriptions removed with their object ([`CovTable::remove_object`]).
    pub removed_with_object: u64,
    /// Notifications produced.
    pub notifications: u64,
    /// Requests refused, by reason.
    pub refused: RefusalCounts,
}

fn bump(c: &mut u64) {
    *c = c.saturating_add(1);
}
