//! MS/TP (Clause 9): the CRCs against Annex G, every frame type through the
//! codec and the Receive Frame state machine, bacnet-stack's captures frame
//! by frame, corruption, splitting, garbage and Tframe_abort.
//!
//! Vectors in `vectors/` (see `vectors/mstp.md`):
//! - `mstp-bacnet-stack-2masters-rp.pcap`, `mstp-bacnet-stack-rp-short.pcap`:
//!   frames of two bacnet-stack 1.6 master stations, captured on a simulated
//!   RS-485 bus at 38,400 baud (pcap linktype 165), dissected by tshark
//!   4.0.17 without errors; copied from `shared/vectors`.
//! - `mstp-extended-frames.pcap`: extended frames made by
//!   `mstp-extended-frames.py` (independent of this codec), whose header CRC
//!   and CRC-32K tshark 4.0.17 reports correct.

use bacnet::mstp::crc::{self, data_crc, data_crc_ok, header_crc, header_crc_ok};
use bacnet::mstp::frame::{HEADER_LEN, MAX_EXTENDED_LENGTH};
use bacnet::mstp::{
    BROADCAST, Frame, FrameError, FrameType, Header, Invalid, Micros, ReceiveConfig, ReceiveEvent, ReceiveState,
    Receiver, bit_times,
};
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers

/// One pcap record: capture time in µs and the frame's octets.
struct Record {
    at: Micros,
    octets: Vec<u8>,
}

/// The records of a classic pcap file of linktype 165 (MS/TP), either byte
/// order, µs or ns timestamps.
fn read_pcap(file: &[u8]) -> Vec<Record> {
    let u32_at = |at: usize, le: bool| {
        let b: [u8; 4] = file[at..at + 4].try_into().unwrap();
        if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) }
    };
    let (le, nanos) = match u32_at(0, true) {
        0xA1B2_C3D4 => (true, false),
        0xA1B2_3C4D => (true, true),
        0xD4C3_B2A1 => (false, false),
        0x4D3C_B2A1 => (false, true),
        magic => panic!("not a pcap file: magic {magic:08x}"),
    };
    assert_eq!(u32_at(20, le), 165, "linktype is not MS/TP");
    let mut records = Vec::new();
    let mut at = 24;
    while at < file.len() {
        let (secs, frac, len) = (u32_at(at, le), u32_at(at + 4, le), u32_at(at + 8, le) as usize);
        let frac = if nanos { frac / 1000 } else { frac };
        records.push(Record {
            at: u64::from(secs) * 1_000_000 + u64::from(frac),
            octets: file[at + 16..at + 16 + len].to_vec(),
        });
        at += 16 + len;
    }
    records
}

fn two_masters() -> Vec<Record> {
    read_pcap(include_bytes!("vectors/mstp-bacnet-stack-2masters-rp.pcap"))
}

fn rp_short() -> Vec<Record> {
    read_pcap(include_bytes!("vectors/mstp-bacnet-stack-rp-short.pcap"))
}

fn extended() -> Vec<Record> {
    read_pcap(include_bytes!("vectors/mstp-extended-frames.pcap"))
}

/// What a receiver produced, owned, for comparing runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Frame { frame_type: FrameType, destination: u8, source: u8, data: Vec<u8> },
    Invalid(Invalid),
    Garbage(usize),
}

impl Seen {
    fn of(event: ReceiveEvent<'_>) -> Option<Seen> {
        match event {
            ReceiveEvent::NeedMore => None,
            ReceiveEvent::Frame(f) => Some(Seen::Frame {
                frame_type: f.frame_type,
                destination: f.destination,
                source: f.source,
                data: f.data.to_vec(),
            }),
            ReceiveEvent::Invalid(i) => Some(Seen::Invalid(i)),
            ReceiveEvent::Garbage { octets } => Some(Seen::Garbage(octets)),
        }
    }

    fn frame(f: &Frame<'_>) -> Seen {
        Seen::Frame { frame_type: f.frame_type, destination: f.destination, source: f.source, data: f.data.to_vec() }
    }
}

fn receiver() -> Receiver {
    Receiver::new(ReceiveConfig::default())
}

/// Feed `octets` one at a time, all at `now`; everything that happened.
fn feed(rx: &mut Receiver, now: Micros, octets: &[u8]) -> Vec<Seen> {
    octets.iter().filter_map(|&b| Seen::of(rx.handle_octet(now, b))).collect()
}

/// Feed `octets` in the given chunks through `handle_octets`.
fn feed_chunks(rx: &mut Receiver, now: Micros, chunks: &[&[u8]]) -> Vec<Seen> {
    let mut seen = Vec::new();
    for chunk in chunks {
        let mut input = *chunk;
        while !input.is_empty() {
            if let Some(s) = Seen::of(rx.handle_octets(now, &mut input)) {
                seen.push(s);
            }
        }
    }
    seen
}

fn encode(f: &Frame<'_>) -> Vec<u8> {
    f.to_vec().unwrap()
}

/// A sample of every kind of frame: all 256 frame types, with and without
/// data where the type allows it, broadcast and not.
fn sample_frames() -> Vec<(FrameType, u8, u8, Vec<u8>)> {
    let mut out = Vec::new();
    for t in 0..=255u8 {
        let ft = FrameType(t);
        let lens: &[usize] = if ft.is_cobs() { &[1, 2, 254, 502, 1497] } else { &[0, 1, 13, 501] };
        for &len in lens {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 + usize::from(t)) as u8).collect();
            let dest = if t % 3 == 0 { BROADCAST } else { t / 2 };
            out.push((ft, dest, t.wrapping_mul(7) % 128, data));
        }
    }
    out
}

// ---------------------------------------------------------------- CRCs (Annex G)

#[test]
fn header_crc_of_annex_g1_example_is_0x8c_and_leaves_residue_0x55() {
    // Annex G.1: a Token from 0x05 to 0x10.
    assert_eq!(header_crc(&[0x00, 0x10, 0x05, 0x00, 0x00]), 0x8C);
    assert!(header_crc_ok(&[0x00, 0x10, 0x05, 0x00, 0x00], 0x8C));
    assert!(!header_crc_ok(&[0x00, 0x10, 0x05, 0x00, 0x00], 0x8D));
    assert_eq!(encode(&Frame::token(0x10, 0x05)), [0x55, 0xFF, 0x00, 0x10, 0x05, 0x00, 0x00, 0x8C]);
}

#[test]
fn data_crc_of_annex_g2_example_is_0xbd10_sent_low_octet_first() {
    assert_eq!(data_crc(&[0x01, 0x22, 0x30]), [0x10, 0xBD]);
    assert!(data_crc_ok(&[0x01, 0x22, 0x30, 0x10, 0xBD]));
    assert!(!data_crc_ok(&[0x01, 0x22, 0x30, 0xBD, 0x10]));
    let mut reg = crc::DATA_CRC_INITIAL;
    for b in [0x01, 0x22, 0x30, 0x10, 0xBD] {
        reg = crc::calc_data_crc(b, reg);
    }
    assert_eq!(reg, crc::DATA_CRC_RESIDUE);
}

#[test]
fn crc32k_matches_koopmans_check_value_and_residue() {
    assert_eq!(u32::from_le_bytes(crc::crc32k(b"123456789")), 0x2D3D_D0AE);
    let encoded = b"any encoded data";
    let sent = crc::crc32k(encoded);
    let reg = encoded.iter().chain(&sent).fold(crc::CRC32K_INITIAL, |c, &b| crc::calc_crc32k(b, c));
    assert_eq!(reg, crc::CRC32K_RESIDUE);
}

#[test]
fn the_captured_frames_crcs_check_octet_by_octet() {
    for r in rp_short().iter().chain(&two_masters()) {
        assert!(header_crc_ok(&r.octets[2..7], r.octets[7]));
        if r.octets.len() > HEADER_LEN {
            assert!(data_crc_ok(&r.octets[HEADER_LEN..]));
        }
    }
}

// ---------------------------------------------------------------- the codec

#[test]
fn rp_short_capture_decodes_to_the_frames_tshark_shows() {
    // tshark -r mstp-bacnet-stack-rp-short.pcap -x: Poll For Master 1→2,
    // Reply To Poll For Master 2→1, Token 1→2, BACnet Data Expecting Reply
    // 2→1 (ReadProperty), BACnet Data Not Expecting Reply 1→2 (ComplexACK),
    // Token 2→1. Constructors take (destination, source).
    let rp_request = [0x01, 0x04, 0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
    let rp_ack = [
        0x01, 0x00, 0x30, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x28, 0x00, 0x00,
        0x3F,
    ];
    let expected = [
        Frame::poll_for_master(2, 1),
        Frame::reply_to_poll_for_master(1, 2),
        Frame::token(2, 1),
        Frame::bacnet_data(1, 2, &rp_request, true).unwrap(),
        Frame::bacnet_data(2, 1, &rp_ack, false).unwrap(),
        Frame::token(1, 2),
    ];
    let records = rp_short();
    assert_eq!(records.len(), expected.len());
    let mut scratch = [0u8; 64];
    for (r, want) in records.iter().zip(&expected) {
        // Octets → fields.
        let (got, used) = Frame::decode(&r.octets, &mut scratch).unwrap();
        assert_eq!(&got, want);
        assert_eq!(used, r.octets.len());
        // Fields → octets.
        assert_eq!(encode(want), r.octets);
    }
    // The lengths section 4.3 of the protocol notes computes with.
    assert_eq!(records.iter().map(|r| r.octets.len()).collect::<Vec<_>>(), [8, 8, 8, 23, 29, 8]);
}

#[test]
fn every_frame_type_round_trips_through_encode_and_decode() {
    let mut scratch = vec![0u8; 4096];
    for (frame_type, destination, source, data) in sample_frames() {
        let frame = Frame { frame_type, destination, source, data: &data };
        let octets = encode(&frame);
        assert_eq!(octets.len(), frame.encoded_len().unwrap());
        let (back, used) = Frame::decode(&octets, &mut scratch).unwrap();
        assert_eq!(back, frame, "{frame_type:?} with {} octets", data.len());
        assert_eq!(used, octets.len());
        // The header's Length: the data's, or for COBS the field's minus two.
        let header = Header::decode(&octets).unwrap();
        assert_eq!(HEADER_LEN + header.data_field_len(), octets.len());
        if frame_type.is_cobs() {
            assert!(header.length >= bacnet::mstp::frame::MIN_COBS_LENGTH);
            assert!(!octets[HEADER_LEN..].contains(&0x55), "COBS leaves no X'55' in the data field");
        } else {
            assert_eq!(usize::from(header.length), data.len());
        }
    }
}

#[test]
fn every_frame_type_round_trips_through_the_receive_state_machine() {
    let mut rx = receiver();
    for (frame_type, destination, source, data) in sample_frames() {
        let frame = Frame { frame_type, destination, source, data: &data };
        let octets = encode(&frame);
        let (last, body) = octets.split_last().unwrap();
        for &b in body {
            assert_eq!(rx.handle_octet(0, b), ReceiveEvent::NeedMore);
        }
        assert_eq!(rx.handle_octet(0, *last), ReceiveEvent::Frame(frame));
        assert_eq!(rx.state(), ReceiveState::Idle);
    }
    let c = rx.counters();
    assert_eq!(c.frames as usize, sample_frames().len());
    assert_eq!((c.garbage, c.bad_header_crc, c.bad_data_crc, c.bad_encoding), (0, 0, 0, 0));
}

#[test]
fn named_frame_types_have_their_clause_9_names_and_codes() {
    let named = [
        (Frame::token(1, 2), 0, "Token"),
        (Frame::poll_for_master(1, 2), 1, "Poll For Master"),
        (Frame::reply_to_poll_for_master(1, 2), 2, "Reply To Poll For Master"),
        (Frame::test_request(1, 2, b"ping"), 3, "Test_Request"),
        (Frame::test_response(1, 2, b"ping"), 4, "Test_Response"),
        (Frame::bacnet_data(1, 2, &[1, 4], true).unwrap(), 5, "BACnet Data Expecting Reply"),
        (Frame::bacnet_data(1, 2, &[1, 0], false).unwrap(), 6, "BACnet Data Not Expecting Reply"),
        (Frame::reply_postponed(1, 2), 7, "Reply Postponed"),
        (Frame::bacnet_data(1, 2, &[1; 502], true).unwrap(), 32, "BACnet Extended Data Expecting Reply"),
        (Frame::bacnet_data(1, 2, &[1; 502], false).unwrap(), 33, "BACnet Extended Data Not Expecting Reply"),
    ];
    for (frame, code, name) in named {
        assert_eq!(frame.frame_type.0, code);
        assert_eq!(frame.frame_type.name(), Some(name));
        assert_eq!(encode(&frame)[2], code);
    }
    assert_eq!(FrameType::IPV6_ENCAPSULATION.0, 34);
    assert!(FrameType(128).is_proprietary() && FrameType(255).is_proprietary() && !FrameType(127).is_proprietary());
    assert!(FrameType(32).is_cobs() && FrameType(127).is_cobs() && !FrameType(31).is_cobs());
    assert_eq!(FrameType(200).to_string(), "200");
}

#[test]
fn bacnet_data_uses_the_extended_frame_only_beyond_501_octets() {
    let npdu = vec![0xAB; 1498];
    let at =
        |n: usize| Frame::bacnet_data(3, 4, &npdu[..n], true).map(|f| (f.frame_type.0, f.header().unwrap().length));
    assert_eq!(at(501), Ok((5, 501)));
    assert_eq!(at(502).unwrap().0, 32);
    assert_eq!(at(1497), Ok((32, MAX_EXTENDED_LENGTH)), "n + n/254 + 1 + 5 - 2 for n = 1497");
    assert!(at(1498).is_err());
    assert!(Frame::bacnet_data(3, 4, &[], false).is_err());
    // An extended frame must carry data.
    assert!(Frame { frame_type: FrameType(33), destination: 1, source: 2, data: &[] }.to_vec().is_err());
}

#[test]
fn the_wire_sizes_of_protocol_notes_section_4_3_hold() {
    assert_eq!(Frame::token(1, 2).encoded_len(), Ok(8));
    assert_eq!(Frame::bacnet_data(1, 2, &[0; 13], true).unwrap().encoded_len(), Ok(23));
    assert_eq!(Frame::bacnet_data(1, 2, &[0; 19], false).unwrap().encoded_len(), Ok(29));
    assert_eq!(Frame::bacnet_data(1, 2, &[0; 480 + 2], false).unwrap().encoded_len(), Ok(492));
    assert_eq!(Frame::bacnet_data(1, 2, &[0; 501], false).unwrap().encoded_len(), Ok(511));
    assert_eq!(Frame::bacnet_data(1, 2, &[1; 1497], false).unwrap().encoded_len(), Ok(1516));
    // Tturnaround, 40 bit times; Tframe_abort, 60.
    assert_eq!(bit_times(40, 9600), 4167);
    assert_eq!(bit_times(40, 115_200), 348);
    assert_eq!(ReceiveConfig::new(9600).t_frame_abort, 6250);
    assert_eq!(ReceiveConfig::new(115_200).t_frame_abort, 521);
}

#[test]
fn encoding_into_a_short_buffer_fails_without_writing_past_it() {
    let frame = Frame::bacnet_data(1, 2, &[7; 600], true).unwrap();
    let need = frame.encoded_len().unwrap();
    let mut buf = vec![0u8; need - 1];
    assert!(frame.encode(&mut buf).is_err());
    let mut buf = vec![0u8; need + 3];
    assert_eq!(frame.encode(&mut buf), Ok(need));
    assert_eq!(buf[need..], [0, 0, 0]);
}

#[test]
fn decode_refuses_what_is_not_one_whole_frame() {
    let good = encode(&Frame::bacnet_data(1, 2, &[1, 4, 9], true).unwrap());
    let mut scratch = [0u8; 16];
    assert_eq!(Frame::decode(&good[..7], &mut scratch), Err(FrameError::Truncated));
    assert_eq!(Frame::decode(&good[..good.len() - 1], &mut scratch), Err(FrameError::Truncated));
    assert_eq!(Frame::decode(&good[1..], &mut scratch), Err(FrameError::NoPreamble));
    let mut bad = good.clone();
    bad[4] ^= 0x01;
    assert_eq!(Frame::decode(&bad, &mut scratch), Err(FrameError::BadHeaderCrc));
    let mut bad = good.clone();
    bad[9] ^= 0x80;
    assert_eq!(Frame::decode(&bad, &mut scratch), Err(FrameError::BadDataCrc));
    // A pad after the frame is not taken.
    let mut padded = good.clone();
    padded.push(0xFF);
    assert_eq!(Frame::decode(&padded, &mut scratch).unwrap().1, good.len());
}

// ---------------------------------------------------------------- captures

#[test]
fn bacnet_stack_captures_decode_frame_by_frame_and_re_encode_identically() {
    for records in [rp_short(), two_masters()] {
        let mut rx = receiver();
        for r in &records {
            let (last, body) = r.octets.split_last().unwrap();
            for &b in body {
                assert_eq!(rx.handle_octet(r.at, b), ReceiveEvent::NeedMore);
            }
            let ReceiveEvent::Frame(frame) = rx.handle_octet(r.at, *last) else { panic!("no frame at the last octet") };
            assert_eq!(encode(&frame), r.octets);
        }
        assert_eq!(rx.counters().frames as usize, records.len());
    }
}

#[test]
fn two_masters_capture_has_the_frame_types_tshark_counts() {
    // tshark -r mstp-bacnet-stack-2masters-rp.pcap -T fields -e mstp.frame_type | sort | uniq -c
    let mut rx = receiver();
    let mut count = std::collections::BTreeMap::<(u8, u8, u8), usize>::new();
    for r in two_masters() {
        for s in feed(&mut rx, r.at, &r.octets) {
            let Seen::Frame { frame_type, destination, source, .. } = s else { panic!("{s:?}") };
            *count.entry((frame_type.0, destination, source)).or_default() += 1;
        }
    }
    let want = [
        ((0, 2, 1), 21),
        ((1, 0, 1), 67),
        ((1, 2, 1), 88),
        ((1, 3, 1), 67),
        ((1, 3, 2), 21),
        ((1, 4, 1), 67),
        ((2, 1, 2), 21),
        ((5, 1, 2), 21),
        ((6, 2, 1), 21),
        ((6, 255, 1), 1),
    ];
    assert_eq!(count.into_iter().collect::<Vec<_>>(), want);
}

#[test]
fn a_whole_capture_fed_as_one_stream_gives_every_frame_and_no_garbage() {
    let records = two_masters();
    let stream: Vec<u8> = records.iter().flat_map(|r| r.octets.clone()).collect();
    let mut rx = receiver();
    let seen = feed_chunks(&mut rx, 0, &[&stream]);
    assert_eq!(seen.len(), records.len());
    assert!(seen.iter().all(|s| matches!(s, Seen::Frame { .. })));
    assert_eq!(rx.counters().garbage, 0);
    assert_eq!(rx.counters().octets as usize, stream.len());
}

#[test]
fn extended_frames_tshark_accepts_decode_and_re_encode_identically() {
    let records = extended();
    assert_eq!(records.len(), 4);
    let mut rx = receiver();
    let mut scratch = vec![0u8; 2048];
    let mut datas = Vec::new();
    for r in &records {
        let seen = feed(&mut rx, 0, &r.octets);
        let [Seen::Frame { frame_type, destination: 7, source: 5, data }] = &seen[..] else { panic!("{seen:?}") };
        let frame = Frame { frame_type: *frame_type, destination: 7, source: 5, data };
        assert_eq!(encode(&frame), r.octets);
        assert_eq!(Frame::decode(&r.octets, &mut scratch).unwrap().0, frame);
        datas.push((frame_type.0, data.clone()));
    }
    assert_eq!(datas[0], (33, b"Hello World\n\0".to_vec()));
    assert_eq!(
        datas.iter().map(|(t, d)| (*t, d.len())).collect::<Vec<_>>(),
        [(33, 13), (32, 609), (32, 518), (32, 1497)]
    );
    // The NPDUs are WriteProperty requests (analog-value,1 present-value).
    for (_, npdu) in &datas[1..] {
        assert_eq!(npdu[..6], [0x01, 0x04, 0x00, 0x05, 0x01, 0x0F]);
        assert_eq!(
            Frame::bacnet_data(7, 5, npdu, true).unwrap().frame_type,
            FrameType::BACNET_EXTENDED_DATA_EXPECTING_REPLY
        );
    }
    // Annex T's example data gives Annex T's Encoded Data and Length 17.
    let hello = &records[0].octets;
    assert_eq!(u16::from_be_bytes([hello[5], hello[6]]), 17);
    assert_eq!(hello[8..22], [0x58, 0x1D, 0x30, 0x39, 0x39, 0x3A, 0x75, 0x02, 0x3A, 0x27, 0x39, 0x31, 0x5F, 0x54]);
}

// ---------------------------------------------------------------- errors

/// Frames to corrupt: one without data, a standard one with data, an extended one.
fn frames_to_corrupt() -> Vec<Vec<u8>> {
    let r = rp_short();
    vec![r[2].octets.clone(), r[3].octets.clone(), extended()[0].octets.clone()]
}

#[test]
fn a_flipped_bit_anywhere_is_detected_and_the_next_frame_still_arrives() {
    let next = encode(&Frame::token(9, 8));
    for good in frames_to_corrupt() {
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                let mut rx = receiver();
                let seen = feed(&mut rx, 0, &bad);
                assert!(!seen.iter().any(|s| matches!(s, Seen::Frame { .. })), "octet {i} bit {bit}: {seen:?}");
                let errors: Vec<FrameError> =
                    seen.iter().filter_map(|s| if let Seen::Invalid(v) = s { Some(v.error) } else { None }).collect();
                match i {
                    // No preamble: garbage, and what follows is garbage or unfinished.
                    0 | 1 => assert!(seen.iter().any(|s| matches!(s, Seen::Garbage(_))), "octet {i} bit {bit}"),
                    2..=7 => assert_eq!(errors, [FrameError::BadHeaderCrc], "octet {i} bit {bit}"),
                    // A flip in an extended frame's Encoded CRC-32K may break its COBS.
                    _ if FrameType(good[2]).is_cobs() => assert!(
                        matches!(errors[..], [FrameError::BadDataCrc | FrameError::BadEncoding]),
                        "octet {i} bit {bit}: {seen:?}"
                    ),
                    _ => assert_eq!(errors, [FrameError::BadDataCrc], "octet {i} bit {bit}"),
                }
                // After Tframe_abort of silence, the line is usable again.
                let later = rx.config().t_frame_abort + 1;
                let after = feed(&mut rx, later, &next);
                assert_eq!(after.last(), Some(&Seen::frame(&Frame::token(9, 8))), "octet {i} bit {bit}: {after:?}");
            }
        }
    }
}

#[test]
fn a_corrupted_extended_frame_is_a_bad_crc_or_a_bad_encoding() {
    let good = extended()[1].octets.clone();
    for i in HEADER_LEN..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x21;
        let seen = feed(&mut receiver(), 0, &bad);
        let [Seen::Invalid(Invalid { error, header: Some(h) })] = &seen[..] else { panic!("octet {i}: {seen:?}") };
        assert!(matches!(error, FrameError::BadDataCrc | FrameError::BadEncoding), "octet {i}: {error:?}");
        assert_eq!(h.frame_type, FrameType::BACNET_EXTENDED_DATA_EXPECTING_REPLY);
    }
}

#[test]
fn an_extended_frame_without_data_is_a_bad_encoding() {
    let header = Header { frame_type: FrameType(32), destination: 1, source: 2, length: 0 }.encode();
    let mut rx = receiver();
    let seen = feed(&mut rx, 0, &header);
    assert!(matches!(seen[..], [Seen::Invalid(Invalid { error: FrameError::BadEncoding, header: Some(_) })]));
    let mut scratch = [0u8; 8];
    assert_eq!(Frame::decode(&header, &mut scratch), Err(FrameError::BadEncoding));
    // Length 1..=4 cannot hold the Encoded CRC-32K.
    let short = Header { frame_type: FrameType(33), destination: 1, source: 2, length: 3 }.encode();
    let seen = feed(&mut rx, 0, &[&short[..], &[0x54; 5]].concat());
    assert!(matches!(seen[..], [Seen::Invalid(Invalid { error: FrameError::BadEncoding, .. })]));
}

#[test]
fn a_frame_longer_than_the_input_buffer_is_skipped_whole() {
    let mut rx = Receiver::new(ReceiveConfig { input_buffer_size: 12, ..ReceiveConfig::default() });
    let long = rp_short()[3].octets.clone(); // 13 octets of data
    let seen = feed(&mut rx, 0, &long);
    let [Seen::Invalid(Invalid { error: FrameError::FrameTooLong, header: Some(h) })] = &seen[..] else {
        panic!("{seen:?}")
    };
    assert_eq!(h.length, 13);
    assert_eq!(rx.state(), ReceiveState::Idle, "the data and CRC were skipped");
    // The data may even hold a preamble: it is skipped, not scanned.
    let mut sneaky = encode(&Frame { frame_type: FrameType(6), destination: 1, source: 2, data: &[0x55; 20] });
    sneaky.extend(encode(&Frame::token(3, 4)));
    let seen = feed(&mut rx, 0, &sneaky);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1], Seen::frame(&Frame::token(3, 4)));
    assert_eq!(rx.counters().frame_too_long, 2);
}

#[test]
fn uart_errors_drop_the_frame_in_progress_but_not_an_idle_line() {
    let mut rx = receiver();
    assert_eq!(rx.handle_receive_error(0), None);
    let frame = rp_short()[3].octets.clone();
    feed(&mut rx, 0, &frame[..10]);
    let err = rx.handle_receive_error(1).unwrap();
    assert_eq!(err.error, FrameError::ReceiveError);
    assert_eq!(err.header.unwrap().length, 13);
    assert_eq!(rx.state(), ReceiveState::Idle);
    assert_eq!(feed(&mut rx, 2, &frame).len(), 1);
    assert_eq!(rx.counters().receive_errors, 2);
    assert_eq!(rx.counters().receive_error_frames, 1);
}

// ---------------------------------------------------------------- splitting, garbage, pad

#[test]
fn frames_split_at_every_octet_boundary_decode_the_same() {
    let stream: Vec<u8> = rp_short()
        .iter()
        .map(|r| r.octets.clone())
        .chain(extended().into_iter().take(2).map(|r| r.octets))
        .flatten()
        .collect();
    let whole = feed_chunks(&mut receiver(), 0, &[&stream]);
    assert_eq!(whole.len(), 8);
    for i in 0..=stream.len() {
        let (a, b) = stream.split_at(i);
        assert_eq!(feed_chunks(&mut receiver(), 0, &[a, b]), whole, "split at {i}");
    }
    // And three ways, at a stride, through the octet-at-a-time entry too.
    for i in (0..stream.len()).step_by(7) {
        for j in (i..stream.len()).step_by(11) {
            let (a, rest) = stream.split_at(i);
            let (b, c) = rest.split_at(j - i);
            assert_eq!(feed_chunks(&mut receiver(), 0, &[a, b, c]), whole);
        }
    }
    assert_eq!(feed(&mut receiver(), 0, &stream), whole);
}

#[test]
fn garbage_between_frames_is_skipped_and_counted() {
    let token = encode(&Frame::token(2, 1));
    let data = rp_short()[3].octets.clone();
    // 00, 13: one each; 55 00: a false start, two; AA: one; 55 55 01: the
    // first X'55' is repeated (one), then 55 01 (two). Eight in all.
    let garbage = [0x00, 0x13, 0x55, 0x00, 0xAA, 0x55, 0x55, 0x01];
    let stream = [&garbage[..], &token, &garbage, &data, &garbage].concat();
    let mut rx = receiver();
    let seen = feed(&mut rx, 0, &stream);
    let frames: Vec<&Seen> = seen.iter().filter(|s| matches!(s, Seen::Frame { .. })).collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(rx.counters().garbage, 24);
    let reported: usize = seen.iter().map(|s| if let Seen::Garbage(n) = s { *n } else { 0 }).sum();
    assert_eq!(reported, 24);
    // A preamble that ends the stream and then times out is garbage too.
    feed(&mut rx, 10, &[0x55]);
    assert_eq!(rx.handle_timeout(10 + rx.config().t_frame_abort), None);
    assert_eq!(rx.counters().garbage, 25);
}

#[test]
fn one_pad_octet_after_a_frame_is_not_garbage() {
    let token = encode(&Frame::token(2, 1));
    let stream = [&token[..], &[0xFF], &token, &[0xFF, 0xFF]].concat();
    let mut rx = receiver();
    let seen = feed(&mut rx, 0, &stream);
    assert_eq!(seen.iter().filter(|s| matches!(s, Seen::Frame { .. })).count(), 2);
    assert_eq!(rx.counters().pad, 2);
    assert_eq!(rx.counters().garbage, 1, "only one pad octet is allowed");
}

// ---------------------------------------------------------------- Tframe_abort

#[test]
fn tframe_abort_drops_a_stalled_frame() {
    let frame = rp_short()[3].octets.clone();
    let mut rx = receiver();
    let abort = rx.config().t_frame_abort;
    assert_eq!(rx.poll_timeout(), None, "nothing to time in IDLE");
    feed(&mut rx, 1_000, &frame[..12]);
    assert_eq!(rx.state(), ReceiveState::Data);
    assert_eq!(rx.poll_timeout(), Some(1_000 + abort));
    assert_eq!(rx.handle_timeout(1_000 + abort - 1), None);
    let dropped = rx.handle_timeout(1_000 + abort).unwrap();
    assert_eq!(dropped.error, FrameError::FrameAbort);
    assert_eq!(dropped.header.unwrap().source, 2);
    assert_eq!((rx.state(), rx.poll_timeout()), (ReceiveState::Idle, None));
    // The rest of the stalled frame, arriving late, is garbage; a new frame
    // after it is received.
    let seen = feed(&mut rx, 1_000 + 2 * abort, &frame[12..]);
    assert!(seen.iter().all(|s| matches!(s, Seen::Garbage(_))));
    assert_eq!(feed(&mut rx, 1_000 + 2 * abort, &frame).len(), 1);
    assert_eq!(rx.counters().frame_abort, 1);
}

#[test]
fn a_late_octet_aborts_the_stalled_frame_and_starts_the_next() {
    let frame = rp_short()[3].octets.clone();
    let mut rx = receiver();
    let abort = rx.config().t_frame_abort;
    feed(&mut rx, 0, &frame[..5]); // in HEADER
    // No handle_timeout: the next frame's preamble arrives after the deadline.
    let seen = feed(&mut rx, abort, &frame);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], Seen::Invalid(Invalid { error: FrameError::FrameAbort, header: None }));
    assert!(matches!(seen[1], Seen::Frame { .. }));
}

#[test]
fn octets_just_inside_tframe_abort_keep_the_frame() {
    let frame = rp_short()[4].octets.clone();
    let mut rx = receiver();
    let gap = rx.config().t_frame_abort - 1;
    let mut now = 0;
    let mut seen = Vec::new();
    for &b in &frame {
        seen.extend(Seen::of(rx.handle_octet(now, b)));
        now += gap;
    }
    assert_eq!(seen.len(), 1);
    assert!(matches!(seen[0], Seen::Frame { .. }));
}

// ---------------------------------------------------------------- properties

fn any_frame() -> impl Strategy<Value = (u8, u8, u8, Vec<u8>)> {
    (any::<u8>(), any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..700)).prop_map(
        |(t, d, s, mut data)| {
            if FrameType(t).is_cobs() && data.is_empty() {
                data.push(0);
            }
            (t, d, s, data)
        },
    )
}

proptest! {
    #[test]
    fn any_frame_round_trips(frame in any_frame()) {
        let (t, d, s, data) = frame;
        let frame = Frame { frame_type: FrameType(t), destination: d, source: s, data: &data };
        let octets = encode(&frame);
        let seen = feed(&mut receiver(), 0, &octets);
        prop_assert_eq!(seen, vec![Seen::frame(&frame)]);
    }

    #[test]
    fn frames_among_garbage_are_all_found(
        frames in proptest::collection::vec(any_frame(), 1..6),
        garbage in proptest::collection::vec(proptest::collection::vec(any::<u8>().prop_filter("no preamble", |b| *b != 0x55), 0..20), 6),
    ) {
        let mut stream = Vec::new();
        let mut want = Vec::new();
        for (i, (t, d, s, data)) in frames.iter().enumerate() {
            stream.extend(&garbage[i]);
            let frame = Frame { frame_type: FrameType(*t), destination: *d, source: *s, data };
            stream.extend(encode(&frame));
            want.push(Seen::frame(&frame));
        }
        let mut rx = receiver();
        let seen: Vec<Seen> = feed(&mut rx, 0, &stream).into_iter().filter(|s| !matches!(s, Seen::Garbage(_))).collect();
        prop_assert_eq!(seen, want);
    }

    #[test]
    fn arbitrary_octets_never_panic_and_are_all_counted(octets in proptest::collection::vec(any::<u8>(), 0..2000), gaps in proptest::collection::vec(0u64..20_000, 0..2000)) {
        let mut rx = receiver();
        let mut now = 0;
        for (i, &b) in octets.iter().enumerate() {
            now += gaps.get(i).copied().unwrap_or(0);
            if let ReceiveEvent::Frame(f) = rx.handle_octet(now, b) {
                let re = f.to_vec().unwrap();
                prop_assert_eq!(&octets[i + 1 - re.len()..=i], &re[..]);
            }
        }
        prop_assert_eq!(rx.counters().octets as usize, octets.len());
    }
}
