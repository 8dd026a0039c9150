//! Request dispatch: decode a request, ask the object model (one crossing
//! per request), merge the host-owned Device properties, encode the answer —
//! or refuse with the protocol's answer.
//!
//! Refusals, as Clauses 5.4 and 18 prescribe:
//! - parameters that do not decode → Reject, reason from
//!   [`bacnet::DecodeError::reject_reason`];
//! - a confirmed service this device does not execute → Reject
//!   unrecognized-service;
//! - a segmented request, or an answer larger than the requester's
//!   Max-APDU → Abort segmentation-not-supported (no segmentation yet);
//! - the model failed (trap, time or memory limit, disabled) → Error
//!   device/operational-problem; the model is busy → Abort out-of-resources;
//! - confirmed requests received as broadcasts, malformed unconfirmed
//!   requests → no answer.
//!
//! Must never: panic on any octets, call the model more than once per
//! request, or answer a request the standard says to ignore.

use super::cov::{self, Cov, Found};
use super::device::{HostDevice, MAX_APDU};
use super::idmap::DeviceIdMap;
use super::management::CommunicationControl;
use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest};
use bacnet::enums::{
    AbortReason, ConfirmedServiceChoice as S, ErrorClass, ErrorCode, PropertyIdentifier as P, RejectReason,
    UnconfirmedServiceChoice as U,
};
use bacnet::services::{
    BacnetError, IAm, IHave, ObjectPropertyReference, PropertyValue, ReadAccessResult, ReadPropertyAck,
    ReadPropertyMultipleAck, ReadPropertyMultipleRequest, ReadPropertyRequest, ReadResult, ServiceCodec,
    SubscribeCOVPropertyRequest, SubscribeCOVRequest, WhoHas, WhoHasObject, WhoIs, WritePropertyMultipleError,
    WritePropertyMultipleRequest, WritePropertyRequest,
};
use bacnet::tsm::Response;
use bacnet::{ObjectIdentifier, Segmentation};
use std::sync::atomic::AtomicU64;
use trellis_model::{EncodedRead, ModelError, ObjectModel, PropertyRead, PropertyTarget, PropertyWrite};
use trellis_net::DeviceAddress;

/// An APDU to send back, and whether to broadcast it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The encoded APDU.
    pub apdu: Vec<u8>,
    /// Send to the local broadcast address instead of the requester.
    pub broadcast: bool,
}

/// How much an answer may take: the octets of service data, and whether
/// they may go in segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerRoom {
    /// Service-data octets the answer may have.
    pub octets: usize,
    /// The answer may be segmented (the requester accepts segments and so
    /// do we).
    pub segmented: bool,
}

impl AnswerRoom {
    /// The Abort reason for an answer that does not fit (Clause 5.4.5.3).
    pub(super) fn too_long(self) -> AbortReason {
        if self.segmented { AbortReason::APDU_TOO_LONG } else { AbortReason::SEGMENTATION_NOT_SUPPORTED }
    }
}

/// Counters of a served device's transaction state machine and endpoint,
/// for operators (logs, status) and tests.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Requests refused by admission control (Abort out-of-resources).
    pub refused: AtomicU64,
    /// Retransmitted requests dropped while the first was in progress.
    pub duplicates: AtomicU64,
    /// Segmented requests reassembled.
    pub segmented_requests: AtomicU64,
    /// Answers sent in segments.
    pub segmented_responses: AtomicU64,
    /// Transactions this device aborted.
    pub aborted: AtomicU64,
    /// Transactions the client aborted.
    pub aborted_by_client: AtomicU64,
    /// Transactions ended by a timer.
    pub timed_out: AtomicU64,
    /// Segmented answers refused or cut short because their requester's
    /// answer budget (`limits.answer_octets_per_second`) was spent.
    pub budget_refused: AtomicU64,
    /// Unconfirmed requests dropped because 64 were being answered.
    pub dropped_unconfirmed: AtomicU64,
    /// Requests refused with Abort out-of-resources because the object
    /// model's queue was full.
    pub model_busy: AtomicU64,
}

impl ServerStats {
    pub(super) fn store(&self, c: &bacnet::tsm::ServerTsmCounters) {
        use std::sync::atomic::Ordering::Relaxed;
        self.refused.store(c.refused, Relaxed);
        self.duplicates.store(c.duplicates, Relaxed);
        self.segmented_requests.store(c.segmented_requests, Relaxed);
        self.segmented_responses.store(c.segmented_responses, Relaxed);
        self.aborted.store(c.aborted, Relaxed);
        self.aborted_by_client.store(c.aborted_by_client, Relaxed);
        self.timed_out.store(c.timed_out, Relaxed);
        self.budget_refused.store(c.budget_refused, Relaxed);
    }
}

/// Answers requests for one device served by model `M`.
#[derive(Debug)]
pub struct Server<M> {
    model: M,
    ids: DeviceIdMap,
    host: HostDevice,
    cov: Cov,
    alarms: super::alarms::Alarms,
    communication: CommunicationControl,
    stats: ServerStats,
    requests: super::request_metrics::RequestMetrics,
    /// An acknowledged ReinitializeDevice: Some(cold start).
    pending_restart: std::sync::Mutex<Option<bool>>,
    /// The host objects' state on disk, once [`Server::persist`] ran.
    retained: std::sync::OnceLock<super::retained::Retained>,
}

/// How a request failed before an answer could be encoded.
pub(super) enum Failure {
    Error(BacnetError),
    WpmError(WritePropertyMultipleError),
    CreateError(bacnet::services::CreateObjectError),
    CovMultipleError(bacnet::services::SubscribeCOVPropertyMultipleError),
    Abort(AbortReason),
}

impl From<ModelError> for Failure {
    fn from(e: ModelError) -> Self {
        // A full queue is load, not a fault: counted (`ServerStats::model_busy`),
        // logged at debug so an overloaded device does not also drown in logs.
        // So is a plugin waiting out its restart back-off: its failure was
        // logged once, when it happened.
        if matches!(e, ModelError::Busy { .. } | ModelError::Restarting { .. }) {
            tracing::debug!(error = %e, "object model busy: request refused");
        } else {
            tracing::warn!(error = %e, "object model failed a request");
        }
        match e {
            ModelError::Busy { .. } | ModelError::Restarting { .. } => Failure::Abort(AbortReason::OUT_OF_RESOURCES),
            _ => Failure::Error(BacnetError { class: ErrorClass::DEVICE, code: ErrorCode::OPERATIONAL_PROBLEM }),
        }
    }
}

pub(super) fn contract(what: &str) -> Failure {
    tracing::warn!(what, "object model broke the interface contract");
    Failure::Error(BacnetError { class: ErrorClass::DEVICE, code: ErrorCode::OPERATIONAL_PROBLEM })
}

fn denied() -> BacnetError {
    BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::WRITE_ACCESS_DENIED }
}

impl<M: ObjectModel> Server<M> {
    /// A server for `model`, presenting its Device object as `host.id`.
    /// `model_device` is the Device object's identifier inside the model.
    pub fn new(model: M, model_device: ObjectIdentifier, host: HostDevice) -> Self {
        let limits = &host.config.limits;
        let cov = Cov::new(bacnet::cov::CovConfig {
            max_subscriptions_per_subscriber: limits.max_cov_per_subscriber,
            max_subscriptions: limits.max_cov_subscriptions,
            max_subscriptions_per_origin: limits.max_cov_per_address,
            reserved_subscriptions: limits.reserved_cov_subscriptions,
            max_lifetime: limits.max_cov_lifetime,
            allow_indefinite: limits.allow_indefinite_cov,
        });
        Server {
            model,
            ids: DeviceIdMap { network: host.id, model: model_device },
            host,
            cov,
            alarms: Default::default(),
            communication: CommunicationControl::default(),
            stats: ServerStats::default(),
            requests: Default::default(),
            pending_restart: Default::default(),
            retained: Default::default(),
        }
    }

    /// Journal an accepted change to the host's objects, when they are
    /// kept on disk (`record` runs only then).
    pub(super) fn retain(&self, record: impl FnOnce() -> super::retained::Record) {
        if let Some(r) = self.retained.get() {
            r.record(&record());
        }
    }

    pub(super) fn set_retained(&self, retained: super::retained::Retained) {
        let _ = self.retained.set(retained);
    }

    /// Changes to the host's objects the disk refused (`None`: not kept on disk).
    pub fn retained_failures(&self) -> Option<u64> {
        self.retained.get().map(|r| r.failures())
    }

    /// The alarm notifier's counters and queue.
    pub fn alarms(&self) -> &super::alarms::Alarms {
        &self.alarms
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// What the transport side refused or gave up on.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// Counts and latencies of the confirmed requests executed, per service.
    pub fn request_metrics(&self) -> &super::request_metrics::RequestMetrics {
        &self.requests
    }

    /// The DeviceCommunicationControl state.
    pub fn communication(&self) -> &CommunicationControl {
        &self.communication
    }

    pub(super) fn pending_restart(&self) -> &std::sync::Mutex<Option<bool>> {
        &self.pending_restart
    }

    /// The device's COV subscriptions and their counters.
    pub fn cov(&self) -> &Cov {
        &self.cov
    }

    /// The host-owned part of the Device object, and the host's objects.
    pub(super) fn host(&self) -> &HostDevice {
        &self.host
    }

    /// The host settings of the device.
    pub fn config(&self) -> &super::DeviceConfig {
        &self.host.config
    }

    /// The Device object identifier on the network.
    pub fn device_id(&self) -> ObjectIdentifier {
        self.host.id
    }

    /// The I-Am this device sends.
    pub fn i_am_apdu(&self) -> Vec<u8> {
        let i_am = IAm {
            device: self.host.id,
            max_apdu_length_accepted: MAX_APDU,
            segmentation_supported: Segmentation::SEGMENTED_BOTH,
            vendor_id: self.host.vendor_id,
        };
        encode(Apdu::UnconfirmedRequest { service: U::I_AM, body: &i_am.to_vec() }).apdu
    }

    /// Answer one received APDU, if it calls for an answer.
    pub async fn handle(&self, peer: &DeviceAddress, apdu: &[u8], received_as_broadcast: bool) -> Option<Reply> {
        match Apdu::decode(apdu).ok()? {
            Apdu::ConfirmedRequest(c) if !received_as_broadcast => Some(self.confirmed(peer, &c).await),
            Apdu::UnconfirmedRequest { service, body } => {
                self.unconfirmed(peer, service, body, received_as_broadcast).await
            }
            _ => None,
        }
    }

    async fn unconfirmed(&self, peer: &DeviceAddress, service: U, body: &[u8], broadcast: bool) -> Option<Reply> {
        let me = self.host.id.instance;
        let in_range = |r: Option<(u32, u32)>| r.is_none_or(|(lo, hi)| (lo..=hi).contains(&me));
        match service {
            U::I_AM => {
                // A device recipient of an event notification answering our Who-Is.
                let i_am = bacnet::services::IAm::decode(body).ok()?;
                self.alarms.i_am(i_am.device.instance, peer);
                None
            }
            U::WHO_IS => {
                let who = WhoIs::decode(body).ok()?;
                in_range(who.range).then(|| Reply { apdu: self.i_am_apdu(), broadcast })
            }
            U::TIME_SYNCHRONIZATION | U::UTC_TIME_SYNCHRONIZATION => {
                let r = bacnet::services::TimeSynchronizationRequest::decode(body).ok()?;
                self.synchronize_time(r.date, r.time, service == U::UTC_TIME_SYNCHRONIZATION);
                None
            }
            U::WHO_HAS => {
                let who = WhoHas::decode(body).ok()?;
                // I-Have is initiated: not under DCC disable-initiation.
                if !in_range(who.range) || !self.communication.initiates() {
                    return None;
                }
                let objects = self.model.objects().await.ok()?;
                let found = objects.iter().find(|o| match &who.object {
                    WhoHasObject::Identifier(id) => self.ids.inbound(*id) == o.id,
                    WhoHasObject::Name(n) => n.to_text().is_ok_and(|t| t == o.name),
                })?;
                let object_id = if found.id == self.ids.model { self.host.id } else { found.id };
                let i_have =
                    IHave { device: self.host.id, object_id, object_name: bacnet::CharacterString::utf8(&found.name) };
                Some(Reply {
                    apdu: encode(Apdu::UnconfirmedRequest { service: U::I_HAVE, body: &i_have.to_vec() }).apdu,
                    broadcast,
                })
            }
            _ => None,
        }
    }

    /// Answer a confirmed request directly, in one APDU, for callers with no
    /// transaction state machine (tests, one-shot tools): a segmented
    /// request, or an answer above the requester's Max-APDU, is aborted
    /// segmentation-not-supported. [`super::serve`] uses [`Server::execute`]
    /// behind a [`bacnet::tsm::ServerTsm`] instead.
    async fn confirmed(&self, peer: &DeviceAddress, c: &ConfirmedRequest<'_>) -> Reply {
        let invoke_id = c.invoke_id;
        let service = c.service;
        if c.segment.is_some() {
            return encode(Apdu::Abort { server: true, invoke_id, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED });
        }
        let room = AnswerRoom { octets: (c.max_apdu.octets() as usize).saturating_sub(3), segmented: false };
        let reply = match self.execute(peer, service, c.body, room).await {
            Response::SimpleAck => encode(Apdu::SimpleAck { invoke_id, service }),
            Response::ComplexAck(body) => {
                encode(Apdu::ComplexAck(ComplexAck { segment: None, invoke_id, service, body: &body }))
            }
            Response::Error(body) => encode(Apdu::Error { invoke_id, service, body: &body }),
            Response::Reject(reason) => encode(Apdu::Reject { invoke_id, reason }),
            Response::Abort(reason) => encode(Apdu::Abort { server: true, invoke_id, reason }),
        };
        if reply.apdu.len() > c.max_apdu.octets() as usize {
            return encode(Apdu::Abort { server: true, invoke_id, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED });
        }
        reply
    }

    /// Execute one whole confirmed request and give the application's
    /// answer; `room` is what the answer may take (see
    /// [`bacnet::tsm::Indication::answer_capacity`]).
    pub async fn execute(&self, peer: &DeviceAddress, service: S, body: &[u8], room: AnswerRoom) -> Response {
        self.execute_into(peer, service, body, room, Vec::new()).await
    }

    /// [`execute`](Self::execute), encoding a ReadProperty answer into
    /// `answer` (an empty buffer, recycled: no allocation per request).
    pub async fn execute_into(
        &self,
        peer: &DeviceAddress,
        service: S,
        body: &[u8],
        room: AnswerRoom,
        answer: Vec<u8>,
    ) -> Response {
        let started = std::time::Instant::now();
        let response = self.execute_service(peer, service, body, room, answer).await;
        self.requests.record(service, &response, started.elapsed());
        response
    }

    async fn execute_service(
        &self,
        peer: &DeviceAddress,
        service: S,
        body: &[u8],
        room: AnswerRoom,
        answer: Vec<u8>,
    ) -> Response {
        let result = match service {
            S::SUBSCRIBE_COV => match SubscribeCOVRequest::decode(body) {
                Ok(r) => Ok(self.subscribe_cov(peer, r).await.map(|_| None)),
                Err(e) => Err(e),
            },
            S::SUBSCRIBE_COV_PROPERTY => match SubscribeCOVPropertyRequest::decode(body) {
                Ok(r) => Ok(self.subscribe_cov_property(peer, r).await.map(|_| None)),
                Err(e) => Err(e),
            },
            S::SUBSCRIBE_COV_PROPERTY_MULTIPLE => {
                match bacnet::services::SubscribeCOVPropertyMultipleRequest::decode(body) {
                    Ok(r) => Ok(self.subscribe_cov_property_multiple(peer, r).await.map(|_| None)),
                    Err(e) => Err(e),
                }
            }
            S::READ_PROPERTY => match ReadPropertyRequest::decode(body) {
                Ok(r) => Ok(self.read_property(r, answer).await.map(Some)),
                Err(e) => Err(e),
            },
            S::READ_PROPERTY_MULTIPLE => match ReadPropertyMultipleRequest::decode(body) {
                Ok(r) => Ok(self.read_property_multiple(r, room).await.map(Some)),
                Err(e) => Err(e),
            },
            S::WRITE_PROPERTY => match WritePropertyRequest::decode(body) {
                Ok(r) => Ok(self.write_property(r).await.map(|_| None)),
                Err(e) => Err(e),
            },
            S::WRITE_PROPERTY_MULTIPLE => match WritePropertyMultipleRequest::decode(body) {
                Ok(r) => Ok(self.write_property_multiple(r).await.map(|_| None)),
                Err(e) => Err(e),
            },
            S::DEVICE_COMMUNICATION_CONTROL => {
                match bacnet::services::DeviceCommunicationControlRequest::decode(body) {
                    Ok(r) => Ok(self.device_communication_control(r).map(|_| None)),
                    Err(e) => Err(e),
                }
            }
            S::REINITIALIZE_DEVICE => match bacnet::services::ReinitializeDeviceRequest::decode(body) {
                Ok(r) => Ok(self.reinitialize_device(r).map(|_| None)),
                Err(e) => Err(e),
            },
            S::READ_RANGE => match bacnet::services::ReadRangeRequest::decode(body) {
                Ok(r) => Ok(self.read_range(r, room).await.map(Some)),
                Err(e) => Err(e),
            },
            S::ATOMIC_READ_FILE => match bacnet::services::AtomicReadFileRequest::decode(body) {
                Ok(r) => Ok(self.atomic_read_file(r, room).map(Some)),
                Err(e) => Err(e),
            },
            S::ATOMIC_WRITE_FILE => match bacnet::services::AtomicWriteFileRequest::decode(body) {
                Ok(r) => Ok(self.atomic_write_file(r).map(Some)),
                Err(e) => Err(e),
            },
            S::ACKNOWLEDGE_ALARM => match bacnet::services::AcknowledgeAlarmRequest::decode(body) {
                Ok(r) => Ok(self.acknowledge_alarm(r).await.map(|_| None)),
                Err(e) => Err(e),
            },
            S::GET_EVENT_INFORMATION => match bacnet::services::GetEventInformationRequest::decode(body) {
                Ok(r) => Ok(self.get_event_information(r, room).await.map(Some)),
                Err(e) => Err(e),
            },
            S::CREATE_OBJECT if self.host.schedules.creates() => {
                match bacnet::services::CreateObjectRequest::decode(body) {
                    Ok(r) => Ok(self.create_object(r).await.map(Some)),
                    Err(e) => Err(e),
                }
            }
            S::DELETE_OBJECT if self.host.schedules.creates() => {
                match bacnet::services::DeleteObjectRequest::decode(body) {
                    Ok(r) => Ok(self.delete_object(r.0).await.map(|_| None)),
                    Err(e) => Err(e),
                }
            }
            S::GET_ALARM_SUMMARY if body.is_empty() => Ok(self.get_alarm_summary().await.map(Some)),
            S::GET_ALARM_SUMMARY => Err(bacnet::DecodeError::TrailingData { at: 0 }),
            S::GET_ENROLLMENT_SUMMARY => match bacnet::services::GetEnrollmentSummaryRequest::decode(body) {
                Ok(r) => Ok(self.get_enrollment_summary(r).await.map(Some)),
                Err(e) => Err(e),
            },
            _ => return Response::Reject(RejectReason::UNRECOGNIZED_SERVICE),
        };
        match result {
            Err(decode) => Response::Reject(decode.reject_reason()),
            Ok(Ok(Some(body))) => Response::ComplexAck(body),
            Ok(Ok(None)) => Response::SimpleAck,
            Ok(Err(Failure::Abort(reason))) => {
                if reason == AbortReason::OUT_OF_RESOURCES {
                    self.stats.model_busy.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Response::Abort(reason)
            }
            Ok(Err(Failure::Error(e))) => Response::Error(e.to_vec()),
            Ok(Err(Failure::WpmError(e))) => Response::Error(e.to_vec()),
            Ok(Err(Failure::CreateError(e))) => Response::Error(e.to_vec()),
            Ok(Err(Failure::CovMultipleError(e))) => Response::Error(e.to_vec()),
        }
    }

    /// Read targets through one model call, answering host-owned Device
    /// properties locally; one result list per target, as clients see them.
    pub(super) async fn read_targets(&self, targets: &[PropertyTarget]) -> Result<Vec<Vec<PropertyRead>>, Failure> {
        // Per target: `None` when the host answers it, else whether it
        // addresses the Device object (the model's answers come in order).
        let route = |t: &PropertyTarget| {
            let is_device = self.ids.inbound_target(*t).object == self.ids.model;
            let host_owned = (is_device && HostDevice::owns(t.property)) || self.host.serves(t.object);
            (!host_owned).then_some(is_device)
        };
        // Nearly always every target goes to the model as asked: then the
        // request's own list is the model's, with no copy.
        let as_asked = targets.iter().all(|t| route(t).is_some() && self.ids.inbound_target(*t) == *t);
        let to_model: Vec<PropertyTarget> = if as_asked {
            Vec::new()
        } else {
            targets.iter().filter(|t| route(t).is_some()).map(|t| self.ids.inbound_target(*t)).collect()
        };
        let to_model: &[PropertyTarget] = if as_asked { targets } else { &to_model };
        let asked = to_model.len();
        let mut answers = if to_model.is_empty() {
            Vec::new()
        } else {
            match self.model.read(to_model).await {
                Ok(a) => a,
                // A disabled plugin's objects are reported out of service.
                Err(ModelError::Disabled { .. }) => targets
                    .iter()
                    .filter(|t| route(t).is_some())
                    .map(|t| disabled_reads(self.ids.inbound_target(*t)))
                    .collect(),
                Err(e) => return Err(e.into()),
            }
        };
        if answers.len() != asked {
            return Err(contract("read-properties answered a different number of targets"));
        }
        // The model's answers, one list per target it was asked, become the
        // answer: in place when it was asked every target.
        let mut out = if as_asked { Vec::new() } else { Vec::with_capacity(targets.len()) };
        let mut next_answer = 0;
        for t in targets {
            let list = match route(t) {
                None => self.host_reads(*t),
                Some(is_device) => {
                    let mut list = std::mem::take(&mut answers[next_answer]);
                    next_answer += 1;
                    if list.is_empty() {
                        return Err(contract("read-properties answered a target with no result"));
                    }
                    let whole_device = is_device && matches!(t.property, P::ALL | P::REQUIRED | P::OPTIONAL);
                    for r in &mut list {
                        if r.target.object == self.ids.model
                            && r.target.property == P::PROPERTY_LIST
                            && let Ok(v) = &mut r.outcome
                        {
                            HostDevice::extend_property_list(v);
                        }
                        if r.target.object == self.ids.model && r.target.property == P::OBJECT_LIST {
                            self.host.extend_object_list(r.target.array_index, &mut r.outcome);
                        }
                    }
                    if matches!(t.property, P::ALL | P::REQUIRED) {
                        // 135.1 §9.20.1.7: Property_List is not among the results of ALL/REQUIRED.
                        list.retain(|r| r.target.property != P::PROPERTY_LIST);
                    }
                    if whole_device && t.property != P::OPTIONAL {
                        list.retain(|r| !HostDevice::owns(r.target.property));
                        list.extend(HostDevice::OWNED.iter().map(|p| PropertyRead {
                            target: PropertyTarget { object: self.ids.model, property: *p, array_index: None },
                            outcome: Ok(self.host_value(*p).unwrap_or_default()),
                        }));
                    }
                    list.into_iter().map(|r| self.ids.outbound_read(r)).collect()
                }
            };
            if as_asked {
                answers[next_answer - 1] = list;
            } else {
                out.push(list);
            }
        }
        Ok(if as_asked { answers } else { out })
    }

    /// Read what a subscription needs of `object`: the monitored property
    /// first, then Status_Flags and COV_Increment.
    async fn find_monitored(
        &self,
        object: ObjectIdentifier,
        property: P,
        index: Option<u32>,
    ) -> Result<Found, Failure> {
        let targets = cov::subscription_reads(object, property, index);
        let lists = self.read_targets(&targets).await?;
        Ok(self.found(object, lists))
    }

    /// What the reads of [`cov::subscription_reads`] for `object` found.
    fn found(&self, object: ObjectIdentifier, lists: Vec<Vec<PropertyRead>>) -> Found {
        let mut found = Found { is_device: self.ids.is_device(object), ..Found::default() };
        for (i, list) in lists.into_iter().enumerate() {
            for r in list {
                match r.outcome {
                    Ok(value) => {
                        if i == 0 {
                            found.first = Some(Ok(()));
                        }
                        found.values.push(PropertyValue {
                            property: r.target.property,
                            array_index: r.target.array_index,
                            value,
                            priority: None,
                        });
                    }
                    Err(e) if i == 0 => found.first = Some(Err(e)),
                    Err(_) => {}
                }
            }
        }
        found
    }

    /// SubscribeCOVPropertyMultiple: every reference looked up in one model
    /// call, then subscribed all together or refused.
    async fn subscribe_cov_property_multiple(
        &self,
        peer: &DeviceAddress,
        r: bacnet::services::SubscribeCOVPropertyMultipleRequest,
    ) -> Result<(), Failure> {
        // More distinct references than one subscriber may hold are
        // refused before anything is read: a long request costs no model
        // time. A cancellation is never refused for the limits.
        let most = self.cov.with_table(|t, _| t.config().max_subscriptions_per_subscriber);
        let mut distinct = std::collections::BTreeSet::new();
        for spec in &r.specifications {
            for reference in &spec.references {
                let p = reference.property;
                distinct.insert((spec.object, p.property, p.array_index));
                if !r.is_cancellation() && distinct.len() > most {
                    let error = bacnet::cov::Refusal::SubscriberLimit.error();
                    return Err(Failure::CovMultipleError(cov::multiple_error_at(&r, error, Some((spec.object, p)))));
                }
            }
        }
        let mut targets = Vec::new();
        let mut spans = Vec::new();
        for spec in &r.specifications {
            for reference in &spec.references {
                let p = reference.property;
                let reads = cov::subscription_reads(spec.object, p.property, p.array_index);
                spans.push((spec.object, reads.len()));
                targets.extend(reads);
            }
        }
        // A failed read is answered in this service's own Error body.
        let mut lists = match self.read_targets(&targets).await {
            Ok(lists) => lists.into_iter(),
            Err(Failure::Error(error)) => {
                return Err(Failure::CovMultipleError(cov::multiple_error_at(&r, error, None)));
            }
            Err(other) => return Err(other),
        };
        let found: Vec<(ObjectIdentifier, Found)> = spans
            .into_iter()
            .map(|(object, n)| (object, self.found(object, lists.by_ref().take(n).collect())))
            .collect();
        self.cov.subscribe_cov_property_multiple(peer, &r, found).map_err(Failure::CovMultipleError)
    }

    pub(super) async fn subscribe_cov(&self, peer: &DeviceAddress, r: SubscribeCOVRequest) -> Result<(), Failure> {
        let found = self.find_monitored(r.monitored_object, P::PRESENT_VALUE, None).await?;
        self.cov.subscribe_cov(peer, &r, found).map_err(Failure::Error)?;
        self.retain_subscription(peer, S::SUBSCRIBE_COV, &r);
        Ok(())
    }

    pub(super) async fn subscribe_cov_property(
        &self,
        peer: &DeviceAddress,
        r: SubscribeCOVPropertyRequest,
    ) -> Result<(), Failure> {
        let p = r.monitored_property;
        let found = self.find_monitored(r.monitored_object, p.property, p.array_index).await?;
        self.cov.subscribe_cov_property(peer, &r, found).map_err(Failure::Error)?;
        self.retain_subscription(peer, S::SUBSCRIBE_COV_PROPERTY, &r);
        Ok(())
    }

    /// A subscription (or cancellation) kept on disk, unless its subscriber
    /// is inside the gateway (it subscribes again when it starts).
    fn retain_subscription(&self, peer: &DeviceAddress, service: S, r: &impl ServiceCodec) {
        if matches!(peer.link, trellis_net::LinkAddress::Local(_)) {
            return;
        }
        self.retain(|| {
            let mut body = Vec::new();
            r.encode(&mut body);
            super::retained::Record::Cov {
                subscriber: peer.to_string(),
                service: service.0,
                accepted: super::retained::unix_now(),
                body,
            }
        });
    }

    /// Read what the COV table needs of `objects` (one model call) and
    /// hand it over; a failed read is logged and skipped.
    pub(crate) async fn observe_objects(&self, objects: &[ObjectIdentifier]) {
        let mut targets = Vec::new();
        let mut owners = Vec::new();
        for o in objects {
            for p in self.cov.with_table(|t, _| t.properties_to_read(*o)) {
                targets.push(PropertyTarget { object: *o, property: p.property, array_index: p.array_index });
                owners.push(*o);
            }
        }
        if targets.is_empty() {
            return;
        }
        let lists = match self.read_targets(&targets).await {
            Ok(l) => l,
            Err(_) => {
                tracing::warn!(
                    objects = objects.len(),
                    "COV: reading changed objects failed; notifications wait for the next change"
                );
                return;
            }
        };
        let mut per_object: std::collections::BTreeMap<ObjectIdentifier, Vec<PropertyValue>> = Default::default();
        for (owner, list) in owners.into_iter().zip(lists) {
            for r in list {
                if let Ok(value) = r.outcome {
                    per_object.entry(owner).or_default().push(PropertyValue {
                        property: r.target.property,
                        array_index: r.target.array_index,
                        value,
                        priority: None,
                    });
                }
            }
        }
        for (object, values) in per_object {
            self.cov.observe(object, &values);
        }
    }

    /// The model created or deleted objects: drop the subscriptions of the
    /// ones gone, and bump Database_Revision (Clause 12.11.35).
    pub(crate) async fn objects_changed(&self) {
        let Ok(objects) = self.model.objects().await else { return };
        self.host.model_objects.store(objects.len(), std::sync::atomic::Ordering::Relaxed);
        let present: std::collections::BTreeSet<ObjectIdentifier> = objects.iter().map(|o| o.id).collect();
        let monitored: Vec<ObjectIdentifier> = self.cov.with_table(|t, _| t.monitored_objects().collect());
        for gone in monitored.into_iter().filter(|o| !present.contains(o)) {
            self.cov.with_table(|t, _| t.remove_object(gone));
        }
        self.database_changed();
    }

    /// Something Database_Revision tracks changed.
    fn database_changed(&self) {
        self.host.database_revision.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A host-owned Device property's value.
    fn host_value(&self, p: P) -> Option<bacnet::AnyValue> {
        match p {
            P::ACTIVE_COV_SUBSCRIPTIONS => Some(self.cov.active_subscriptions()),
            P::ACTIVE_COV_MULTIPLE_SUBSCRIPTIONS => Some(self.cov.active_multiple_subscriptions()),
            P::DEVICE_ADDRESS_BINDING => Some(self.alarms.device_address_binding()),
            _ => self.host.read(p),
        }
    }

    /// What the host answers for `t`: a Device property it owns, or a
    /// Network Port's or File object's (ALL, REQUIRED and OPTIONAL expanded).
    fn host_reads(&self, t: PropertyTarget) -> Vec<PropertyRead> {
        if let Some(classes) = self.host.notification_class(t.object) {
            let read = |property: P, array_index| PropertyRead {
                target: PropertyTarget { object: t.object, property, array_index },
                outcome: classes.read(t.object, property, array_index),
            };
            return match t.property {
                P::ALL | P::REQUIRED | P::OPTIONAL => {
                    classes.expand(t.object, t.property).into_iter().map(|p| read(p, None)).collect()
                }
                p => vec![read(p, t.array_index)],
            };
        }
        if let Some(schedules) = self.host.schedule(t.object) {
            let today = self.model.clock().unwrap_or_default().now().local_date_time().0;
            let read = |property: P, array_index| PropertyRead {
                target: PropertyTarget { object: t.object, property, array_index },
                outcome: schedules.read(t.object, property, array_index, today),
            };
            return match t.property {
                P::ALL | P::REQUIRED | P::OPTIONAL => {
                    schedules.expand(t.object, t.property).into_iter().map(|p| read(p, None)).collect()
                }
                p => vec![read(p, t.array_index)],
            };
        }
        if let Some(files) = self.host.file(t.object) {
            let clock = self.file_clock();
            let read = |property: P, array_index| PropertyRead {
                target: PropertyTarget { object: t.object, property, array_index },
                outcome: files.read(t.object, property, array_index, clock),
            };
            return match t.property {
                P::ALL | P::REQUIRED | P::OPTIONAL => {
                    files.expand(t.object, t.property).into_iter().map(|p| read(p, None)).collect()
                }
                p => vec![read(p, t.array_index)],
            };
        }
        let Some(port) = self.host.network_port(t.object) else { return vec![self.host_read(t)] };
        let read = |property: P, array_index| PropertyRead {
            target: PropertyTarget { object: t.object, property, array_index },
            outcome: port.read(property, array_index),
        };
        match t.property {
            // Every property of a Network Port here is required or of its
            // datalink; none is optional. Property_List is not among the
            // results of ALL (135.1 §9.20.1.7).
            P::ALL | P::REQUIRED => {
                port.properties().into_iter().filter(|p| *p != P::PROPERTY_LIST).map(|p| read(p, None)).collect()
            }
            P::OPTIONAL => Vec::new(),
            p => vec![read(p, t.array_index)],
        }
    }

    fn host_read(&self, t: PropertyTarget) -> PropertyRead {
        let outcome = match (self.host_value(t.property), t.array_index) {
            (Some(v), None) => Ok(v),
            (Some(_), Some(_)) => {
                Err(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::PROPERTY_IS_NOT_AN_ARRAY })
            }
            (None, _) => Err(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::UNKNOWN_PROPERTY }),
        };
        PropertyRead { target: PropertyTarget { object: self.host.id, ..t }, outcome }
    }

    async fn read_property(&self, r: ReadPropertyRequest, mut answer: Vec<u8>) -> Result<Vec<u8>, Failure> {
        if matches!(r.property, P::ALL | P::REQUIRED | P::OPTIONAL) {
            // Only ReadPropertyMultiple may ask for these.
            return Err(Failure::Error(BacnetError {
                class: ErrorClass::SERVICES,
                code: ErrorCode::INVALID_PARAMETER_DATA_TYPE,
            }));
        }
        let target = PropertyTarget { object: r.object, property: r.property, array_index: r.array_index };
        if self.read_property_encoded(target, &mut answer).await? {
            return Ok(answer);
        }
        let mut lists = self.read_targets(&[target]).await?;
        let mut list = lists.pop().unwrap_or_default();
        if list.len() != 1 {
            return Err(contract("one property read answered with several results"));
        }
        let read = list.remove(0);
        let value = read.outcome.map_err(Failure::Error)?;
        // The wildcard instance is answered with the real one (Clause 15.5.1.1.1).
        let object = if self.ids.is_device(r.object) { self.host.id } else { r.object };
        answer.clear();
        ReadPropertyAck { object, property: r.property, array_index: r.array_index, value }.encode(&mut answer);
        Ok(answer)
    }

    /// The fast path of ReadProperty: the model appends the value's octets
    /// to the acknowledgement being built, and no value is built. Only for
    /// an object of the model other than the Device object (whose
    /// Property_List and protocol properties the host completes) and a
    /// model that has encoded reads; `false` means: use `read_targets`.
    async fn read_property_encoded(&self, target: PropertyTarget, answer: &mut Vec<u8>) -> Result<bool, Failure> {
        let to_model = self.ids.inbound_target(target);
        if to_model != target || to_model.object == self.ids.model || self.host.serves(target.object) {
            return Ok(false);
        }
        answer.clear();
        ReadPropertyAck::encode_head(answer, target.object, target.property, target.array_index);
        match self.model.read_encoded(target, answer).await {
            Ok(EncodedRead::Value) => {
                ReadPropertyAck::encode_tail(answer);
                Ok(true)
            }
            Ok(EncodedRead::Error(e)) => Err(Failure::Error(e)),
            // A disabled plugin's objects are answered by the general path.
            Ok(EncodedRead::Unsupported) | Err(ModelError::Disabled { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn read_property_multiple(
        &self,
        r: ReadPropertyMultipleRequest,
        room: AnswerRoom,
    ) -> Result<Vec<u8>, Failure> {
        let limits = self.host.config.limits;
        let room = AnswerRoom { octets: room.octets.min(limits.max_rpm_octets), ..room };
        // Refuse before any work an answer that cannot fit: every result
        // takes at least 4 octets (6 with its object's header), and an
        // ALL/REQUIRED/OPTIONAL at least Object_Identifier, _Name and _Type.
        let least: usize =
            r.0.iter()
                .map(|spec| {
                    6 + spec
                        .properties
                        .iter()
                        .map(|p| if matches!(p.property, P::ALL | P::REQUIRED | P::OPTIONAL) { 20 } else { 4 })
                        .sum::<usize>()
                })
                .sum();
        if least > room.octets {
            return Err(Failure::Abort(room.too_long()));
        }
        let mut targets = Vec::new();
        let mut counts = Vec::with_capacity(r.0.len());
        for spec in &r.0 {
            counts.push(spec.properties.len());
            targets.extend(spec.properties.iter().map(|p| PropertyTarget {
                object: spec.object,
                property: p.property,
                array_index: p.array_index,
            }));
        }
        let mut lists = self.read_targets(&targets).await?.into_iter();
        let mut results = Vec::with_capacity(r.0.len());
        for (spec, n) in r.0.iter().zip(counts) {
            let object = if self.ids.is_device(spec.object) { self.host.id } else { spec.object };
            let mut access = ReadAccessResult { object, results: Vec::new() };
            for list in lists.by_ref().take(n) {
                access.results.extend(list.into_iter().map(|pr| ReadResult {
                    property: pr.target.property,
                    array_index: pr.target.array_index,
                    outcome: pr.outcome,
                }));
            }
            results.push(access);
        }
        let count: usize = results.iter().map(|a| a.results.len()).sum();
        if count > limits.max_rpm_results {
            tracing::debug!(
                count,
                limit = limits.max_rpm_results,
                "ReadPropertyMultiple answer above the result limit"
            );
            return Err(Failure::Abort(room.too_long()));
        }
        let body = ReadPropertyMultipleAck(results).to_vec();
        if body.len() > room.octets {
            return Err(Failure::Abort(room.too_long()));
        }
        Ok(body)
    }

    fn to_write(&self, object: ObjectIdentifier, p: &bacnet::services::PropertyValue) -> PropertyWrite {
        PropertyWrite {
            target: self.ids.inbound_target(PropertyTarget {
                object,
                property: p.property,
                array_index: p.array_index,
            }),
            value: p.value.clone(),
            priority: p.priority,
        }
    }

    pub(super) async fn write_property(&self, r: WritePropertyRequest) -> Result<(), Failure> {
        let target = self.ids.inbound_target(PropertyTarget {
            object: r.object,
            property: r.property,
            array_index: r.array_index,
        });
        let retained = |r: &WritePropertyRequest| {
            let target = PropertyTarget { object: r.object, property: r.property, array_index: r.array_index };
            super::retained::Record::Write(PropertyWrite { target, value: r.value.clone(), priority: r.priority })
        };
        if let Some(classes) = self.host.notification_class(r.object) {
            classes.write(r.object, r.property, r.array_index, &r.value).map_err(Failure::Error)?;
            self.retain(|| retained(&r));
            return Ok(());
        }
        if let Some(schedules) = self.host.schedule(r.object) {
            schedules.write(r.object, r.property, r.array_index, &r.value).map_err(Failure::Error)?;
            self.retain(|| retained(&r));
            return Ok(());
        }
        if let Some(files) = self.host.file(r.object) {
            if r.array_index.is_some() {
                return Err(Failure::Error(BacnetError {
                    class: ErrorClass::PROPERTY,
                    code: ErrorCode::PROPERTY_IS_NOT_AN_ARRAY,
                }));
            }
            return files.write(r.object, r.property, &r.value).map_err(Failure::Error);
        }
        if target.object == self.ids.model && r.property == P::RESTART_NOTIFICATION_RECIPIENTS {
            if r.array_index.is_some() {
                return Err(Failure::Error(BacnetError {
                    class: ErrorClass::PROPERTY,
                    code: ErrorCode::PROPERTY_IS_NOT_AN_ARRAY,
                }));
            }
            self.host.restart.write_recipients(&r.value).map_err(Failure::Error)?;
            self.retain(|| retained(&r));
            return Ok(());
        }
        if (target.object == self.ids.model && HostDevice::owns(r.property))
            || self.host.network_port(r.object).is_some()
        {
            return Err(Failure::Error(denied()));
        }
        let results = self.model.write(vec![PropertyWrite { target, value: r.value, priority: r.priority }]).await?;
        match results.as_slice() {
            [Ok(())] => {
                if r.property == P::OBJECT_NAME {
                    self.database_changed();
                }
                Ok(())
            }
            [Err(e)] => Err(Failure::Error(*e)),
            _ => Err(contract("write-properties answered a different number of writes")),
        }
    }

    /// CreateObject (Clause 15.3) of a type the operator lets clients
    /// create here (`create_objects`): Schedule and Calendar objects by the
    /// host ([`super::schedule`]), every other type by the model, which
    /// applies the initial values all or nothing. Refused before the model
    /// is asked: a type not allowed (object/dynamic-creation-not-supported)
    /// and a device at its object limit (resources/no-space-for-object).
    pub(super) async fn create_object(&self, r: bacnet::services::CreateObjectRequest) -> Result<Vec<u8>, Failure> {
        use bacnet::services::{CreateObjectError, ObjectSpecifier};
        let object_type = match r.object {
            ObjectSpecifier::Type(t) => t,
            ObjectSpecifier::Identifier(id) => id.object_type,
        };
        let refused = |class, code| {
            Failure::CreateError(CreateObjectError { error: BacnetError { class, code }, first_failed: 0 })
        };
        // Clause 15.3.1.3.1: a type the device does not have at all is
        // unsupported; one it has but does not create, not creatable.
        if !self.host.object_types_supported().contains(&object_type) {
            return Err(refused(ErrorClass::OBJECT, ErrorCode::UNSUPPORTED_OBJECT_TYPE));
        }
        if super::schedule::HOST_CREATABLE.contains(&object_type) || !self.host.config.creatable.contains(&object_type)
        {
            let id = self.host.schedules.create(r.object, &r.initial_values).map_err(Failure::CreateError)?;
            self.retain(|| {
                super::retained::Record::Create(bacnet::services::CreateObjectRequest {
                    object: ObjectSpecifier::Identifier(id),
                    initial_values: r.initial_values.clone(),
                })
            });
            self.database_changed();
            return Ok(bacnet::services::CreateObjectAck(id).to_vec());
        }
        let model_objects = self.host.model_objects.load(std::sync::atomic::Ordering::Relaxed);
        if model_objects >= self.host.config.limits.max_objects {
            return Err(refused(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_FOR_OBJECT));
        }
        // The initial values name the object asked for; with only a type,
        // the type and the largest instance (the model applies them to the
        // new object whatever its instance).
        let named = match r.object {
            ObjectSpecifier::Identifier(id) => id,
            ObjectSpecifier::Type(t) => ObjectIdentifier { object_type: t, instance: ObjectIdentifier::MAX_INSTANCE },
        };
        let initial = r
            .initial_values
            .into_iter()
            .map(|v| PropertyWrite {
                target: PropertyTarget { object: named, property: v.property, array_index: v.array_index },
                value: v.value,
                priority: v.priority,
            })
            .collect();
        let id = self.model.create_object(r.object, initial).await?.map_err(Failure::CreateError)?;
        self.objects_changed().await;
        Ok(bacnet::services::CreateObjectAck(id).to_vec())
    }

    /// DeleteObject (Clause 15.4): a Schedule or Calendar a CreateObject
    /// made, or a model's object of a type the operator lets clients create
    /// (the model decides which of them may go: its configured objects, as
    /// a rule, may not). Its COV subscriptions end with it. Any other
    /// object: object/object-deletion-not-permitted, or object/unknown-object.
    pub(super) async fn delete_object(&self, o: ObjectIdentifier) -> Result<(), Failure> {
        if self.host.schedules.has(o) {
            self.host.schedules.delete(o).map_err(Failure::Error)?;
            self.retain(|| super::retained::Record::Delete(o));
            self.database_changed();
            return Ok(());
        }
        let target = PropertyTarget { object: o, property: P::OBJECT_IDENTIFIER, array_index: None };
        let exists = match self.read_targets(&[target]).await?.first().and_then(|r| r.first()) {
            Some(read) => read.outcome.is_ok(),
            None => false,
        };
        if !exists {
            return Err(Failure::Error(BacnetError { class: ErrorClass::OBJECT, code: ErrorCode::UNKNOWN_OBJECT }));
        }
        if !super::schedule::HOST_CREATABLE.contains(&o.object_type)
            && self.host.config.creatable.contains(&o.object_type)
        {
            self.model.delete_object(o).await?.map_err(Failure::Error)?;
            self.objects_changed().await;
            return Ok(());
        }
        let code = ErrorCode::OBJECT_DELETION_NOT_PERMITTED;
        Err(Failure::Error(BacnetError { class: ErrorClass::OBJECT, code }))
    }

    /// A write the device makes to one of its own objects (a schedule's),
    /// by the path a WriteProperty from the network takes; the refusal as
    /// text for the log.
    pub(crate) async fn write_as_device(&self, r: WritePropertyRequest) -> Result<(), String> {
        self.write_property(r).await.map_err(refusal_text)
    }

    async fn write_property_multiple(&self, r: WritePropertyMultipleRequest) -> Result<(), Failure> {
        // Writes are applied in order up to the first failure (Clause 15.10).
        let mut writes = Vec::new();
        let mut refs = Vec::new();
        let mut host_refusal = None;
        'specs: for spec in &r.0 {
            for v in &spec.values {
                let w = self.to_write(spec.object, v);
                let reference =
                    ObjectPropertyReference { object: spec.object, property: v.property, array_index: v.array_index };
                // The host's own objects take WriteProperty only.
                let host_owned = (w.target.object == self.ids.model && HostDevice::owns(v.property))
                    || self.host.serves(spec.object);
                if host_owned {
                    host_refusal = Some(reference);
                    break 'specs;
                }
                writes.push(w);
                refs.push(reference);
            }
        }
        let results = if writes.is_empty() { Vec::new() } else { self.model.write(writes).await? };
        if results.len() != refs.len() {
            return Err(contract("write-properties answered a different number of writes"));
        }
        if refs.iter().zip(&results).any(|(r, ok)| r.property == P::OBJECT_NAME && ok.is_ok()) {
            self.database_changed();
        }
        if let Some((i, Err(e))) = results.iter().enumerate().find(|(_, r)| r.is_err()) {
            return Err(Failure::WpmError(WritePropertyMultipleError { error: *e, first_failed: refs[i] }));
        }
        match host_refusal {
            Some(first_failed) => Err(Failure::WpmError(WritePropertyMultipleError { error: denied(), first_failed })),
            None => Ok(()),
        }
    }
}

/// What a read of an object whose plugin is disabled answers: the object is
/// out of service with a fault and a communication failure; any other
/// property is device/operational-problem.
/// A refusal as text for the log.
pub(super) fn refusal_text(f: Failure) -> String {
    match f {
        Failure::Error(e) => format!("{}/{}", e.class, e.code),
        Failure::CreateError(e) => format!("{}/{}", e.error.class, e.error.code),
        Failure::Abort(reason) => format!("abort {reason}"),
        _ => "refused".into(),
    }
}

fn disabled_reads(t: PropertyTarget) -> Vec<PropertyRead> {
    use bacnet::{BitString, Reliability, Value};
    let one = |property: P| {
        let outcome = match property {
            P::OUT_OF_SERVICE => Ok(Value::Boolean(true).into()),
            P::STATUS_FLAGS => Ok(Value::BitString(BitString::from_bits(&[false, true, false, true])).into()),
            P::RELIABILITY => Ok(Value::Enumerated(Reliability::COMMUNICATION_FAILURE.0).into()),
            _ => Err(BacnetError { class: ErrorClass::DEVICE, code: ErrorCode::OPERATIONAL_PROBLEM }),
        };
        PropertyRead { target: PropertyTarget { property, array_index: None, ..t }, outcome }
    };
    match t.property {
        P::ALL | P::REQUIRED | P::OPTIONAL => {
            [P::STATUS_FLAGS, P::RELIABILITY, P::OUT_OF_SERVICE].into_iter().map(one).collect()
        }
        p => vec![PropertyRead { target: t, ..one(p) }],
    }
}

fn encode(apdu: Apdu<'_>) -> Reply {
    let mut out = Vec::new();
    apdu.encode(&mut out);
    Reply { apdu: out, broadcast: false }
}
