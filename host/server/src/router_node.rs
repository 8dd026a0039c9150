//! A router node: B/IP (and MS/TP, B/IPv6, BACnet/SC, Ethernet) ports joined by the core's router
//! (`bacnet::router`), virtual networks of served devices behind it, and
//! at most one served device directly on each B/IP port — all on one task,
//! run to completion like a single device's station.
//!
//! ```text
//! B/IP port(s) ─drain─▶ Router::handle_npdu ─Local─▶ the port's own device (Station, BipLink)
//!                            │ transmits
//!                            ├─▶ another B/IP port: framed into its batch, one sendmmsg per port
//!                            └─▶ a virtual network: Station::on_npdu of the device with that MAC (or all)
//! every station: execute its batch ─▶ flush ─▶ VirtualLink ─▶ wire ─▶ Router::handle_npdu ─▶ …
//! ```
//!
//! A device on a virtual network is an ordinary [`Station`] whose datalink
//! ([`VirtualLink`]) hands its NPDUs to the router through an in-process
//! queue (the wire), read by this loop on the same thread; its MAC is its
//! device instance in three octets. What a device sends outside a batch —
//! its I-Am at start-up, COV notifications — goes on the wire too, and the
//! wire's [`Notify`] wakes the loop.
//!
//! Must never: forward what the core router refuses; let one device's
//! work wait on another thread; loop on the wire without bound (device-to-
//! device traffic is handled for [`MAX_WIRE_ROUNDS`] rounds per wake-up, the
//! rest at the next).

use super::dispatch::Server;
use super::endpoint::BipPort;
use super::mstp::ShutdownOnDrop;
use super::network_port::{RouteRow, RoutingView};
use super::outbox::Outbox;
use super::station::{Delivery, Link, MAX_BATCH, Station};
use bacnet::npdu::{DEFAULT_HOP_COUNT, GLOBAL_NETWORK, NetAddress, Npdu};
use bacnet::router::{
    Arrival, ForwardAll, LinkTarget, Mac, PortConfig, PortId, Router, RouterConfig, RouterCounters, RoutingPolicy,
};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::sync::mpsc;
use tokio::time::Instant;
use trellis_bip::{BipDriver, BipHandle};
use trellis_model::ObjectModel;
use trellis_mstp::{MstpSender, Received};
use trellis_net::mstp::{BROADCAST_MAC, bridge};
use trellis_net::{DeviceAddress, sleep_until};

/// Rounds of device-to-device traffic (one virtual device's NPDU routed
/// to another's) handled per wake-up.
pub const MAX_WIRE_ROUNDS: usize = 4;

/// The longest NPDU a B/IP port carries (Annex J: 1497 octets).
const BIP_MAX_NPDU: usize = 1497;
/// The longest NPDU an MS/TP data frame carries (Clause 9: 501 octets).
const MSTP_MAX_NPDU: usize = 501;
/// NPDUs waiting between an MS/TP port's bridge thread and the loop.
const MSTP_QUEUE: usize = 1024;
/// How often the routing policy is ticked.
const POLICY_TICK: Duration = Duration::from_secs(1);

/// A B/IP port of the router, bound.
pub struct RouterBipPort<M> {
    /// The port.
    pub port: BipPort,
    /// The network number of the B/IP network on it.
    pub network: u16,
    /// A device served directly on this network (it answers what arrives
    /// for this network; what is routed goes past it).
    pub device: Option<Arc<Server<M>>>,
    /// Where this port's routing table is published (its Network Port
    /// object's Routing_Table).
    pub routes: RoutingView,
}

/// An MS/TP port of the router (a trunk it routes to; no device of the
/// gateway's own on it).
pub struct RouterMstpPort {
    /// The port, opened.
    pub port: super::mstp::MstpPort,
    /// The network number of the MS/TP network on it.
    pub network: u16,
    /// Where this port's routing table is published.
    pub routes: RoutingView,
}

/// A BACnet/IPv6 port of the router (no device of the gateway's own on it).
pub struct RouterBip6Port {
    /// The port, bound.
    pub port: super::bip6::Bip6Port,
    /// The network number of the IPv6 network on it.
    pub network: u16,
    /// Where this port's routing table is published.
    pub routes: RoutingView,
}

/// A BACnet Ethernet port of the router (no device of the gateway's own on it).
pub struct RouterEthernetPort {
    /// The port, opened.
    pub port: super::ethernet::EthernetPort,
    /// The network number of the Ethernet network on it.
    pub network: u16,
    /// Where this port's routing table is published.
    pub routes: RoutingView,
}

/// A BACnet/SC port of the router: a node on its hubs (no device of the
/// gateway's own on it).
pub struct RouterScPort {
    /// The node, started.
    pub port: super::sc::ScPort,
    /// The network number of the SC network on it.
    pub network: u16,
    /// Where this port's routing table is published.
    pub routes: RoutingView,
}

/// A virtual network of served devices behind the router.
pub struct VirtualNetwork<M> {
    /// Its network number.
    pub network: u16,
    /// The devices on it; each one's MAC is its instance in three octets.
    pub devices: Vec<Arc<Server<M>>>,
    /// Where the router's table for this network is published.
    pub routes: RoutingView,
}

/// Everything one router node serves.
pub struct RouterNode<M> {
    /// Its B/IP ports (at least one).
    pub ports: Vec<RouterBipPort<M>>,
    /// Its MS/TP ports.
    pub mstp_ports: Vec<RouterMstpPort>,
    /// Its BACnet/IPv6 ports.
    pub bip6_ports: Vec<RouterBip6Port>,
    /// Its BACnet/SC ports.
    pub sc_ports: Vec<RouterScPort>,
    /// Its BACnet Ethernet ports.
    pub ethernet_ports: Vec<RouterEthernetPort>,
    /// Its virtual networks.
    pub virtual_networks: Vec<VirtualNetwork<M>>,
    /// Where the router's counters are published for operators and tests.
    pub counters: Arc<Mutex<RouterCounters>>,
    /// What the router asks about every NPDU it would send on (`None`:
    /// everything the standard allows is forwarded). Ticked once a second.
    pub policy: Option<Box<dyn RoutingPolicy + Send>>,
}

/// A device's MAC on a virtual network: its instance, three octets.
pub fn virtual_mac(instance: u32) -> [u8; 3] {
    let b = instance.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// A B/IP address as a MAC: the IPv4 address, then the port (Annex J.1.2).
fn bip_mac(a: SocketAddrV4) -> [u8; 6] {
    let ip = a.ip().octets();
    let port = a.port().to_be_bytes();
    [ip[0], ip[1], ip[2], ip[3], port[0], port[1]]
}

fn bip_addr(mac: &[u8]) -> Option<SocketAddrV4> {
    let m: [u8; 6] = mac.try_into().ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::new(m[0], m[1], m[2], m[3]), u16::from_be_bytes([m[4], m[5]])))
}

/// Where the peers of virtual devices are said to be when nothing better
/// is known (a request that came from another virtual device).
const VIRTUAL_PEER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 1);

/// One NPDU on the wire: the port, the sender's MAC, the NPDU, and whether
/// the router's own device on that port sent it.
type WireFrame = (PortId, Mac, Vec<u8>, bool);

/// NPDUs virtual devices have sent, waiting for the router.
#[derive(Default)]
struct Wire {
    /// (port, sender's MAC, NPDU, sent by the router's own device on that port).
    frames: Mutex<Vec<WireFrame>>,
    wake: Arc<Notify>,
    /// The loop is handling a wake-up and reads the wire before it sleeps:
    /// no need to wake it (which would cost it a spurious round).
    busy: AtomicBool,
}

impl Wire {
    fn push(&self, port: PortId, mac: Mac, npdu: Vec<u8>, own: bool) {
        self.frames.lock().unwrap_or_else(PoisonError::into_inner).push((port, mac, npdu, own));
        if !self.busy.load(Ordering::Acquire) {
            self.wake.notify_one();
        }
    }

    fn is_empty(&self) -> bool {
        self.frames.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The loop is about to stop reading the wire: wake it again for
    /// whatever comes from now on (or came just before).
    fn idle(&self) {
        self.busy.store(false, Ordering::Release);
        if !self.is_empty() {
            self.wake.notify_one();
        }
    }

    fn take(&self, into: &mut Vec<WireFrame>) {
        std::mem::swap(&mut *self.frames.lock().unwrap_or_else(PoisonError::into_inner), into);
    }
}

/// A virtual device's datalink: the wire to the router.
#[derive(Clone)]
struct VirtualLink {
    wire: Arc<Wire>,
    port: PortId,
    mac: Mac,
}

impl Link for VirtualLink {
    const HEADROOM: usize = 0;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        for (i, frame) in outbox.frames().iter().enumerate() {
            let npdu = outbox.octets(i);
            let npdu = if frame.how == Delivery::Broadcast {
                // A virtual network has no one else to hear a local
                // broadcast: what a device broadcasts (its I-Am) goes to
                // every network instead.
                global(npdu)?
            } else {
                npdu.to_vec()
            };
            self.wire.push(self.port, self.mac, npdu, false);
        }
        Ok(())
    }

    fn hears_broadcasts(&self, _: &DeviceAddress) -> bool {
        false
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::direct(VIRTUAL_PEER)
    }
}

/// The NPDU as a global broadcast.
fn global(npdu: &[u8]) -> std::io::Result<Vec<u8>> {
    let n = Npdu::decode(npdu).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let g = Npdu { destination: Some(NetAddress { net: GLOBAL_NETWORK, mac: &[] }), hop_count: DEFAULT_HOP_COUNT, ..n };
    let mut out = Vec::with_capacity(npdu.len() + 4);
    g.encode(&mut out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    Ok(out)
}

/// The datalink of a device served on a router's B/IP port: its own
/// network's peers directly, every other network's through the router (as
/// if the device had sent the NPDU to the router's MAC, which is its own).
#[derive(Clone)]
struct RouterPortLink {
    handle: BipHandle,
    wire: Arc<Wire>,
    port: PortId,
    mac: Mac,
}

impl Link for RouterPortLink {
    const HEADROOM: usize = trellis_bip::HEADROOM;

    async fn send_all(&self, outbox: &mut Outbox) -> std::io::Result<()> {
        let routed = |f: &super::outbox::Frame| f.peer.remote.is_some() && f.how != Delivery::Broadcast;
        for i in 0..outbox.frames().len() {
            let f = &outbox.frames()[i];
            if routed(f) {
                self.wire.push(self.port, self.mac, outbox.octets(i)[Self::HEADROOM..].to_vec(), true);
            } else {
                let broadcast = f.how == Delivery::Broadcast;
                trellis_bip::write_header(outbox.octets_mut(i), broadcast)?;
            }
        }
        let frames: Vec<(SocketAddrV4, &[u8])> = (0..outbox.frames().len())
            .filter(|i| !routed(&outbox.frames()[*i]))
            .filter_map(|i| {
                let f = &outbox.frames()[i];
                let to = if f.how == Delivery::Broadcast { self.handle.broadcast_addr() } else { f.peer.ip()? };
                Some((to, outbox.octets(i)))
            })
            .collect();
        if frames.is_empty() { Ok(()) } else { self.handle.send_frames(&frames).await }
    }

    fn hears_broadcasts(&self, peer: &DeviceAddress) -> bool {
        peer.ip().is_some_and(|a| a.port() == self.handle.local_addr().port())
    }

    fn broadcast_address(&self) -> DeviceAddress {
        DeviceAddress::direct(self.handle.broadcast_addr())
    }
}

/// A B/IP port as the loop holds it.
struct BipSide<M> {
    id: PortId,
    handle: BipHandle,
    /// The port's own MAC (its address), which its device shares.
    mac: Mac,
    device: Option<Station<M, RouterPortLink>>,
    /// Frames (BVLL header and NPDU) to send at the end of the wake-up.
    pending: Vec<(SocketAddrV4, Vec<u8>)>,
}

/// A BACnet/IPv6 port as the loop holds it.
struct Bip6Side {
    id: PortId,
    handle: trellis_bip6::Bip6Handle,
    /// NPDUs to send at the end of the wake-up: to a VMAC, or to the group.
    pending: Vec<(Option<[u8; 3]>, Vec<u8>)>,
}

/// A BACnet Ethernet port as the loop holds it.
struct EthernetSide {
    id: PortId,
    handle: trellis_ethernet::EthernetHandle,
    /// NPDUs to send at the end of the wake-up: to a MAC, or broadcast.
    pending: Vec<(Option<[u8; 6]>, Vec<u8>)>,
}

/// A BACnet/SC port as the loop holds it.
struct ScSide {
    id: PortId,
    node: trellis_sc::node::ScNode,
    up: mpsc::Receiver<bacnet::sc::connector::Up>,
    /// An NPDU taken while waiting, not yet routed.
    waiting: Option<bacnet::sc::connector::Up>,
    /// NPDUs to send at the end of the wake-up, by VMAC (or the broadcast VMAC).
    pending: Vec<(bacnet::bvlc_sc::ScVmac, Vec<u8>)>,
}

/// An MS/TP port as the loop holds it.
struct MstpSide {
    id: PortId,
    sender: MstpSender,
    received: mpsc::Receiver<Received>,
    pending: Option<Received>,
    _stop: ShutdownOnDrop,
}

/// A virtual network as the loop holds it.
struct VirtualSide<M> {
    id: PortId,
    devices: Vec<(Mac, Station<M, VirtualLink>)>,
}

/// The loop's state but the drivers (so that a driver can hand its
/// datagrams to the rest while it is borrowed).
struct Node<M> {
    router: Router,
    policy: Box<dyn RoutingPolicy + Send>,
    next_policy_tick: Instant,
    epoch: Instant,
    bip: Vec<BipSide<M>>,
    bip6: Vec<Bip6Side>,
    ethernet: Vec<EthernetSide>,
    sc: Vec<ScSide>,
    mstp: Vec<MstpSide>,
    virtuals: Vec<VirtualSide<M>>,
    wire: Arc<Wire>,
    counters: Arc<Mutex<RouterCounters>>,
    /// Each port's published routing table, and the table version published.
    views: Vec<(PortId, RoutingView)>,
    published: Option<u64>,
}

/// The router's ports as they are numbered, with their published tables.
#[derive(Default)]
struct PortPlan {
    ports: Vec<PortConfig>,
    views: Vec<(PortId, RoutingView)>,
}

impl PortPlan {
    /// The next port: numbered 1, 2, … (255 at most).
    fn add(
        &mut self,
        network: u16,
        max_npdu: usize,
        mac_len: u8,
        broadcast_mac: Option<Mac>,
        routes: &RoutingView,
    ) -> anyhow::Result<PortId> {
        let id = u8::try_from(self.ports.len() + 1)
            .map(PortId)
            .map_err(|_| anyhow::anyhow!("more than 255 router ports"))?;
        self.ports.push(PortConfig { id, network, max_npdu, mac_len: Some(mac_len), broadcast_mac });
        self.views.push((id, routes.clone()));
        Ok(id)
    }
}

/// Serve a router node until a port fails or the future is dropped.
pub async fn serve_router<M: ObjectModel>(node: RouterNode<M>) -> anyhow::Result<()> {
    anyhow::ensure!(!node.ports.is_empty(), "a router needs a B/IP port");
    let wire = Arc::new(Wire::default());
    let mut plan = PortPlan::default();
    let mut drivers = Vec::new();
    let mut bip = Vec::new();
    for p in node.ports {
        let broadcast = Mac::new(&bip_mac(p.port.broadcast_addr()));
        let id = plan.add(p.network, BIP_MAX_NPDU, 6, broadcast, &p.routes)?;
        let (handle, driver) = p.port.into_parts();
        tracing::info!(address = %handle.local_addr(), network = p.network, "router port: BACnet/IP");
        let mac = Mac::new(&bip_mac(handle.local_addr())).expect("six octets");
        let device = match p.device {
            Some(server) => {
                let link = RouterPortLink { handle: handle.clone(), wire: wire.clone(), port: id, mac };
                Some(Station::start_driven(server, link, wire.wake.clone()).await)
            }
            None => None,
        };
        drivers.push(driver);
        bip.push(BipSide { id, handle, mac, device, pending: Vec::new() });
    }
    let mut mstp = Vec::new();
    for p in node.mstp_ports {
        let id = plan.add(p.network, MSTP_MAX_NPDU, 1, Mac::new(&[BROADCAST_MAC]), &p.routes)?;
        let (handle, driver) = p.port.into_parts();
        let name = driver.name().to_string();
        driver.spawn()?;
        let (sender, from_driver) = handle.into_parts();
        tracing::info!(port = %name, mac = sender.mac(), network = p.network, "router port: MS/TP");
        let (tx, received) = mpsc::channel(MSTP_QUEUE);
        bridge(from_driver, tx, |r| r);
        let stop = ShutdownOnDrop(sender.clone());
        mstp.push(MstpSide { id, sender, received, pending: None, _stop: stop });
    }
    let mut bip6 = Vec::new();
    let mut drivers6 = Vec::new();
    for p in node.bip6_ports {
        let id = plan.add(p.network, BIP_MAX_NPDU, 3, None, &p.routes)?;
        let (handle, driver) = p.port.into_parts();
        tracing::info!(address = %handle.local_addr(), network = p.network, "router port: BACnet/IPv6");
        drivers6.push(driver);
        bip6.push(Bip6Side { id, handle, pending: Vec::new() });
    }
    let mut ethernet = Vec::new();
    let mut drivers_eth = Vec::new();
    for p in node.ethernet_ports {
        let broadcast = Mac::new(&trellis_ethernet::BROADCAST);
        let id = plan.add(p.network, trellis_ethernet::MAX_NPDU, 6, broadcast, &p.routes)?;
        let (handle, driver) = p.port.into_parts();
        tracing::info!(
            interface = handle.interface(),
            mac = trellis_ethernet::format_mac(&handle.mac()),
            network = p.network,
            "router port: BACnet Ethernet"
        );
        drivers_eth.push(driver);
        ethernet.push(EthernetSide { id, handle, pending: Vec::new() });
    }
    let mut sc = Vec::new();
    for p in node.sc_ports {
        let id = plan.add(p.network, BIP_MAX_NPDU, 6, Mac::new(&bacnet::bvlc_sc::BROADCAST_VMAC), &p.routes)?;
        tracing::info!(network = p.network, "router port: BACnet/SC");
        sc.push(ScSide { id, node: p.port.node, up: p.port.up, waiting: None, pending: Vec::new() });
    }
    let mut virtuals = Vec::new();
    for v in node.virtual_networks {
        let id = plan.add(v.network, BIP_MAX_NPDU, 3, None, &v.routes)?;
        let mut devices = Vec::new();
        for server in v.devices {
            let instance = server.device_id().instance;
            let mac = Mac::new(&virtual_mac(instance)).expect("three octets");
            tracing::info!(device = instance, network = v.network, "serving on a virtual network");
            let link = VirtualLink { wire: wire.clone(), port: id, mac };
            devices.push((mac, Station::start_driven(server, link, wire.wake.clone()).await));
        }
        virtuals.push(VirtualSide { id, devices });
    }
    if plan.ports.len() == 1 {
        // A router with nothing to route: the core wants two ports.
        anyhow::bail!("a router needs at least two networks (ports or virtual networks)");
    }
    let PortPlan { ports, views } = plan;
    let router = Router::new(RouterConfig::new(ports)).map_err(|e| anyhow::anyhow!("router: {e}"))?;
    let mut node = Node {
        router,
        policy: node.policy.unwrap_or_else(|| Box::new(ForwardAll)),
        next_policy_tick: Instant::now() + POLICY_TICK,
        epoch: Instant::now(),
        bip,
        bip6,
        ethernet,
        sc,
        mstp,
        virtuals,
        wire,
        counters: node.counters,
        views,
        published: None,
    };
    node.router.announce();
    node.deliver(None);
    node.run(drivers, drivers6, drivers_eth).await
}

impl<M: ObjectModel> Node<M> {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    async fn run(
        &mut self,
        mut drivers: Vec<BipDriver>,
        mut drivers6: Vec<trellis_bip6::Bip6Driver>,
        mut drivers_eth: Vec<trellis_ethernet::EthernetDriver>,
    ) -> anyhow::Result<()> {
        let wake = self.wire.wake.clone();
        let mut wire_frames = Vec::new();
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                failed = any_readable(&drivers) => if failed {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                },
                _ = wake.notified() => {}
                _ = any_received(&mut self.mstp) => {}
                _ = any_ready(&drivers6, |d, cx| d.poll_readable(cx).is_ready()) => {}
                _ = any_ready(&drivers_eth, |d, cx| d.poll_readable(cx).is_ready()) => {}
                _ = any_received_sc(&mut self.sc) => {}
                _ = sleep_until(deadline) => {}
            }
            self.wire.busy.store(true, Ordering::Release);
            let now = self.now();
            self.router.handle_timeout(now);
            if Instant::now() >= self.next_policy_tick {
                self.next_policy_tick = Instant::now() + POLICY_TICK;
                self.policy.tick(now);
            }
            self.each_station(|s| s.begin_intake());
            for (i, driver) in drivers.iter_mut().enumerate() {
                driver.drain(MAX_BATCH, |n| self.arrival(i, n.source, n.npdu, n.broadcast));
            }
            for i in 0..self.mstp.len() {
                self.mstp_intake(i);
            }
            for i in 0..self.sc.len() {
                self.sc_intake(i);
            }
            for (i, driver) in drivers6.iter_mut().enumerate() {
                let id = self.bip6[i].id;
                driver.drain(MAX_BATCH, |n| {
                    let now = self.now();
                    // No device of ours is on an IPv6 router port: only
                    // what is routed counts.
                    let _ = self.router.handle_npdu_with(now, id, &n.source, n.npdu, &mut *self.policy);
                    self.deliver(None);
                });
            }
            for (i, driver) in drivers_eth.iter_mut().enumerate() {
                let id = self.ethernet[i].id;
                driver.drain(MAX_BATCH, |n| {
                    let now = self.now();
                    // No device of ours is on an Ethernet router port:
                    // only what is routed counts.
                    let _ = self.router.handle_npdu_with(now, id, &n.source, n.npdu, &mut *self.policy);
                    self.deliver(None);
                });
            }
            self.each_station(|s| s.end_intake());
            for _ in 0..MAX_WIRE_ROUNDS {
                self.route_wire(&mut wire_frames);
                self.execute_all(deadline).await;
                if self.wire.is_empty() {
                    break;
                }
            }
            // What is still on the wire (device-to-device traffic beyond
            // the rounds, or a notification pushed meanwhile) wakes the
            // loop again: idle() sees it.
            self.wire.idle();
            self.send_pending().await;
            self.publish();
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let router = self.router.poll_timeout(self.now()).map(|d| self.epoch + d);
        let stations = self.bip.iter().filter_map(|b| b.device.as_ref()).filter_map(|s| s.next_deadline());
        let virtuals = self.virtuals.iter().flat_map(|v| v.devices.iter()).filter_map(|(_, s)| s.next_deadline());
        let policy = Some(self.next_policy_tick);
        router.into_iter().chain(policy).chain(stations).chain(virtuals).min()
    }

    fn each_station(&mut self, mut f: impl FnMut(&mut dyn StationControl)) {
        for b in &mut self.bip {
            if let Some(s) = b.device.as_mut() {
                f(s);
            }
        }
        for v in &mut self.virtuals {
            for (_, s) in &mut v.devices {
                f(s);
            }
        }
    }

    /// An NPDU received on B/IP port `i`.
    fn arrival(&mut self, i: usize, source: SocketAddrV4, npdu: &[u8], broadcast: bool) {
        let now = self.now();
        let side = &mut self.bip[i];
        let pending_before = side.pending.len();
        if let Arrival::Local(_) = self.router.handle_npdu_with(now, side.id, &bip_mac(source), npdu, &mut *self.policy)
            && let Some(device) = side.device.as_mut()
        {
            device.on_npdu(DeviceAddress::direct(source), npdu, broadcast);
        }
        self.deliver(Some(source));
        // On loopback every process has its own UDP port and cannot hear a
        // broadcast to ours: what the router broadcast on this port in
        // answer (I-Am-Router-To-Network, Network-Number-Is) goes to the
        // asker directly too, as the server does for an I-Am.
        let side = &mut self.bip[i];
        if source.port() != side.handle.local_addr().port() {
            let broadcast = side.handle.broadcast_addr();
            let answers: Vec<Vec<u8>> = side
                .pending
                .iter()
                .skip(pending_before)
                .filter(|(to, f)| *to == broadcast && is_network_message(f))
                .map(|(_, f)| f.clone())
                .collect();
            for mut frame in answers {
                if trellis_bip::write_header(&mut frame, false).is_ok() {
                    side.pending.push((source, frame));
                }
            }
        }
    }

    /// What MS/TP port `i` received. The router's port has no application
    /// of its own: a frame expecting a reply is answered with Reply
    /// Postponed at once (the answer, if any, comes through the router
    /// later, at our next token).
    fn mstp_intake(&mut self, i: usize) {
        for _ in 0..MAX_BATCH {
            let side = &mut self.mstp[i];
            let Some(r) = side.pending.take().or_else(|| side.received.try_recv().ok()) else { return };
            if r.expecting_reply {
                let _ = side.sender.reply_postponed(r.source_mac);
            }
            let (id, now) = (side.id, self.now());
            let _ = self.router.handle_npdu_with(now, id, &[r.source_mac], &r.npdu, &mut *self.policy);
            self.deliver(None);
        }
    }

    /// What BACnet/SC port `i` received (no device of ours is on it: only
    /// what is routed counts).
    fn sc_intake(&mut self, i: usize) {
        for _ in 0..MAX_BATCH {
            let side = &mut self.sc[i];
            let Some(u) = side.waiting.take().or_else(|| side.up.try_recv().ok()) else { return };
            let Some(origin) = u.origin else { continue };
            let (id, now) = (side.id, self.now());
            let _ = self.router.handle_npdu_with(now, id, &origin, &u.npdu, &mut *self.policy);
            self.deliver(None);
        }
    }

    /// Hand the router's transmits to their ports. `origin`: the B/IP
    /// address the NPDU that caused them came from, which virtual devices
    /// see as their peer's link (for per-address limits).
    fn deliver(&mut self, origin: Option<SocketAddrV4>) {
        let peer = DeviceAddress::direct(origin.unwrap_or(VIRTUAL_PEER));
        while let Some(t) = self.router.poll_transmit() {
            if let Some(side) = self.bip.iter_mut().find(|b| b.id == t.port) {
                // The port's own device shares its MAC: what is routed to
                // it (or broadcast on its network) is handed over here; a
                // datagram to our own address would never arrive.
                if let Some(device) = side.device.as_mut() {
                    match t.to {
                        LinkTarget::Unicast(mac) if mac == side.mac => {
                            device.on_npdu(peer.clone(), &t.npdu, false);
                            continue;
                        }
                        LinkTarget::Broadcast => {
                            device.on_npdu(peer.clone(), &t.npdu, true);
                        }
                        LinkTarget::Unicast(_) => {}
                    }
                }
                let to = match t.to {
                    LinkTarget::Broadcast => Some(side.handle.broadcast_addr()),
                    LinkTarget::Unicast(mac) => bip_addr(mac.as_bytes()),
                };
                let Some(to) = to else { continue };
                let mut frame = vec![0; trellis_bip::HEADROOM];
                frame.extend_from_slice(&t.npdu);
                if trellis_bip::write_header(&mut frame, t.to == LinkTarget::Broadcast).is_ok() {
                    side.pending.push((to, frame));
                }
            } else if let Some(side) = self.bip6.iter_mut().find(|b| b.id == t.port) {
                let to = match t.to {
                    LinkTarget::Broadcast => None,
                    LinkTarget::Unicast(mac) => match mac.as_bytes() {
                        &[a, b, c] => Some([a, b, c]),
                        _ => continue,
                    },
                };
                side.pending.push((to, t.npdu));
            } else if let Some(side) = self.ethernet.iter_mut().find(|b| b.id == t.port) {
                let to = match t.to {
                    LinkTarget::Broadcast => None,
                    LinkTarget::Unicast(mac) => match mac.as_bytes().try_into() {
                        Ok(mac) => Some(mac),
                        Err(_) => continue,
                    },
                };
                side.pending.push((to, t.npdu));
            } else if let Some(side) = self.sc.iter_mut().find(|b| b.id == t.port) {
                let to = match t.to {
                    LinkTarget::Broadcast => bacnet::bvlc_sc::BROADCAST_VMAC,
                    LinkTarget::Unicast(mac) => match mac.as_bytes().try_into() {
                        Ok(vmac) => vmac,
                        Err(_) => continue,
                    },
                };
                side.pending.push((to, t.npdu));
            } else if let Some(side) = self.mstp.iter().find(|m| m.id == t.port) {
                let mac = match t.to {
                    LinkTarget::Broadcast => BROADCAST_MAC,
                    LinkTarget::Unicast(mac) => mac.as_bytes().first().copied().unwrap_or(BROADCAST_MAC),
                };
                let expecting_reply = t.npdu.get(1).is_some_and(|control| control & 0x04 != 0) && mac != BROADCAST_MAC;
                if let Err(e) = side.sender.send(mac, t.npdu, expecting_reply) {
                    tracing::debug!(error = ?e, mac, "router: an NPDU for the MS/TP port was not queued");
                }
            } else if let Some(v) = self.virtuals.iter_mut().find(|v| v.id == t.port) {
                for (mac, station) in &mut v.devices {
                    match t.to {
                        LinkTarget::Broadcast => {
                            station.on_npdu(peer.clone(), &t.npdu, true);
                        }
                        LinkTarget::Unicast(to) if to == *mac => {
                            station.on_npdu(peer.clone(), &t.npdu, false);
                        }
                        LinkTarget::Unicast(_) => {}
                    }
                }
            }
        }
    }

    /// Route what virtual devices have sent.
    fn route_wire(&mut self, frames: &mut Vec<WireFrame>) {
        self.wire.take(frames);
        let now = self.now();
        for (port, mac, npdu, own) in frames.drain(..) {
            if own {
                // The router port's own device: routed as the router's.
                self.router.handle_own_npdu_with(now, port, mac.as_bytes(), &npdu, &mut *self.policy);
            } else {
                // A virtual device's NPDU is never for its own network's
                // devices (nothing else is on it): only what is routed counts.
                let _ = self.router.handle_npdu_with(now, port, mac.as_bytes(), &npdu, &mut *self.policy);
            }
            self.deliver(None);
        }
    }

    async fn execute_all(&mut self, deadline: Option<Instant>) {
        for b in &mut self.bip {
            if let Some(s) = b.device.as_mut() {
                s.execute_batch().await;
                s.catch_up(deadline);
                s.flush().await;
            }
        }
        for v in &mut self.virtuals {
            for (_, s) in &mut v.devices {
                s.execute_batch().await;
                s.catch_up(deadline);
                s.flush().await;
            }
        }
    }

    async fn send_pending(&mut self) {
        for side in &mut self.sc {
            for (to, npdu) in side.pending.drain(..) {
                if let Err(e) = side.node.send(to, npdu).await {
                    tracing::debug!(error = %e, "router: an NPDU for the BACnet/SC port was not sent");
                }
            }
        }
        for side in &mut self.bip6 {
            for (to, npdu) in side.pending.drain(..) {
                let sent = match to {
                    Some(vmac) => side.handle.send_unicast(vmac, &npdu).await,
                    None => side.handle.send_broadcast(&npdu).await,
                };
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "router: an NPDU for the BACnet/IPv6 port was not sent");
                }
            }
        }
        for side in &mut self.ethernet {
            for (to, npdu) in side.pending.drain(..) {
                let sent = match to {
                    Some(mac) => side.handle.send_unicast(mac, &npdu).await,
                    None => side.handle.send_broadcast(&npdu).await,
                };
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "router: an NPDU for the BACnet Ethernet port was not sent");
                }
            }
        }
        for side in &mut self.bip {
            if side.pending.is_empty() {
                continue;
            }
            let frames: Vec<(SocketAddrV4, &[u8])> = side.pending.iter().map(|(a, f)| (*a, &f[..])).collect();
            if let Err(e) = side.handle.send_frames(&frames).await {
                tracing::debug!(error = %e, "router: a routed NPDU was not sent");
            }
            side.pending.clear();
        }
    }

    fn publish(&mut self) {
        *self.counters.lock().unwrap_or_else(PoisonError::into_inner) = self.router.counters();
        let version = self.router.table().version();
        if self.published != Some(version) {
            self.published = Some(version);
            let now = self.now();
            for (port, view) in &self.views {
                let rows = self
                    .router
                    .table()
                    .iter()
                    .filter(|(_, r)| r.port == *port)
                    .filter_map(|(network, r)| {
                        let mac = r.next_hop?.as_bytes().to_vec();
                        Some(RouteRow { network, mac, busy: r.is_busy(now) })
                    })
                    .collect();
                view.publish(rows);
            }
        }
        self.each_station(|s| s.publish());
    }
}

/// Whether a framed NPDU (BVLL header first) carries a network-layer message.
fn is_network_message(frame: &[u8]) -> bool {
    frame.get(trellis_bip::HEADROOM + 1).is_some_and(|control| control & 0x80 != 0)
}

/// What the loop does to every station, whatever its datalink.
trait StationControl {
    fn begin_intake(&mut self);
    fn end_intake(&mut self);
    fn publish(&self);
}

impl<M: ObjectModel, L: Link> StationControl for Station<M, L> {
    fn begin_intake(&mut self) {
        Station::begin_intake(self)
    }
    fn end_intake(&mut self) {
        Station::end_intake(self)
    }
    fn publish(&self) {
        self.publish_counters()
    }
}

/// Wait until an MS/TP port has received an NPDU (kept as its `pending`).
async fn any_received(ports: &mut [MstpSide]) {
    if ports.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for p in ports.iter_mut() {
            if p.pending.is_some() {
                return Poll::Ready(());
            }
            match p.received.poll_recv(cx) {
                Poll::Ready(Some(r)) => {
                    p.pending = Some(r);
                    return Poll::Ready(());
                }
                // The bridge stopped (the driver ended): nothing more comes.
                Poll::Ready(None) | Poll::Pending => {}
            }
        }
        Poll::Pending
    })
    .await
}

/// Wait until a BACnet/SC port has received an NPDU (kept as its `waiting`).
async fn any_received_sc(ports: &mut [ScSide]) {
    if ports.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for p in ports.iter_mut() {
            if p.waiting.is_some() {
                return Poll::Ready(());
            }
            if let Poll::Ready(Some(u)) = p.up.poll_recv(cx) {
                p.waiting = Some(u);
                return Poll::Ready(());
            }
        }
        Poll::Pending
    })
    .await
}

/// Wait until one of `drivers` is ready to read (`poll` asks one); never,
/// when there are none. For the IPv6 and Ethernet ports, whose drivers the
/// loop drains whatever their readiness said.
async fn any_ready<D>(drivers: &[D], poll: impl Fn(&D, &mut std::task::Context<'_>) -> bool) {
    if drivers.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| if drivers.iter().any(|d| poll(d, cx)) { Poll::Ready(()) } else { Poll::Pending }).await
}

/// Wait until one of the ports has a datagram; true when a port failed.
async fn any_readable(drivers: &[BipDriver]) -> bool {
    std::future::poll_fn(|cx| {
        for d in drivers {
            if let Poll::Ready(r) = d.poll_readable(cx) {
                if let Err(e) = &r {
                    tracing::warn!(error = %e, "router: B/IP port not readable");
                }
                return Poll::Ready(r.is_err());
            }
        }
        Poll::Pending
    })
    .await
}
