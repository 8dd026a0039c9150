//! What the OPC UA side needs from the gateway ([`PointSource`]): the
//! devices and their objects, reads, writes at a priority. Changes go the
//! other way, pushed by the gateway into [`crate::server::Updater`].
//!
//! The trait is all the server knows of BACnet's runtime, so the same point
//! source can stand behind any OPC UA stack (the library comparison of
//! issue 17 measured async-opcua behind it).
//!
//! Must never: block (every call may wait on a device's answer, so each is
//! a future), or answer a read with fewer or more results than it was asked.

use bacnet::enums::PropertyIdentifier;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, ObjectIdentifier};
use std::future::Future;

/// One property of one object of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PointRef {
    /// The device instance.
    pub device: u32,
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
}

/// A device as the address space shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceView {
    /// The device instance.
    pub instance: u32,
    /// Its Object_Name (the device object's BrowseName).
    pub name: String,
    /// Its objects (Device object excluded).
    pub objects: Vec<ObjectView>,
}

/// An object as the address space shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectView {
    /// Its identifier.
    pub id: ObjectIdentifier,
    /// Its Object_Name (its BrowseName).
    pub name: String,
    /// Its Description, if it has one.
    pub description: Option<String>,
    /// Its Units, if it has them (the Present_Value's EngineeringUnits).
    pub units: Option<u32>,
    /// The properties shown as variables, each with its value when the
    /// view was taken (the value fixes the variable's DataType).
    pub properties: Vec<(PropertyIdentifier, AnyValue)>,
}

/// Why a read or write of a point failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PointFault {
    /// The device answered with a BACnet Error.
    #[error("BACnet error {}/{}", .0.class, .0.code)]
    Bacnet(BacnetError),
    /// The device rejected or aborted the request.
    #[error("the device refused the request: {0}")]
    Refused(String),
    /// The device did not answer in time.
    #[error("the device did not answer in time")]
    Timeout,
    /// The device is not reachable or its model failed.
    #[error("{0}")]
    Unavailable(String),
}

/// The gateway's points, for the OPC UA server.
pub trait PointSource: Send + Sync + 'static {
    /// Every device the server shows, with its objects.
    fn devices(&self) -> impl Future<Output = Vec<DeviceView>> + Send;
    /// Read these points: one result per point, in order.
    fn read(&self, points: &[PointRef]) -> impl Future<Output = Vec<Result<AnyValue, PointFault>>> + Send;
    /// Write `value` to `point` at `priority` (ignored by properties that
    /// are not commandable); `Null` relinquishes.
    fn write(
        &self,
        point: PointRef,
        value: AnyValue,
        priority: u8,
    ) -> impl Future<Output = Result<(), PointFault>> + Send;
}
