//! The gateway's server side: answer BACnet requests addressed to the
//! devices this host serves.
//!
//! PARTIAL (issue #2 scope): the host serves one device made of its Device
//! object only — enough to be discovered, identified and read by any BACnet
//! client. Object models served by sandboxed WASM plugins, COV and
//! segmentation arrive with the plugin runtime (#3) and server-at-scale (#4)
//! issues; until then every other object is `unknown-object`.
//!
//! Must never: panic on any received octets, answer a broadcast confirmed
//! request, or leave a malformed confirmed request without its Reject.

mod device;
mod dispatch;

pub use device::DeviceConfig;
pub use dispatch::{Reply, Server};

use bacnet::npdu::{Npdu, NpduPayload};
use tokio::sync::mpsc;
use trellis_bip::{BipConfig, BipHandle};

/// Serve `device` on a B/IP port until the returned future is dropped or the
/// port fails.
pub async fn serve(bip: BipConfig, device: DeviceConfig) -> anyhow::Result<()> {
    let (handle, driver) = trellis_bip::bind(&bip)?;
    tracing::info!(
        address = %handle.local_addr(),
        device = device.instance,
        name = %device.name,
        "serving BACnet/IP"
    );
    let (tx, mut rx) = mpsc::channel(1024);
    tokio::spawn(driver.run(tx));
    let server = Server::new(device);
    // Announce ourselves once, as devices do at start-up.
    send_i_am(&handle, &server).await;
    while let Some(r) = rx.recv().await {
        let Ok(npdu) = Npdu::decode(&r.npdu) else {
            tracing::debug!(from = %r.source, "dropped malformed NPDU");
            continue;
        };
        let NpduPayload::Apdu(apdu) = npdu.payload else { continue };
        if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
            continue; // for a remote network: not a router
        }
        let Some(reply) = server.handle(apdu, r.broadcast) else { continue };
        let mut out = Vec::with_capacity(reply.apdu.len() + 8);
        let mut n = Npdu::local_apdu(&reply.apdu, false);
        if let Some(s) = npdu.source {
            // Answer a routed request through its router.
            n.destination = Some(s);
            n.hop_count = bacnet::npdu::DEFAULT_HOP_COUNT;
        }
        if n.encode(&mut out).is_err() {
            continue;
        }
        let sent = if reply.broadcast && npdu.source.is_none() {
            handle.send_broadcast(&out).await
        } else {
            handle.send_unicast(r.source, &out).await
        };
        if let Err(e) = sent {
            tracing::warn!(to = %r.source, error = %e, "send failed");
        }
    }
    Ok(())
}

async fn send_i_am(handle: &BipHandle, server: &Server) {
    let mut out = Vec::new();
    if Npdu::local_apdu(&server.i_am_apdu(), false).encode(&mut out).is_ok() {
        let _ = handle.send_broadcast(&out).await;
    }
}
