//! One served device on one MS/TP port: a [`Station`] (the same server
//! transaction state machine, request tasks, COV notifier and
//! DeviceCommunicationControl as on B/IP) whose datalink is an MS/TP driver
//! thread.
//!
//! ```text
//! driver thread ─std channel─▶ bridge thread ─tokio channel─▶ station task ─▶ ServerTsm / Server::handle
//! station task ─▶ MstpSender::reply (an answer: within Treply_delay, or after Reply Postponed at the next token)
//!              └▶ MstpSender::send (I-Am and other broadcasts to MAC 255, our ConfirmedCOVNotifications)
//! ```
//!
//! Peers are [`DeviceAddress::mstp`] addresses (the MAC, plus the remote
//! station when the NPDU came through a router), so the server, its
//! transaction state machine and its COV table are the B/IP endpoint's.
//!
//! Must never: block the runtime on the driver's channel (a thread of its
//! own waits on it), answer a broadcast confirmed request, or send to
//! anyone but the requester.

use super::dispatch::Server;
use super::outbox::Outbox;
use super::station::{Delivery, Inbound, Link, Station};
use std::sync::Arc;
use tokio::sync::mpsc;
use trellis_model::ObjectModel;
use trellis_mstp::{MstpConfig, MstpDriver, MstpHandle, MstpSender, Received};
use trellis_net::DeviceAddress;
use trellis_net::mstp::{BROADCAST_MAC, bridge};

/// NPDUs waiting between the bridge thread and the station task.
const RECEIVED_QUEUE: usize = 1024;

/// An MS/TP port opened and not yet served: [`bind_mstp`] it first to know
/// that every port is ours before saying so, then [`serve_mstp_on`] it.
pub struct MstpPort {
    handle: MstpHandle,
    driver: MstpDriver,
}

impl MstpPort {
    /// The port's name (its serial device, or the simulated line's station).
    pub fn name(&self) -> &str {
        self.driver.name()
    }

    /// Where the port's state and counters can be read while it serves.
    pub fn status_source(&self) -> trellis_mstp::MstpSender {
        self.handle.sender().clone()
    }

    pub(super) fn into_parts(self) -> (MstpHandle, MstpDriver) {
        (self.handle, self.driver)
    }
}

/// Open the MS/TP port `port` names (the driver thread starts when served).
pub fn bind_mstp(port: MstpConfig) -> Result<MstpPort, trellis_mstp::BindError> {
    let (handle, driver) = trellis_mstp::bind(port)?;
    Ok(MstpPort { handle, driver })
}

/// Serve `server` on the MS/TP port `port` names until the port stops or
/// the future is dropped (which shuts the port's driver thread down).
/// Pass an `Arc` to keep a handle on the server while it serves.
pub async fn serve_mstp<M: ObjectModel>(port: MstpConfig, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    serve_mstp_on(bind_mstp(port)?, server).await
}

/// [`serve_mstp`] on a port already opened.
pub async fn serve_mstp_on<M: ObjectModel>(port: MstpPort, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let MstpPort { handle, driver } = port;
    let name = driver.name().to_string();
    driver.spawn()?;
    let (sender, from_driver) = handle.into_parts();
    let _stop_driver = ShutdownOnDrop(sender.clone());
    tracing::info!(port = %name, mac = sender.mac(), device = %server.device_id(), "serving BACnet MS/TP");
    if sender.is_slave() {
        tracing::info!(
            port = %name,
            "slave node (Clause 9.5.7): answers confirmed requests addressed to it; sends no I-Am, I-Have or COV notification"
        );
    }
    let (tx, received) = mpsc::channel(RECEIVED_QUEUE);
    bridge(from_driver, tx, |r| r);
    let station = Station::start(server, MstpLink(sender.clone())).await;
    station.run(MstpInbound { received, pending: None, sender }).await;
    Ok(())
}

/// The driver's NPDUs, carried into the runtime by the bridge thread.
struct MstpInbound {
    received: mpsc::Receiver<Received>,
    pending: Option<Received>,
    sender: MstpSender,
}

impl Inbound for MstpInbound {
    async fn ready(&mut self) -> bool {
        if self.pending.is_none() {
            self.pending = self.received.recv().await;
        }
        self.pending.is_some()
    }

    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize) {
        let mut next = self.pending.take();
        for _ in 0..max {
            let Some(r) = next.take().or_else(|| self.received.try_recv().ok()) else { return };
            let answering = station.on_npdu(DeviceAddress::mstp(r.source_mac), &r.npdu, r.broadcast);
            // A request that gets no answer from us: say so at once (Reply
            // Postponed) rather than let the driver wait out Treply_delay.
            if r.expecting_reply && !answering {
                let _ = self.sender.reply_postponed(r.source_mac);
            }
        }
    }
}

/// Stops the port's driver when dropped.
pub(super) struct ShutdownOnDrop(pub(super) MstpSender);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

/// An MS/TP port as a station's datalink. Unicasts go through
/// [`MstpSender::reply`]: the answer to the peer's pending request if the
/// node still waits for one (sent at once, within Treply_delay), else BACnet
/// Data Not Expecting Reply at our next token.
#[derive(Clone)]
struct MstpLink(MstpSender);

impl MstpLink {
    /// Hand one NPDU to the driver: an answer as a reply, our requests and
    /// broadcasts as frames of their own.
    fn send_npdu(&self, peer: &DeviceAddress, npdu: Vec<u8>, how: Delivery) -> std::io::Result<()> {
        if self.0.is_slave() && how != Delivery::Unicast {
            // A slave cannot initiate (said once when the port started).
            tracing::debug!(to = %peer, ?how, "not sent: an MS/TP slave node only answers requests");
            return Ok(());
        }
        let sent = match (how, peer.mstp_mac()) {
            (Delivery::Broadcast, _) => self.0.send(BROADCAST_MAC, npdu, false),
            (Delivery::Request, Some(mac)) => self.0.send(mac, npdu, true),
            (Delivery::Unicast, Some(mac)) => self.0.reply(mac, npdu),
            (_, None) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{peer} is not an MS/TP station"),
                ));
            }
        };
        sent.map_err(trellis_net::mstp::send_error)
    }
}

impl Link for MstpLink {
    const HEADROOM: usize = 0;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        // One refused frame does not keep the others from going.
        let mut first_error = None;
        for (i, frame) in outbox.frames().iter().enumerate() {
            if let Err(e) = self.send_npdu(&frame.peer, outbox.octets(i).to_vec(), frame.how) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn hears_broadcasts(&self, _peer: &DeviceAddress) -> bool {
        true // every station on the line hears MAC 255
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::mstp(BROADCAST_MAC)
    }
}
