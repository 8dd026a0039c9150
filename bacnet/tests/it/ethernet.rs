//! BACnet Ethernet (Clause 7) against bacnet-stack's frames: every BACnet
//! frame of the capture decodes, its NPDU is the one bacnet-stack sent,
//! and re-encoding gives the frame back octet for octet; the capture's
//! IPv6 frame is skipped as not BACnet.

use bacnet::ethernet::{self, BROADCAST, Frame};
use bacnet::npdu::{Npdu, NpduPayload};

const CAPTURE: &[u8] = include_bytes!("vectors/ethernet-bacnet-stack-whois-iam.pcapng");

/// The packets of a little-endian pcapng file's Enhanced Packet Blocks.
fn packets(file: &[u8]) -> Vec<&[u8]> {
    let u32_at = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(u32_at(0), 0x0A0D_0D0A, "a pcapng Section Header Block first");
    assert_eq!(u32_at(8), 0x1A2B_3C4D, "little-endian");
    let mut out = Vec::new();
    let mut at = 0;
    while at < file.len() {
        let (kind, len) = (u32_at(at), u32_at(at + 4));
        assert!(len >= 12 && at + len <= file.len(), "block at {at}");
        if kind == 6 {
            let captured = u32_at(at + 20);
            out.push(&file[at + 28..at + 28 + captured]);
        }
        at += len;
    }
    out
}

#[test]
fn bacnet_stacks_who_is_and_i_am_decode_and_encode_back_octet_for_octet() {
    let frames = packets(CAPTURE);
    assert_eq!(frames.len(), 3);
    let mut npdus = Vec::new();
    for frame in &frames {
        match Frame::decode(frame).unwrap() {
            Frame::Bacnet { destination, source, npdu } => {
                let mut again = Vec::new();
                ethernet::encode(destination, source, npdu, &mut again).unwrap();
                assert_eq!(&again[..], *frame, "re-encoded");
                npdus.push((destination, source, npdu));
            }
            Frame::NotBacnet => assert_eq!(&frame[12..14], [0x86, 0xDD], "only the IPv6 frame is skipped"),
        }
    }
    assert_eq!(npdus.len(), 2);
    let (who_is_to, who_is_from, who_is) = npdus[0];
    assert_eq!(who_is_to, BROADCAST);
    // Who-Is: a global broadcast (DNET 65535) of an unconfirmed Who-Is.
    let npdu = Npdu::decode(who_is).unwrap();
    assert_eq!(npdu.destination.map(|d| d.net), Some(0xFFFF));
    assert_eq!(npdu.payload, NpduPayload::Apdu(&[0x10, 0x08]));
    // I-Am: unicast back to the Who-Is's sender, device 8001.
    let (i_am_to, _, i_am) = npdus[1];
    assert_eq!(i_am_to, who_is_from);
    let NpduPayload::Apdu(apdu) = Npdu::decode(i_am).unwrap().payload else { panic!("not an APDU") };
    assert_eq!(apdu[..3], [0x10, 0x00, 0xC4], "unconfirmed I-Am, an object identifier");
    let device = u32::from_be_bytes(apdu[3..7].try_into().unwrap());
    assert_eq!((device >> 22, device & 0x3F_FFFF), (8, 8001));
}
