//! A node's identity on BACnet/SC (Annex AB.1.5): its VMAC and its device
//! UUID, from the configuration or made here.
//!
//! - VMAC: Random-48 (Clause H.7.3) from the system's secure random
//!   source, chosen afresh at each start and again when a hub says it is
//!   taken.
//! - Device UUID: configured, or derived (SHA-256, name-based) from the
//!   device instance and the port's operational certificate, so that it is
//!   the same at every start without a file to keep; renewing the
//!   certificate changes it, so an installation that must keep it across a
//!   renewal configures it.
//!
//! Must never: hand out the broadcast VMAC or the all-zero one.

use bacnet::bvlc_sc::ScVmac;
use ring::rand::SecureRandom;

/// A Random-48 VMAC: random octets, the first's low nibble 0x2 (locally
/// administered, unicast).
pub fn random_vmac() -> ScVmac {
    let mut b = [0u8; 6];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No system random source: fall back on the std hasher's keys.
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
        b.copy_from_slice(&h.finish().to_be_bytes()[..6]);
    }
    b[0] = (b[0] & 0xF0) | 0x02;
    b
}

/// The device UUID derived from the device instance and the operational
/// certificate (DER): the first 16 octets of a SHA-256, marked as an
/// RFC 9562 version-8 (vendor-specific) UUID.
pub fn derived_uuid(instance: u32, certificate_der: &[u8]) -> [u8; 16] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"Trellis BACnet/SC device UUID\0");
    ctx.update(&instance.to_be_bytes());
    ctx.update(certificate_der);
    let digest = ctx.finish();
    let mut u = [0u8; 16];
    u.copy_from_slice(&digest.as_ref()[..16]);
    u[6] = (u[6] & 0x0F) | 0x80;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// A UUID as `8-4-4-4-12` hex digits (or the 32 digits alone).
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let digits: String = text.chars().filter(|c| *c != '-').collect();
    parse_hex(&digits)?.try_into().ok()
}

/// A VMAC as 12 hex digits; neither the broadcast nor the all-zero VMAC.
pub fn parse_vmac(text: &str) -> Option<ScVmac> {
    let v: ScVmac = parse_hex(text)?.try_into().ok()?;
    (v != [0; 6] && v != bacnet::bvlc_sc::BROADCAST_VMAC).then_some(v)
}

/// The canonical `8-4-4-4-12` form.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let h = hex(u);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Octets as lower-case hex.
pub fn hex(octets: &[u8]) -> String {
    octets.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_vmacs_are_random_48() {
        let a = random_vmac();
        assert_eq!(a[0] & 0x0F, 0x02);
        assert_ne!(a, random_vmac());
    }

    #[test]
    fn the_derived_uuid_is_stable_and_names_its_inputs() {
        let u = derived_uuid(1001, b"certificate");
        assert_eq!(u, derived_uuid(1001, b"certificate"));
        assert_ne!(u, derived_uuid(1002, b"certificate"));
        assert_ne!(u, derived_uuid(1001, b"renewed certificate"));
        assert_eq!(u[6] >> 4, 8, "version 8");
        assert_eq!(parse_uuid(&format_uuid(&u)), Some(u));
    }

    #[test]
    fn vmacs_and_uuids_parse_strictly() {
        assert_eq!(parse_vmac("02a1b2c3d4e5"), Some([2, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5]));
        for bad in ["", "02a1b2c3d4", "ffffffffffff", "000000000000", "02a1b2c3d4é5", "zz0000000000"] {
            assert_eq!(parse_vmac(bad), None, "{bad}");
        }
        assert!(parse_uuid("5452454c-4c49-5300-0000-000000000001").is_some());
        assert!(parse_uuid("5452454c-4c49-5300-0000-0000000001").is_none());
    }
}
