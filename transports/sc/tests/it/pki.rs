//! A test PKI: a CA, and certificates it signs for hubs (SAN localhost and
//! 127.0.0.1) and nodes.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use trellis_sc::tls::ScCredentials;

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        Ca { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    /// Credentials for `name`, signed by this CA, trusting `issuers`.
    pub fn issue(&self, name: &str, issuers: &[&Ca]) -> ScCredentials {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let trusted: String = issuers.iter().map(|ca| ca.issuer.pem()).collect();
        ScCredentials::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes(), trusted.as_bytes()).unwrap()
    }
}
