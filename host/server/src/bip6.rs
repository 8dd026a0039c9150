//! One served device on a BACnet/IPv6 port (Annex U): a [`Station`] whose
//! datalink is the `trellis-bip6` port, read by the station itself as on
//! B/IP. Peers are [`DeviceAddress::bip6`] addresses (their VMAC; the port
//! keeps where each VMAC lives); a broadcast goes to the multicast group.
//!
//! Must never: answer a broadcast confirmed request, or send to a VMAC the
//! port has not heard from (the port refuses it and asks the group).

use super::dispatch::Server;
use super::outbox::Outbox;
use super::station::{Delivery, Inbound, Link, Station};
use std::sync::Arc;
use trellis_bip6::{Bip6Config, Bip6Driver, Bip6Handle};
use trellis_model::ObjectModel;
use trellis_net::DeviceAddress;

/// A BACnet/IPv6 port bound and not yet served.
pub struct Bip6Port {
    handle: Bip6Handle,
    driver: Bip6Driver,
}

impl Bip6Port {
    /// The address bound.
    pub fn local_addr(&self) -> std::net::SocketAddrV6 {
        self.handle.local_addr()
    }

    /// The port's counters (shared: they keep counting while it serves).
    pub fn stats(&self) -> std::sync::Arc<trellis_bip6::Bip6Stats> {
        self.driver.stats()
    }

    /// Our VMAC.
    pub fn vmac(&self) -> [u8; 3] {
        self.handle.vmac()
    }

    /// Make the port a BBMD (Annex U.4) with `peers`, `configure` setting
    /// the rest (foreign devices, bounds); the port's address, VMAC and
    /// group are its own.
    pub fn enable_bbmd(
        &mut self,
        peers: Vec<std::net::SocketAddrV6>,
        configure: impl FnOnce(&mut bacnet::bbmd6::Bbmd6Config),
    ) -> Arc<trellis_bip6::PortBbmd6> {
        trellis_bip6::enable_bbmd(&mut self.handle, &mut self.driver, peers, configure)
    }

    pub(super) fn into_parts(self) -> (Bip6Handle, Bip6Driver) {
        (self.handle, self.driver)
    }
}

/// Bind the BACnet/IPv6 port `config` names.
pub fn bind_bip6(config: &Bip6Config) -> std::io::Result<Bip6Port> {
    let (handle, driver) = trellis_bip6::bind(config)?;
    Ok(Bip6Port { handle, driver })
}

/// Serve `server` on a BACnet/IPv6 port until the future is dropped.
pub async fn serve_bip6_on<M: ObjectModel>(port: Bip6Port, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let Bip6Port { handle, driver } = port;
    let v = handle.vmac();
    tracing::info!(
        address = %handle.local_addr(), vmac = format!("{:02x}{:02x}{:02x}", v[0], v[1], v[2]),
        device = %server.device_id(), "serving BACnet/IPv6"
    );
    let station = Station::start(server, Bip6Link(handle)).await;
    station.run(Bip6Inbound(driver)).await;
    Ok(())
}

struct Bip6Inbound(Bip6Driver);

impl Inbound for Bip6Inbound {
    async fn ready(&mut self) -> bool {
        if let Err(e) = self.0.readable().await {
            tracing::warn!(error = %e, "B/IPv6 port not readable");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        true
    }

    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize) {
        self.0.drain(max, |n| {
            station.on_npdu(DeviceAddress::bip6(n.source), n.npdu, n.broadcast);
        });
    }
}

#[derive(Clone)]
struct Bip6Link(Bip6Handle);

impl Link for Bip6Link {
    const HEADROOM: usize = 0;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        let mut first_error = None;
        for (i, frame) in outbox.frames().iter().enumerate() {
            let npdu = outbox.octets(i);
            let sent = match (frame.how, frame.peer.bip6_vmac()) {
                (Delivery::Broadcast, _) => self.0.send_broadcast(npdu).await,
                (_, Some(vmac)) => self.0.send_unicast(vmac, npdu).await,
                (_, None) => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a BACnet/IPv6 station", frame.peer),
                )),
            };
            if let Err(e) = sent {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn hears_broadcasts(&self, _peer: &DeviceAddress) -> bool {
        // On a link without multicast (loopback) nobody hears the group:
        // answers to broadcasts go to the asker directly.
        false
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::bip6([0xFF; 3])
    }
}
