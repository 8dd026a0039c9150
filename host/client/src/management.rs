//! Device management and list reads: DeviceCommunicationControl (Clause
//! 16.1), ReinitializeDevice (16.4), TimeSynchronization and
//! UTCTimeSynchronization (16.7, 16.8), and ReadRange (15.8).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use bacnet::enums::{EnableDisable, ReinitializedState};
//! use trellis_client::{Client, ClientConfig};
//! let client = Client::bind(ClientConfig::default()).await?;
//! let device = "127.0.0.1:47809".parse()?;
//! // Stop the device initiating requests for 10 minutes.
//! client.device_communication_control(&device, Some(10), EnableDisable::DISABLE_INITIATION, Some("secret")).await?;
//! client.reinitialize_device(&device, ReinitializedState::WARMSTART, Some("secret")).await?;
//! # Ok(()) }
//! ```

use super::{Client, ClientError, Destination, DeviceAddress};
use bacnet::enums::{
    ConfirmedServiceChoice as Service, EnableDisable, PropertyIdentifier, ReinitializedState, UnconfirmedServiceChoice,
};
use bacnet::services::{
    DeviceCommunicationControlRequest, Range, ReadRangeAck, ReadRangeRequest, ReinitializeDeviceRequest, ServiceCodec,
    TimeSynchronizationRequest, UTCTimeSynchronizationRequest, password_in_range,
};
use bacnet::{CharacterString, Date, EncodeError, ObjectIdentifier, Time};

/// The password as the services carry it: UTF-8, 1 to 20 characters.
fn password(p: Option<&str>) -> Result<Option<CharacterString>, ClientError> {
    p.map(|p| {
        let s = CharacterString::utf8(p);
        if password_in_range(&s) {
            Ok(s)
        } else {
            Err(ClientError::Encode(EncodeError::OutOfRange("password (1 to 20 characters)")))
        }
    })
    .transpose()
}

impl Client {
    /// DeviceCommunicationControl: `enable`, `disable` (the device then
    /// answers nothing but DeviceCommunicationControl and
    /// ReinitializeDevice) or `disable-initiation` (it answers requests but
    /// initiates none), for `duration` minutes or until told otherwise.
    ///
    /// A password of more than 20 characters is refused here, before
    /// anything is sent (`ClientError::Encode`). Devices answer a wrong or
    /// missing password with Error security/password-failure; many refuse
    /// the deprecated `disable` with services/service-request-denied.
    pub async fn device_communication_control(
        &self,
        device: &DeviceAddress,
        duration: Option<u16>,
        enable_disable: EnableDisable,
        password: Option<&str>,
    ) -> Result<(), ClientError> {
        let req = DeviceCommunicationControlRequest {
            time_duration: duration,
            enable_disable,
            password: self::password(password)?,
        };
        self.confirmed_simple(device, Service::DEVICE_COMMUNICATION_CONTROL, req.to_vec()).await
    }

    /// ReinitializeDevice: restart the device (`coldstart`, `warmstart`),
    /// drive its backup or restore procedure, or `activate-changes`.
    ///
    /// The device acknowledges before it acts, so a SimpleACK means the
    /// request was accepted, not that the restart has happened. Password
    /// rules as for [`device_communication_control`](Self::device_communication_control).
    pub async fn reinitialize_device(
        &self,
        device: &DeviceAddress,
        state: ReinitializedState,
        password: Option<&str>,
    ) -> Result<(), ClientError> {
        let req = ReinitializeDeviceRequest { reinitialized_state: state, password: self::password(password)? };
        self.confirmed_simple(device, Service::REINITIALIZE_DEVICE, req.to_vec()).await
    }

    /// TimeSynchronization: set the clocks of one device or of every device
    /// a broadcast reaches to `date` and `time`, which are *local* time (the
    /// receivers' zone). Unconfirmed: `Ok` means sent, and no device answers.
    pub async fn time_synchronization(&self, to: Destination, date: Date, time: Time) -> Result<(), ClientError> {
        let body = TimeSynchronizationRequest { date, time }.to_vec();
        self.send_unconfirmed(to, UnconfirmedServiceChoice::TIME_SYNCHRONIZATION, body).await
    }

    /// UTCTimeSynchronization: as [`time_synchronization`](Self::time_synchronization),
    /// with `date` and `time` in UTC; each receiver applies its own UTC
    /// offset.
    pub async fn utc_time_synchronization(&self, to: Destination, date: Date, time: Time) -> Result<(), ClientError> {
        let body = UTCTimeSynchronizationRequest { date, time }.to_vec();
        self.send_unconfirmed(to, UnconfirmedServiceChoice::UTC_TIME_SYNCHRONIZATION, body).await
    }

    /// ReadRange: items of a list property (a Trend Log's Log_Buffer, for
    /// example), all of them (`range` `None`) or a range by position, by
    /// sequence number or by time.
    ///
    /// The acknowledgement is returned as decoded: its items are one generic
    /// value whose shape depends on the property (for a Log_Buffer, a
    /// sequence of `BACnetLogRecord`s). An acknowledgement for another
    /// object, property or array index is `UnexpectedReply`.
    pub async fn read_range(
        &self,
        device: &DeviceAddress,
        object: ObjectIdentifier,
        property: PropertyIdentifier,
        array_index: Option<u32>,
        range: Option<Range>,
    ) -> Result<ReadRangeAck, ClientError> {
        let req = ReadRangeRequest { object, property, array_index, range };
        let body = self.confirmed_ack(device, Service::READ_RANGE, req.to_vec()).await?;
        let ack = ReadRangeAck::decode(&body).map_err(ClientError::MalformedReply)?;
        if ack.object != object || ack.property != property || ack.array_index != array_index {
            return Err(ClientError::UnexpectedReply("a ReadRange-ACK for another property"));
        }
        Ok(ack)
    }
}
