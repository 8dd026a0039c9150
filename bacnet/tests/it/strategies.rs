//! proptest strategies for the core's types, shared by every test module.

#![allow(dead_code)]

use bacnet::codec::{BitString, CharacterSet, CharacterString, Date, ObjectIdentifier, Time};
use bacnet::enums::*;
use bacnet::value::{AnyValue, Element, Value};
use proptest::collection::vec;
use proptest::prelude::*;

pub fn object_id() -> impl Strategy<Value = ObjectIdentifier> {
    (0u32..=1023, 0u32..=ObjectIdentifier::MAX_INSTANCE)
        .prop_map(|(t, i)| ObjectIdentifier::new(ObjectType(t), i).unwrap())
}

pub fn property_id() -> impl Strategy<Value = PropertyIdentifier> {
    prop_oneof![
        3 => (0u32..600).prop_map(PropertyIdentifier),
        1 => any::<u32>().prop_map(|v| PropertyIdentifier(v % (1 << 22))),
    ]
}

pub fn array_index() -> impl Strategy<Value = Option<u32>> {
    proptest::option::of(any::<u32>())
}

pub fn character_string() -> impl Strategy<Value = CharacterString> {
    prop_oneof![
        ".{0,40}".prop_map(|s| CharacterString::utf8(&s)),
        (0u8..=255, any::<u16>(), vec(any::<u8>(), 0..40)).prop_map(|(cs, cp, bytes)| CharacterString {
            charset: CharacterSet(cs),
            code_page: if cs == 1 { cp } else { 0 },
            bytes,
        }),
    ]
}

pub fn bit_string() -> impl Strategy<Value = BitString> {
    vec(any::<bool>(), 0..40).prop_map(|b| BitString::from_bits(&b))
}

pub fn date() -> impl Strategy<Value = Date> {
    any::<[u8; 4]>().prop_map(|b| Date { year: b[0], month: b[1], day: b[2], weekday: b[3] })
}

pub fn time() -> impl Strategy<Value = Time> {
    any::<[u8; 4]>().prop_map(|b| Time { hour: b[0], minute: b[1], second: b[2], hundredths: b[3] })
}

/// Primitive values; floats exclude NaN so `PartialEq` round trips hold.
pub fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Boolean),
        any::<u64>().prop_map(Value::Unsigned),
        any::<i64>().prop_map(Value::Signed),
        any::<f32>().prop_filter("not NaN", |f| !f.is_nan()).prop_map(Value::Real),
        any::<f64>().prop_filter("not NaN", |f| !f.is_nan()).prop_map(Value::Double),
        vec(any::<u8>(), 0..300).prop_map(Value::OctetString),
        character_string().prop_map(Value::CharacterString),
        bit_string().prop_map(Value::BitString),
        any::<u32>().prop_map(Value::Enumerated),
        date().prop_map(Value::Date),
        time().prop_map(Value::Time),
        object_id().prop_map(Value::ObjectIdentifier),
    ]
}

/// Trees of elements up to a few levels deep.
pub fn element() -> impl Strategy<Value = Element> {
    let leaf = prop_oneof![
        value().prop_map(Element::Application),
        (0u8..=254, vec(any::<u8>(), 0..20)).prop_map(|(tag, data)| Element::Context { tag, data }),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        (0u8..=254, vec(inner, 0..6)).prop_map(|(tag, elements)| Element::Constructed { tag, elements })
    })
}

pub fn any_value() -> impl Strategy<Value = AnyValue> {
    vec(element(), 0..5).prop_map(AnyValue)
}

pub fn priority() -> impl Strategy<Value = Option<u8>> {
    proptest::option::of(1u8..=16)
}

// ---------------------------------------------------------------------------
// Service group A (services_a.rs): errors and the shared references.
// ---------------------------------------------------------------------------

use bacnet::services::BacnetError;
use bacnet::services::common::ObjectPropertyReference;

/// Any error class and code, named or not.
pub fn bacnet_error() -> impl Strategy<Value = BacnetError> {
    prop_oneof![
        (0u32..8, 0u32..200).prop_map(|(c, e)| BacnetError::new(ErrorClass(c), ErrorCode(e))),
        (any::<u32>(), any::<u32>()).prop_map(|(c, e)| BacnetError::new(ErrorClass(c), ErrorCode(e))),
    ]
}

// `property_reference()` is shared with group B and defined in its section.

pub fn object_property_reference() -> impl Strategy<Value = ObjectPropertyReference> {
    (object_id(), property_id(), array_index()).prop_map(|(object, property, array_index)| ObjectPropertyReference {
        object,
        property,
        array_index,
    })
}

pub fn property_value() -> impl Strategy<Value = bacnet::services::common::PropertyValue> {
    (property_id(), array_index(), any_value(), priority()).prop_map(|(property, array_index, value, priority)| {
        bacnet::services::common::PropertyValue { property, array_index, value, priority }
    })
}

// ---------------------------------------------------------------------------
// Service group B: COV, ReadRange, device management (tests/it/services_b.rs).
// ---------------------------------------------------------------------------

use bacnet::services::common::PropertyReference;
use bacnet::services::{
    COVNotification, DeviceCommunicationControlRequest, Range, ReadRangeAck, ReadRangeRequest,
    ReinitializeDeviceRequest, ResultFlags, SubscribeCOVPropertyRequest, SubscribeCOVRequest,
    TimeSynchronizationRequest, UTCTimeSynchronizationRequest,
};
use std::num::NonZeroI16;

/// The (issue-confirmed, lifetime) pairs a subscription may carry: a
/// cancellation, an indefinite subscription, or one with a lifetime.
pub fn subscription_options() -> impl Strategy<Value = (Option<bool>, Option<u32>)> {
    prop_oneof![
        Just((None, None)),
        any::<bool>().prop_map(|c| (Some(c), None)),
        (any::<bool>(), any::<u32>()).prop_map(|(c, l)| (Some(c), Some(l))),
    ]
}

pub fn subscribe_cov_request() -> impl Strategy<Value = SubscribeCOVRequest> {
    (any::<u32>(), object_id(), subscription_options()).prop_map(|(pid, obj, (confirmed, lifetime))| {
        SubscribeCOVRequest {
            subscriber_process_identifier: pid,
            monitored_object: obj,
            issue_confirmed_notifications: confirmed,
            lifetime,
        }
    })
}

pub fn property_reference() -> impl Strategy<Value = PropertyReference> {
    (property_id(), array_index()).prop_map(|(property, array_index)| PropertyReference { property, array_index })
}

/// Reals without NaN, so `PartialEq` round trips hold.
pub fn real() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("not NaN", |f| !f.is_nan())
}

pub fn subscribe_cov_property_request() -> impl Strategy<Value = SubscribeCOVPropertyRequest> {
    (any::<u32>(), object_id(), subscription_options(), property_reference(), proptest::option::of(real())).prop_map(
        |(pid, obj, (confirmed, lifetime), monitored_property, cov_increment)| SubscribeCOVPropertyRequest {
            subscriber_process_identifier: pid,
            monitored_object: obj,
            issue_confirmed_notifications: confirmed,
            lifetime,
            monitored_property,
            cov_increment,
        },
    )
}

/// Notifications; `property_value()` comes from group A's section.
pub fn cov_notification() -> impl Strategy<Value = COVNotification> {
    (any::<u32>(), object_id(), object_id(), any::<u32>(), vec(property_value(), 0..4)).prop_map(
        |(pid, device, obj, time_remaining, values)| COVNotification {
            subscriber_process_identifier: pid,
            initiating_device: device,
            monitored_object: obj,
            time_remaining,
            values,
        },
    )
}

pub fn range_count() -> impl Strategy<Value = NonZeroI16> {
    any::<i16>().prop_filter_map("count is not zero", NonZeroI16::new)
}

pub fn read_range_range() -> impl Strategy<Value = Range> {
    prop_oneof![
        (any::<u32>(), range_count()).prop_map(|(reference_index, count)| Range::ByPosition { reference_index, count }),
        (any::<u32>(), range_count())
            .prop_map(|(reference_sequence, count)| Range::BySequenceNumber { reference_sequence, count }),
        (date(), time(), range_count()).prop_map(|(d, t, count)| Range::ByTime { reference_time: (d, t), count }),
    ]
}

pub fn read_range_request() -> impl Strategy<Value = ReadRangeRequest> {
    (object_id(), property_id(), array_index(), proptest::option::of(read_range_range()))
        .prop_map(|(object, property, array_index, range)| ReadRangeRequest { object, property, array_index, range })
}

pub fn result_flags() -> impl Strategy<Value = ResultFlags> {
    any::<[bool; 3]>().prop_map(|[first_item, last_item, more_items]| ResultFlags { first_item, last_item, more_items })
}

pub fn read_range_ack() -> impl Strategy<Value = ReadRangeAck> {
    (
        object_id(),
        property_id(),
        array_index(),
        result_flags(),
        any::<u32>(),
        any_value(),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(|(object, property, array_index, result_flags, item_count, item_data, first_sequence_number)| {
            ReadRangeAck { object, property, array_index, result_flags, item_count, item_data, first_sequence_number }
        })
}

/// Passwords of 1..=20 characters in sets whose characters the codec counts.
pub fn password() -> impl Strategy<Value = CharacterString> {
    prop_oneof![
        ".{1,20}".prop_map(|s| CharacterString::utf8(&s)),
        vec(any::<u8>(), 1..=20).prop_map(|bytes| CharacterString {
            charset: CharacterSet::ISO_8859_1,
            code_page: 0,
            bytes,
        }),
        vec(any::<u8>(), 1..=20).prop_map(|b| CharacterString {
            charset: CharacterSet::ISO_10646_UCS_2,
            code_page: 0,
            bytes: b.iter().flat_map(|c| [0, *c]).collect(),
        }),
    ]
}

pub fn dcc_request() -> impl Strategy<Value = DeviceCommunicationControlRequest> {
    (proptest::option::of(any::<u16>()), 0u32..=2, proptest::option::of(password())).prop_map(
        |(time_duration, ed, password)| DeviceCommunicationControlRequest {
            time_duration,
            enable_disable: EnableDisable(ed),
            password,
        },
    )
}

pub fn reinitialize_device_request() -> impl Strategy<Value = ReinitializeDeviceRequest> {
    (0u32..=7, proptest::option::of(password())).prop_map(|(state, password)| ReinitializeDeviceRequest {
        reinitialized_state: ReinitializedState(state),
        password,
    })
}

pub fn time_synchronization_request() -> impl Strategy<Value = TimeSynchronizationRequest> {
    (date(), time()).prop_map(|(date, time)| TimeSynchronizationRequest { date, time })
}

pub fn utc_time_synchronization_request() -> impl Strategy<Value = UTCTimeSynchronizationRequest> {
    (date(), time()).prop_map(|(date, time)| UTCTimeSynchronizationRequest { date, time })
}

// ---------------------------------------------------------------------------
// PDU layers: APDU, NPDU, BVLL.
//
// `Apdu`, `Npdu` and `Bvll` are views that borrow their octets, so these
// strategies generate owned parts and each test builds the view with
// `parts.view()`. Every generated value satisfies the wire invariants
// (no hop count without a destination, SNET not 0xFFFF, SLEN above 0, tables
// of whole entries), so `decode(encode(view)) == view` must hold exactly.
// ---------------------------------------------------------------------------

use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest, MaxApdu, MaxSegments, SegmentInfo};
use bacnet::bvll::{Bvll, Table};
use bacnet::npdu::{NetAddress, NetworkList, NetworkMessage, Npdu, NpduPayload, RoutingTable, RoutingTablePort};
use core::net::{Ipv4Addr, SocketAddrV4};

/// An APDU header with an empty body, plus the body it is given by `view`.
#[derive(Debug, Clone)]
pub struct ApduParts {
    pub header: Apdu<'static>,
    pub body: Vec<u8>,
}

impl ApduParts {
    pub fn view(&self) -> Apdu<'_> {
        let body = &self.body[..];
        match self.header {
            Apdu::ConfirmedRequest(c) => Apdu::ConfirmedRequest(ConfirmedRequest { body, ..c }),
            Apdu::UnconfirmedRequest { service, .. } => Apdu::UnconfirmedRequest { service, body },
            Apdu::ComplexAck(c) => Apdu::ComplexAck(ComplexAck { body, ..c }),
            Apdu::Error { invoke_id, service, .. } => Apdu::Error { invoke_id, service, body },
            other => other,
        }
    }
}

pub fn segment_info() -> impl Strategy<Value = Option<SegmentInfo>> {
    proptest::option::of((any::<u8>(), any::<u8>(), any::<bool>()).prop_map(
        |(sequence_number, proposed_window_size, more_follows)| SegmentInfo {
            sequence_number,
            proposed_window_size,
            more_follows,
        },
    ))
}

fn pdu_body() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..48)
}

pub fn apdu_parts() -> impl Strategy<Value = ApduParts> {
    let confirmed = (segment_info(), any::<bool>(), 0u8..8, 0u8..16, any::<u8>(), any::<u8>(), pdu_body()).prop_map(
        |(segment, sa, segs, apdu, invoke_id, service, body)| ApduParts {
            header: Apdu::ConfirmedRequest(ConfirmedRequest {
                segment,
                segmented_response_accepted: sa,
                max_segments: MaxSegments::from_code(segs),
                max_apdu: MaxApdu::from_code(apdu),
                invoke_id,
                service: ConfirmedServiceChoice(service),
                body: &[],
            }),
            body,
        },
    );
    let unconfirmed = (any::<u8>(), pdu_body()).prop_map(|(s, body)| ApduParts {
        header: Apdu::UnconfirmedRequest { service: UnconfirmedServiceChoice(s), body: &[] },
        body,
    });
    let complex =
        (segment_info(), any::<u8>(), any::<u8>(), pdu_body()).prop_map(|(segment, invoke_id, s, body)| ApduParts {
            header: Apdu::ComplexAck(ComplexAck { segment, invoke_id, service: ConfirmedServiceChoice(s), body: &[] }),
            body,
        });
    let error = (any::<u8>(), any::<u8>(), pdu_body()).prop_map(|(invoke_id, s, body)| ApduParts {
        header: Apdu::Error { invoke_id, service: ConfirmedServiceChoice(s), body: &[] },
        body,
    });
    let bodiless = prop_oneof![
        (any::<u8>(), any::<u8>())
            .prop_map(|(invoke_id, s)| Apdu::SimpleAck { invoke_id, service: ConfirmedServiceChoice(s) }),
        (any::<bool>(), any::<bool>(), any::<u8>(), any::<u8>(), any::<u8>()).prop_map(
            |(negative, server, invoke_id, sequence_number, actual_window_size)| Apdu::SegmentAck {
                negative,
                server,
                invoke_id,
                sequence_number,
                actual_window_size,
            }
        ),
        (any::<u8>(), any::<u8>()).prop_map(|(invoke_id, r)| Apdu::Reject { invoke_id, reason: RejectReason(r) }),
        (any::<bool>(), any::<u8>(), any::<u8>()).prop_map(|(server, invoke_id, r)| Apdu::Abort {
            server,
            invoke_id,
            reason: AbortReason(r)
        }),
    ]
    .prop_map(|header| ApduParts { header, body: Vec::new() });
    prop_oneof![confirmed, unconfirmed, complex, error, bodiless]
}

/// A network-layer message: the fixed-size ones as they are, the others with
/// the octets their borrowed field is built from.
#[derive(Debug, Clone)]
pub enum MessageParts {
    Fixed(NetworkMessage<'static>),
    IAmRouterToNetwork(Vec<u8>),
    RouterBusyToNetwork(Vec<u8>),
    RouterAvailableToNetwork(Vec<u8>),
    /// The table as `RoutingTable::encode_ports` writes it (count first).
    InitializeRoutingTable(Vec<u8>),
    InitializeRoutingTableAck(Vec<u8>),
    Other {
        message_type: NetworkMessageType,
        vendor_id: Option<u16>,
        data: Vec<u8>,
    },
}

impl MessageParts {
    pub fn view(&self) -> NetworkMessage<'_> {
        fn list(b: &[u8]) -> NetworkList<'_> {
            NetworkList::from_bytes(b).unwrap()
        }
        match self {
            MessageParts::Fixed(m) => *m,
            MessageParts::IAmRouterToNetwork(b) => NetworkMessage::IAmRouterToNetwork(list(b)),
            MessageParts::RouterBusyToNetwork(b) => NetworkMessage::RouterBusyToNetwork(list(b)),
            MessageParts::RouterAvailableToNetwork(b) => NetworkMessage::RouterAvailableToNetwork(list(b)),
            MessageParts::InitializeRoutingTable(b) => {
                NetworkMessage::InitializeRoutingTable(RoutingTable::from_encoded(b).unwrap())
            }
            MessageParts::InitializeRoutingTableAck(b) => {
                NetworkMessage::InitializeRoutingTableAck(RoutingTable::from_encoded(b).unwrap())
            }
            MessageParts::Other { message_type, vendor_id, data } => {
                NetworkMessage::Other { message_type: *message_type, vendor_id: *vendor_id, data }
            }
        }
    }
}

fn network_list(min: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u16>(), min..6).prop_map(|nets| nets.iter().flat_map(|n| n.to_be_bytes()).collect())
}

fn routing_table() -> impl Strategy<Value = Vec<u8>> {
    vec((any::<u16>(), any::<u8>(), vec(any::<u8>(), 0..4)), 0..4).prop_map(|ports| {
        let ports: Vec<RoutingTablePort<'_>> = ports
            .iter()
            .map(|(net, port_id, info)| RoutingTablePort { net: *net, port_id: *port_id, port_info: info })
            .collect();
        let mut out = Vec::new();
        RoutingTable::encode_ports(&ports, &mut out).unwrap();
        out
    })
}

pub fn network_message() -> impl Strategy<Value = MessageParts> {
    use NetworkMessage as M;
    let fixed = prop_oneof![
        proptest::option::of(any::<u16>()).prop_map(M::WhoIsRouterToNetwork),
        (any::<u16>(), any::<u8>())
            .prop_map(|(net, performance_index)| M::ICouldBeRouterToNetwork { net, performance_index }),
        (any::<u8>(), any::<u16>())
            .prop_map(|(r, net)| M::RejectMessageToNetwork { reason: RejectMessageReason(r), net }),
        (any::<u16>(), any::<u8>())
            .prop_map(|(net, termination_time)| M::EstablishConnectionToNetwork { net, termination_time }),
        any::<u16>().prop_map(M::DisconnectConnectionToNetwork),
        Just(M::WhatIsNetworkNumber),
        (any::<u16>(), any::<bool>()).prop_map(|(net, configured)| M::NetworkNumberIs { net, configured }),
    ]
    .prop_map(MessageParts::Fixed);
    // Types this crate keeps as received: the security messages, reserved
    // types, and proprietary types with their vendor ID.
    let other = prop_oneof![
        (prop_oneof![0x0Au8..=0x11, 0x14u8..=0x7F], vec(any::<u8>(), 0..16)).prop_map(|(t, data)| {
            MessageParts::Other { message_type: NetworkMessageType(t), vendor_id: None, data }
        }),
        (0x80u8..=0xFF, any::<u16>(), vec(any::<u8>(), 0..16)).prop_map(|(t, v, data)| MessageParts::Other {
            message_type: NetworkMessageType(t),
            vendor_id: Some(v),
            data,
        }),
    ];
    prop_oneof![
        fixed,
        network_list(1).prop_map(MessageParts::IAmRouterToNetwork),
        network_list(0).prop_map(MessageParts::RouterBusyToNetwork),
        network_list(0).prop_map(MessageParts::RouterAvailableToNetwork),
        routing_table().prop_map(MessageParts::InitializeRoutingTable),
        routing_table().prop_map(MessageParts::InitializeRoutingTableAck),
        other,
    ]
}

#[derive(Debug, Clone)]
pub enum NpduPayloadParts {
    Apdu(Vec<u8>),
    Message(MessageParts),
}

#[derive(Debug, Clone)]
pub struct NpduParts {
    /// DNET and DADR (empty DADR = broadcast on DNET).
    pub destination: Option<(u16, Vec<u8>)>,
    /// SNET and SADR.
    pub source: Option<(u16, Vec<u8>)>,
    pub hop_count: u8,
    pub expecting_reply: bool,
    pub priority: NetworkPriority,
    pub payload: NpduPayloadParts,
}

impl NpduParts {
    pub fn view(&self) -> Npdu<'_> {
        fn addr((net, mac): &(u16, Vec<u8>)) -> NetAddress<'_> {
            NetAddress { net: *net, mac }
        }
        Npdu {
            destination: self.destination.as_ref().map(addr),
            source: self.source.as_ref().map(addr),
            hop_count: self.hop_count,
            expecting_reply: self.expecting_reply,
            priority: self.priority,
            payload: match &self.payload {
                NpduPayloadParts::Apdu(a) => NpduPayload::Apdu(a),
                NpduPayloadParts::Message(m) => NpduPayload::Message(m.view()),
            },
        }
    }
}

pub fn npdu_parts() -> impl Strategy<Value = NpduParts> {
    let destination = proptest::option::of((any::<u16>(), vec(any::<u8>(), 0..8)));
    let source = proptest::option::of((0u16..0xFFFF, vec(any::<u8>(), 1..8)));
    let payload = prop_oneof![
        pdu_body().prop_map(NpduPayloadParts::Apdu),
        network_message().prop_map(NpduPayloadParts::Message),
    ];
    (destination, source, any::<u8>(), any::<bool>(), 0u8..4, payload).prop_map(
        |(destination, source, hop_count, expecting_reply, priority, payload)| NpduParts {
            hop_count: if destination.is_some() { hop_count } else { 0 },
            destination,
            source,
            expecting_reply,
            priority: NetworkPriority(priority),
            payload,
        },
    )
}

/// A BVLL message with its borrowed field (table entries, NPDU, Secure-BVLL
/// payload) left empty, plus the octets `view` puts there.
#[derive(Debug, Clone)]
pub struct BvllParts {
    pub header: Bvll<'static>,
    pub data: Vec<u8>,
}

impl BvllParts {
    pub fn view(&self) -> Bvll<'_> {
        let d = &self.data[..];
        let table = || Table::from_bytes(d, 4).unwrap();
        match self.header {
            Bvll::WriteBroadcastDistributionTable(_) => Bvll::WriteBroadcastDistributionTable(table()),
            Bvll::ReadBroadcastDistributionTableAck(_) => Bvll::ReadBroadcastDistributionTableAck(table()),
            Bvll::ReadForeignDeviceTableAck(_) => Bvll::ReadForeignDeviceTableAck(table()),
            Bvll::ForwardedNpdu { original_source, .. } => Bvll::ForwardedNpdu { original_source, npdu: d },
            Bvll::DistributeBroadcastToNetwork(_) => Bvll::DistributeBroadcastToNetwork(d),
            Bvll::OriginalUnicastNpdu(_) => Bvll::OriginalUnicastNpdu(d),
            Bvll::OriginalBroadcastNpdu(_) => Bvll::OriginalBroadcastNpdu(d),
            Bvll::SecureBvll(_) => Bvll::SecureBvll(d),
            other => other,
        }
    }
}

pub fn bip_address() -> impl Strategy<Value = SocketAddrV4> {
    (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddrV4::new(Ipv4Addr::from(ip), port))
}

pub fn bvll_parts() -> impl Strategy<Value = BvllParts> {
    let empty = Table::from_bytes(&[], 4).unwrap();
    let bare = prop_oneof![
        any::<u16>().prop_map(|c| Bvll::Result(BvlcResultCode(c))),
        Just(Bvll::ReadBroadcastDistributionTable),
        any::<u16>().prop_map(|ttl| Bvll::RegisterForeignDevice { ttl }),
        Just(Bvll::ReadForeignDeviceTable),
        bip_address().prop_map(Bvll::DeleteForeignDeviceTableEntry),
    ]
    .prop_map(|header| BvllParts { header, data: Vec::new() });
    let tables = (
        prop_oneof![
            Just(Bvll::WriteBroadcastDistributionTable(empty)),
            Just(Bvll::ReadBroadcastDistributionTableAck(empty)),
            Just(Bvll::ReadForeignDeviceTableAck(empty)),
        ],
        vec(any::<[u8; 10]>(), 0..5),
    )
        .prop_map(|(header, entries)| BvllParts { header, data: entries.concat() });
    let carriers = (
        prop_oneof![
            bip_address().prop_map(|original_source| Bvll::ForwardedNpdu { original_source, npdu: &[] }),
            Just(Bvll::DistributeBroadcastToNetwork(&[])),
            Just(Bvll::OriginalUnicastNpdu(&[])),
            Just(Bvll::OriginalBroadcastNpdu(&[])),
            Just(Bvll::SecureBvll(&[])),
        ],
        vec(any::<u8>(), 0..64),
    )
        .prop_map(|(header, data)| BvllParts { header, data });
    prop_oneof![bare, tables, carriers]
}
