//! One served device on one B/IP port: a [`Station`] whose datalink is a
//! UDP port. What B/IP adds: datagrams carry their source address and
//! whether they came as a broadcast; a requester on another UDP port (on
//! loopback every process has its own) cannot hear our broadcasts, so its
//! I-Am goes to it directly.
//!
//! Must never: block the runtime on a send, or broadcast an answer the
//! requester cannot hear.

use super::dispatch::Server;
use super::outbox::Outbox;
use super::station::{Delivery, Inbound, Link, Station};
use std::sync::Arc;
use trellis_bip::{BipConfig, BipDriver, BipHandle};
use trellis_model::ObjectModel;
use trellis_net::DeviceAddress;

/// A B/IP port bound and not yet served: [`bind`] it first to know that
/// every port is ours before saying so, then [`serve_on`] it.
pub struct BipPort {
    handle: BipHandle,
    driver: BipDriver,
}

impl BipPort {
    /// The address bound (the actual port when 0 was asked for).
    pub fn local_addr(&self) -> std::net::SocketAddrV4 {
        self.handle.local_addr()
    }

    /// Make the port a BBMD (Annex J; see `trellis_bip::enable_bbmd`).
    pub fn enable_bbmd(&mut self, config: trellis_bip::BbmdConfig) -> Arc<trellis_bip::PortBbmd> {
        trellis_bip::enable_bbmd(&mut self.handle, &mut self.driver, config)
    }

    /// The port's datagram counters (shared: they keep counting while it serves).
    pub fn stats(&self) -> Arc<trellis_bip::DriverStats> {
        self.driver.stats()
    }

    /// The local broadcast address and port.
    pub fn broadcast_addr(&self) -> std::net::SocketAddrV4 {
        self.handle.broadcast_addr()
    }

    pub(super) fn into_parts(self) -> (BipHandle, BipDriver) {
        (self.handle, self.driver)
    }
}

/// Bind the B/IP port `bip` names.
pub fn bind(bip: &BipConfig) -> Result<BipPort, trellis_bip::BindError> {
    let (handle, driver) = trellis_bip::bind(bip)?;
    Ok(BipPort { handle, driver })
}

/// Serve `server` on a B/IP port until the port fails or the future is
/// dropped. Pass an `Arc` to keep a handle on the server (its COV counters,
/// say) while it serves.
pub async fn serve<M: ObjectModel>(bip: BipConfig, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    serve_on(bind(&bip)?, server).await
}

/// [`serve`] on a port already bound.
pub async fn serve_on<M: ObjectModel>(port: BipPort, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let BipPort { handle, driver } = port;
    tracing::info!(address = %handle.local_addr(), device = %server.device_id(), "serving BACnet/IP");
    let station = Station::start(server, BipLink(handle)).await;
    station.run(BipInbound(driver)).await;
    Ok(())
}

/// The port's sockets, read by the station itself.
struct BipInbound(BipDriver);

impl Inbound for BipInbound {
    async fn ready(&mut self) -> bool {
        if let Err(e) = self.0.readable().await {
            tracing::warn!(error = %e, "B/IP port not readable");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        true
    }

    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize) {
        self.0.drain(max, |n| {
            station.on_npdu(DeviceAddress::direct(n.source), n.npdu, n.broadcast);
        });
    }
}

/// A B/IP port as a station's datalink.
#[derive(Clone)]
struct BipLink(BipHandle);

impl Link for BipLink {
    const HEADROOM: usize = trellis_bip::HEADROOM;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        let count = outbox.frames().len();
        for i in 0..count {
            let broadcast = outbox.frames()[i].how == Delivery::Broadcast;
            trellis_bip::write_header(outbox.octets_mut(i), broadcast)?;
        }
        // Every peer of a B/IP port has an IP address; a frame for any
        // other kind of station (none is ever queued here) is left out.
        let to = |i: usize| {
            let f = &outbox.frames()[i];
            if f.how == Delivery::Broadcast { Some(self.0.broadcast_addr()) } else { f.peer.ip() }
        };
        if count == 1 {
            // The common case at light load: no list to build.
            return match to(0) {
                Some(to) => self.0.send_frames(&[(to, outbox.octets(0))]).await,
                None => Ok(()),
            };
        }
        let frames: Vec<_> = (0..count).filter_map(|i| Some((to(i)?, outbox.octets(i)))).collect();
        self.0.send_frames(&frames).await
    }

    fn hears_broadcasts(&self, peer: &DeviceAddress) -> bool {
        peer.ip().is_some_and(|a| a.port() == self.0.local_addr().port())
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::direct(self.0.broadcast_addr())
    }
}
