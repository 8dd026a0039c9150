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
    COVNotification, PropertyReference, ServiceCodec, SubscribeCOVPropertyRequest, SubscribeCOVRequest,
};
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
