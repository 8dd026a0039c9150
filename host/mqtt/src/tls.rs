//! TLS to the broker (rustls with the ring provider): the broker's
//! certificate checked against the configured issuers (never the system's
//! roots unless they are the ones named), optionally our client
//! certificate.
//!
//! Must never: connect without checking the broker's certificate.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The TLS configuration for a broker whose certificate chains to the
/// issuers in `ca` (PEM); with `client`, our certificate and key (PEM) too.
pub fn client_config(ca: &Path, client: Option<(&Path, &Path)>) -> Result<Arc<rustls::ClientConfig>, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let issuers = CertificateDer::pem_slice_iter(&read(ca)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", ca.display()))?;
    if issuers.is_empty() {
        return Err(format!("{}: no CERTIFICATE in it", ca.display()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for c in issuers {
        roots.add(c).map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(&read(cert)?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|e| format!("{}: {e}", key.display()))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| e.to_string())?
        }
    };
    Ok(Arc::new(config))
}
