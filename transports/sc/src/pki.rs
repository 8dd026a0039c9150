//! A test PKI for BACnet/SC: a CA, and operational certificates it signs
//! for hubs and nodes — what `trellis sc certs` writes and the tests use.
//! EC P-256 keys (they work across rustls and OpenSSL-based peers).
//!
//! For trying BACnet/SC out and for tests only: a real site's CA lives
//! with its operator, not beside the gateway.
//!
//! Must never: write a private key readable by others.

use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, CertifiedIssuer, DnType, IsCa, KeyIdMethod,
    KeyPair, RevocationReason, RevokedCertParams, SanType, SerialNumber, date_time_ymd,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A certificate and its private key, PEM.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate.
    pub certificate: String,
    /// Its private key (PKCS#8).
    pub key: String,
    /// Its serial number (what a revocation list names).
    pub serial: Vec<u8>,
}

/// When a certificate is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From last year to the end of the year `years` from now.
    Years(u16),
    /// Expired long ago (for refusal tests).
    Expired,
}

/// A certificate authority.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// The next serial number: unique per CA (16 random octets from the
    /// CA's own key's identity, then a counter).
    next_serial: AtomicU64,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

fn this_year() -> i32 {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    1970 + (secs / 31_556_952) as i32
}

fn validity(params: &mut CertificateParams, v: Validity) {
    let (from, to) = match v {
        Validity::Years(n) => ((this_year() - 1, 1, 1), (this_year() + i32::from(n), 12, 31)),
        Validity::Expired => ((2000, 1, 1), (2001, 1, 1)),
    };
    params.not_before = date_time_ymd(from.0, from.1, from.2);
    params.not_after = date_time_ymd(to.0, to.1, to.2);
}

impl TestCa {
    /// A self-signed CA called `name`.
    pub fn new(name: &str) -> Result<TestCa, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        validity(&mut params, Validity::Years(10));
        Ok(TestCa {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate()?)?,
            next_serial: AtomicU64::new(1),
        })
    }

    /// The CA's certificate (what peers list as their issuer).
    pub fn certificate(&self) -> String {
        self.issuer.pem()
    }

    /// An operational certificate for `name`, for `hosts` (DNS names or IP
    /// addresses: the names a hub is reached by; nodes may have none).
    pub fn issue(&self, name: &str, hosts: &[&str], valid: Validity) -> Result<Issued, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        for h in hosts {
            params.subject_alt_names.push(match h.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*h).try_into()?),
            });
        }
        params.distinguished_name.push(DnType::CommonName, name);
        validity(&mut params, valid);
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed).to_be_bytes().to_vec();
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Issued { certificate: cert.pem(), key: key.serialize_pem(), serial })
    }

    /// A certificate revocation list (PEM) naming `revoked`, valid from
    /// last year to next year.
    pub fn revocation_list(&self, revoked: &[&Issued]) -> Result<String, rcgen::Error> {
        let year = this_year();
        let params = CertificateRevocationListParams {
            this_update: date_time_ymd(year - 1, 1, 1),
            next_update: date_time_ymd(year + 1, 12, 31),
            crl_number: SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: revoked
                .iter()
                .map(|i| RevokedCertParams {
                    serial_number: SerialNumber::from_slice(&i.serial),
                    revocation_time: date_time_ymd(year - 1, 6, 1),
                    reason_code: Some(RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: KeyIdMethod::Sha256,
        };
        params.signed_by(&self.issuer)?.pem()
    }
}

/// Write a test PKI into `dir`: `ca.pem`; `hub.pem`/`hub.key` for
/// `hub_hosts`; `node1.pem`/`node1.key` … for `nodes` nodes (naming the
/// same hosts, for direct connections); `crl.pem`, the
/// CA's revocation list naming the nodes in `revoked` (by number). Keys are
/// created mode 0600. Returns the files written.
pub fn write_test_pki(
    dir: &Path,
    hub_hosts: &[&str],
    nodes: u32,
    years: u16,
    revoked: &[u32],
) -> std::io::Result<Vec<PathBuf>> {
    let fail = |e: rcgen::Error| std::io::Error::other(e.to_string());
    std::fs::create_dir_all(dir)?;
    let ca = TestCa::new("Trellis test BACnet/SC CA").map_err(fail)?;
    let mut written = Vec::new();
    let mut write = |name: String, text: &str, secret: bool| -> std::io::Result<()> {
        let path = dir.join(name);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        if secret {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        std::io::Write::write_all(&mut options.open(&path)?, text.as_bytes())?;
        written.push(path);
        Ok(())
    };
    write("ca.pem".into(), &ca.certificate(), false)?;
    let hub = ca.issue("BACnet/SC hub", hub_hosts, Validity::Years(years)).map_err(fail)?;
    write("hub.pem".into(), &hub.certificate, false)?;
    write("hub.key".into(), &hub.key, true)?;
    let mut revoke = Vec::new();
    for n in 1..=nodes {
        // Node certificates name the hub's hosts too: a node there can take
        // direct connections.
        let node = ca.issue(&format!("BACnet/SC node {n}"), hub_hosts, Validity::Years(years)).map_err(fail)?;
        write(format!("node{n}.pem"), &node.certificate, false)?;
        write(format!("node{n}.key"), &node.key, true)?;
        if revoked.contains(&n) {
            revoke.push(node);
        }
    }
    let crl = ca.revocation_list(&revoke.iter().collect::<Vec<_>>()).map_err(fail)?;
    write("crl.pem".into(), &crl, false)?;
    Ok(written)
}
