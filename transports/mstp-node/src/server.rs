//! NPDUs in, answers out: the network layer of a device that is not a
//! router (Clause 6) and the application layer's three services.
//!
//! - Who-Is (16.10) with or without a range: an I-Am is due, sent as a
//!   global broadcast at the next token (so a requester behind a router
//!   hears it too).
//! - ReadProperty (15.5) and WriteProperty (15.9): answered at once with a
//!   ComplexACK, SimpleACK or Error, routed back to the requester's network
//!   when the request came through a router (its SNET/SADR become the
//!   answer's DNET/DADR).
//! - Any other confirmed service: Reject unrecognized-service; a segmented
//!   request: Abort segmentation-not-supported; parameters that do not
//!   decode: Reject with the core's reason for the decode error; an answer
//!   larger than the requester accepts: Abort segmentation-not-supported.
//! - Ignored: network-layer messages, NPDUs for another network (this node
//!   routes nothing), other unconfirmed services, other PDU types.

use crate::device::{Device, Link, MAX_APDU, object_id};
use crate::write::Writer;
use bacnet::DecodeError;
use bacnet::codec::tag::{Tag, TagKind, read_tag, read_tagged};
use bacnet::codec::{Reader, tag::TagClass};
use bacnet::enums::{
    AbortReason, ConfirmedServiceChoice, ObjectType, PropertyIdentifier, RejectReason, Segmentation,
    UnconfirmedServiceChoice,
};

/// What an NPDU asks of the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to send.
    Nothing,
    /// Send the NPDU of this many octets (at the start of the output
    /// buffer) to the requester, now.
    Reply(usize),
    /// An I-Am is due at the next token.
    IAm,
}

/// Where a request came from beyond the router that forwarded it.
struct Source<'a> {
    network: Option<(u16, &'a [u8])>,
    priority: u8,
}

const GLOBAL_BROADCAST: u16 = 0xFFFF;

/// Handle one NPDU from the line.
pub(crate) fn handle(
    npdu: &[u8],
    expecting_reply: bool,
    device: &mut Device<'_>,
    link: Link,
    out: &mut [u8],
) -> Outcome {
    let Some((source, apdu)) = network_header(npdu) else { return Outcome::Nothing };
    match apdu.first().map(|b| b >> 4) {
        Some(0) if expecting_reply => confirmed(apdu, &source, device, link, out),
        Some(1)
            if apdu.get(1) == Some(&UnconfirmedServiceChoice::WHO_IS.0) && who_is_me(&apdu[2..], device.instance) =>
        {
            Outcome::IAm
        }
        _ => Outcome::Nothing,
    }
}

/// The network header (Clause 6.2): the source beyond a router and the
/// APDU, or `None` for a message this device does not take.
fn network_header(npdu: &[u8]) -> Option<(Source<'_>, &[u8])> {
    let mut r = Reader::new(npdu);
    if r.u8("").ok()? != 1 {
        return None;
    }
    let control = r.u8("").ok()?;
    if control & 0x80 != 0 {
        // A network-layer message: for routers.
        return None;
    }
    if control & 0x20 != 0 {
        let dnet = r.u16("").ok()?;
        let dlen = r.u8("").ok()?;
        r.take(usize::from(dlen), "").ok()?;
        if dnet != GLOBAL_BROADCAST {
            return None;
        }
    }
    let mut network = None;
    if control & 0x08 != 0 {
        let snet = r.u16("").ok()?;
        let slen = r.u8("").ok()?;
        let sadr = r.take(usize::from(slen), "").ok()?;
        if slen == 0 || snet == GLOBAL_BROADCAST {
            return None;
        }
        network = Some((snet, sadr));
    }
    if control & 0x20 != 0 {
        r.u8("").ok()?; // Hop Count.
    }
    Some((Source { network, priority: control & 0x03 }, r.rest()))
}

/// Who-Is with no range, or a range holding `instance` (Clause 16.10.1).
fn who_is_me(params: &[u8], instance: u32) -> bool {
    if params.is_empty() {
        return true;
    }
    let mut r = Reader::new(params);
    let (Ok(low), Ok(high)) = (context_unsigned(&mut r, 0), context_unsigned(&mut r, 1)) else { return false };
    r.is_empty() && low <= instance && instance <= high
}

/// An NPDU header back to `source`: through the router when it came
/// through one.
fn reply_header(w: &mut Writer<'_>, source: &Source<'_>) {
    w.octet(1);
    match source.network {
        Some((snet, sadr)) => {
            w.octet(0x20 | source.priority);
            w.octets(&snet.to_be_bytes());
            w.octet(sadr.len() as u8);
            w.octets(sadr);
            w.octet(255); // Hop Count.
        }
        None => w.octet(source.priority),
    }
}

/// The I-Am NPDU (Clause 16.10.2), a global broadcast.
pub(crate) fn i_am(device: &Device<'_>, out: &mut [u8]) -> usize {
    let mut w = Writer::new(out);
    w.octets(&[1, 0x20, 0xFF, 0xFF, 0, 255]);
    w.octets(&[0x10, UnconfirmedServiceChoice::I_AM.0]);
    w.app_object_id(device.object_identifier());
    w.app_unsigned(MAX_APDU);
    w.app_enumerated(Segmentation::NO_SEGMENTATION.0);
    w.app_unsigned(u32::from(device.vendor_identifier));
    w.len()
}

/// The largest APDU a requester accepts (Clause 20.1.2.5), from the low
/// four bits of a confirmed request's second octet.
fn max_apdu_accepted(code: u8) -> usize {
    match code & 0x0F {
        1 => 128,
        2 => 206,
        3 => 480,
        4 => 1024,
        5 => 1476,
        _ => 50,
    }
}

fn confirmed(apdu: &[u8], source: &Source<'_>, device: &mut Device<'_>, link: Link, out: &mut [u8]) -> Outcome {
    let &[flags, max, invoke_id, ..] = apdu else { return Outcome::Nothing };
    let mut w = Writer::new(out);
    reply_header(&mut w, source);
    let start = w.len();
    if flags & 0x08 != 0 {
        abort(&mut w, invoke_id, AbortReason::SEGMENTATION_NOT_SUPPORTED);
        return Outcome::Reply(w.len());
    }
    let Some(&service) = apdu.get(3) else {
        reject(&mut w, invoke_id, RejectReason::MISSING_REQUIRED_PARAMETER);
        return Outcome::Reply(w.len());
    };
    let params = &apdu[4..];
    let result = match ConfirmedServiceChoice(service) {
        ConfirmedServiceChoice::READ_PROPERTY => read_property(params, device, link, invoke_id, &mut w),
        ConfirmedServiceChoice::WRITE_PROPERTY => write_property(params, device).map(|()| {
            w.octets(&[0x20, invoke_id, service]);
        }),
        _ => Err(Answer::Reject(RejectReason::UNRECOGNIZED_SERVICE)),
    };
    match result {
        // No larger than this device's own limit either: a router could
        // not take a longer one onto another MS/TP segment.
        Ok(()) if !w.overflowed() && w.len() - start <= max_apdu_accepted(max).min(MAX_APDU as usize) => {}
        Ok(()) => {
            w.truncate(start);
            abort(&mut w, invoke_id, AbortReason::SEGMENTATION_NOT_SUPPORTED);
        }
        Err(Answer::Reject(reason)) => {
            w.truncate(start);
            reject(&mut w, invoke_id, reason);
        }
        Err(Answer::Error(class, code)) => {
            w.truncate(start);
            w.octets(&[0x50, invoke_id, service]);
            w.app_enumerated(class.0);
            w.app_enumerated(code.0);
        }
    }
    Outcome::Reply(w.len())
}

/// A confirmed request that fails.
enum Answer {
    Reject(RejectReason),
    Error(bacnet::enums::ErrorClass, bacnet::enums::ErrorCode),
}

impl From<DecodeError> for Answer {
    fn from(e: DecodeError) -> Answer {
        Answer::Reject(e.reject_reason())
    }
}

impl From<(bacnet::enums::ErrorClass, bacnet::enums::ErrorCode)> for Answer {
    fn from((class, code): (bacnet::enums::ErrorClass, bacnet::enums::ErrorCode)) -> Answer {
        Answer::Error(class, code)
    }
}

fn reject(w: &mut Writer<'_>, invoke_id: u8, reason: RejectReason) {
    w.octets(&[0x60, invoke_id, reason.0]);
}

fn abort(w: &mut Writer<'_>, invoke_id: u8, reason: AbortReason) {
    // Abort-PDU with SRV set: sent by the server.
    w.octets(&[0x71, invoke_id, reason.0]);
}

/// The object, property and optional array index that ReadProperty and
/// WriteProperty both begin with.
fn reference(r: &mut Reader<'_>) -> Result<(u32, PropertyIdentifier, Option<u32>), Answer> {
    let at = r.position();
    let (tag, content) = read_tagged(r)?;
    if !tag.is_context(0) || content.len() != 4 {
        return Err(DecodeError::InvalidTag { at, what: "an object identifier, context tag 0" }.into());
    }
    let id = u32::from_be_bytes([content[0], content[1], content[2], content[3]]);
    let property = PropertyIdentifier(context_unsigned(r, 1)?);
    let index = match next_tag(r) {
        Some(tag) if tag.is_context(2) => Some(context_unsigned(r, 2)?),
        _ => None,
    };
    Ok((id, property, index))
}

fn read_property(
    params: &[u8],
    device: &Device<'_>,
    link: Link,
    invoke_id: u8,
    w: &mut Writer<'_>,
) -> Result<(), Answer> {
    let mut r = Reader::new(params);
    let (id, property, index) = reference(&mut r)?;
    if !r.is_empty() {
        return Err(DecodeError::TrailingData { at: r.position() }.into());
    }
    w.octets(&[0x30, invoke_id, ConfirmedServiceChoice::READ_PROPERTY.0]);
    let id = if id == object_id(ObjectType::DEVICE, 4_194_303) { device.object_identifier() } else { id };
    w.ctx_object_id(0, id);
    w.ctx_unsigned(1, property.0);
    if let Some(i) = index {
        w.ctx_unsigned(2, i);
    }
    w.opening(3);
    device.read(id, property, index, link, w)?;
    w.closing(3);
    Ok(())
}

fn write_property(params: &[u8], device: &mut Device<'_>) -> Result<(), Answer> {
    let mut r = Reader::new(params);
    let (id, property, index) = reference(&mut r)?;
    let at = r.position();
    let open = read_tag(&mut r)?;
    if !open.is_opening(3) {
        return Err(DecodeError::InvalidTag { at, what: "a property value, opening tag 3" }.into());
    }
    let value_start = r.position();
    let mut depth = 0u32;
    let value_end = loop {
        let at = r.position();
        let tag = read_tag(&mut r)?;
        match tag.kind {
            TagKind::Opening => depth += 1,
            TagKind::Closing if depth == 0 && tag.number == 3 && tag.class == TagClass::Context => break at,
            TagKind::Closing if depth == 0 => {
                return Err(DecodeError::InvalidTag { at, what: "closing tag 3" }.into());
            }
            TagKind::Closing => depth -= 1,
            TagKind::Primitive(_) => {
                r.take_content(tag.content_len(), at)?;
            }
        }
    };
    let value = &params[value_start..value_end];
    if next_tag(&r).is_some_and(|t| t.is_context(4)) {
        let priority = context_unsigned(&mut r, 4)?;
        if !(1..=16).contains(&priority) {
            return Err(Answer::Reject(RejectReason::PARAMETER_OUT_OF_RANGE));
        }
    }
    if !r.is_empty() {
        return Err(DecodeError::TrailingData { at: r.position() }.into());
    }
    Ok(device.write(id, property, index, value)?)
}

fn next_tag(r: &Reader<'_>) -> Option<Tag> {
    bacnet::codec::tag::peek_tag(r).and_then(Result::ok)
}

/// A context-tagged unsigned of 1..=4 octets.
fn context_unsigned(r: &mut Reader<'_>, n: u8) -> Result<u32, DecodeError> {
    let at = r.position();
    let (tag, content) = read_tagged(r)?;
    if !tag.is_context(n) || !matches!(tag.kind, TagKind::Primitive(_)) {
        return Err(DecodeError::InvalidTag { at, what: "a context-tagged unsigned" });
    }
    if content.is_empty() || content.len() > 4 {
        return Err(DecodeError::OutOfRange { at, what: "an unsigned of 1 to 4 octets" });
    }
    Ok(content.iter().fold(0, |v, &b| (v << 8) | u32::from(b)))
}
