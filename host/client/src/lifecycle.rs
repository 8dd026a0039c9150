//! Object lifecycle from the client's side: CreateObject (Clause 15.3, by
//! type or by identifier, with initial values) and DeleteObject (15.4).

use super::{Client, ClientError, DeviceAddress};
use bacnet::ObjectIdentifier;
use bacnet::enums::ConfirmedServiceChoice as Service;
use bacnet::services::{
    CreateObjectAck, CreateObjectError, CreateObjectRequest, DeleteObjectRequest, ObjectSpecifier, PropertyValue,
    ServiceCodec,
};
use bacnet::tsm::Outcome;

impl Client {
    /// CreateObject: an object `object` names (a type, the device picks the
    /// instance; or an identifier), with `initial_values` written in order.
    /// Returns the new object's identifier. A refused initial value is
    /// [`ClientError::CreateFailed`] with its position.
    pub async fn create_object(
        &self,
        device: &DeviceAddress,
        object: ObjectSpecifier,
        initial_values: Vec<PropertyValue>,
    ) -> Result<ObjectIdentifier, ClientError> {
        let req = CreateObjectRequest { object, initial_values };
        match self.confirmed(device, Service::CREATE_OBJECT, req.to_vec()).await? {
            Outcome::ComplexAck(body) => Ok(CreateObjectAck::decode(&body).map_err(ClientError::MalformedReply)?.0),
            Outcome::Error(body) => match CreateObjectError::decode(&body) {
                Ok(e) => Err(ClientError::CreateFailed {
                    class: e.error.class,
                    code: e.error.code,
                    first_failed: e.first_failed,
                }),
                // Some devices answer with a plain Error body.
                Err(_) => Err(self.failure(Outcome::Error(body))),
            },
            Outcome::SimpleAck => Err(ClientError::UnexpectedReply("a SimpleACK to CreateObject")),
            other => Err(self.failure(other)),
        }
    }

    /// DeleteObject.
    pub async fn delete_object(&self, device: &DeviceAddress, object: ObjectIdentifier) -> Result<(), ClientError> {
        self.confirmed_simple(device, Service::DELETE_OBJECT, DeleteObjectRequest(object).to_vec()).await
    }
}
