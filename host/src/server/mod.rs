//! The gateway's server side: answer BACnet requests for the devices this
//! host serves, each backed by an [`ObjectModel`].
//!
//! [`Server`] decodes and answers one request at a time ([`dispatch`]);
//! [`serve`] runs one device on a B/IP port, answering requests
//! concurrently up to a bound. The host owns the Device object's protocol
//! properties ([`device`]) and presents the model's Device object under the
//! configured instance ([`idmap`]).
//!
//! Must never: panic on any received octets, answer a broadcast confirmed
//! request, or leave a malformed confirmed request without its Reject.

pub mod device;
pub mod dispatch;
pub mod idmap;
pub mod native;

pub use device::{DeviceConfig, HostDevice};
pub use dispatch::{Reply, Server};
pub use native::DeviceOnlyModel;

use crate::model::{ModelError, ObjectModel};
use anyhow::Context;
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::{ObjectIdentifier, ObjectType};
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc};
use trellis_bip::{BipConfig, BipHandle, Received};

/// Requests answered concurrently per device; more wait in the socket.
pub const MAX_CONCURRENT_REQUESTS: usize = 256;

/// Build a server for `model`: find its Device object, learn its object
/// types, apply the configured instance.
pub async fn build<M: ObjectModel>(model: M, config: DeviceConfig, vendor_id: u16) -> anyhow::Result<Server<M>> {
    let objects =
        model.objects().await.map_err(|e: ModelError| anyhow::anyhow!(e)).context("listing the model's objects")?;
    let device = objects
        .iter()
        .find(|o| o.id.object_type == ObjectType::DEVICE)
        .context("the object model serves no Device object")?
        .id;
    let instance = config.instance.unwrap_or(device.instance);
    let id = ObjectIdentifier::new(ObjectType::DEVICE, instance).context("device instance out of range")?;
    let mut object_types: Vec<ObjectType> = objects.iter().map(|o| o.id.object_type).collect();
    object_types.sort();
    object_types.dedup();
    let host = HostDevice { id, config, object_types, database_revision: Default::default(), vendor_id };
    Ok(Server::new(model, device, host))
}

/// Serve `server` on a B/IP port until the port fails or the future is
/// dropped.
pub async fn serve<M: ObjectModel>(bip: BipConfig, server: Server<M>) -> anyhow::Result<()> {
    let (handle, driver) = trellis_bip::bind(&bip)?;
    tracing::info!(address = %handle.local_addr(), device = %server.device_id(), "serving BACnet/IP");
    let (tx, mut rx) = mpsc::channel(1024);
    tokio::spawn(driver.run(tx));
    let server = Arc::new(server);
    send_i_am(&handle, &server).await;
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT_REQUESTS));
    while let Some(r) = rx.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else { break };
        let (server, handle) = (server.clone(), handle.clone());
        tokio::spawn(async move {
            answer(&server, &handle, r).await;
            drop(permit);
        });
    }
    Ok(())
}

async fn answer<M: ObjectModel>(server: &Server<M>, handle: &BipHandle, r: Received) {
    let Ok(npdu) = Npdu::decode(&r.npdu) else {
        tracing::debug!(from = %r.source, "dropped malformed NPDU");
        return;
    };
    let NpduPayload::Apdu(apdu) = npdu.payload else { return };
    if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
        return; // for a remote network: not a router
    }
    // A global broadcast (DNET 65535) is a broadcast however it arrived.
    let broadcast = r.broadcast || npdu.destination.is_some();
    let Some(reply) = server.handle(apdu, broadcast).await else { return };
    let mut out = Vec::with_capacity(reply.apdu.len() + 8);
    let mut n = Npdu::local_apdu(&reply.apdu, false);
    n.priority = npdu.priority; // answer at the request's network priority
    if let Some(s) = npdu.source {
        // Answer a routed request through its router.
        n.destination = Some(s);
        n.hop_count = bacnet::npdu::DEFAULT_HOP_COUNT;
    }
    if n.encode(&mut out).is_err() {
        return;
    }
    // A requester on another UDP port cannot hear our broadcasts (on
    // loopback every process has its own port): answer it directly.
    let reachable_by_broadcast = r.source.port() == handle.local_addr().port();
    let sent = if reply.broadcast && npdu.source.is_none() && reachable_by_broadcast {
        handle.send_broadcast(&out).await
    } else {
        handle.send_unicast(r.source, &out).await
    };
    if let Err(e) = sent {
        tracing::warn!(to = %r.source, error = %e, "send failed");
    }
}

async fn send_i_am<M: ObjectModel>(handle: &BipHandle, server: &Server<M>) {
    let mut out = Vec::new();
    if Npdu::local_apdu(&server.i_am_apdu(), false).encode(&mut out).is_ok() {
        let _ = handle.send_broadcast(&out).await;
    }
}
