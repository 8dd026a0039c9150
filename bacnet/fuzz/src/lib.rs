//! Round-trip checks shared by the fuzz targets in `fuzz_targets/`, and the
//! list of service codecs the `service` and `datagram` targets drive.
//!
//! Every check decodes its input and, when that succeeds, asserts for the
//! decoded value `v`:
//!
//! 1. `encode(v)` decodes again, to `w`;
//! 2. `encode(w) == encode(v)`: one decode/encode round reaches a fixed
//!    point. The input is not compared with `encode(v)`, because BACnet admits
//!    non-minimal encodings (an Unsigned with leading zero octets, a length
//!    in the extended form under 5, reserved APDU header bits) that decode to
//!    the same value and re-encode in the canonical form;
//! 3. `w == v` whenever `v == v`. Comparing fields is stronger than comparing
//!    octets (it catches a decoder that drops what the encoder would have
//!    written back), but `PartialEq` is not reflexive for a Real or Double
//!    NaN: `v == v` is false exactly when a NaN is inside, and then check 2
//!    stands alone — NaN payload bits pass through decoding and encoding
//!    unchanged, so the octets still compare.
//!
//! The BVLL and NPDU layers keep every octet (the NPDU refuses reserved
//! control bits rather than dropping them), so for them `encode(v)` must equal
//! the input itself.

pub mod segmentation;

pub use segmentation::check_segmentation;

use bacnet::apdu::Apdu;
use bacnet::bvll::Bvll;
use bacnet::cov::{COVMultipleSubscription, COVSubscription, Recipient, RecipientProcess};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::read_records;
use bacnet::schedule::{CalendarEntry, DateRange, DeviceObjectPropertyReference, SpecialEvent, TimeValue};
use bacnet::services::*;
use bacnet::value::AnyValue;
use bacnet::{ConfirmedServiceChoice as C, UnconfirmedServiceChoice as U};
use core::fmt::Debug;

/// Checks 1–3 for a decoder path and an encoder; evaluates to the canonical
/// encoding when the input decodes. A macro rather than a function because the
/// PDU views borrow from the octets they were decoded from, and `v` and `w`
/// come from different buffers.
macro_rules! round_trip {
    ($what:expr, $data:expr, $decode:path, $encode:path) => {
        match $decode($data) {
            Err(_) => None,
            Ok(v) => {
                let what = $what;
                let once = $encode(&v);
                let w = $decode(&once).unwrap_or_else(|e| {
                    panic!("{what}: {v:?} re-encodes as {once:02x?}, which does not decode: {e:?}")
                });
                let twice = $encode(&w);
                assert_eq!(once, twice, "{what}: re-encoding {v:?} is not stable (second decode {w:?})");
                #[allow(clippy::eq_op)] // `v == v` is the NaN test
                let nan_free = v == v;
                if nan_free {
                    assert_eq!(v, w, "{what}: fields change through {once:02x?}");
                }
                Some(once)
            }
        }
    };
}

fn encode_apdu(a: &Apdu<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    a.encode(&mut out);
    out
}

fn encode_npdu(n: &Npdu<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    n.encode(&mut out).unwrap_or_else(|e| panic!("NPDU: decoded {n:?} does not encode: {e}"));
    out
}

fn encode_bvll(b: &Bvll<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    b.encode(&mut out).unwrap_or_else(|e| panic!("BVLL: decoded {b:?} does not encode: {e}"));
    out
}

fn encode_value(v: &AnyValue) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out);
    out
}

/// APDU headers (the body is opaque at this layer).
pub fn check_apdu(data: &[u8]) {
    if let Some(once) = round_trip!("APDU", data, Apdu::decode, encode_apdu) {
        assert_eq!(once.len(), data.len(), "APDU: dropping reserved bits changed the length");
    }
}

/// NPDUs and network-layer messages; lossless.
pub fn check_npdu(data: &[u8]) {
    if let Some(once) = round_trip!("NPDU", data, Npdu::decode, encode_npdu) {
        assert_eq!(once, data, "NPDU: decoding lost octets");
    }
}

/// BVLL messages; lossless.
pub fn check_bvll(data: &[u8]) {
    if let Some(once) = round_trip!("BVLL", data, Bvll::decode, encode_bvll) {
        assert_eq!(once, data, "BVLL: decoding lost octets");
    }
}

fn encode_bvll6(b: &bacnet::bvll6::Bvll6<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    b.encode(&mut out).unwrap_or_else(|e| panic!("BVLL-IPv6: decoded {b:?} does not encode: {e}"));
    out
}

/// BACnet/IPv6 BVLL messages; lossless.
pub fn check_bvll6(data: &[u8]) {
    if let Some(once) = round_trip!("BVLL-IPv6", data, bacnet::bvll6::Bvll6::decode, encode_bvll6) {
        assert_eq!(once, data, "BVLL-IPv6: decoding lost octets");
    }
}

/// BACnet Ethernet frames (Clause 7): a frame that decodes as BACnet
/// encodes back to the octets its length field counts (what follows them
/// is padding, not BACnet's).
pub fn check_ethernet(data: &[u8]) {
    use bacnet::ethernet::{Frame, encode};
    if let Ok(Frame::Bacnet { destination, source, npdu }) = Frame::decode(data) {
        let mut out = Vec::new();
        encode(destination, source, npdu, &mut out)
            .unwrap_or_else(|e| panic!("Ethernet: a decoded NPDU of {} octets does not encode: {e}", npdu.len()));
        assert_eq!(out[..], data[..out.len()], "Ethernet: decoding lost octets");
    }
}

/// A property value: any sequence of application, context and constructed
/// elements.
pub fn check_value(data: &[u8]) {
    round_trip!("AnyValue", data, AnyValue::from_bytes, encode_value);
    // The checker that builds nothing accepts exactly what decoding accepts.
    assert_eq!(
        bacnet::value::check_encoded(data).is_ok(),
        AnyValue::from_bytes(data).is_ok(),
        "check_encoded and AnyValue::from_bytes disagree on {data:02x?}"
    );
}

/// Read results as records (a plugin's `read-encoded` answer): parse; every
/// value handed out decodes; re-encoding what was parsed parses to the same
/// records.
pub fn check_read_records(data: &[u8]) {
    let Some(targets) = parse_records(data) else { return };
    let mut again = Vec::new();
    for results in &targets {
        read_records::write_count(&mut again, results.len() as u32);
        for (object, property, index, outcome) in results {
            read_records::write_result(&mut again, *object, *property, *index, outcome.as_ref());
        }
    }
    let reparsed = parse_records(&again)
        .unwrap_or_else(|| panic!("records {data:02x?} re-encode as {again:02x?}, which does not parse"));
    let encodings = |ts: &[Vec<ParsedRecord>]| -> Vec<_> {
        ts.iter().flatten().map(|(o, p, i, r)| (*o, *p, *i, r.as_ref().map(encode_value).map_err(|e| *e))).collect()
    };
    assert_eq!(encodings(&targets), encodings(&reparsed), "records change through {again:02x?}");
}

type ParsedRecord = (bacnet::ObjectIdentifier, bacnet::PropertyIdentifier, Option<u32>, Result<AnyValue, BacnetError>);

fn parse_records(data: &[u8]) -> Option<Vec<Vec<ParsedRecord>>> {
    let mut r = read_records::ReadRecords::new(data);
    let mut targets = Vec::new();
    // At most one target per 4 octets: every count takes 4.
    for _ in 0..=data.len() / 4 {
        if r.finish().is_ok() {
            return Some(targets);
        }
        let n = r.count().ok()?;
        let mut results = Vec::new();
        for _ in 0..n {
            let rec = r.result().ok()?;
            let outcome = match rec.outcome {
                Ok(v) => Ok(AnyValue::from_bytes(v)
                    .unwrap_or_else(|e| panic!("a checked value {v:02x?} does not decode: {e:?}"))),
                Err(e) => Err(e),
            };
            results.push((rec.object, rec.property, rec.array_index, outcome));
        }
        targets.push(results);
    }
    unreachable!("a parse that consumes nothing")
}

/// The router (`bacnet::router`) fed a sequence of NPDUs: each input is
/// chunks of `[port, from, length, NPDU…]`, one second apart. Nothing
/// panics; every NPDU it sends decodes and fits the port it leaves by; one
/// NPDU in never makes more than one per other port plus an answer and a
/// discovery round; the learned routes stay within their bound.
pub fn check_router(data: &[u8]) {
    use bacnet::router::{LinkTarget, Mac, PortConfig, PortId, Router, RouterConfig};
    const MAX_LEARNED: usize = 8;
    let ports = vec![
        PortConfig { id: PortId(1), network: 1, max_npdu: 1497, mac_len: Some(6), broadcast_mac: None },
        PortConfig { id: PortId(2), network: 2, max_npdu: 501, mac_len: Some(1), broadcast_mac: Mac::new(&[0xFF]) },
        PortConfig { id: PortId(3), network: 3, max_npdu: 1497, mac_len: Some(3), broadcast_mac: None },
    ];
    let mut config = RouterConfig::new(ports.clone());
    config.max_learned_routes = MAX_LEARNED;
    let mut router = Router::new(config).expect("a valid configuration");
    let mut rest = data;
    let mut now = core::time::Duration::ZERO;
    while let [port, from, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (npdu, next) = tail.split_at(n);
        rest = next;
        let port = PortId(port % 4); // 0 is no port: counted as malformed
        let mac: &[u8] = match port.0 {
            1 => &[127, 0, 0, 1, 0xBA, *from],
            3 => &[0, 0, *from],
            _ => core::slice::from_ref(from),
        };
        router.handle_timeout(now);
        let _ = router.handle_npdu(now, port, mac, npdu);
        let mut sent = 0;
        while let Some(t) = router.poll_transmit() {
            sent += 1;
            let out = ports.iter().find(|p| p.id == t.port).expect("a transmit names one of the ports");
            assert!(t.npdu.len() <= out.max_npdu, "{} octets out of port {:?}", t.npdu.len(), t.port);
            Npdu::decode(&t.npdu)
                .unwrap_or_else(|e| panic!("the router sent {:02x?}, which does not decode: {e}", t.npdu));
            if let LinkTarget::Unicast(m) = t.to {
                assert!(!m.as_bytes().is_empty() && Mac::new(m.as_bytes()).is_some());
            }
        }
        // A forward to every other port, or an answer and a discovery on the other ports.
        assert!(sent <= ports.len() + 1, "{sent} NPDUs sent for one received");
        assert!(router.table().learned() <= MAX_LEARNED);
        now += core::time::Duration::from_secs(1);
    }
}

/// The BBMD (`bacnet::bbmd`) fed a sequence of datagrams: each input is
/// chunks of `[source, seconds, length, BVLL…]` from 10.0.1.x or 192.168.0.x
/// (only the latter may register), time moving on by `seconds`. Nothing
/// panics; one datagram never makes more than one copy per peer, per
/// foreign device, plus the local rebroadcast and an answer; the FDT never
/// holds more than its bound; every datagram sent decodes.
pub fn check_bbmd(data: &[u8]) {
    use bacnet::bbmd::{Bbmd, BbmdConfig};
    use bacnet::bvll::BdtEntry;
    use core::net::{Ipv4Addr, SocketAddrV4};
    const MAX_FD: usize = 4;
    let us = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 47808);
    let bdt = vec![
        BdtEntry { address: us, mask: Ipv4Addr::BROADCAST },
        BdtEntry { address: SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 1), 47808), mask: Ipv4Addr::BROADCAST },
        BdtEntry {
            address: SocketAddrV4::new(Ipv4Addr::new(10, 0, 3, 0), 47808),
            mask: Ipv4Addr::new(255, 255, 255, 0),
        },
    ];
    let mut config = BbmdConfig::new(us, SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 255), 47808), bdt);
    config.foreign_devices = vec![(Ipv4Addr::new(192, 168, 0, 0), 24)];
    config.max_foreign_devices = MAX_FD;
    let mut bbmd = Bbmd::new(config);
    let mut rest = data;
    let mut now = core::time::Duration::ZERO;
    while let [source, seconds, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (datagram, next) = tail.split_at(n);
        rest = next;
        now += core::time::Duration::from_secs(u64::from(*seconds % 64));
        let net = if source & 0x80 != 0 { [192, 168, 0] } else { [10, 0, 1 + (source & 0x03)] };
        let from = SocketAddrV4::new(Ipv4Addr::new(net[0], net[1], net[2], source & 0x7F), 47808);
        if let Ok(msg) = Bvll::decode(datagram) {
            let _ = bbmd.handle_bvll(now, from, &msg, source & 0x40 != 0);
        }
        let mut sent = 0;
        while let Some(d) = bbmd.poll_transmit() {
            sent += 1;
            Bvll::decode(&d.bvll)
                .unwrap_or_else(|e| panic!("the BBMD sent {:02x?}, which does not decode: {e}", d.bvll));
        }
        assert!(sent <= 2 + MAX_FD + 2, "{sent} datagrams for one received");
        assert!(bbmd.fdt(now).len() <= MAX_FD);
    }
}

/// The IPv6 BBMD (`bacnet::bbmd6`) fed a sequence of datagrams: each input
/// is chunks of `[source, seconds, length, BVLL…]` from 2001:db8::x or
/// 2001:db8:f::x (only the latter may register), bit 0x40 of `source`
/// saying it came over the link's multicast group, time moving on by
/// `seconds`. Nothing panics; one datagram never makes more than one copy
/// per peer, one to the group, one per foreign device and an answer; the
/// FDT never holds more than its bound; every datagram sent decodes.
pub fn check_bbmd6(data: &[u8]) {
    use bacnet::bbmd6::{Bbmd6, Bbmd6Config};
    use bacnet::bvll6::Bvll6;
    use core::net::{Ipv6Addr, SocketAddrV6};
    const MAX_FD: usize = 4;
    let at = |segments: [u16; 8]| {
        let s = segments;
        SocketAddrV6::new(Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), 47808, 0, 0)
    };
    let us = at([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    let peers = vec![us, at([0x2001, 0xdb8, 1, 0, 0, 0, 0, 1]), at([0x2001, 0xdb8, 2, 0, 0, 0, 0, 1])];
    let mut config = Bbmd6Config::new(us, [0, 0, 1], at([0xff02, 0, 0, 0, 0, 0, 0, 0xbac0]), peers);
    config.foreign_devices = vec![(Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 0), 48)];
    config.max_foreign_devices = MAX_FD;
    let mut bbmd = Bbmd6::new(config);
    let mut rest = data;
    let mut now = core::time::Duration::ZERO;
    while let [source, seconds, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (datagram, next) = tail.split_at(n);
        rest = next;
        now += core::time::Duration::from_secs(u64::from(*seconds % 64));
        let net = if source & 0x80 != 0 { 0xf } else { u16::from(source & 0x03) };
        let from = at([0x2001, 0xdb8, net, 0, 0, 0, 0, u16::from(source & 0x3F)]);
        if let Ok(msg) = Bvll6::decode(datagram) {
            let _ = bbmd.handle_bvll(now, from, &msg, source & 0x40 != 0);
        }
        let mut sent = 0;
        while let Some(d) = bbmd.poll_transmit() {
            sent += 1;
            Bvll6::decode(&d.bvll)
                .unwrap_or_else(|e| panic!("the BBMD sent {:02x?}, which does not decode: {e}", d.bvll));
        }
        assert!(sent <= 2 + 1 + MAX_FD + 1, "{sent} datagrams for one received");
        assert!(bbmd.fdt(now).len() <= MAX_FD);
    }
}

/// A BVLC-SC message (`bacnet::bvlc_sc`): nothing panics; what decodes
/// encodes back to exactly its octets; what does not, and is owed a NAK,
/// gets one that encodes and decodes as a BVLC-Result for its function.
pub fn check_bvlc_sc(data: &[u8]) {
    use bacnet::bvlc_sc::{BvlcSc, Payload};
    match BvlcSc::decode(data) {
        Ok(m) => {
            let mut again = Vec::new();
            m.encode(&mut again).unwrap_or_else(|e| panic!("{m:?} decoded but does not encode: {e}"));
            assert_eq!(again, data, "{m:?} does not encode back to its octets");
        }
        Err(e) => {
            if let Some(nak) = BvlcSc::nak(&e, "details") {
                let mut out = Vec::new();
                nak.encode(&mut out).expect("a NAK encodes");
                let back = BvlcSc::decode(&out).expect("a NAK decodes");
                let Payload::Result { function, nak: Some(n) } = back.payload else { panic!("{back:?}") };
                assert_eq!((Some((function, back.message_id)), u32::from(n.code)), (e.nak_for(), e.code.0));
            }
        }
    }
}

/// The BACnet/SC hub function (`bacnet::sc::hub`) fed frames from four
/// WebSockets: each input is chunks of `[socket, seconds, length, frame…]`
/// (a socket index with bit 0x80 set closes it and opens another). Nothing
/// panics; one frame never makes more copies than there are connections
/// plus an answer; a node is never listed twice.
pub fn check_sc_hub(data: &[u8]) {
    use bacnet::bvlc_sc::ConnectInfo;
    use bacnet::sc::connection::ConnectionConfig;
    use bacnet::sc::hub::{Hub, HubConfig};
    let local = ConnectInfo { vmac: [2, 0, 0, 0, 0, 9], uuid: [9; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    let mut hub = Hub::new(HubConfig { max_connections: 4, ..HubConfig::new(ConnectionConfig::new(local)) });
    let mut now = core::time::Duration::ZERO;
    let mut sockets: Vec<u32> = (0..4).filter_map(|_| hub.open(now)).collect();
    let mut rest = data;
    while let [socket, seconds, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (frame, next) = tail.split_at(n);
        rest = next;
        now += core::time::Duration::from_secs(u64::from(*seconds % 32));
        let i = usize::from(socket & 0x03);
        if socket & 0x80 != 0 {
            if let Some(id) = sockets.get(i).copied() {
                hub.close(id);
                sockets.remove(i);
            }
            sockets.extend(hub.open(now));
            continue;
        }
        hub.handle_timeout(now);
        if let Some(id) = sockets.get(i).copied() {
            hub.handle_frame(now, id, frame);
        }
        let mut sent = 0;
        while hub.poll_transmit().is_some() {
            sent += 1;
        }
        assert!(sent <= 4 + 2, "{sent} frames for one received");
        while let Some(id) = hub.poll_closed() {
            hub.close(id);
            sockets.retain(|s| *s != id);
            sockets.extend(hub.open(now));
        }
        let mut vmacs: Vec<_> = hub.nodes().map(|(v, _)| v).collect();
        let listed = vmacs.len();
        vmacs.sort();
        vmacs.dedup();
        assert_eq!(vmacs.len(), listed, "a node listed twice");
        assert!(hub.connections() <= 4);
    }
}

/// A node switch: each chunk is `[where, seconds, len, frame…]`; `where`
/// bit 7: through the hub (Address-Resolution and its answers), else one
/// of three direct connections (bit 6: it closes and a new one is taken);
/// bit 5: first send an NPDU to the frame's first VMAC-like octets.
pub fn check_sc_switch(data: &[u8]) {
    use bacnet::bvlc_sc::ConnectInfo;
    use bacnet::sc::connection::ConnectionConfig;
    use bacnet::sc::switch::{NodeSwitch, SwitchConfig};
    let local = ConnectInfo { vmac: [2, 0, 0, 0, 0, 9], uuid: [9; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    let mut config = SwitchConfig::new(ConnectionConfig::new(local), vec!["wss://127.0.0.1:4443/".into()], true);
    config.max_connections = 4;
    let mut switch = NodeSwitch::new(config);
    let mut now = core::time::Duration::ZERO;
    let mut sockets: Vec<u32> = (0..3).filter_map(|_| switch.accepted(now)).collect();
    let mut rest = data;
    while let [place, seconds, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (frame, next) = tail.split_at(n);
        rest = next;
        now += core::time::Duration::from_secs(u64::from(*seconds % 32));
        switch.handle_timeout(now);
        if place & 0x20 != 0
            && let Some(vmac) = frame.get(..6).and_then(|v| <[u8; 6]>::try_from(v).ok())
        {
            switch.send_npdu(now, vmac, b"npdu");
        }
        if place & 0x80 != 0 {
            switch.handle_hub_message(now, frame);
        } else {
            let i = usize::from(place & 0x03) % 3;
            if place & 0x40 != 0 {
                if let Some(id) = sockets.get(i).copied() {
                    switch.closed(now, id);
                    sockets.remove(i);
                }
                sockets.extend(switch.accepted(now));
            } else if let Some(id) = sockets.get(i).copied() {
                switch.handle_frame(now, id, frame);
            }
        }
        let mut actions = 0;
        while let Some(a) = switch.poll_action() {
            actions += 1;
            match a {
                // The host's part: an open of ours fails or succeeds by turns.
                bacnet::sc::switch::SwitchAction::Open(id, uris) => {
                    assert!(!uris.is_empty(), "an open with no URI");
                    if now.as_secs().is_multiple_of(2) { switch.opened(now, id) } else { switch.open_failed(now, id) }
                }
                bacnet::sc::switch::SwitchAction::Close(id) => sockets.retain(|s| *s != id),
                _ => {}
            }
        }
        assert!(actions <= 16, "{actions} actions for one frame");
        while switch.poll_up().is_some() {}
        assert!(switch.connected().count() <= 4);
    }
}

/// One service body through codec `T`.
pub fn check_service<T: ServiceCodec + PartialEq + Debug>(body: &[u8]) {
    round_trip!(core::any::type_name::<T>(), body, T::decode, T::to_vec);
}

/// Where a codec's body travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// The service request of an unsegmented Confirmed-Request.
    Request(C),
    /// The body of an unsegmented ComplexACK.
    Ack(C),
    /// The service request of an Unconfirmed-Request.
    Unconfirmed(U),
    /// The body of an Error PDU for this service, which has its own error
    /// production.
    Error(C),
    /// The body of an Error PDU for every other service (`Error`).
    AnyError,
    /// A production found inside service bodies, never alone in a PDU.
    Part,
}

use Carrier::*;

/// A service codec the fuzz targets drive.
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// The Rust type.
    pub name: &'static str,
    /// Where its body travels.
    pub carrier: Carrier,
    /// [`check_service`] for that type.
    pub check: fn(&[u8]),
    /// True when the octets decode as that type (for choosing seeds).
    pub decodes: fn(&[u8]) -> bool,
}

macro_rules! codecs {
    ($($ty:ty => $carrier:expr;)*) => {
        /// Every codec in `bacnet::services`. Adding a service is one line.
        pub static CODECS: &[Codec] = &[
            $(Codec {
                name: stringify!($ty),
                carrier: $carrier,
                check: check_service::<$ty>,
                decodes: |b| <$ty>::decode(b).is_ok(),
            },)*
        ];
    };
}

codecs! {
    WhoIs => Unconfirmed(U::WHO_IS);
    IAm => Unconfirmed(U::I_AM);
    WhoHas => Unconfirmed(U::WHO_HAS);
    IHave => Unconfirmed(U::I_HAVE);
    ReadPropertyRequest => Request(C::READ_PROPERTY);
    ReadPropertyAck => Ack(C::READ_PROPERTY);
    ReadPropertyMultipleRequest => Request(C::READ_PROPERTY_MULTIPLE);
    ReadPropertyMultipleAck => Ack(C::READ_PROPERTY_MULTIPLE);
    WritePropertyRequest => Request(C::WRITE_PROPERTY);
    WritePropertyMultipleRequest => Request(C::WRITE_PROPERTY_MULTIPLE);
    WritePropertyMultipleError => Error(C::WRITE_PROPERTY_MULTIPLE);
    BacnetError => AnyError;
    SubscribeCOVRequest => Request(C::SUBSCRIBE_COV);
    SubscribeCOVPropertyRequest => Request(C::SUBSCRIBE_COV_PROPERTY);
    COVNotification => Request(C::CONFIRMED_COV_NOTIFICATION);
    COVNotification => Unconfirmed(U::UNCONFIRMED_COV_NOTIFICATION);
    ReadRangeRequest => Request(C::READ_RANGE);
    ReadRangeAck => Ack(C::READ_RANGE);
    DeviceCommunicationControlRequest => Request(C::DEVICE_COMMUNICATION_CONTROL);
    ReinitializeDeviceRequest => Request(C::REINITIALIZE_DEVICE);
    TimeSynchronizationRequest => Unconfirmed(U::TIME_SYNCHRONIZATION);
    UTCTimeSynchronizationRequest => Unconfirmed(U::UTC_TIME_SYNCHRONIZATION);
    PropertyReference => Part;
    PropertyValue => Part;
    ObjectPropertyReference => Part;
    ReadAccessSpecification => Part;
    ReadAccessResult => Part;
    ReadResult => Part;
    WriteAccessSpecification => Part;
    COVSubscription => Part;
    Recipient => Part;
    RecipientProcess => Part;
    // Appended, so the seeds' selector octets keep naming their codecs.
    AtomicReadFileRequest => Request(C::ATOMIC_READ_FILE);
    AtomicReadFileAck => Ack(C::ATOMIC_READ_FILE);
    AtomicWriteFileRequest => Request(C::ATOMIC_WRITE_FILE);
    AtomicWriteFileAck => Ack(C::ATOMIC_WRITE_FILE);
    EventNotification => Request(C::CONFIRMED_EVENT_NOTIFICATION);
    EventNotification => Unconfirmed(U::UNCONFIRMED_EVENT_NOTIFICATION);
    AcknowledgeAlarmRequest => Request(C::ACKNOWLEDGE_ALARM);
    GetAlarmSummaryAck => Ack(C::GET_ALARM_SUMMARY);
    GetEnrollmentSummaryRequest => Request(C::GET_ENROLLMENT_SUMMARY);
    GetEnrollmentSummaryAck => Ack(C::GET_ENROLLMENT_SUMMARY);
    GetEventInformationRequest => Request(C::GET_EVENT_INFORMATION);
    GetEventInformationAck => Ack(C::GET_EVENT_INFORMATION);
    SubscribeCOVPropertyMultipleRequest => Request(C::SUBSCRIBE_COV_PROPERTY_MULTIPLE);
    COVNotificationMultiple => Request(C::CONFIRMED_COV_NOTIFICATION_MULTIPLE);
    COVNotificationMultiple => Unconfirmed(U::UNCONFIRMED_COV_NOTIFICATION_MULTIPLE);
    NotificationParameters => Part;
    TimeStamp => Part;
    SubscribeCOVPropertyMultipleError => Error(C::SUBSCRIBE_COV_PROPERTY_MULTIPLE);
    // Schedule and Calendar property values (written with WriteProperty).
    CalendarEntry => Part;
    DateRange => Part;
    TimeValue => Part;
    SpecialEvent => Part;
    DeviceObjectPropertyReference => Part;
    CreateObjectRequest => Request(C::CREATE_OBJECT);
    CreateObjectAck => Ack(C::CREATE_OBJECT);
    CreateObjectError => Error(C::CREATE_OBJECT);
    DeleteObjectRequest => Request(C::DELETE_OBJECT);
    COVMultipleSubscription => Part;
}

/// The codec for an APDU's body and the body, when this crate has one. A
/// segment carries only part of a body, so segmented PDUs have none.
pub fn codec_for<'a>(apdu: &Apdu<'a>) -> Option<(&'static Codec, &'a [u8])> {
    let find = |c: Carrier| CODECS.iter().find(|k| k.carrier == c);
    match *apdu {
        Apdu::ConfirmedRequest(r) if r.segment.is_none() => Some((find(Request(r.service))?, r.body)),
        Apdu::UnconfirmedRequest { service, body } => Some((find(Unconfirmed(service))?, body)),
        Apdu::ComplexAck(a) if a.segment.is_none() => Some((find(Ack(a.service))?, a.body)),
        Apdu::Error { service, body, .. } => Some((find(Error(service)).or_else(|| find(AnyError))?, body)),
        _ => None,
    }
}

/// The `service` target: the first octet selects a codec (modulo the number
/// of codecs), the rest is its body.
pub fn check_selected_service(data: &[u8]) {
    if let Some((selector, body)) = data.split_first() {
        (CODECS[*selector as usize % CODECS.len()].check)(body)
    }
}

/// The `datagram` target: every layer of a BACnet/IP datagram, as far as it
/// decodes, each through its own check.
pub fn check_datagram(data: &[u8]) {
    check_bvll(data);
    let Ok(bvll) = Bvll::decode(data) else { return };
    let Some(npdu) = bvll.npdu() else { return };
    check_npdu(npdu);
    let Ok(Npdu { payload: NpduPayload::Apdu(apdu), .. }) = Npdu::decode(npdu) else { return };
    check_apdu(apdu);
    let Ok(apdu) = Apdu::decode(apdu) else { return };
    if let Some((codec, body)) = codec_for(&apdu) {
        (codec.check)(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    type Check = fn(&[u8]);

    const TARGETS: [(&str, Check); 15] = [
        ("apdu", check_apdu),
        ("npdu", check_npdu),
        ("bvll", check_bvll),
        ("value", check_value),
        ("read_records", check_read_records),
        ("router", check_router),
        ("bbmd", check_bbmd),
        ("bvll6", check_bvll6),
        ("bbmd6", check_bbmd6),
        ("bvlc_sc", check_bvlc_sc),
        ("sc_hub", check_sc_hub),
        ("service", check_selected_service),
        ("datagram", check_datagram),
        ("segmentation", check_segmentation),
        ("ethernet", check_ethernet),
    ];

    /// The seed corpora are small, present for every target, and pass their
    /// target's checks (so a failing seed is a regression, not a fuzz find).
    #[test]
    fn every_seed_passes_its_targets_checks() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
        for (target, check) in TARGETS {
            let files: Vec<_> = std::fs::read_dir(seeds.join(target))
                .unwrap_or_else(|e| panic!("seeds/{target}: {e}"))
                .map(|e| e.unwrap().path())
                .collect();
            assert!((5..64).contains(&files.len()), "seeds/{target} has {} files", files.len());
            for f in files {
                check(&std::fs::read(&f).unwrap());
            }
        }
    }

    /// A seed of the `service` target named after a codec selects that
    /// codec with its first octet and decodes as it.
    #[test]
    fn named_service_seeds_select_their_codec() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/service");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if !CODECS.iter().any(|c| c.name == name) {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let codec = &CODECS[bytes[0] as usize % CODECS.len()];
            assert_eq!(codec.name, name, "seeds/service/{name}: selector {}", bytes[0]);
            assert!((codec.decodes)(&bytes[1..]), "seeds/service/{name} does not decode");
        }
    }

    #[test]
    fn every_codec_is_reachable_from_the_service_target() {
        assert!(CODECS.len() <= 256);
        let mut names: Vec<_> = CODECS.iter().map(|c| (c.name, c.carrier)).collect();
        names.sort_by_key(|(n, _)| *n);
        names.dedup();
        assert_eq!(names.len(), CODECS.len(), "a codec is listed twice for the same carrier");
    }

    #[test]
    fn the_datagram_target_finds_the_codec_for_each_carrier() {
        let apdu = Apdu::decode(&[0x00, 0x05, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55]).unwrap();
        assert_eq!(codec_for(&apdu).unwrap().0.name, "ReadPropertyRequest");
        let error = Apdu::decode(&[0x50, 0x01, 0x10, 0x91, 0x01, 0x91, 0x1F]).unwrap();
        assert_eq!(codec_for(&error).unwrap().0.name, "WritePropertyMultipleError");
        let error = Apdu::decode(&[0x50, 0x01, 0x0C, 0x91, 0x01, 0x91, 0x1F]).unwrap();
        assert_eq!(codec_for(&error).unwrap().0.name, "BacnetError");
        let segment = Apdu::decode(&[0x3C, 0x01, 0x00, 0x02, 0x0C]).unwrap();
        assert!(codec_for(&segment).is_none());
    }
}
