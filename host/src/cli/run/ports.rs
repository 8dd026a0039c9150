//! The ports `trellis run` binds for its devices and router: which kind a
//! device's port is, and a B/IP or IPv6 port made a BBMD.

/// A router port, for the HTTP surface.
pub(super) fn router_port(
    kind: &'static str,
    name: String,
    network: u16,
    counters: crate::http::PortCounters,
) -> crate::http::PortEntry {
    crate::http::PortEntry { kind, name, device: None, network: Some(network), counters }
}

/// Make a bound BACnet/IPv6 port a BBMD as `section` says, and say so.
pub(super) fn enable_bbmd6(
    port: &mut crate::server::Bip6Port,
    section: &crate::config::Bbmd6Section,
) -> anyhow::Result<()> {
    let peers = section.peers()?;
    let mut problem = None;
    let bbmd = port.enable_bbmd(peers, |c| problem = section.apply(c).err());
    if let Some(e) = problem {
        return Err(e);
    }
    eprintln!(
        "trellis: BACnet/IPv6 BBMD on {} with {} peers; foreign devices {}",
        port.local_addr(),
        bbmd.peers().len(),
        if section.foreign_devices.is_empty() {
            "refused (no foreign_devices networks)".to_string()
        } else {
            format!("from {}", section.foreign_devices.join(", "))
        }
    );
    Ok(())
}

/// Make a bound B/IP port a BBMD as `section` says, and say so.
pub(super) fn enable_bbmd(
    port: &mut crate::server::BipPort,
    section: &crate::config::BbmdSection,
) -> anyhow::Result<std::sync::Arc<trellis_bip::PortBbmd>> {
    let config = section.resolve(port.local_addr(), port.broadcast_addr())?;
    let (peers, fds) = (config.bdt.len() - 1, section.foreign_devices.join(", "));
    let bbmd = port.enable_bbmd(config);
    let fds = if fds.is_empty() { "none".into() } else { fds };
    eprintln!("trellis: BBMD on {}: {peers} peer(s); foreign devices from: {fds}", port.local_addr());
    Ok(bbmd)
}

/// A device's port, bound before anything is said to serve.
pub(super) enum Port {
    Bip(crate::server::BipPort),
    Bip6(crate::server::Bip6Port),
    Mstp(Box<crate::server::MstpPort>),
    Sc(Box<crate::sc_port::StartedSc>),
    Ethernet(crate::server::EthernetPort),
}

impl Port {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Port::Bip(_) => "bip",
            Port::Bip6(_) => "bip6",
            Port::Mstp(_) => "mstp",
            Port::Sc(_) => "sc",
            Port::Ethernet(_) => "ethernet",
        }
    }

    /// Where its counters are read while it serves.
    pub(super) fn counters(&self) -> crate::http::PortCounters {
        match self {
            Port::Bip(p) => crate::http::PortCounters::Bip(p.stats()),
            Port::Bip6(p) => crate::http::PortCounters::Bip6(p.stats()),
            Port::Mstp(p) => crate::http::PortCounters::Mstp(p.status_source()),
            Port::Sc(sc) => crate::http::PortCounters::Sc(sc.view.node.clone()),
            Port::Ethernet(p) => crate::http::PortCounters::Ethernet(p.stats()),
        }
    }
}
