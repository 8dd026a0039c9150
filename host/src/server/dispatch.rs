//! Request dispatch for the served device: decode, answer, and refuse with
//! the protocol's answer when a request cannot be served.
//!
//! Refusals, as Clause 18 and 5.4 prescribe:
//! - confirmed request whose parameters do not decode → Reject with the
//!   reason [`bacnet::DecodeError::reject_reason`] gives;
//! - confirmed service this device does not execute → Reject
//!   unrecognized-service;
//! - segmented request, or an answer too large for the requester's Max-APDU
//!   → Abort segmentation-not-supported (this device does not segment yet);
//! - unknown object / property / array index → Error with that code;
//! - confirmed requests received as broadcasts, and malformed unconfirmed
//!   requests → no answer.

use super::device::DeviceConfig;
use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest};
use bacnet::enums::{
    AbortReason, ConfirmedServiceChoice as S, ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P, RejectReason,
    UnconfirmedServiceChoice as U,
};
use bacnet::services::{
    BacnetError, IAm, IHave, ReadAccessResult, ReadPropertyAck, ReadPropertyMultipleAck, ReadPropertyMultipleRequest,
    ReadPropertyRequest, ReadResult, ServiceCodec, WhoHas, WhoHasObject, WhoIs,
};
use bacnet::{AnyValue, ObjectIdentifier, Segmentation, Value};

/// An APDU to send back, and whether to broadcast it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The encoded APDU.
    pub apdu: Vec<u8>,
    /// Send to the local broadcast address instead of the requester.
    pub broadcast: bool,
}

/// Answers requests for one device.
#[derive(Debug)]
pub struct Server {
    device: DeviceConfig,
}

fn err(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError { class, code }
}

impl Server {
    /// A server for `device`.
    pub fn new(device: DeviceConfig) -> Self {
        Server { device }
    }

    /// The I-Am this device sends.
    pub fn i_am_apdu(&self) -> Vec<u8> {
        let i_am = IAm {
            device: self.device.object_id(),
            max_apdu_length_accepted: 1476,
            segmentation_supported: Segmentation::NO_SEGMENTATION,
            vendor_id: self.device.vendor_id,
        };
        let mut out = Vec::new();
        Apdu::UnconfirmedRequest { service: U::I_AM, body: &i_am.to_vec() }.encode(&mut out);
        out
    }

    /// Answer one received APDU, if it calls for an answer.
    pub fn handle(&self, apdu: &[u8], received_as_broadcast: bool) -> Option<Reply> {
        match Apdu::decode(apdu).ok()? {
            Apdu::ConfirmedRequest(c) if !received_as_broadcast => Some(self.confirmed(&c)),
            Apdu::UnconfirmedRequest { service, body } => self.unconfirmed(service, body, received_as_broadcast),
            _ => None,
        }
    }

    fn unconfirmed(&self, service: U, body: &[u8], broadcast: bool) -> Option<Reply> {
        let me = self.device.object_id();
        let in_range = |r: Option<(u32, u32)>| r.is_none_or(|(lo, hi)| (lo..=hi).contains(&me.instance));
        match service {
            U::WHO_IS => {
                let who = WhoIs::decode(body).ok()?;
                in_range(who.range).then(|| Reply { apdu: self.i_am_apdu(), broadcast })
            }
            U::WHO_HAS => {
                let who = WhoHas::decode(body).ok()?;
                let ours = match &who.object {
                    WhoHasObject::Identifier(id) => *id == me,
                    WhoHasObject::Name(n) => n.to_text().is_ok_and(|t| t == self.device.name),
                };
                if !(ours && in_range(who.range)) {
                    return None;
                }
                let i_have =
                    IHave { device: me, object_id: me, object_name: bacnet::CharacterString::utf8(&self.device.name) };
                let mut apdu = Vec::new();
                Apdu::UnconfirmedRequest { service: U::I_HAVE, body: &i_have.to_vec() }.encode(&mut apdu);
                Some(Reply { apdu, broadcast })
            }
            _ => None,
        }
    }

    fn confirmed(&self, c: &ConfirmedRequest<'_>) -> Reply {
        let invoke_id = c.invoke_id;
        let abort = |reason| encode(Apdu::Abort { server: true, invoke_id, reason });
        if c.segment.is_some() {
            return abort(AbortReason::SEGMENTATION_NOT_SUPPORTED);
        }
        let result = match c.service {
            S::READ_PROPERTY => ReadPropertyRequest::decode(c.body).map(|r| self.read_property(&r)),
            S::READ_PROPERTY_MULTIPLE => ReadPropertyMultipleRequest::decode(c.body).map(|r| Ok(self.rpm(&r))),
            _ => return encode(Apdu::Reject { invoke_id, reason: RejectReason::UNRECOGNIZED_SERVICE }),
        };
        let reply = match result {
            Err(decode) => return encode(Apdu::Reject { invoke_id, reason: decode.reject_reason() }),
            Ok(Err(e)) => encode(Apdu::Error { invoke_id, service: c.service, body: &e.to_vec() }),
            Ok(Ok(body)) => {
                encode(Apdu::ComplexAck(ComplexAck { segment: None, invoke_id, service: c.service, body: &body }))
            }
        };
        if reply.apdu.len() > c.max_apdu.octets() as usize {
            return abort(AbortReason::SEGMENTATION_NOT_SUPPORTED);
        }
        reply
    }

    /// The Device object, also when addressed by the wildcard instance 4194303.
    fn is_me(&self, o: ObjectIdentifier) -> bool {
        o == self.device.object_id()
            || (o.object_type == ObjectType::DEVICE && o.instance == ObjectIdentifier::MAX_INSTANCE)
    }

    fn read_one(&self, object: ObjectIdentifier, property: P, index: Option<u32>) -> Result<AnyValue, BacnetError> {
        if !self.is_me(object) {
            return Err(err(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
        }
        if matches!(property, P::ALL | P::REQUIRED | P::OPTIONAL) {
            // Only RPM may ask for these (Clause 15.5.1.1.2).
            return Err(err(ErrorClass::SERVICES, ErrorCode::INVALID_PARAMETER_DATA_TYPE));
        }
        let value = self.device.read(property).ok_or(err(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY))?;
        match index {
            None => Ok(value),
            Some(_) if !self.device.is_array(property) => {
                Err(err(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY))
            }
            Some(0) => Ok(Value::Unsigned(value.0.len() as u64).into()),
            Some(i) => value
                .0
                .get(i as usize - 1)
                .map(|e| AnyValue(vec![e.clone()]))
                .ok_or(err(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)),
        }
    }

    fn read_property(&self, r: &ReadPropertyRequest) -> Result<Vec<u8>, BacnetError> {
        let value = self.read_one(r.object, r.property, r.array_index)?;
        let object = if self.is_me(r.object) { r.object } else { self.device.object_id() };
        Ok(ReadPropertyAck { object, property: r.property, array_index: r.array_index, value }.to_vec())
    }

    fn rpm(&self, r: &ReadPropertyMultipleRequest) -> Vec<u8> {
        let mut out = Vec::with_capacity(r.0.len());
        for spec in &r.0 {
            let mut results = Vec::new();
            for p in &spec.properties {
                match p.property {
                    P::ALL | P::REQUIRED | P::OPTIONAL if self.is_me(spec.object) => {
                        for prop in self.device.properties() {
                            let optional = *prop == P::DESCRIPTION;
                            if (p.property == P::REQUIRED && optional) || (p.property == P::OPTIONAL && !optional) {
                                continue;
                            }
                            results.push(ReadResult {
                                property: *prop,
                                array_index: None,
                                outcome: self.read_one(spec.object, *prop, None),
                            });
                        }
                    }
                    _ => results.push(ReadResult {
                        property: p.property,
                        array_index: p.array_index,
                        outcome: self.read_one(spec.object, p.property, p.array_index),
                    }),
                }
            }
            out.push(ReadAccessResult { object: spec.object, results });
        }
        ReadPropertyMultipleAck(out).to_vec()
    }
}

fn encode(apdu: Apdu<'_>) -> Reply {
    let mut out = Vec::new();
    apdu.encode(&mut out);
    Reply { apdu: out, broadcast: false }
}
