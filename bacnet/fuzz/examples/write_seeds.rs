//! Writes the seed corpora in `seeds/<target>/` from golden vectors: the
//! BACnet/IP frames captured from bacpypes3 and rusty-bacnet
//! (`../tests/it/vectors/captured.txt`), the Annex F examples
//! (`../tests/it/vectors/standard.txt`), the BVLL and network-layer messages
//! of Annex J and Clause 6.4, bacnet-stack's NPDUs from `shared/vectors`, and
//! the encoding examples of Clause 20.2; and for the `segmentation` target,
//! the scenarios of `bacnet_fuzz::segmentation::seed_scenarios`, encoded.
//!
//! ```text
//! cargo run --manifest-path bacnet/fuzz/Cargo.toml --example write_seeds
//! ```
//!
//! Seeds of the `service` target start with the codec's index in
//! `bacnet_fuzz::CODECS`; rerun this after reordering that list.

use bacnet::apdu::Apdu;
use bacnet::bvll::Bvll;
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::services::{ReadPropertyAck, ServiceCodec};
use bacnet::{ObjectIdentifier, PropertyIdentifier as P, read_records};
use bacnet_fuzz::{CODECS, codec_for};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// At most this many seeds per target (the corpora are committed).
const MAX_SEEDS: usize = 48;

/// Seeds of one target, named, without duplicate contents.
#[derive(Default)]
struct Corpus {
    seeds: BTreeMap<String, Vec<u8>>,
    contents: BTreeSet<Vec<u8>>,
    keys: BTreeSet<String>,
}

impl Corpus {
    /// Add unless full, already present, or another seed has the same `key`
    /// (what makes a seed different for this target).
    fn add(&mut self, key: impl Into<String>, name: &str, bytes: Vec<u8>) {
        let key = key.into();
        if self.seeds.len() >= MAX_SEEDS || self.contents.contains(&bytes) || !self.keys.insert(key) {
            return;
        }
        let name: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).take(72).collect();
        self.contents.insert(bytes.clone());
        self.seeds.insert(name, bytes);
    }

    fn write(&self, dir: &Path) {
        if dir.exists() {
            std::fs::remove_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(dir).unwrap();
        for (name, bytes) in &self.seeds {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        println!("{}: {} seeds", dir.display(), self.seeds.len());
    }
}

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

/// (name, octets) of every block in captured.txt or standard.txt.
fn captured(text: &str) -> Vec<(String, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(n.trim().to_string());
        } else if let Some(h) = line.strip_prefix("hex:") {
            frames.push((name.take().expect("a name before each hex line"), hex(h)));
        }
    }
    frames
}

/// Annex J.2: one message of every BVLC function the captures lack.
const BVLL: &[(&str, &str)] = &[
    ("annex-j-bvlc-result-nak", "81 00 00 06 00 30"),
    ("annex-j-write-bdt-2", "81 01 00 18 c0a80101bac0ffffffff c0a80201bac0ffffffff"),
    ("annex-j-read-bdt", "81 02 00 04"),
    ("annex-j-read-bdt-ack-1", "81 03 00 0e c0a80101bac0ffffff00"),
    ("annex-j-forwarded-npdu-who-is", "81 04 00 12 c0a8010abac0 0120ffff00ff1008"),
    ("annex-j-register-foreign-device", "81 05 00 06 00 3c"),
    ("annex-j-read-fdt", "81 06 00 04"),
    ("annex-j-read-fdt-ack-1", "81 07 00 0e 0a000007bac1 003c 005a"),
    ("annex-j-delete-fdt-entry", "81 08 00 0a 0a000007bac1"),
    ("annex-j-distribute-broadcast-who-is", "81 09 00 0c 0120ffff00ff1008"),
    ("annex-j-secure-bvll", "81 0c 00 08 deadbeef"),
];

/// Clause 6.2 and 6.4: routed NPDUs and every network-layer message.
const NPDU: &[(&str, &str)] = &[
    ("bacnet-stack-ethernet-who-is-global", "01 20 ffff 00 ff 1008"),
    ("bacnet-stack-mstp-readproperty", "01 04 0003010c0c00800001 1955"),
    ("clause-6-2-routed-dnet-snet", "01 2f 0005 01 0a 0007 06 c0a80102bac0 fe 1008"),
    ("clause-6-2-from-remote-snet", "01 09 0007 01 0a 1008"),
    ("clause-6-4-who-is-router", "01 80 00"),
    ("clause-6-4-who-is-router-dnet", "01 80 00 0005"),
    ("clause-6-4-i-am-router", "01 80 01 0005 0006"),
    ("clause-6-4-i-could-be-router", "01 80 02 0005 0a"),
    ("clause-6-4-reject-message", "01 80 03 01 0009"),
    ("clause-6-4-router-busy", "01 80 04 0005"),
    ("clause-6-4-router-available", "01 80 05"),
    ("clause-6-4-initialize-routing-table", "01 84 06 02 0005 01 00 0006 02 02 abcd"),
    ("clause-6-4-initialize-routing-table-ack", "01 80 07 01 0005 01 00"),
    ("clause-6-4-establish-connection", "01 80 08 0005 3c"),
    ("clause-6-4-disconnect-connection", "01 80 09 0005"),
    ("clause-6-4-what-is-network-number", "01 80 12"),
    ("clause-6-4-network-number-is", "01 80 13 0005 01"),
    ("clause-6-2-proprietary-message", "01 80 80 0104 dead"),
];

/// Annex F and Clause 20.1: PDU types and segmentation forms the captures
/// may lack.
const APDU: &[(&str, &str)] = &[
    ("annex-f-3-5-readproperty", "00 00 01 0c 0c00000005 1955"),
    ("clause-20-1-segmented-request", "0e 75 05 00 04 0c 0c00"),
    ("clause-20-1-segment-ack-nak-srv", "43 05 00 04"),
    ("clause-20-1-abort-client", "70 00 0a"),
];

/// Clause 20.2 examples and constructed data.
const VALUE: &[(&str, &str)] = &[
    ("clause-20-2-null", "00"),
    ("clause-20-2-boolean-true", "11"),
    ("clause-20-2-unsigned-72", "21 48"),
    ("clause-20-2-signed-72", "31 48"),
    ("clause-20-2-real-72", "44 42900000"),
    ("clause-20-2-double-72", "55 08 4052000000000000"),
    ("clause-20-2-octet-string", "63 1234ff"),
    ("clause-20-2-character-string", "75 19 00 546869732069732061204241436e657420737472696e6721"),
    ("clause-20-2-bit-string", "82 03 a8"),
    ("clause-20-2-enumerated-0", "91 00"),
    ("clause-20-2-date", "a4 5b011804"),
    ("clause-20-2-time", "b4 11232d11"),
    ("clause-20-2-object-identifier", "c4 0080000f"),
    ("constructed-nested-context", "0e 1e 29 01 2c 00800001 1f 0f 91 03"),
];

/// Parts of service bodies, from the Annex F examples, and the service
/// bodies the captures lack.
const SERVICE: &[(&str, &str)] = &[
    ("PropertyReference", "09 55"),
    ("PropertyValue", "09 55 2e 44 42860000 2f 39 08"),
    ("ObjectPropertyReference", "0c 00000005 19 55"),
    ("ReadAccessSpecification", "0c 00000010 1e 09 55 09 67 1f"),
    ("ReadAccessResult", "0c 00000010 1e 29 55 4e 44 4290999a 4f 29 67 4e 91 00 4f 1f"),
    ("ReadResult", "29 55 4e 44 4290999a 4f"),
    ("WriteAccessSpecification", "0c 00800005 1e 09 55 2e 44 42860000 2f 1f"),
    ("WritePropertyMultipleError", "0e 91 02 91 20 0f 1e 0c 00800001 19 55 1f"),
    ("SubscribeCOVPropertyRequest", "09 12 1c 00800001 29 01 39 3c 4e 09 55 4f 5c 3f800000"),
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |file: &str| std::fs::read_to_string(root.join("../tests/it/vectors").join(file)).unwrap();
    let frames = captured(&read("captured.txt"));
    // ASHRAE 135 Annex F examples, all at the APDU layer.
    let examples = captured(&read("standard.txt"));
    let [
        mut bvll,
        mut npdu,
        mut apdu,
        mut value,
        mut service,
        mut datagram,
        mut segmentation,
        mut records,
        mut router,
        mut bbmd,
        mut bvll6,
        mut bbmd6,
        mut bvlc_sc,
        mut sc_hub,
        mut sc_switch,
    ] = std::array::from_fn::<Corpus, 15, _>(|_| Corpus::default());
    // SC hub: two nodes connect (distinct VMACs and UUIDs), then each
    // BVLC-SC seed from the first, then a broadcast and a unicast.
    let connect = |n: u8| {
        let mut m = hex("06 00 0001");
        m.extend([2, 0, 0, 0, 0, n]);
        m.extend([n; 16]);
        m.extend(hex("0640 05d9"));
        m
    };
    let chunk = |socket: u8, frame: &[u8]| [&[socket, 0, frame.len() as u8][..], frame].concat();
    let hello = [chunk(0, &connect(1)), chunk(1, &connect(2))].concat();
    let traffic = [
        hex("01 04 0002 ffffffffffff 0120ffff00ff1008"),
        hex("01 04 0003 020000000002 01001008"),
        hex("05 00 0004"),
        hex("02 00 0005"),
        hex("0a 00 0006"),
        hex("08 00 0007"),
    ];
    for (i, m) in traffic.iter().enumerate() {
        sc_hub.add(format!("hub{i}"), &format!("sc-hub-{i}"), [hello.clone(), chunk(0, m)].concat());
    }
    sc_hub.add("hub-dup", "sc-hub-duplicate", [chunk(0, &connect(1)), chunk(1, &connect(1))].concat());
    // SC switch: a peer connects directly and sends an NPDU; the hub brings
    // an Address-Resolution, an ACK with URIs for ours, a NAK.
    let direct = [chunk(0, &connect(1)), chunk(0, &hex("01 00 0002 01001008"))].concat();
    sc_switch.add("switch-direct", "sc-switch-direct", direct.clone());
    sc_switch.add("switch-resolve", "sc-switch-resolution", chunk(0x80, &hex("02 08 0005 020000000007")));
    let ours = chunk(0x20 | 0x80, &hex("020000000007 00"));
    let ack = chunk(0x80, &[hex("03 08 0001 020000000007"), b"wss://10.0.0.7:4443/".to_vec()].concat());
    sc_switch.add("switch-ack", "sc-switch-ack", [ours.clone(), ack].concat());
    let nak = chunk(0x80, &hex("00 08 0001 020000000007 02 00 0000 0007 0083"));
    sc_switch.add("switch-nak", "sc-switch-nak", [ours, nak].concat());
    sc_switch.add("switch-close", "sc-switch-close", [direct, chunk(0x40, &[])].concat());
    // BVLC-SC: one of every message, with and without VMACs and options,
    // and the malformed ones a node must answer.
    for (i, m) in [
        "06 00 1234 021122334455 7e570001020304050607 08090a0b0c0d 0640 05d9",
        "07 00 1234 02aabbccddee 7e570001020304050607 08090a0b0c0e 0640 05d9",
        "01 09 0007 02aabbccddee 41 01200ffff0ff 1008",
        "01 0c 0008 021122334455 02aabbccddee 0120 0c 00 01 00 00 00",
        "01 04 0009 ffffffffffff 0120ffff00ff 1008",
        "00 00 0042 06 00",
        "00 00 0042 06 01 00 0007 0097 6475706c6963617465",
        "04 00 0001 01 01 0640 05d9",
        "03 04 0002 021122334455 7773733a2f2f31302e302e302e353a34343433",
        "02 04 0003 021122334455",
        "05 00 0004",
        "08 00 0005",
        "09 00 0005",
        "0a 00 0006",
        "0b 00 0006",
        "0c 02 0003 7f0005 0400 01 02 03 0555 07 aabb",
        "01 06 0009 021122334455 49 1008",
        "01 06 0009 021122334455 bf0003040001 29 0000 1008",
        "0d 04 0001 021122334455",
        "01 10 0001 1008",
        "01 02 0001 a1",
        "04 00 0001 03 00 0640 05d9",
    ]
    .iter()
    .enumerate()
    {
        bvlc_sc.add(format!("sc{i}"), &format!("bvlc-sc-{i}"), hex(m));
    }
    for (name, seed) in bvll6_messages() {
        bvll6.add(name, name, seed.clone());
    }
    // IPv6 BBMD: a registration from an allowed foreign device, then each
    // BVLL6 seed from it, from a peer, and over the link's group.
    let register6 = hex("82090009 000009 003c");
    for (name, b) in bvll6_messages() {
        let Ok(len) = u8::try_from(b.len()) else { continue };
        for (who, source) in [("fd", 0x89u8), ("peer", 0x01), ("link", 0x47)] {
            let seed = [&[0x89, 0, register6.len() as u8][..], &register6, &[source, 1, len], &b].concat();
            bbmd6.add(format!("{name}-{who}"), &format!("{name}-from-{who}"), seed);
        }
    }

    for (name, scenario) in bacnet_fuzz::segmentation::seed_scenarios() {
        segmentation.add(name, name, scenario.encode());
    }

    for (name, hex_) in BVLL {
        bvll.add(*name, name, hex(hex_));
        datagram.add(*name, name, hex(hex_));
    }
    for (name, hex_) in NPDU {
        npdu.add(*name, name, hex(hex_));
    }
    for (name, hex_) in APDU {
        apdu.add(*name, name, hex(hex_));
    }
    for (name, hex_) in VALUE {
        value.add(*name, name, hex(hex_));
    }
    for (name, hex_) in SERVICE {
        let i = CODECS.iter().position(|c| c.name == *name).unwrap_or_else(|| panic!("no codec {name}"));
        let seed = [&[i as u8][..], &hex(hex_)].concat();
        assert!((CODECS[i].decodes)(&seed[1..]), "{name} seed does not decode");
        service.add(*name, name, seed);
    }

    // The APDUs of every captured frame, then of every standard example.
    let mut apdus: Vec<(&str, Vec<u8>)> = Vec::new();
    for (name, bytes) in &frames {
        let b = Bvll::decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        bvll.add(format!("fn{}", b.function().0), name, bytes.clone());
        let Some(n) = b.npdu() else { continue };
        let decoded = Npdu::decode(n).unwrap_or_else(|e| panic!("{name}: {e}"));
        npdu.add(format!("{:02x}{:?}", n[1], decoded.destination.map(|d| d.mac.len())), name, n.to_vec());
        let NpduPayload::Apdu(a) = decoded.payload else { continue };
        let pdu = Apdu::decode(a).unwrap_or_else(|e| panic!("{name}: {e}"));
        datagram.add(kind(&pdu, a), name, bytes.clone());
        apdus.push((name, a.to_vec()));
    }
    apdus.extend(examples.iter().map(|(name, a)| (name.as_str(), a.clone())));

    // Service bodies, one per codec first, then a second one per codec.
    let mut bodies = Vec::new();
    for (name, a) in &apdus {
        let pdu = Apdu::decode(a).unwrap_or_else(|e| panic!("{name}: {e}"));
        apdu.add(kind(&pdu, a), name, a.clone());
        if let Some((c, body)) = codec_for(&pdu) {
            let i = CODECS.iter().position(|k| core::ptr::eq(k, c)).unwrap();
            if (c.decodes)(body) {
                bodies.push((i, *name, [&[i as u8][..], body].concat()));
            } else {
                println!("{name}: the body does not decode as {}", c.name);
            }
        }
        if let Apdu::ComplexAck(ack) = pdu
            && ack.service == bacnet::ConfirmedServiceChoice::READ_PROPERTY
            && ack.segment.is_none()
            && let Ok(rp) = ReadPropertyAck::decode(ack.body)
        {
            let mut v = Vec::new();
            rp.value.encode(&mut v);
            value.add(format!("{}", rp.property.0), name, v);
        }
    }
    // Records: each value seed as one result, then a few lists of targets
    // with errors and an expanded ALL.
    for (name, v) in &value.seeds {
        let Ok(v) = bacnet::AnyValue::from_bytes(v) else { continue };
        let mut out = Vec::new();
        read_records::write_count(&mut out, 1);
        read_records::write_result(&mut out, AV1, P::PRESENT_VALUE, None, Ok(&v));
        records.add(format!("value-{name}"), &format!("value-{name}"), out);
    }
    for (name, seed) in record_lists() {
        records.add(name, name, seed);
    }
    // Router: each NPDU seed arriving on each port, then a learned route
    // and traffic along it.
    for (name, seed) in router_sequences() {
        router.add(name, name, seed);
    }
    // BBMD: a registration from an allowed foreign device, then each BVLL
    // seed from it, from a peer and from a local station.
    let register = hex("81050006 003c");
    for (name, b) in &bvll.seeds {
        let Ok(len) = u8::try_from(b.len()) else { continue };
        for (who, source) in [("fd", 0x85u8), ("peer", 0x01), ("local", 0x47)] {
            let seed = [&[0x85, 0, register.len() as u8][..], &register, &[source, 1, len], b].concat();
            bbmd.add(format!("{name}-{who}"), &format!("{name}-from-{who}"), seed);
        }
    }
    for (name, n) in &npdu.seeds {
        for port in 1..=3u8 {
            let Ok(len) = u8::try_from(n.len()) else { continue };
            let seed = [&[port, 5, len][..], n].concat();
            router.add(format!("{name}-{port}"), &format!("{name}-port{port}"), seed);
        }
    }
    for round in 0..2 {
        for (i, name, seed) in &bodies {
            service.add(format!("codec{i}-{round}"), name, seed.clone());
        }
    }

    for (target, corpus) in [
        ("bvll", bvll),
        ("npdu", npdu),
        ("apdu", apdu),
        ("value", value),
        ("service", service),
        ("datagram", datagram),
        ("segmentation", segmentation),
        ("read_records", records),
        ("router", router),
        ("bbmd", bbmd),
        ("bvll6", bvll6),
        ("bbmd6", bbmd6),
        ("bvlc_sc", bvlc_sc),
        ("sc_hub", sc_hub),
        ("sc_switch", sc_switch),
    ] {
        corpus.write(&root.join("seeds").join(target));
    }
}

const AV1: ObjectIdentifier = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: 1 };

/// Record lists of several targets: errors, array elements, an ALL.
fn record_lists() -> Vec<(&'static str, Vec<u8>)> {
    use bacnet::services::BacnetError;
    use bacnet::{ErrorClass, ErrorCode, Value};
    let unknown = BacnetError { class: ErrorClass::OBJECT, code: ErrorCode::UNKNOWN_OBJECT };
    let real = bacnet::AnyValue::from(Value::Real(21.5));
    let mut mixed = Vec::new();
    read_records::write_count(&mut mixed, 1);
    read_records::write_result(&mut mixed, AV1, P::PRESENT_VALUE, None, Ok(&real));
    read_records::write_count(&mut mixed, 1);
    read_records::write_result(&mut mixed, AV1, P::PRIORITY_ARRAY, Some(8), Ok(&Value::Null.into()));
    read_records::write_count(&mut mixed, 1);
    let av9 = ObjectIdentifier { instance: 9, ..AV1 };
    read_records::write_result(&mut mixed, av9, P::PRESENT_VALUE, None, Err(&unknown));
    let mut all = Vec::new();
    read_records::write_count(&mut all, 3);
    read_records::write_result(&mut all, AV1, P::OBJECT_IDENTIFIER, None, Ok(&Value::ObjectIdentifier(AV1).into()));
    read_records::write_result(
        &mut all,
        AV1,
        P::OBJECT_NAME,
        None,
        Ok(&Value::CharacterString(bacnet::CharacterString::utf8("Zone")).into()),
    );
    read_records::write_result(&mut all, AV1, P::PRESENT_VALUE, None, Ok(&real));
    vec![("mixed-targets", mixed), ("all-expanded", all), ("empty", Vec::new())]
}

/// One of each BACnet/IPv6 BVLL function (Annex U.2).
fn bvll6_messages() -> Vec<(&'static str, Vec<u8>)> {
    use bacnet::bvll6::{Bvll6, vmac_of_instance};
    use std::net::{Ipv6Addr, SocketAddrV6};
    let a = SocketAddrV6::new(Ipv6Addr::LOCALHOST, 47808, 0, 0);
    let (me, you) = (vmac_of_instance(1001), vmac_of_instance(2002));
    let npdu: &[u8] = &[0x01, 0x00, 0x10, 0x08];
    let all = [
        ("result", Bvll6::Result { source: me, code: 0x0090 }),
        ("original-unicast", Bvll6::OriginalUnicastNpdu { source: me, destination: you, npdu }),
        ("original-broadcast", Bvll6::OriginalBroadcastNpdu { source: me, npdu }),
        ("address-resolution", Bvll6::AddressResolution { source: me, target: you }),
        (
            "forwarded-address-resolution",
            Bvll6::ForwardedAddressResolution { source: me, target: you, original_source: a },
        ),
        ("address-resolution-ack", Bvll6::AddressResolutionAck { source: you, destination: me }),
        ("virtual-address-resolution", Bvll6::VirtualAddressResolution { source: me }),
        ("virtual-address-resolution-ack", Bvll6::VirtualAddressResolutionAck { source: you, destination: me }),
        ("forwarded-npdu", Bvll6::ForwardedNpdu { source: me, original_source: a, npdu }),
        ("register-foreign-device", Bvll6::RegisterForeignDevice { source: me, ttl: 300 }),
        ("delete-fdt-entry", Bvll6::DeleteForeignDeviceTableEntry { source: me, entry: a }),
        ("distribute-broadcast", Bvll6::DistributeBroadcastToNetwork { source: me, npdu }),
    ];
    all.into_iter()
        .map(|(name, m)| {
            let mut out = Vec::new();
            m.encode(&mut out).unwrap();
            (name, out)
        })
        .collect()
}

/// Router inputs of several NPDUs: a route learned, then used; a busy
/// network; a global broadcast.
fn router_sequences() -> Vec<(&'static str, Vec<u8>)> {
    let chunk = |port: u8, from: u8, npdu: &str| {
        let n = hex(npdu);
        [&[port, from, n.len() as u8][..], &n].concat()
    };
    // I-Am-Router-To-Network 40 from port 3, then an APDU for 40:3 from port 1.
    let learned = [chunk(3, 9, "01800100 28"), chunk(1, 5, "0124002803070809ff 0000")].concat();
    // Router-Busy-To-Network 40, then the same APDU (rejected busy).
    let busy =
        [chunk(3, 9, "01800100 28"), chunk(3, 9, "01800400 28"), chunk(1, 5, "0124002803070809ff 0000")].concat();
    // A global Who-Is, and a Who-Is-Router-To-Network for an unknown network.
    let global = [chunk(1, 5, "0120ffff00ff 1008"), chunk(2, 5, "01800000 63")].concat();
    vec![("learned-route", learned), ("busy-network", busy), ("global-and-discovery", global)]
}

/// What makes an APDU different for seeding: its first octet and its codec.
fn kind(pdu: &Apdu<'_>, octets: &[u8]) -> String {
    format!("{:02x}-{}", octets[0], codec_for(pdu).map_or("", |(c, _)| c.name))
}
