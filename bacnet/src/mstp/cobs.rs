//! Consistent Overhead Byte Stuffing for the extended MS/TP frames
//! (Clause 9 with Addendum 135-2012an; the procedures are the standard's
//! informative Annex T, also in RFC 8163).
//!
//! COBS rewrites data so that no zero octet remains: each block is a code
//! octet `n` (1..=255) followed by `n - 1` non-zero octets, and an implicit
//! zero follows every block shorter than 255 except the last. MS/TP then
//! XORs every encoded octet with `0x55`, so the encoded stream carries no
//! `0x55` and a receiver never mistakes data for a preamble.
//!
//! An extended frame's data field is the Encoded Data (the client data,
//! COBS-encoded) followed by the Encoded CRC-32K (the CRC-32K of the Encoded
//! Data, complemented, four octets low first, COBS-encoded: always five
//! octets). The frame's Length field is the length of both *minus two*, so
//! that a station that knows only the original frames, reading Length octets
//! of data and two of CRC, skips the whole field.
//!
//! Decoding here is strict: it accepts exactly what [`encode`] produces (no
//! zero octet inside a block, no empty final block after a 254-octet block),
//! so decoding then encoding gives back the same octets.

use super::crc::{CRC32K_INITIAL, CRC32K_RESIDUE, crc32k, crc32k_register};

/// Every encoded octet is XORed with this (the first preamble octet).
pub const MASK: u8 = 0x55;
/// Octets of the Encoded CRC-32K field.
pub const ENCODED_CRC_LEN: usize = 5;

/// Why an encoded field did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CobsError {
    /// A code octet of zero, a zero octet inside a block, a block running
    /// past the end, or an empty final block after a 254-octet one.
    Malformed,
    /// The output does not fit the buffer given.
    BufferTooSmall,
    /// The data field is shorter than the Encoded CRC-32K plus one block.
    TooShort,
    /// The Encoded CRC-32K does not check.
    BadCrc,
}

impl core::fmt::Display for CobsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CobsError::Malformed => "malformed COBS encoding",
            CobsError::BufferTooSmall => "COBS output does not fit the buffer",
            CobsError::TooShort => "extended frame data field too short",
            CobsError::BadCrc => "extended frame CRC-32K does not check",
        })
    }
}

impl core::error::Error for CobsError {}

/// Octets [`encode`] writes for `data`.
pub fn encoded_len(data: &[u8]) -> usize {
    // The encoder's own walk, counting instead of writing: one code octet
    // per block, a block ending at each zero and after 254 non-zero octets,
    // and no final empty block right after a 254-octet one.
    let mut len = 1;
    let mut code = 1u8;
    let mut last_full = false;
    for &b in data {
        if b != 0 {
            len += 1;
            code += 1;
            if code != 255 {
                continue;
            }
        }
        last_full = code == 255;
        len += 1;
        code = 1;
    }
    if last_full && code == 1 { len - 1 } else { len }
}

/// COBS-encode `data` into `out`, XOR [`MASK`]; returns the octets written
/// ([`encoded_len`]).
pub fn encode(data: &[u8], out: &mut [u8]) -> Result<usize, CobsError> {
    let need = encoded_len(data);
    if out.len() < need {
        return Err(CobsError::BufferTooSmall);
    }
    let mut code_at = 0;
    let mut write = 1;
    let mut code: u8 = 1;
    let mut last_full = false;
    for &b in data {
        if b != 0 {
            out[write] = b ^ MASK;
            write += 1;
            code += 1;
            if code != 255 {
                continue;
            }
        }
        last_full = code == 255;
        out[code_at] = code ^ MASK;
        code_at = write;
        write += 1;
        code = 1;
    }
    if last_full && code == 1 {
        // Exactly 254 non-zero octets ended the data: the block already
        // written needs no empty one after it.
        write -= 1;
    } else {
        out[code_at] = code ^ MASK;
    }
    debug_assert_eq!(write, need);
    Ok(write)
}

/// Decode a COBS stream (XOR [`MASK`]) into `out`; returns the octets
/// written. Strict: see the module documentation.
pub fn decode(encoded: &[u8], out: &mut [u8]) -> Result<usize, CobsError> {
    let mut read = 0;
    let mut write = 0;
    let mut previous_full = false;
    if encoded.is_empty() {
        return Err(CobsError::Malformed);
    }
    while read < encoded.len() {
        let code = encoded[read] ^ MASK;
        read += 1;
        if code == 0 {
            return Err(CobsError::Malformed);
        }
        let n = usize::from(code) - 1;
        let block = encoded.get(read..read + n).ok_or(CobsError::Malformed)?;
        read += n;
        let at_end = read == encoded.len();
        if at_end && n == 0 && previous_full {
            return Err(CobsError::Malformed);
        }
        let zero_after = code != 255 && !at_end;
        let dest = out.get_mut(write..write + n + usize::from(zero_after)).ok_or(CobsError::BufferTooSmall)?;
        for (d, &e) in dest.iter_mut().zip(block) {
            *d = e ^ MASK;
            if *d == 0 {
                return Err(CobsError::Malformed);
            }
        }
        if zero_after {
            dest[n] = 0;
        }
        write += dest.len();
        previous_full = code == 255;
    }
    Ok(write)
}

/// Octets of an extended frame's data field (Encoded Data and Encoded
/// CRC-32K) for `data`. The frame's Length field is this minus two.
pub fn frame_data_len(data: &[u8]) -> usize {
    encoded_len(data) + ENCODED_CRC_LEN
}

/// Write an extended frame's data field for `data` into `out`: the Encoded
/// Data, then the Encoded CRC-32K. Returns the octets written
/// ([`frame_data_len`]).
pub fn encode_frame_data(data: &[u8], out: &mut [u8]) -> Result<usize, CobsError> {
    let n = encode(data, out)?;
    let crc = crc32k(&out[..n]);
    let m = encode(&crc, out.get_mut(n..).ok_or(CobsError::BufferTooSmall)?)?;
    debug_assert_eq!(m, ENCODED_CRC_LEN);
    Ok(n + m)
}

/// Check and decode an extended frame's data field (Length + 2 octets) into
/// `out`; returns the client data's length.
pub fn decode_frame_data(field: &[u8], out: &mut [u8]) -> Result<usize, CobsError> {
    if field.len() < ENCODED_CRC_LEN + 2 {
        return Err(CobsError::TooShort);
    }
    let (encoded, encoded_crc) = field.split_at(field.len() - ENCODED_CRC_LEN);
    let mut crc = [0u8; 4];
    match decode(encoded_crc, &mut crc) {
        Ok(4) => {}
        Ok(_) | Err(CobsError::BufferTooSmall) => return Err(CobsError::Malformed),
        Err(e) => return Err(e),
    }
    if crc32k_register(crc32k_register(CRC32K_INITIAL, encoded), &crc) != CRC32K_RESIDUE {
        return Err(CobsError::BadCrc);
    }
    decode(encoded, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn enc(data: &[u8]) -> Vec<u8> {
        let mut out = vec![0; encoded_len(data)];
        assert_eq!(encode(data, &mut out), Ok(out.len()));
        out
    }

    fn dec(encoded: &[u8]) -> Result<Vec<u8>, CobsError> {
        let mut out = vec![0; encoded.len()];
        let n = decode(encoded, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    fn unmasked(octets: &[u8]) -> Vec<u8> {
        octets.iter().map(|b| b ^ MASK).collect()
    }

    #[test]
    fn annex_t_hello_world_encodes_as_printed() {
        let data = b"Hello World\n\0";
        let encoded = enc(data);
        assert_eq!(
            unmasked(&encoded),
            [0x0D, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x20, 0x57, 0x6F, 0x72, 0x6C, 0x64, 0x0A, 0x01]
        );
        assert_eq!(encoded, [0x58, 0x1D, 0x30, 0x39, 0x39, 0x3A, 0x75, 0x02, 0x3A, 0x27, 0x39, 0x31, 0x5F, 0x54]);
        assert_eq!(dec(&encoded).unwrap(), data);
    }

    #[test]
    fn block_boundaries_round_trip() {
        for len in [0usize, 1, 2, 253, 254, 255, 256, 507, 508, 509, 1497] {
            for zero_every in [0usize, 1, 2, 254, 255, 300] {
                let data: Vec<u8> = (0..len)
                    .map(|i| if zero_every > 0 && i % zero_every == zero_every - 1 { 0 } else { (i % 250 + 1) as u8 })
                    .collect();
                let encoded = enc(&data);
                assert!(!encoded.contains(&MASK), "len {len} zero_every {zero_every}");
                assert_eq!(dec(&encoded).unwrap(), data, "len {len} zero_every {zero_every}");
            }
        }
    }

    #[test]
    fn non_canonical_encodings_are_refused() {
        // 254 non-zero octets then an empty final block.
        let mut e = vec![0xFF];
        e.extend([1u8; 254]);
        e.push(0x01);
        assert_eq!(dec(&unmasked(&e)), Err(CobsError::Malformed));
        // A zero inside a block, a zero code, a block past the end.
        assert_eq!(dec(&unmasked(&[0x03, 0x01, 0x00])), Err(CobsError::Malformed));
        assert_eq!(dec(&unmasked(&[0x00])), Err(CobsError::Malformed));
        assert_eq!(dec(&unmasked(&[0x04, 0x01])), Err(CobsError::Malformed));
    }

    #[test]
    fn every_short_stream_that_decodes_re_encodes_to_itself() {
        // Exhaustive over 1- and 2-octet streams, and 3-octet ones from a
        // small alphabet: decoding is the inverse of encoding.
        let alphabet = [0x00u8, 0x01, 0x02, 0x03, 0x04, 0xFF, 0x55, 0x54];
        let mut streams: Vec<Vec<u8>> = Vec::new();
        for a in 0..=255u8 {
            streams.push(vec![a]);
            for b in 0..=255u8 {
                streams.push(vec![a, b]);
            }
        }
        for &a in &alphabet {
            for &b in &alphabet {
                for &c in &alphabet {
                    streams.push(vec![a, b, c]);
                }
            }
        }
        for s in streams {
            if let Ok(d) = dec(&s) {
                assert_eq!(enc(&d), s, "{s:02x?} decodes to {d:02x?}");
            }
        }
    }

    /// Annex T's example data. The annex prints the Encoded Data and the
    /// Length (17) this test checks, and a CRC-32K value (B3 8F 28 CA) that
    /// the annex's own CalcCRC32K does not produce from that Encoded Data;
    /// the CRC here is the one tshark 4.0.17 accepts for the same frame
    /// (`tests/it/vectors/mstp-extended-frames.pcap`).
    #[test]
    fn annex_t_hello_world_frame_data_round_trips() {
        let data = b"Hello World\n\0";
        let mut field = vec![0; frame_data_len(data)];
        assert_eq!(encode_frame_data(data, &mut field), Ok(19));
        assert_eq!(field.len() - 2, 17, "the Length field");
        assert_eq!(&field[14..], [0x50, 0x08, 0x8F, 0xBB, 0x58]);
        let mut out = [0u8; 32];
        assert_eq!(decode_frame_data(&field, &mut out), Ok(13));
        assert_eq!(&out[..13], data);
    }

    #[test]
    fn crc32k_is_koopmans_crc_with_its_published_check_value() {
        assert_eq!(u32::from_le_bytes(crc32k(b"123456789")), 0x2D3D_D0AE);
    }

    #[test]
    fn a_corrupted_extended_field_is_refused() {
        let data = b"Hello World\n\0";
        let mut field = vec![0; frame_data_len(data)];
        encode_frame_data(data, &mut field).unwrap();
        let mut out = [0u8; 32];
        for i in 0..field.len() {
            for bit in 0..8 {
                let mut bad = field.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_frame_data(&bad, &mut out).is_err(), "octet {i} bit {bit}");
            }
        }
        assert_eq!(decode_frame_data(&field[..6], &mut out), Err(CobsError::TooShort));
    }
}
