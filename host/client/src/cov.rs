//! Change-of-value subscriptions as a subscriber (Clauses 13.14, 13.15):
//! subscribe, renew, cancel, and the notifications that arrive.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use trellis_client::{Client, ClientConfig, CovSubscription};
//! let client = Client::bind(ClientConfig::default()).await?;
//! let device = "127.0.0.1:47809".parse()?;
//! let mut notifications = client.cov_notifications();
//! let sub = CovSubscription::new(7, "analog-value,1".parse()?).confirmed(true).lifetime(300);
//! client.subscribe_cov(&device, &sub).await?;
//! while let Ok(n) = notifications.recv().await {
//!     println!("{:?}", n.notification.values);
//! }
//! # Ok(()) }
//! ```
//!
//! Confirmed notifications are acknowledged by the client's actor as they
//! arrive (a SimpleACK), before they are handed to listeners; a listener
//! that falls behind loses the oldest (tokio broadcast semantics), never
//! blocks the port.

use super::{Client, ClientError, DeviceAddress};
use bacnet::ObjectIdentifier;
use bacnet::enums::ConfirmedServiceChoice as Service;
use bacnet::services::{
    COVNotification, COVNotificationMultiple, ObjectPropertyReference, PropertyReference, PropertyValue, ServiceCodec,
    SubscribeCOVPropertyMultipleError, SubscribeCOVPropertyMultipleRequest, SubscribeCOVPropertyRequest,
    SubscribeCOVRequest,
};
use bacnet::tsm::Outcome;
use tokio::sync::broadcast;

/// A COV notification received from a device.
#[derive(Debug, Clone)]
pub struct CovNotificationReceived {
    /// Who sent it.
    pub source: DeviceAddress,
    /// It came as a ConfirmedCOVNotification (and was acknowledged).
    pub confirmed: bool,
    /// What it says.
    pub notification: COVNotification,
    /// It is one object's part of a COVNotificationMultiple (each object of
    /// one arrives as a notification of its own; the time stamps are
    /// dropped).
    pub multiple: bool,
}

/// What to subscribe to, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct CovSubscription {
    /// Our process identifier: notifications carry it back.
    pub process_id: u32,
    /// The monitored object.
    pub object: ObjectIdentifier,
    /// SubscribeCOVProperty on this property instead of SubscribeCOV.
    pub property: Option<PropertyReference>,
    /// Its own COV increment (SubscribeCOVProperty only).
    pub cov_increment: Option<f32>,
    /// Ask for ConfirmedCOVNotifications.
    pub confirmed: bool,
    /// Seconds; 0 = indefinite.
    pub lifetime: u32,
}

impl CovSubscription {
    /// SubscribeCOV to `object`, unconfirmed notifications, indefinite.
    pub fn new(process_id: u32, object: ObjectIdentifier) -> Self {
        CovSubscription { process_id, object, property: None, cov_increment: None, confirmed: false, lifetime: 0 }
    }

    /// Ask for confirmed notifications.
    pub fn confirmed(mut self, confirmed: bool) -> Self {
        self.confirmed = confirmed;
        self
    }

    /// Lifetime in seconds (0 = indefinite).
    pub fn lifetime(mut self, seconds: u32) -> Self {
        self.lifetime = seconds;
        self
    }

    /// Monitor one property (SubscribeCOVProperty), with an optional
    /// increment of its own.
    pub fn property(mut self, property: PropertyReference, cov_increment: Option<f32>) -> Self {
        self.property = Some(property);
        self.cov_increment = cov_increment;
        self
    }
}

impl Client {
    /// Every COV notification this client receives, from any device.
    pub fn cov_notifications(&self) -> broadcast::Receiver<CovNotificationReceived> {
        self.cov.subscribe()
    }

    /// Subscribe (or renew: the same process, object and property replace
    /// the subscription and restart its lifetime).
    pub async fn subscribe_cov(&self, device: &DeviceAddress, s: &CovSubscription) -> Result<(), ClientError> {
        self.subscription_request(device, s, Some((s.confirmed, s.lifetime))).await
    }

    /// Cancel a subscription (the device succeeds even if it has none).
    pub async fn cancel_cov(&self, device: &DeviceAddress, s: &CovSubscription) -> Result<(), ClientError> {
        self.subscription_request(device, s, None).await
    }

    /// SubscribeCOVPropertyMultiple (135-2016): subscribe to, renew or (with
    /// neither `issue_confirmed_notifications` nor `lifetime`) cancel every
    /// reference of `request` at once. A refusal names the first reference
    /// that failed ([`ClientError::SubscriptionFailed`]). The notifications
    /// arrive on [`Client::cov_notifications`], one per object, marked
    /// `multiple`.
    pub async fn subscribe_cov_property_multiple(
        &self,
        device: &DeviceAddress,
        request: &SubscribeCOVPropertyMultipleRequest,
    ) -> Result<(), ClientError> {
        match self.confirmed(device, Service::SUBSCRIBE_COV_PROPERTY_MULTIPLE, request.to_vec()).await? {
            Outcome::SimpleAck => Ok(()),
            Outcome::Error(body) => match SubscribeCOVPropertyMultipleError::decode(&body) {
                Ok(e) => Err(ClientError::SubscriptionFailed {
                    class: e.first_failed_error.class,
                    code: e.first_failed_error.code,
                    first_failed: ObjectPropertyReference {
                        object: e.first_failed_object,
                        property: e.first_failed_property.property,
                        array_index: e.first_failed_property.array_index,
                    },
                }),
                // Some devices answer with a plain Error body.
                Err(_) => Err(self.failure(Outcome::Error(body))),
            },
            Outcome::ComplexAck(_) => Err(ClientError::UnexpectedReply("a ComplexACK to SubscribeCOVPropertyMultiple")),
            other => Err(self.failure(other)),
        }
    }

    async fn subscription_request(
        &self,
        device: &DeviceAddress,
        s: &CovSubscription,
        terms: Option<(bool, u32)>,
    ) -> Result<(), ClientError> {
        let (issue_confirmed_notifications, lifetime) = match terms {
            Some((confirmed, lifetime)) => (Some(confirmed), Some(lifetime)),
            None => (None, None),
        };
        let (service, body) = match s.property {
            None => (
                Service::SUBSCRIBE_COV,
                SubscribeCOVRequest {
                    subscriber_process_identifier: s.process_id,
                    monitored_object: s.object,
                    issue_confirmed_notifications,
                    lifetime,
                }
                .to_vec(),
            ),
            Some(property) => (
                Service::SUBSCRIBE_COV_PROPERTY,
                SubscribeCOVPropertyRequest {
                    subscriber_process_identifier: s.process_id,
                    monitored_object: s.object,
                    issue_confirmed_notifications,
                    lifetime,
                    monitored_property: property,
                    cov_increment: s.cov_increment,
                }
                .to_vec(),
            ),
        };
        self.confirmed_simple(device, service, body).await
    }
}

/// A COVNotificationMultiple as one COV notification per object.
pub(crate) fn split_multiple(n: COVNotificationMultiple) -> impl Iterator<Item = COVNotification> {
    let (process, device, remaining) = (n.subscriber_process_identifier, n.initiating_device, n.time_remaining);
    n.notifications.into_iter().map(move |o| COVNotification {
        subscriber_process_identifier: process,
        initiating_device: device,
        monitored_object: o.object,
        time_remaining: remaining,
        values: o
            .values
            .into_iter()
            .map(|v| PropertyValue { property: v.property, array_index: v.array_index, value: v.value, priority: None })
            .collect(),
    })
}
