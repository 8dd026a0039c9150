//! The request the load generator sends and what it makes of each answer.
//!
//! One confirmed ReadProperty, encoded once with the `bacnet` core
//! (Original-Unicast-NPDU, a local NPDU expecting a reply, a
//! Confirmed-Request APDU); each send patches only the invoke ID octet, so
//! the generator's cost per request is a copy-free send, not an encode.
//! Answers are decoded with the core's zero-copy views (no allocation) and
//! classified by [`Answer`].

use bacnet::apdu::{Apdu, ConfirmedRequest, MaxApdu, MaxSegments};
use bacnet::bvll::Bvll;
use bacnet::enums::{AbortReason, ConfirmedServiceChoice, PropertyIdentifier};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::services::{ReadPropertyAck, ReadPropertyRequest, ServiceCodec};
use bacnet::{EncodeError, ObjectIdentifier};

/// A confirmed ReadProperty datagram whose invoke ID is patched per send.
#[derive(Debug, Clone)]
pub struct ReadPropertyTemplate {
    datagram: Vec<u8>,
    invoke_offset: usize,
}

impl ReadPropertyTemplate {
    /// Encode `ReadProperty(object, property)` as a whole B/IP datagram.
    pub fn new(object: ObjectIdentifier, property: PropertyIdentifier) -> Result<Self, EncodeError> {
        let datagram = encode(object, property, 0)?;
        // The APDU ends the datagram; its invoke ID is its third octet.
        let apdu_len = encode_apdu(object, property, 0).len();
        Ok(ReadPropertyTemplate { invoke_offset: datagram.len() - apdu_len + 2, datagram })
    }

    /// The same request to a device behind a router: the NPDU carries DNET
    /// `net` and DADR `mac` (the router, at the datagram's destination,
    /// routes it).
    pub fn routed(
        object: ObjectIdentifier,
        property: PropertyIdentifier,
        net: u16,
        mac: &[u8],
    ) -> Result<Self, EncodeError> {
        let apdu = encode_apdu(object, property, 0);
        let mut n = Npdu::local_apdu(&apdu, true);
        n.destination = Some(bacnet::npdu::NetAddress { net, mac });
        n.hop_count = bacnet::npdu::DEFAULT_HOP_COUNT;
        let mut npdu = Vec::new();
        n.encode(&mut npdu)?;
        let mut datagram = Vec::new();
        Bvll::OriginalUnicastNpdu(&npdu).encode(&mut datagram)?;
        Ok(ReadPropertyTemplate { invoke_offset: datagram.len() - apdu.len() + 2, datagram })
    }

    /// The datagram with this invoke ID.
    pub fn with_invoke_id(&mut self, invoke_id: u8) -> &[u8] {
        self.datagram[self.invoke_offset] = invoke_id;
        &self.datagram
    }

    /// The datagram with this invoke ID, copied into `out` (for templates
    /// shared between clients).
    pub fn copy_with_invoke_id(&self, invoke_id: u8, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.datagram);
        out[self.invoke_offset] = invoke_id;
    }
}

fn encode_apdu(object: ObjectIdentifier, property: PropertyIdentifier, invoke_id: u8) -> Vec<u8> {
    let body = ReadPropertyRequest { object, property, array_index: None }.to_vec();
    let mut apdu = Vec::new();
    Apdu::ConfirmedRequest(ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu: MaxApdu::UP_TO_1476,
        invoke_id,
        service: ConfirmedServiceChoice::READ_PROPERTY,
        body: &body,
    })
    .encode(&mut apdu);
    apdu
}

/// Encode one confirmed ReadProperty datagram with the core, from scratch.
pub fn encode(object: ObjectIdentifier, property: PropertyIdentifier, invoke_id: u8) -> Result<Vec<u8>, EncodeError> {
    let apdu = encode_apdu(object, property, invoke_id);
    let mut npdu = Vec::new();
    Npdu::local_apdu(&apdu, true).encode(&mut npdu)?;
    let mut datagram = Vec::new();
    Bvll::OriginalUnicastNpdu(&npdu).encode(&mut datagram)?;
    Ok(datagram)
}

/// The NPDU of a local confirmed ReadProperty (for datalinks without a BVLL
/// such as BACnet/SC), and the offset of its invoke ID.
pub fn encode_npdu(object: ObjectIdentifier, property: PropertyIdentifier) -> Result<(Vec<u8>, usize), EncodeError> {
    let apdu = encode_apdu(object, property, 0);
    let mut npdu = Vec::new();
    Npdu::local_apdu(&apdu, true).encode(&mut npdu)?;
    Ok((npdu.clone(), npdu.len() - apdu.len() + 2))
}

/// What an answer to one of our requests says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A ComplexACK to ReadProperty (or, from an echo server, our own request).
    Ack,
    /// Abort out-of-resources from the server: admission control said "later".
    Admission,
    /// Any other Abort.
    Abort,
    /// A Reject.
    Reject,
    /// An Error PDU.
    Error,
    /// An APDU with an invoke ID that answers nothing we asked (a SimpleACK,
    /// a ComplexACK for another service, a segment, …).
    Unexpected,
}

/// The invoke ID and the classification of one received datagram, or `None`
/// when it carries no APDU with an invoke ID (not B/IP, a network message,
/// an unconfirmed request such as an I-Am, undecodable).
///
/// `echo`: the target is a bare UDP echo server, whose "answer" is our own
/// Confirmed-Request coming back; it counts as an [`Answer::Ack`].
pub fn classify(datagram: &[u8], echo: bool) -> Option<(u8, Answer)> {
    classify_npdu(Bvll::decode(datagram).ok()?.npdu()?, echo)
}

/// [`classify`] for an NPDU without its BVLL.
pub fn classify_npdu(npdu: &[u8], echo: bool) -> Option<(u8, Answer)> {
    let NpduPayload::Apdu(apdu) = Npdu::decode(npdu).ok()?.payload else {
        return None;
    };
    let apdu = Apdu::decode(apdu).ok()?;
    let answer = match apdu {
        Apdu::ComplexAck(a) if a.segment.is_none() && a.service == ConfirmedServiceChoice::READ_PROPERTY => Answer::Ack,
        Apdu::ConfirmedRequest(r) if echo && r.service == ConfirmedServiceChoice::READ_PROPERTY => Answer::Ack,
        Apdu::Abort { server: true, reason: AbortReason::OUT_OF_RESOURCES, .. } => Answer::Admission,
        Apdu::Abort { .. } => Answer::Abort,
        Apdu::Reject { .. } => Answer::Reject,
        Apdu::Error { .. } => Answer::Error,
        _ => Answer::Unexpected,
    };
    Some((apdu.invoke_id()?, answer))
}

/// The ReadProperty-ACK in a datagram, fully decoded (for the readiness
/// probe, which shows what each target answered; never on the hot path).
pub fn decode_ack(datagram: &[u8]) -> Option<ReadPropertyAck> {
    let npdu = Bvll::decode(datagram).ok()?.npdu()?;
    let NpduPayload::Apdu(apdu) = Npdu::decode(npdu).ok()?.payload else {
        return None;
    };
    match Apdu::decode(apdu).ok()? {
        Apdu::ComplexAck(a) if a.segment.is_none() => ReadPropertyAck::decode(a.body).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::ObjectType;
    use bacnet::enums::RejectReason;

    fn ai1() -> ObjectIdentifier {
        ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap()
    }

    fn datagram(apdu: Apdu<'_>) -> Vec<u8> {
        let mut a = Vec::new();
        apdu.encode(&mut a);
        let mut n = Vec::new();
        Npdu::local_apdu(&a, false).encode(&mut n).unwrap();
        let mut d = Vec::new();
        Bvll::OriginalUnicastNpdu(&n).encode(&mut d).unwrap();
        d
    }

    #[test]
    fn the_template_patched_with_any_invoke_id_equals_a_fresh_encoding() {
        let mut t = ReadPropertyTemplate::new(ai1(), PropertyIdentifier::PRESENT_VALUE).unwrap();
        for id in 0..=255u8 {
            assert_eq!(t.with_invoke_id(id), encode(ai1(), PropertyIdentifier::PRESENT_VALUE, id).unwrap());
        }
    }

    #[test]
    fn the_request_is_the_golden_readproperty_of_analog_input_1_present_value() {
        // 81 0a 0011 | 01 04 | 00 05 07 0c | 0c 00000001 | 19 55
        let golden =
            [0x81, 0x0a, 0x00, 0x11, 0x01, 0x04, 0x00, 0x05, 0x07, 0x0c, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x19, 0x55];
        assert_eq!(encode(ai1(), PropertyIdentifier::PRESENT_VALUE, 7).unwrap(), golden);
    }

    #[test]
    fn an_echoed_request_is_an_ack_only_from_an_echo_server() {
        let request = encode(ai1(), PropertyIdentifier::PRESENT_VALUE, 42).unwrap();
        assert_eq!(classify(&request, true), Some((42, Answer::Ack)));
        assert_eq!(classify(&request, false), Some((42, Answer::Unexpected)));
    }

    #[test]
    fn answers_are_classified_by_pdu_type_and_abort_reason() {
        let ack_body = ReadPropertyAck {
            object: ai1(),
            property: PropertyIdentifier::PRESENT_VALUE,
            array_index: None,
            value: bacnet::Value::Real(21.5).into(),
        }
        .to_vec();
        let ack = datagram(Apdu::ComplexAck(bacnet::apdu::ComplexAck {
            segment: None,
            invoke_id: 3,
            service: ConfirmedServiceChoice::READ_PROPERTY,
            body: &ack_body,
        }));
        assert_eq!(classify(&ack, false), Some((3, Answer::Ack)));
        assert_eq!(decode_ack(&ack).unwrap().value, bacnet::Value::Real(21.5).into());
        let cases = [
            (Apdu::Abort { server: true, invoke_id: 4, reason: AbortReason::OUT_OF_RESOURCES }, Answer::Admission),
            (Apdu::Abort { server: false, invoke_id: 4, reason: AbortReason::OUT_OF_RESOURCES }, Answer::Abort),
            (Apdu::Abort { server: true, invoke_id: 4, reason: AbortReason::OTHER }, Answer::Abort),
            (Apdu::Reject { invoke_id: 4, reason: RejectReason::OTHER }, Answer::Reject),
            (
                Apdu::Error {
                    invoke_id: 4,
                    service: ConfirmedServiceChoice::READ_PROPERTY,
                    body: &[0x91, 0x01, 0x91, 0x1f],
                },
                Answer::Error,
            ),
            (Apdu::SimpleAck { invoke_id: 4, service: ConfirmedServiceChoice::WRITE_PROPERTY }, Answer::Unexpected),
        ];
        for (apdu, want) in cases {
            assert_eq!(classify(&datagram(apdu), false), Some((4, want)), "{apdu:?}");
        }
    }

    #[test]
    fn datagrams_without_an_invoke_id_are_ignored() {
        assert_eq!(classify(&[], false), None);
        assert_eq!(classify(&[0x81, 0x0a, 0x00, 0x04], false), None);
        let i_am =
            datagram(Apdu::UnconfirmedRequest { service: bacnet::enums::UnconfirmedServiceChoice::I_AM, body: &[] });
        assert_eq!(classify(&i_am, false), None);
    }
}
