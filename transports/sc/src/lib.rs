//! BACnet Secure Connect (Annex AB) for Trellis: WebSockets (RFC 6455)
//! over TLS 1.3 with mutual authentication, carrying the core's BVLC-SC
//! messages and driven by its sans-IO state machines
//! ([`bacnet::sc`]).
//!
//! - [`tls`]: the port's credentials and rustls configurations (TLS 1.3,
//!   both sides authenticated against the configured issuers only).
//! - [`hub`]: the hub function on a TCP listener: each node's WebSocket
//!   (subprotocol `hub.bsc.bacnet.org`) feeds the core's `Hub`, shared
//!   behind a lock by the connections' readers; each connection writes from
//!   a bounded queue, in bursts.
//! - [`identity`]: a node's VMAC (Random-48) and device UUID (configured
//!   or derived from the instance and certificate).
//! - [`direct`]: direct connections between nodes (the node switch's
//!   WebSockets, subprotocol `dc.bsc.bacnet.org`).
//! - [`pki`]: a test PKI (CA, hub and node certificates), for `trellis sc
//!   certs` and tests.
//! - [`node`]: a node's hub connector (primary, failover, back-off) over
//!   real WebSockets: NPDUs in and out.
//!
//! Must never: speak plaintext on a port, take a WebSocket without the
//! BACnet/SC subprotocol, or let one slow peer hold up the others.

pub mod direct;
pub mod hub;
pub mod identity;
pub mod node;
pub mod pki;
pub mod tls;
mod ws;

/// The TLS library, for callers that hold its configurations.
pub use rustls;

/// How our WebSockets buffer: small buffers (tungstenite's defaults are
/// 128 KiB each way, and it zero-fills its whole read buffer before every
/// read: both resident memory per idle connection and a memset per read),
/// frames no larger than a BVLC-SC message may be, and writes gathered
/// until a flush (one TLS record for a burst of frames).
pub(crate) fn ws_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(16 * 1024)
        .max_message_size(Some(hub::MAX_FRAME))
        .max_frame_size(Some(hub::MAX_FRAME))
}

/// How long a burst of writes (or a close) may take: a peer that stops
/// reading loses its connection rather than holding its writer forever.
pub(crate) const WRITE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Write `first` and whatever else is queued now (up to a burst), then
/// flush once; an error when the peer does not take it within
/// [`WRITE_LIMIT`].
pub(crate) async fn write_burst<S>(
    sink: &mut S,
    first: Vec<u8>,
    queue: &mut tokio::sync::mpsc::Receiver<Vec<u8>>,
) -> Result<(), tokio_tungstenite::tungstenite::Error>
where
    S: futures_util::Sink<tokio_tungstenite::tungstenite::Message, Error = tokio_tungstenite::tungstenite::Error>
        + Unpin,
{
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let burst = async {
        sink.feed(Message::Binary(first.into())).await?;
        for _ in 0..64 {
            match queue.try_recv() {
                Ok(f) => sink.feed(Message::Binary(f.into())).await?,
                Err(_) => break,
            }
        }
        sink.flush().await
    };
    match tokio::time::timeout(WRITE_LIMIT, burst).await {
        Ok(done) => done,
        Err(_) => Err(tokio_tungstenite::tungstenite::Error::Io(std::io::ErrorKind::TimedOut.into())),
    }
}

/// The WebSocket subprotocol of a node-to-hub connection.
pub const HUB_SUBPROTOCOL: &str = "hub.bsc.bacnet.org";
/// The WebSocket subprotocol of a direct connection.
pub const DIRECT_SUBPROTOCOL: &str = "dc.bsc.bacnet.org";
