//! One served device on a BACnet/SC port (Annex AB): a [`Station`] whose
//! datalink is a `trellis-sc` node connected to its hubs. Peers are
//! [`DeviceAddress::sc`] addresses (their VMAC); a broadcast goes to the
//! hub, which relays it to every other node.
//!
//! Must never: answer a broadcast confirmed request, or wait on the node's
//! WebSockets (the node's own task owns them; we only queue NPDUs to it).

use super::dispatch::Server;
use super::outbox::Outbox;
use super::station::{Delivery, Inbound, Link, Station};
use bacnet::bvlc_sc::BROADCAST_VMAC;
use bacnet::sc::connector::Up;
use std::sync::Arc;
use tokio::sync::mpsc;
use trellis_model::ObjectModel;
use trellis_net::DeviceAddress;
use trellis_sc::node::ScNode;

/// A BACnet/SC node started and not yet served: what it sends goes out on
/// its hub connection; what it receives waits on `up`.
pub struct ScPort {
    /// The node (cheap to clone: keep one to read its status).
    pub node: ScNode,
    /// NPDUs from the network.
    pub up: mpsc::Receiver<Up>,
}

/// Serve `server` on a BACnet/SC port until the future is dropped (the
/// node reconnects to its hubs by itself meanwhile).
pub async fn serve_sc_on<M: ObjectModel>(port: ScPort, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let ScPort { node, up } = port;
    tracing::info!(
        vmac = %trellis_sc::identity::hex(&node.status().vmac), device = %server.device_id(), "serving BACnet/SC"
    );
    let station = Station::start(server, ScLink(node)).await;
    station.run(ScInbound { up, pending: None }).await;
    Ok(())
}

struct ScInbound {
    up: mpsc::Receiver<Up>,
    pending: Option<Up>,
}

impl Inbound for ScInbound {
    async fn ready(&mut self) -> bool {
        if self.pending.is_none() {
            self.pending = self.up.recv().await;
        }
        self.pending.is_some()
    }

    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize) {
        let mut next = self.pending.take();
        for _ in 0..max {
            let Some(u) = next.take().or_else(|| self.up.try_recv().ok()) else { return };
            // The hub always names the origin of what it relays; a frame
            // without one has no sender to answer.
            let Some(origin) = u.origin else { continue };
            station.on_npdu(DeviceAddress::sc(origin), &u.npdu, u.broadcast);
        }
    }
}

#[derive(Clone)]
struct ScLink(ScNode);

impl Link for ScLink {
    const HEADROOM: usize = 0;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        let mut first_error = None;
        for (i, frame) in outbox.frames().iter().enumerate() {
            let to = match (frame.how, frame.peer.sc_vmac()) {
                (Delivery::Broadcast, _) => Ok(BROADCAST_VMAC),
                // A unicast never goes out as a hub broadcast.
                (_, Some(vmac)) if vmac != BROADCAST_VMAC => Ok(vmac),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a BACnet/SC node", frame.peer),
                )),
            };
            let sent = match to {
                Ok(vmac) => self.0.send(vmac, outbox.octets(i).to_vec()).await,
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn hears_broadcasts(&self, _peer: &DeviceAddress) -> bool {
        // Every node on the hub hears a broadcast; still, an answer to one
        // goes to the asker alone: the hub would copy a broadcast to every
        // node for the sake of one.
        false
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::sc(BROADCAST_VMAC)
    }
}
