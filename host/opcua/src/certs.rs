//! The server's application instance certificate and its store:
//!
//! ```text
//! <pki>/own/cert.der         the certificate (self-signed, RSA 2048, SHA-256)
//! <pki>/private/private.pem  its key
//! <pki>/trusted/             client certificates the operator trusts
//! <pki>/rejected/            client certificates that were refused (move one to trusted/ to trust it)
//! ```
//!
//! (async-opcua's layout.) `trellis opcua certs` makes the certificate;
//! the server makes one at its first start if there is none.
//!
//! Must never: overwrite a certificate or key that exists unless told to,
//! or leave the key readable by anyone but its owner.

use opcua::crypto::{CertificateStore, X509Data};
use opcua::types::{ApplicationDescription, ApplicationType, LocalizedText, UAString};
use std::path::{Path, PathBuf};

/// What the certificate names.
#[derive(Debug, Clone)]
pub struct CertificateRequest {
    /// The application URI (the certificate's first subject alternative name).
    pub application_uri: String,
    /// The application name (the subject's CN and O).
    pub application_name: String,
    /// Host names and IP addresses the certificate is valid for.
    pub hosts: Vec<String>,
    /// Days of validity from now.
    pub days: u32,
}

/// The certificate's path in a store.
pub fn certificate_path(pki: &Path) -> PathBuf {
    CertificateStore::new(pki).own_certificate_path()
}

/// Make the store's folders and a self-signed certificate with its key;
/// `overwrite` replaces an existing pair. Returns the certificate's path.
pub fn create(pki: &Path, request: &CertificateRequest, overwrite: bool) -> Result<PathBuf, String> {
    let store = CertificateStore::new(pki);
    store.ensure_pki_path().map_err(|e| format!("{}: {e}", pki.display()))?;
    let cert = store.own_certificate_path();
    if cert.exists() && !overwrite {
        return Err(format!("{} exists (pass --force to replace it)", cert.display()));
    }
    let description = ApplicationDescription {
        application_uri: UAString::from(request.application_uri.as_str()),
        application_name: LocalizedText::new("", &request.application_name),
        application_type: ApplicationType::Server,
        ..Default::default()
    };
    let mut data = X509Data::from((description, Some(request.hosts.clone())));
    data.certificate_duration_days = request.days;
    data.key_size = 2048;
    store
        .create_and_store_application_instance_cert(&data, overwrite)
        .map_err(|e| format!("{}: {e}", pki.display()))?;
    keep_private(&store.own_private_key_path())?;
    Ok(cert)
}

/// The key readable by its owner only, and its folder too.
pub fn keep_private(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let set = |p: &Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(|e| format!("{}: {e}", p.display()))
    };
    set(key, 0o600)?;
    key.parent().map_or(Ok(()), |dir| set(dir, 0o700))
}

/// Make the certificate if the store has none; `Some(path)` if one was made.
pub fn ensure(pki: &Path, request: &CertificateRequest) -> Result<Option<PathBuf>, String> {
    if certificate_path(pki).exists() {
        // Folders may be missing (a copied certificate): make them.
        CertificateStore::new(pki).ensure_pki_path().map_err(|e| format!("{}: {e}", pki.display()))?;
        return Ok(None);
    }
    create(pki, request, false).map(Some)
}
