//! HTTPS for the console and API (`[http.tls]`), and client certificates
//! (mTLS) when `client_ca` is set: a certificate is then asked for but not
//! required, so one port serves certificate holders and bearer tokens alike;
//! whoever presents one must present a valid one.
//!
//! Handshakes run on tasks of their own under a time limit (at most 64 at
//! once), so a client that stalls mid-handshake holds up nobody else; finished connections are
//! handed to the HTTP server with the peer's certificate digest.
//!
//! Must never: accept a client certificate from an issuer not in
//! `client_ca`, or let one connection's handshake stall the listener.

use super::auth::Peer;
use super::config::TlsSection;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A handshake's time limit.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Handshakes under way at once; further connections wait to be accepted.
const HANDSHAKES: usize = 64;

fn certs(path: &std::path::Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let v = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    anyhow::ensure!(!v.is_empty(), "{}: no CERTIFICATE in it", path.display());
    Ok(v)
}

/// The server's TLS configuration from `[http.tls]`.
pub fn server_config(section: &TlsSection) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs(&section.cert)?;
    let key_pem =
        std::fs::read(&section.key).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", section.key.display()))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| anyhow::anyhow!("{}: no private key: {e}", section.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let mut config = match &section.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs(ca)? {
                roots.add(c).map_err(|e| anyhow::anyhow!("{}: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| anyhow::anyhow!("{}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier).with_single_cert(chain, key)?
        }
        None => builder.with_no_client_auth().with_single_cert(chain, key)?,
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener whose connections arrive after their TLS handshake.
pub struct TlsListener {
    local: std::net::SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, Peer)>,
}

impl TlsListener {
    /// Accept on `listener`, handshaking with `config`.
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let slots = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else { return };
                let (tcp, addr) = match listener.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::debug!("HTTPS accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, handed) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await;
                    drop(slot);
                    match handshake {
                        Ok(Ok(tls)) => {
                            let client_cert = tls
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| Sha256::digest(c.as_ref()).into());
                            let _ = handed.send((tls, Peer { addr, client_cert })).await;
                        }
                        Ok(Err(e)) => tracing::info!(peer = %addr, "HTTPS handshake refused: {e}"),
                        Err(_) => tracing::info!(peer = %addr, "HTTPS handshake timed out"),
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { local, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept loop ended (its listener failed for good): wait forever, as a listener with nothing to accept.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer { addr: self.local, client_cert: None })
    }
}

/// Plain TCP, with the same peer type.
pub struct PlainListener(pub TcpListener);

impl axum::serve::Listener for PlainListener {
    type Io = TcpStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.0).await;
        let _ = io.set_nodelay(true);
        (io, Peer { addr, client_cert: None })
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer { addr: self.0.local_addr()?, client_cert: None })
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, PlainListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, PlainListener>) -> Self {
        stream.remote_addr().clone()
    }
}
