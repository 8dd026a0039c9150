//! The tests' PKI: the crate's own test CA, as credentials.

use trellis_sc::pki::{Issued, TestCa, Validity};
use trellis_sc::tls::ScCredentials;

/// A certificate authority.
pub struct Ca(TestCa);

impl Ca {
    pub fn new(name: &str) -> Ca {
        Ca(TestCa::new(name).unwrap())
    }

    /// Credentials for `name` (valid for localhost and 127.0.0.1), signed
    /// by this CA, trusting `issuers`.
    pub fn issue(&self, name: &str, issuers: &[&Ca]) -> ScCredentials {
        self.issue_with(name, issuers, Validity::Years(1))
    }

    pub fn issue_with(&self, name: &str, issuers: &[&Ca], valid: Validity) -> ScCredentials {
        self.issue_revocable(name, issuers, valid).0
    }

    /// [`Ca::issue_with`], and the certificate (to revoke).
    pub fn issue_revocable(&self, name: &str, issuers: &[&Ca], valid: Validity) -> (ScCredentials, Issued) {
        let issued = self.0.issue(name, &["localhost", "127.0.0.1"], valid).unwrap();
        let trusted: String = issuers.iter().map(|ca| ca.0.certificate()).collect();
        let creds =
            ScCredentials::from_pem(issued.certificate.as_bytes(), issued.key.as_bytes(), trusted.as_bytes()).unwrap();
        (creds, issued)
    }

    /// This CA's revocation list naming `revoked`, written to `file`.
    pub fn revoke(&self, revoked: &[&Issued], file: &std::path::Path) {
        std::fs::write(file, self.0.revocation_list(revoked).unwrap()).unwrap();
    }
}
