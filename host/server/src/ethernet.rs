//! One served device on a BACnet Ethernet port (Clause 7): a [`Station`]
//! whose datalink is the `trellis-ethernet` port, read by the station
//! itself as on B/IP. Peers are [`DeviceAddress::ethernet`] addresses
//! (their MAC); a broadcast goes to FF:FF:FF:FF:FF:FF.
//!
//! Must never: answer a broadcast confirmed request, or send an NPDU the
//! link cannot carry (the port refuses one over 1497 octets; the device's
//! Max_APDU_Length_Accepted, 1476, keeps its answers under that).

use super::dispatch::Server;
use super::outbox::Outbox;
use super::station::{Delivery, Inbound, Link, Station};
use std::sync::Arc;
use trellis_ethernet::{EthernetConfig, EthernetDriver, EthernetHandle};
use trellis_model::ObjectModel;
use trellis_net::DeviceAddress;

/// A BACnet Ethernet port opened and not yet served.
pub struct EthernetPort {
    handle: EthernetHandle,
    driver: EthernetDriver,
}

impl EthernetPort {
    /// Our MAC address (the interface's).
    pub fn mac(&self) -> [u8; 6] {
        self.handle.mac()
    }

    /// The interface the port is on.
    pub fn interface(&self) -> &str {
        self.handle.interface()
    }

    /// The port's counters (shared: they keep counting while it serves).
    pub fn stats(&self) -> Arc<trellis_ethernet::EthernetStats> {
        self.driver.stats()
    }

    pub(super) fn into_parts(self) -> (EthernetHandle, EthernetDriver) {
        (self.handle, self.driver)
    }
}

/// Open the BACnet Ethernet port `config` names (inside a tokio runtime).
pub fn bind_ethernet(config: &EthernetConfig) -> std::io::Result<EthernetPort> {
    let (handle, driver) = trellis_ethernet::bind(config)?;
    Ok(EthernetPort { handle, driver })
}

/// Serve `server` on a BACnet Ethernet port until the future is dropped.
pub async fn serve_ethernet_on<M: ObjectModel>(
    port: EthernetPort,
    server: impl Into<Arc<Server<M>>>,
) -> anyhow::Result<()> {
    let server = server.into();
    let EthernetPort { handle, driver } = port;
    tracing::info!(
        interface = handle.interface(), mac = trellis_ethernet::format_mac(&handle.mac()),
        device = %server.device_id(), "serving BACnet Ethernet"
    );
    let station = Station::start(server, EthernetLink(handle)).await;
    station.run(EthernetInbound(driver)).await;
    Ok(())
}

struct EthernetInbound(EthernetDriver);

impl Inbound for EthernetInbound {
    async fn ready(&mut self) -> bool {
        if let Err(e) = self.0.readable().await {
            tracing::warn!(error = %e, "BACnet Ethernet port not readable");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        true
    }

    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize) {
        self.0.drain(max, |n| {
            station.on_npdu(DeviceAddress::ethernet(n.source), n.npdu, n.broadcast);
        });
    }
}

#[derive(Clone)]
struct EthernetLink(EthernetHandle);

impl Link for EthernetLink {
    const HEADROOM: usize = 0;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        let mut first_error = None;
        for (i, frame) in outbox.frames().iter().enumerate() {
            let npdu = outbox.octets(i);
            let sent = match (frame.how, frame.peer.ethernet_mac()) {
                (Delivery::Broadcast, _) => self.0.send_broadcast(npdu).await,
                (_, Some(mac)) => self.0.send_unicast(mac, npdu).await,
                (_, None) => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a BACnet Ethernet station", frame.peer),
                )),
            };
            if let Err(e) = sent {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn hears_broadcasts(&self, peer: &DeviceAddress) -> bool {
        // Every station on the segment hears FF:FF:FF:FF:FF:FF.
        peer.ethernet_mac().is_some()
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::ethernet(trellis_ethernet::BROADCAST)
    }
}
