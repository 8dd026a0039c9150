//! The WebSocket plumbing hub links, hub connections and direct
//! connections share: connecting (TCP, TLS 1.3, the upgrade with a
//! BACnet/SC subprotocol), accepting (the upgrade only with the expected
//! subprotocol, said back), and carrying frames both ways.
//!
//! Must never: take or make a WebSocket without its BACnet/SC subprotocol.

use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, Uri};

/// A WebSocket we opened.
pub(crate) type ClientWs = WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>;

/// TCP, TLS 1.3 with our certificate, then the WebSocket upgrade with
/// `subprotocol` (refused if the peer does not agree to it).
pub(crate) async fn connect(
    uri: &str,
    tls: Arc<rustls::ClientConfig>,
    subprotocol: &'static str,
) -> Result<ClientWs, String> {
    let parsed: Uri = uri.parse().map_err(|e| format!("not a URI: {e}"))?;
    if parsed.scheme_str() != Some("wss") {
        return Err("BACnet/SC URIs are wss:// (TLS is never optional)".into());
    }
    let host = parsed.host().ok_or("no host")?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = parsed.port_u16().unwrap_or(443);
    let tcp = TcpStream::connect((host.as_str(), port)).await.map_err(|e| format!("TCP: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| format!("server name {host}: {e}"))?;
    let stream = TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
    let mut request = uri.into_client_request().map_err(|e| format!("request: {e}"))?;
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static(subprotocol));
    let (ws, response) = tokio_tungstenite::client_async_with_config(request, stream, Some(crate::ws_config()))
        .await
        .map_err(|e| format!("WebSocket upgrade: {e}"))?;
    let agreed = response.headers().get("Sec-WebSocket-Protocol").and_then(|v| v.to_str().ok());
    if agreed != Some(subprotocol) {
        return Err(format!("the peer did not agree to the {subprotocol} subprotocol ({agreed:?})"));
    }
    Ok(ws)
}

/// Take a WebSocket upgrade on `stream` only with `subprotocol`, and say
/// it back.
pub(crate) async fn accept<S>(
    stream: S,
    subprotocol: &'static str,
) -> Result<WebSocketStream<S>, tokio_tungstenite::tungstenite::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    #[allow(clippy::result_large_err)]
    let check = move |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        let offered = request
            .headers()
            .get_all("Sec-WebSocket-Protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|p| p.trim() == subprotocol);
        if !offered {
            let mut refusal = ErrorResponse::new(Some(format!("subprotocol {subprotocol} required")));
            *refusal.status_mut() = StatusCode::BAD_REQUEST;
            return Err(refusal);
        }
        response.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static(subprotocol));
        Ok(response)
    };
    tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(crate::ws_config())).await
}

/// How [`carry`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The peer closed, the connection failed or could not be written:
    /// the owner is to hear of it.
    Lost,
    /// Our side ended it (the queue closed, the node stopped, a frame
    /// refused): the WebSocket was closed, the owner knows.
    Ours,
}

/// Carry frames both ways: `outbound` written in bursts, each binary
/// message read handed to `on_frame` (false: stop), until either side ends
/// or `stopped` fires.
pub(crate) async fn carry<S>(
    ws: WebSocketStream<S>,
    outbound: &mut mpsc::Receiver<Vec<u8>>,
    stopped: &mut watch::Receiver<()>,
    mut on_frame: impl FnMut(&[u8]) -> bool,
) -> Ended
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut write, mut read) = ws.split();
    let ended = loop {
        tokio::select! {
            f = outbound.recv() => match f {
                Some(f) => if crate::write_burst(&mut write, f, outbound).await.is_err() { return Ended::Lost },
                None => break Ended::Ours,
            },
            m = read.next() => match m {
                Some(Ok(Message::Binary(d))) => if !on_frame(&d) { break Ended::Ours },
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                _ => return Ended::Lost,
            },
            _ = stopped.changed() => break Ended::Ours,
        }
    };
    let _ = tokio::time::timeout(crate::WRITE_LIMIT, write.close()).await;
    ended
}
