//! The gateway's server side: answer BACnet requests for the devices this
//! host serves, each backed by an [`ObjectModel`].
//!
//! [`Server`] decodes and answers one request at a time ([`dispatch`]);
//! [`serve`] runs one device on a B/IP port behind the server transaction
//! state machine: admission control per peer, segmentation both ways,
//! requests executed concurrently; [`serve_mstp`] does the same on an MS/TP
//! port. [`bind`] and [`bind_mstp`] take a port without serving it yet, so
//! that a gateway knows every port is its own before it says it serves. The host owns the Device object's protocol
//! properties ([`device`]) and presents the model's Device object under the
//! configured instance ([`idmap`]).
//!
//! The server knows its model only through the [`ObjectModel`] trait
//! (`trellis_model`): it never depends on the plugin runtime (so never on
//! wasmtime) nor on the client; what it shares with the client about peers
//! and ports is in `trellis_net`.
//!
//! Must never: panic on any received octets, answer a broadcast confirmed
//! request, or leave a malformed confirmed request without its Reject.

pub mod alarms;
mod bip6;
pub mod cov;
mod cov_hold;
pub mod device;
pub mod dispatch;
mod endpoint;
mod ethernet;
pub mod file_object;
mod files;
mod host_object;
pub mod idmap;
pub mod management;
mod mstp;
pub mod native;
pub mod network_port;
pub mod notification_class;
mod outbox;
mod read_range;
pub mod request_metrics;
pub mod restart;
pub mod retained;
mod router_node;
mod sc;
pub mod schedule;
mod station;

pub use device::{DeviceConfig, HostDevice, Limits};
pub use dispatch::{AnswerRoom, Reply, Server, ServerStats};
pub use native::DeviceOnlyModel;

/// The core router's counters, as a router node publishes them.
pub use bacnet::router::RouterCounters;
pub use bip6::{Bip6Port, bind_bip6, serve_bip6_on};
pub use endpoint::{BipPort, bind, serve, serve_on};
pub use ethernet::{EthernetPort, bind_ethernet, serve_ethernet_on};
pub use mstp::{MstpPort, bind_mstp, serve_mstp, serve_mstp_on};
pub use router_node::{
    MAX_WIRE_ROUNDS, RouterBip6Port, RouterBipPort, RouterEthernetPort, RouterMstpPort, RouterNode, RouterScPort,
    VirtualNetwork, serve_router, virtual_mac,
};
pub use sc::{ScPort, serve_sc_on};

use anyhow::Context;
use bacnet::{ObjectIdentifier, ObjectType};
use trellis_model::{ModelError, ObjectModel};

/// Build a server for `model`: find its Device object, learn its object
/// types, apply the configured instance.
pub async fn build<M: ObjectModel>(model: M, config: DeviceConfig, vendor_id: u16) -> anyhow::Result<Server<M>> {
    let objects =
        model.objects().await.map_err(|e: ModelError| anyhow::anyhow!(e)).context("listing the model's objects")?;
    anyhow::ensure!(
        objects.len() <= config.limits.max_objects,
        "the object model serves {} objects, more than the limit of {} (limits.max_objects)",
        objects.len(),
        config.limits.max_objects
    );
    let device = objects
        .iter()
        .find(|o| o.id.object_type == ObjectType::DEVICE)
        .context("the object model serves no Device object")?
        .id;
    let instance = config.instance.unwrap_or(device.instance);
    let id = ObjectIdentifier::new(ObjectType::DEVICE, instance).context("device instance out of range")?;
    // The model's object types, and those a client may create in it.
    let mut object_types: Vec<ObjectType> = objects.iter().map(|o| o.id.object_type).collect();
    object_types.extend(config.creatable.iter().filter(|t| !schedule::HOST_CREATABLE.contains(t)));
    object_types.sort();
    object_types.dedup();
    let files = match (&config.data_dir, config.files.is_empty()) {
        (_, true) => None,
        (None, false) => anyhow::bail!("File objects need the device's data_dir"),
        (Some(dir), false) => Some(file_object::FileObjects::open(dir, config.files.clone())?),
    };
    let notification_classes =
        std::sync::Arc::new(notification_class::NotificationClasses::new(config.notification_classes.clone()));
    if let Some(feed) = model.changes() {
        // The model keeps Acked_Transitions by its classes' Ack_Required.
        let classes = notification_classes.clone();
        feed.set_ack_required(std::sync::Arc::new(move |class, to| {
            classes.class(class).is_some_and(|c| c.ack_required[alarms::transition_index(to)])
        }));
    }
    let host = HostDevice {
        id,
        files,
        notification_classes,
        schedules: schedule::Schedules::with_creatable(
            config.schedules.clone(),
            config.calendars.clone(),
            config.creatable.clone(),
        ),
        restart: restart::Restart::new(
            bacnet::enums::RestartReason::UNKNOWN,
            model.clock().unwrap_or_default().now().local_date_time(),
            config.restart_recipients.clone(),
        ),
        first_notifier: Default::default(),
        config,
        object_types,
        database_revision: Default::default(),
        vendor_id,
        model_objects: objects.len().into(),
    };
    Ok(Server::new(model, device, host))
}
