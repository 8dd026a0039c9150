//! The three MS/TP checksums: the header CRC-8 (Annex G.1), the data CRC-16
//! (Annex G.2) and the CRC-32K of extended frames (Annex G.3).
//!
//! Each is an LSB-first (reflected) CRC, started at all ones. The sender
//! transmits the ones' complement of the register, low octet first; a
//! receiver that runs every octet of the field *and* its CRC through the same
//! function ends with a fixed residue when nothing was corrupted:
//!
//! | checksum | polynomial | over | residue |
//! |---|---|---|---|
//! | HeaderCRC | x⁸ + x⁷ + 1 | Frame Type, Destination, Source, Length (5 octets) | `0x55` |
//! | DataCRC | x¹⁶ + x¹² + x⁵ + 1 (CRC-CCITT) | Data | `0xF0B8` |
//! | CRC-32K | Koopman's 0x741B8CD7 (reflected `0xEB31D82E`) | the COBS-encoded Data | `0x0843323B` |
//!
//! The `calc_*` functions are the standard's per-octet procedures
//! (`CalcHeaderCRC`, `CalcDataCRC`, `CalcCRC32K`), table-driven; the tables
//! are built at compile time from the polynomials. The slice functions
//! return the value to transmit.

/// The value every CRC register starts at.
pub const HEADER_CRC_INITIAL: u8 = 0xFF;
/// The register after the header and its (correct) HeaderCRC octet.
pub const HEADER_CRC_RESIDUE: u8 = 0x55;
/// The value the DataCRC register starts at.
pub const DATA_CRC_INITIAL: u16 = 0xFFFF;
/// The register after the data and its (correct) two DataCRC octets.
pub const DATA_CRC_RESIDUE: u16 = 0xF0B8;
/// The value the CRC-32K register starts at.
pub const CRC32K_INITIAL: u32 = 0xFFFF_FFFF;
/// The register after the Encoded Data and the four decoded CRC-32K octets.
pub const CRC32K_RESIDUE: u32 = 0x0843_323B;

/// x⁸ + x⁷ + 1, reflected (bit 0 is x⁷… the high term x⁸ is implicit).
const HEADER_POLY: u8 = 0x81;
/// x¹⁶ + x¹² + x⁵ + 1, reflected.
const DATA_POLY: u16 = 0x8408;
/// CRC-32K (Koopman), reflected.
const CRC32K_POLY: u32 = 0xEB31_D82E;

const HEADER_TABLE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ HEADER_POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

const DATA_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u16;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ DATA_POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

const CRC32K_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ CRC32K_POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// Accumulate one octet into the HeaderCRC register (Annex G.1
/// `CalcHeaderCRC`).
#[inline]
pub const fn calc_header_crc(octet: u8, crc: u8) -> u8 {
    HEADER_TABLE[(crc ^ octet) as usize]
}

/// Accumulate one octet into the DataCRC register (Annex G.2 `CalcDataCRC`).
#[inline]
pub const fn calc_data_crc(octet: u8, crc: u16) -> u16 {
    (crc >> 8) ^ DATA_TABLE[((crc as u8) ^ octet) as usize]
}

/// Accumulate one octet into the CRC-32K register (Annex G.3 `CalcCRC32K`).
#[inline]
pub const fn calc_crc32k(octet: u8, crc: u32) -> u32 {
    (crc >> 8) ^ CRC32K_TABLE[((crc as u8) ^ octet) as usize]
}

/// The HeaderCRC octet to transmit after these header octets (Frame Type,
/// Destination, Source, Length): the ones' complement of the register.
pub fn header_crc(header: &[u8]) -> u8 {
    !header.iter().fold(HEADER_CRC_INITIAL, |crc, &b| calc_header_crc(b, crc))
}

/// The DataCRC to transmit after `data`, as the two octets in wire order
/// (low octet first).
pub fn data_crc(data: &[u8]) -> [u8; 2] {
    (!data.iter().fold(DATA_CRC_INITIAL, |crc, &b| calc_data_crc(b, crc))).to_le_bytes()
}

/// The CRC-32K of `encoded` to transmit, as four octets in wire order (low
/// octet first) before they are themselves COBS-encoded.
pub fn crc32k(encoded: &[u8]) -> [u8; 4] {
    (!crc32k_register(CRC32K_INITIAL, encoded)).to_le_bytes()
}

/// Run `octets` through the CRC-32K register starting from `crc`.
pub(crate) fn crc32k_register(crc: u32, octets: &[u8]) -> u32 {
    octets.iter().fold(crc, |crc, &b| calc_crc32k(b, crc))
}

/// True when `header` (five octets) followed by `crc` leaves the residue.
pub fn header_crc_ok(header: &[u8], crc: u8) -> bool {
    calc_header_crc(crc, header.iter().fold(HEADER_CRC_INITIAL, |c, &b| calc_header_crc(b, c))) == HEADER_CRC_RESIDUE
}

/// True when `data_and_crc` (data followed by its two DataCRC octets) leaves
/// the residue.
pub fn data_crc_ok(data_and_crc: &[u8]) -> bool {
    data_and_crc.iter().fold(DATA_CRC_INITIAL, |crc, &b| calc_data_crc(b, crc)) == DATA_CRC_RESIDUE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Annex G.1's worked example, register after each octet.
    #[test]
    fn header_crc_follows_annex_g1_step_by_step() {
        let mut crc = HEADER_CRC_INITIAL;
        for (octet, after) in [(0x00, 0x55), (0x10, 0xC2), (0x05, 0xBC), (0x00, 0x95), (0x00, 0x73)] {
            crc = calc_header_crc(octet, crc);
            assert_eq!(crc, after);
        }
        assert_eq!(!crc, 0x8C);
        assert_eq!(calc_header_crc(0x8C, crc), HEADER_CRC_RESIDUE);
    }

    /// Annex G.2's worked example, register after each octet.
    #[test]
    fn data_crc_follows_annex_g2_step_by_step() {
        let mut crc = DATA_CRC_INITIAL;
        for (octet, after) in [(0x01, 0x1E0E), (0x22, 0xEB70), (0x30, 0x42EF), (0x10, 0x0F3A), (0xBD, 0xF0B8)] {
            crc = calc_data_crc(octet, crc);
            assert_eq!(crc, after);
        }
    }

    /// The bitwise procedure the standard prints, for comparison with the
    /// tables.
    fn crc32k_bitwise(octet: u8, mut crc: u32) -> u32 {
        let mut data = octet;
        for _ in 0..8 {
            crc = if (data ^ crc as u8) & 1 != 0 { (crc >> 1) ^ CRC32K_POLY } else { crc >> 1 };
            data >>= 1;
        }
        crc
    }

    #[test]
    fn crc32k_table_matches_the_bitwise_procedure() {
        let mut a = CRC32K_INITIAL;
        let mut b = CRC32K_INITIAL;
        for octet in 0..=255u8 {
            a = calc_crc32k(octet, a);
            b = crc32k_bitwise(octet, b);
            assert_eq!(a, b);
        }
    }
}
