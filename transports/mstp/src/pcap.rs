//! A pcap writer for MS/TP frames: linktype 165 (LINKTYPE_BACNET_MS_TP),
//! one record per frame, each starting with the preamble `55 FF` — the
//! format of bacnet-stack's captures, which Wireshark's `mstp` dissector
//! reads with both CRCs checked.

use std::io::{self, Write};

/// LINKTYPE_BACNET_MS_TP: frames from the preamble through the DataCRC.
pub const LINKTYPE_BACNET_MS_TP: u32 = 165;

/// The largest record kept (a frame is at most 8 + 1506 + 1 octets).
const SNAPLEN: u32 = 65_535;

/// Writes a classic pcap file (µs timestamps, little-endian).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header.
    pub fn new(mut out: W) -> io::Result<PcapWriter<W>> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes()); // magic, µs resolution
        h.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_BACNET_MS_TP.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// One frame seen at `unix_micros` (µs since 1970).
    pub fn write_frame(&mut self, unix_micros: u64, octets: &[u8]) -> io::Result<()> {
        let len = u32::try_from(octets.len()).unwrap_or(u32::MAX).min(SNAPLEN);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((unix_micros / 1_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((unix_micros % 1_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[12..16].copy_from_slice(&u32::try_from(octets.len()).unwrap_or(u32::MAX).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&octets[..len as usize])
    }

    /// Flush the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer, flushed.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}
