//! `trellis sc`: BACnet/SC tools. `certs` writes a test PKI — a CA, a hub
//! certificate and node certificates — to try BACnet/SC out with; `hub`
//! runs a hub on its own (no device), e.g. a failover hub.

use super::Failure;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `trellis sc`.
#[derive(Debug, Args)]
pub struct ScArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ScCommand,
}

/// `trellis sc` subcommands.
#[derive(Debug, Subcommand)]
pub enum ScCommand {
    /// Write a test PKI for BACnet/SC into --out: ca.pem (the issuer every
    /// side trusts), hub.pem/hub.key (for --hub-host), node1.pem/node1.key …
    /// (keys mode 0600), crl.pem (the CA's revocation list, with --revoke). EC P-256, TLS 1.3 ready. For trying BACnet/SC out
    /// and tests only: a site's CA belongs to its operator.
    ///
    /// Example: trellis sc certs --out pki --hub-host localhost --hub-host 127.0.0.1 --nodes 2
    Certs(CertsArgs),
    /// Run a BACnet/SC hub on its own (no device behind it) until Ctrl-C or
    /// SIGTERM, with the global --cert, --key and --ca: TLS 1.3, node
    /// certificates checked against --ca. Refusals are logged and counted;
    /// the counters are printed on exit.
    ///
    /// Example: trellis sc hub --listen 127.0.0.1:47844 --cert pki/hub.pem --key pki/hub.key --ca pki/ca.pem
    Hub(HubArgs),
}

/// Arguments of `trellis sc hub`.
#[derive(Debug, Args)]
pub struct HubArgs {
    /// Where to listen (IP:PORT).
    #[arg(long, value_name = "IP:PORT")]
    pub listen: std::net::SocketAddr,
    /// Seconds of silence from a node before the hub closes its connection
    /// (twice the heartbeat; default 300).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    pub heartbeat_s: u32,
    /// Threads relaying frames: 1 (the default) runs the hub on one thread
    /// of its own, which is fastest up to a few thousand frames per
    /// millisecond; more spread the connections over that many threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
}

/// Arguments of `trellis sc certs`.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A name or address the hub is reached by (its certificate's subject
    /// alternative names). Repeatable.
    #[arg(long = "hub-host", value_name = "HOST", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
    pub hub_hosts: Vec<String>,
    /// How many node certificates.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub nodes: u32,
    /// Valid until the end of the year this many years from now.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=30))]
    pub years: u16,
    /// Name node N's certificate in the CA's revocation list (crl.pem,
    /// written either way), e.g. to try `revocation_lists`. Repeatable.
    #[arg(long, value_name = "N")]
    pub revoke: Vec<u32>,
}

/// Run `trellis sc`.
pub async fn run(a: ScArgs, g: &super::GlobalArgs) -> Result<(), Failure> {
    match a.command {
        ScCommand::Hub(h) => hub(h, g).await,
        ScCommand::Certs(c) => {
            let hosts: Vec<&str> = c.hub_hosts.iter().map(String::as_str).collect();
            let written =
                trellis_sc::pki::write_test_pki(&c.out, &hosts, c.nodes, c.years, &c.revoke).map_err(|e| Failure {
                    code: super::exit::OTHER,
                    message: format!("--out {}: {e}", c.out.display()),
                })?;
            for f in written {
                println!("{}", f.display());
            }
            Ok(())
        }
    }
}

async fn hub(h: HubArgs, g: &super::GlobalArgs) -> Result<(), Failure> {
    use bacnet::bvlc_sc::ConnectInfo;
    use bacnet::sc::connection::ConnectionConfig;
    use std::sync::atomic::Ordering::Relaxed;
    let (Some(cert), Some(key), Some(ca)) = (&g.cert, &g.key, &g.ca) else {
        return Err(Failure::usage("sc hub needs --cert, --key and --ca (the hub's certificate, key and issuers)"));
    };
    let other = |message: String| Failure { code: super::exit::OTHER, message };
    let mut creds = trellis_sc::tls::ScCredentials::from_pem_files(cert, key, ca).map_err(|e| other(e.to_string()))?;
    if let Some(crl) = &g.crl {
        creds = creds.with_revocation_lists(crl).map_err(|e| other(format!("--crl: {e}")))?;
    }
    let tls = creds.server_config().map_err(|e| other(e.to_string()))?;
    let listener = std::net::TcpListener::bind(h.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| other(format!("--listen {}: {e}", h.listen)))?;
    let me = ConnectInfo {
        vmac: trellis_sc::identity::random_vmac(),
        uuid: trellis_sc::identity::derived_uuid(0x3F_FFFF, creds.chain[0].as_ref()),
        max_bvlc_len: 1600,
        max_npdu_len: 1497,
    };
    let mut connection = ConnectionConfig::new(me);
    connection.heartbeat = std::time::Duration::from_secs(h.heartbeat_s.into());
    let stats = std::sync::Arc::new(trellis_sc::hub::HubPortStats::default());
    let config = bacnet::sc::hub::HubConfig::new(connection);
    let runtime = if h.threads == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(h.threads.into()).enable_all().build()
    }
    .map_err(|e| other(format!("the hub's runtime: {e}")))?;
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let hub_stats = stats.clone();
    let relay = std::thread::Builder::new()
        .name("sc hub".into())
        .spawn(move || {
            let ended = runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                trellis_sc::hub::serve_hub(listener, tls, config, hub_stats).await
            });
            let _ = done_tx.send(ended);
        })
        .map_err(|e| other(format!("the hub's thread: {e}")))?;
    let serving = async move {
        match done.await {
            Ok(ended) => ended,
            Err(_) => Err(std::io::Error::other("the hub's thread ended")),
        }
    };
    eprintln!("trellis: BACnet/SC hub on wss://{}/ — Ctrl-C to stop", h.listen);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| other(format!("SIGTERM handler: {e}")))?;
    let ended = tokio::select! {
        r = serving => r.map_err(|e| other(format!("hub on {}: {e}", h.listen))),
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = term.recv() => Ok(()),
    };
    drop(relay);
    let c = stats.hub();
    eprintln!(
        "trellis: hub stopped: {} node(s) connected; refused: {} TLS, {} subprotocol, {} handshake timeouts, \
         {} duplicate VMACs, {} at the bound; {} unicasts and {} broadcasts relayed, {} to unknown destinations, \
         {} dropped on full queues, {} bad frames",
        stats.connected_nodes.load(Relaxed),
        stats.tls_refused.load(Relaxed),
        stats.wrong_subprotocol.load(Relaxed),
        stats.handshake_timeouts.load(Relaxed),
        c.refused_duplicate,
        c.refused_full,
        c.unicasts,
        c.broadcasts,
        c.unknown_destination,
        stats.queue_full.load(Relaxed) + c.queue_full,
        stats.bad_frames.load(Relaxed),
    );
    ended
}
