//! The read load of `opcua`: one OPC UA client process (async-opcua's
//! client, native code), one session, `outstanding` Read requests in flight
//! at all times, each reading one Int32/Float value, round-robin over the
//! nodes (the shape of the o6 benchmark). Every server in a run is measured
//! with this same client.
//!
//! Must never: count a read whose answer is not Good.

use opcua::client::{ClientBuilder, IdentityToken};
use opcua::types::{MessageSecurityMode, NodeId, ReadValueId, TimestampsToReturn};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use trellis_opcua::opcua;

/// What one client process did.
#[derive(Debug, Clone, Copy)]
pub struct LoadResult {
    /// Good reads answered in the window.
    pub reads: u64,
    /// Reads answered with a Bad status or failed.
    pub errors: u64,
    /// The window.
    pub seconds: f64,
}

/// Connect to `url` (SecurityPolicy None, anonymous) and read for `seconds`.
pub async fn run(url: &str, nodes: &[String], seconds: f64, outstanding: usize) -> anyhow::Result<LoadResult> {
    let nodes: Vec<NodeId> = nodes
        .iter()
        .map(|n| NodeId::from_str(n).map_err(|_| anyhow::anyhow!("{n:?} is not a NodeId")))
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(!nodes.is_empty(), "no node to read");
    let pki = std::env::temp_dir().join(format!("trellis-opcua-load-{}", std::process::id()));
    let mut client = ClientBuilder::new()
        .application_name("trellis opcua load")
        .application_uri("urn:trellis:bench:load")
        .pki_dir(&pki)
        .create_sample_keypair(false)
        .trust_server_certs(true)
        .session_retry_limit(0)
        .client()
        .map_err(|e| anyhow::anyhow!("{}", e.join("; ")))?;
    let (session, event_loop) = client
        .connect_to_matching_endpoint(
            (url, "http://opcfoundation.org/UA/SecurityPolicy#None", MessageSecurityMode::None),
            IdentityToken::Anonymous,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
    let handle = event_loop.spawn();
    anyhow::ensure!(session.wait_for_connection().await, "{url}: no session");
    // Warm up: every node once.
    for n in &nodes {
        session.read(&[ReadValueId::new_value(n.clone())], TimestampsToReturn::Neither, 0.0).await?;
    }
    let (reads, errors) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let nodes = Arc::new(nodes);
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for k in 0..outstanding {
        let (session, nodes, reads, errors) = (session.clone(), nodes.clone(), reads.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = k;
            while Instant::now() < until {
                let id = ReadValueId::new_value(nodes[i % nodes.len()].clone());
                i += outstanding;
                match session.read(&[id], TimestampsToReturn::Neither, 0.0).await {
                    Ok(v) if v.first().is_some_and(|d| d.status.is_none_or(|s| s.is_good()) && d.value.is_some()) => {
                        reads.fetch_add(1, Ordering::Relaxed)
                    }
                    _ => errors.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let _ = session.disconnect().await;
    handle.abort();
    let _ = std::fs::remove_dir_all(&pki);
    Ok(LoadResult { reads: reads.load(Ordering::Relaxed), errors: errors.load(Ordering::Relaxed), seconds })
}
