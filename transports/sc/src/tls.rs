//! TLS for BACnet/SC (Annex AB.7.4): TLS 1.3 only, mutual authentication,
//! each side's operational certificate checked against the issuer (CA)
//! certificates configured for the port — never the system's roots — and,
//! where revocation lists are configured, against them (expiry always).
//!
//! Must never: accept TLS 1.2 or older, accept a peer without a
//! certificate, or trust anything but the configured issuers.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::path::Path;
use std::sync::Arc;

/// A port's credentials: its operational certificate (and chain), its
/// private key, and the issuers its peers' certificates must chain to.
#[derive(Debug)]
pub struct ScCredentials {
    /// The operational certificate first, then any intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// Its private key.
    pub key: PrivateKeyDer<'static>,
    /// The issuer certificates peers are checked against.
    pub issuers: Vec<CertificateDer<'static>>,
    /// Revocation lists: a peer certificate one names is refused. With
    /// none, revocation is not checked.
    pub revocation_lists: Vec<CertificateRevocationListDer<'static>>,
}

/// A credential or TLS set-up problem, naming the file or the reason.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or held nothing usable.
    #[error("{file}: {reason}")]
    Pem {
        /// The file.
        file: String,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the configuration (a key that does not match, …).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The issuers are unusable for verifying peers.
    #[error("issuer certificates: {0}")]
    Verifier(String),
}

impl ScCredentials {
    /// Read the certificate chain, key and issuers from PEM files.
    pub fn from_pem_files(chain: &Path, key: &Path, issuers: &Path) -> Result<ScCredentials, TlsError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| TlsError::Pem { file: p.display().to_string(), reason: e.to_string() })
        };
        ScCredentials::from_pem(&read(chain)?, &read(key)?, &read(issuers)?).map_err(|e| match e {
            TlsError::Pem { file, reason } => {
                let path = match file.as_str() {
                    "certificate" => chain,
                    "key" => key,
                    _ => issuers,
                };
                TlsError::Pem { file: format!("{} ({file})", path.display()), reason }
            }
            other => other,
        })
    }

    /// The same from PEM text in memory.
    pub fn from_pem(chain: &[u8], key: &[u8], issuers: &[u8]) -> Result<ScCredentials, TlsError> {
        let certs = |what: &str, pem: &[u8]| -> Result<Vec<CertificateDer<'static>>, TlsError> {
            let v = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsError::Pem { file: what.into(), reason: e.to_string() })?;
            if v.is_empty() {
                return Err(TlsError::Pem { file: what.into(), reason: "no CERTIFICATE in it".into() });
            }
            Ok(v)
        };
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| TlsError::Pem { file: "key".into(), reason: format!("no private key: {e}") })?;
        Ok(ScCredentials {
            chain: certs("certificate", chain)?,
            key,
            issuers: certs("issuers", issuers)?,
            revocation_lists: Vec::new(),
        })
    }

    /// Check peers against the revocation lists in `pem` (one or more X509
    /// CRL blocks) too.
    pub fn with_revocation_lists(mut self, file: &Path) -> Result<ScCredentials, TlsError> {
        let pem = std::fs::read(file)
            .map_err(|e| TlsError::Pem { file: file.display().to_string(), reason: e.to_string() })?;
        let lists = CertificateRevocationListDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem { file: file.display().to_string(), reason: e.to_string() })?;
        if lists.is_empty() {
            return Err(TlsError::Pem { file: file.display().to_string(), reason: "no X509 CRL in it".into() });
        }
        self.revocation_lists.extend(lists);
        Ok(self)
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, TlsError> {
        let mut roots = RootCertStore::empty();
        for c in &self.issuers {
            roots.add(c.clone()).map_err(|e| TlsError::Verifier(e.to_string()))?;
        }
        Ok(Arc::new(roots))
    }

    /// The accepting side's (a hub's, a direct-connect listener's) TLS:
    /// TLS 1.3, a client certificate from the issuers required.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = provider();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(self.roots()?, provider.clone())
            .with_crls(self.revocation_lists.iter().cloned())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
        let mut c = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        c.alpn_protocols.clear();
        c.key_log = key_log();
        Ok(Arc::new(c))
    }

    /// The initiating side's TLS: TLS 1.3, the hub's certificate checked
    /// against the issuers (and revocation lists) and the URI's host, ours
    /// presented.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let provider = provider();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(self.roots()?, provider.clone())
            .with_crls(self.revocation_lists.iter().cloned())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
        let mut c = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_webpki_verifier(verifier)
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())?;
        c.key_log = key_log();
        Ok(Arc::new(c))
    }
}

/// Where TLS secrets are written for a protocol analyser, if anywhere: the
/// file `SSLKEYLOGFILE` names (the convention of browsers, curl and
/// rustls), so that tshark can dissect a capture of our BACnet/SC traffic.
/// Whoever holds the file can decrypt the sessions: never set it on a
/// gateway in service.
pub fn key_log_file() -> Option<std::path::PathBuf> {
    std::env::var_os("SSLKEYLOGFILE").filter(|v| !v.is_empty()).map(Into::into)
}

fn key_log() -> Arc<dyn rustls::KeyLog> {
    match key_log_file() {
        Some(file) => {
            tracing::warn!(file = %file.display(), "SSLKEYLOGFILE is set: BACnet/SC TLS secrets are written to it");
            Arc::new(rustls::KeyLogFile::new())
        }
        None => Arc::new(rustls::NoKeyLog),
    }
}

/// rustls with the `ring` provider (one crypto library in the tree).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
