//! Detached plugin signatures: the `NAME.wasm.sig` format, signing and
//! verification with ed25519 (RFC 8032, checked with `verify_strict`).
//!
//! # The signature file (format v1)
//!
//! A `.sig` file is UTF-8 text of exactly five lines, each ended by `\n`,
//! hex in lowercase:
//!
//! ```text
//! trellis-plugin-signature-v1
//! component-sha256: <64 hex: SHA-256 of the .wasm file's bytes>
//! manifest-sha256: <64 hex: SHA-256 of the .manifest.toml file's bytes>
//! key: <64 hex: the signer's ed25519 public key>
//! signature: <128 hex: ed25519 signature>
//! ```
//!
//! The **signed document** is the first four lines, byte for byte, including
//! their `\n` endings (everything before `signature: `). So one signature
//! binds the component, the manifest of capabilities it asks for and the key
//! that signed them: neither file can be swapped for another, and the header
//! line keeps these signatures from being mistaken for any other kind. The
//! parser accepts only the canonical spelling (no `\r`, no extra spaces or
//! lines, no uppercase hex), so exactly one byte string is ever verified.
//!
//! Keys: a secret key file holds the raw 32-byte ed25519 seed (mode 0600);
//! a public key is written and configured as 64 hex digits.
//!
//! This module must never accept a signature that `verify_strict` rejects,
//! and never decide trust: that is [`super::policy`]'s job.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// First line of a v1 signature file (domain separation and version).
pub const HEADER: &str = "trellis-plugin-signature-v1";

/// Length of an ed25519 secret key (seed) file.
pub const SECRET_KEY_LEN: usize = 32;

/// A parsed (or freshly made) signature file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureFile {
    /// SHA-256 of the component.
    pub component_sha256: [u8; 32],
    /// SHA-256 of the manifest.
    pub manifest_sha256: [u8; 32],
    /// The signer's public key.
    pub key: [u8; 32],
    /// The ed25519 signature over [`SignatureFile::signed_document`].
    pub signature: [u8; 64],
}

/// Why a signature does not hold (its trust is decided elsewhere).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The file is not a v1 signature file.
    #[error("signature file is malformed: {0}")]
    Malformed(String),
    /// The signature does not verify under the key it names.
    #[error("signature is not valid for the key it names (the .sig file was altered?)")]
    Invalid,
    /// The component's hash is not the signed one.
    #[error("signature does not match the component (tampered?)")]
    ComponentMismatch,
    /// The manifest's hash is not the signed one.
    #[error("signature does not match the manifest (tampered?)")]
    ManifestMismatch,
}

impl SignatureFile {
    /// Sign `component` and `manifest` with the secret key `seed`.
    pub fn sign(seed: &[u8; SECRET_KEY_LEN], component: &[u8], manifest: &[u8]) -> SignatureFile {
        let key = SigningKey::from_bytes(seed);
        let mut file = SignatureFile {
            component_sha256: sha256(component),
            manifest_sha256: sha256(manifest),
            key: key.verifying_key().to_bytes(),
            signature: [0; 64],
        };
        file.signature = key.sign(file.signed_document().as_bytes()).to_bytes();
        file
    }

    /// The bytes the signature covers: the file's first four lines.
    pub fn signed_document(&self) -> String {
        format!(
            "{HEADER}\ncomponent-sha256: {}\nmanifest-sha256: {}\nkey: {}\n",
            hex(&self.component_sha256),
            hex(&self.manifest_sha256),
            hex(&self.key)
        )
    }

    /// The whole file.
    pub fn render(&self) -> String {
        format!("{}signature: {}\n", self.signed_document(), hex(&self.signature))
    }

    /// Parse a signature file (canonical spelling only).
    pub fn parse(bytes: &[u8]) -> Result<SignatureFile, SignatureError> {
        let bad = |m: &str| SignatureError::Malformed(m.to_string());
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text"))?;
        let body = text.strip_suffix('\n').ok_or_else(|| bad("the last line does not end with a newline"))?;
        let lines: Vec<&str> = body.split('\n').collect();
        if lines.first() != Some(&HEADER) {
            return Err(bad(&format!("the first line is not `{HEADER}`")));
        }
        if lines.len() != 5 {
            return Err(bad(&format!("{} lines, expected 5", lines.len())));
        }
        fn field<const N: usize>(line: &str, name: &str) -> Result<[u8; N], SignatureError> {
            line.strip_prefix(name).and_then(|v| v.strip_prefix(": ")).and_then(unhex::<N>).ok_or_else(|| {
                SignatureError::Malformed(format!("expected `{name}: <{} lowercase hex digits>`", 2 * N))
            })
        }
        Ok(SignatureFile {
            component_sha256: field(lines[1], "component-sha256")?,
            manifest_sha256: field(lines[2], "manifest-sha256")?,
            key: field(lines[3], "key")?,
            signature: field(lines[4], "signature")?,
        })
    }

    /// Check that the signature verifies under the key it names and covers
    /// exactly `component` and `manifest`. Says nothing about whether that
    /// key is trusted.
    pub fn verify(&self, component: &[u8], manifest: &[u8]) -> Result<(), SignatureError> {
        let key = VerifyingKey::from_bytes(&self.key).map_err(|_| SignatureError::Invalid)?;
        key.verify_strict(self.signed_document().as_bytes(), &Signature::from_bytes(&self.signature))
            .map_err(|_| SignatureError::Invalid)?;
        if sha256(component) != self.component_sha256 {
            return Err(SignatureError::ComponentMismatch);
        }
        if sha256(manifest) != self.manifest_sha256 {
            return Err(SignatureError::ManifestMismatch);
        }
        Ok(())
    }
}

/// A new secret key (seed) from the operating system's random source.
pub fn generate_secret_key() -> std::io::Result<[u8; SECRET_KEY_LEN]> {
    let mut seed = [0u8; SECRET_KEY_LEN];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(format!("no OS randomness: {e}")))?;
    Ok(seed)
}

/// The public key of a secret key.
pub fn public_key(seed: &[u8; SECRET_KEY_LEN]) -> [u8; 32] {
    SigningKey::from_bytes(seed).verifying_key().to_bytes()
}

/// Parse a public key written as 64 hex digits (either case, surrounding
/// whitespace ignored); refuses points that are not valid ed25519 keys.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], String> {
    let text = text.trim();
    let bytes = unhex::<32>(&text.to_ascii_lowercase())
        .ok_or_else(|| format!("`{}` is not an ed25519 public key (64 hex digits)", short(text)))?;
    let key =
        VerifyingKey::from_bytes(&bytes).map_err(|_| format!("`{}` is not a valid ed25519 point", short(text)))?;
    if key.is_weak() {
        return Err(format!("`{}` is a weak ed25519 key", short(text)));
    }
    Ok(bytes)
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The first 16 hex digits of a key, for messages.
pub fn key_prefix(key: &[u8; 32]) -> String {
    hex(&key[..8])
}

fn short(text: &str) -> String {
    let mut s: String = text.chars().take(20).collect();
    if text.chars().count() > 20 {
        s.push('…');
    }
    s
}

/// Exactly `2 * N` lowercase hex digits.
fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 32] = [7; 32];

    #[test]
    fn rfc8032_test_vector_1() {
        // RFC 8032 §7.1, TEST 1: the empty message.
        let seed = unhex::<32>("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").unwrap();
        assert_eq!(hex(&public_key(&seed)), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let sig = SigningKey::from_bytes(&seed).sign(b"").to_bytes();
        assert_eq!(
            hex(&sig),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
    }

    #[test]
    fn render_parse_verify_round_trip() {
        let s = SignatureFile::sign(&SEED, b"component", b"manifest");
        let text = s.render();
        assert!(text.starts_with("trellis-plugin-signature-v1\ncomponent-sha256: "), "{text}");
        assert_eq!(text.lines().count(), 5);
        let parsed = SignatureFile::parse(text.as_bytes()).unwrap();
        assert_eq!(parsed, s);
        assert_eq!(parsed.key, public_key(&SEED));
        parsed.verify(b"component", b"manifest").unwrap();
        assert_eq!(parsed.verify(b"Component", b"manifest"), Err(SignatureError::ComponentMismatch));
        assert_eq!(parsed.verify(b"component", b"manifest2"), Err(SignatureError::ManifestMismatch));
    }

    #[test]
    fn any_edit_to_the_signed_lines_breaks_the_signature() {
        let s = SignatureFile::sign(&SEED, b"component", b"manifest");
        let mut forged = s.clone();
        forged.component_sha256 = sha256(b"evil");
        assert_eq!(forged.verify(b"evil", b"manifest"), Err(SignatureError::Invalid));
        let mut forged = s.clone();
        forged.key = public_key(&[8; 32]);
        assert_eq!(forged.verify(b"component", b"manifest"), Err(SignatureError::Invalid));
    }

    #[test]
    fn only_the_canonical_spelling_parses() {
        let text = SignatureFile::sign(&SEED, b"c", b"m").render();
        for bad in [
            text.replace('\n', "\r\n"),
            text.trim_end().to_string(),
            text.replace("key: ", "key:  "),
            text.to_uppercase(),
            format!("{text}\n"),
            text.replacen("v1", "v2", 1),
        ] {
            assert!(
                matches!(SignatureFile::parse(bad.as_bytes()), Err(SignatureError::Malformed(_))),
                "accepted {bad:?}"
            );
        }
    }

    #[test]
    fn public_keys_parse_from_hex() {
        let hexkey = hex(&public_key(&SEED));
        assert_eq!(parse_public_key(&format!(" {} \n", hexkey.to_uppercase())).unwrap(), public_key(&SEED));
        assert!(parse_public_key("abcd").is_err());
        assert!(parse_public_key(&"zz".repeat(32)).is_err());
        // The identity point is a weak key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(parse_public_key(&hex(&identity)).unwrap_err().contains("weak"));
    }
}
