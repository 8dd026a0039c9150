//! The edge node's messages against bytes the Sparkplug project's own
//! protobuf (Python, `sparkplug_b_pb2`) produces, and its sequence rules.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn decode(o: &Outgoing) -> Payload {
    Payload::decode(o.payload.as_slice()).unwrap()
}

#[test]
fn ndeath_and_ddata_are_byte_for_byte_the_reference_encoding() {
    let mut node = EdgeNode::new("plant", "gw1", Some(2));
    let will = node.connecting(1000);
    assert_eq!(will.topic, "spBv1.0/plant/NDEATH/gw1");
    assert_eq!(will.payload, hex("08e807120b0a05626453657120085803"), "bdSeq 3 after 2");
    node.node_birth(1000, &[]);
    node.device_birth("1001", 1000, &[]);
    let data = node.device_data("1001", 1000, &[(7, PointValue::Float(21.5))]);
    assert_eq!(data.topic, "spBv1.0/plant/DDATA/gw1/1001");
    assert_eq!(data.payload, hex("08e807120c100718e8072009650000ac411802"), "seq 2 after NBIRTH 0, DBIRTH 1");
}

#[test]
fn births_restart_the_sequence_and_carry_the_connections_bd_seq() {
    let mut node = EdgeNode::new("g", "n", None);
    let will = decode(&node.connecting(1));
    assert_eq!(will.metrics[0].value, Some(MetricValue::Long(0)), "the first connection is bdSeq 0");
    assert_eq!(will.seq, None, "NDEATH has no seq");
    let point = Point {
        name: "analog-value,1/present-value".into(),
        alias: 42,
        value: PointValue::Float(1.0),
        properties: vec![("engUnit".into(), "degrees-celsius".into())],
    };
    for _ in 0..2 {
        let birth = decode(&node.node_birth(5, &[]));
        assert_eq!(birth.seq, Some(0));
        assert_eq!(birth.metrics[0].name.as_deref(), Some(BD_SEQ));
        assert_eq!(birth.metrics[0].value, Some(MetricValue::Long(0)), "a rebirth keeps the connection's bdSeq");
        assert_eq!(birth.metrics[1].name.as_deref(), Some(REBIRTH));
        let device = decode(&node.device_birth("1001", 5, std::slice::from_ref(&point)));
        assert_eq!(device.seq, Some(1));
        let m = &device.metrics[0];
        assert_eq!((m.alias, m.datatype, m.name.as_deref()), (Some(42), Some(9), Some(point.name.as_str())));
        assert_eq!(m.properties.as_ref().unwrap().keys, ["engUnit"]);
    }
    for expected in 2..=255u64 {
        assert_eq!(decode(&node.device_data("1001", 6, &[(42, PointValue::Float(2.0))])).seq, Some(expected));
    }
    assert_eq!(decode(&node.device_death("1001", 7)).seq, Some(0), "255 wraps to 0");
    let null = decode(&node.device_data("1001", 8, &[(42, PointValue::Null(DataType::Float))]));
    assert_eq!((null.metrics[0].is_null, null.metrics[0].value.as_ref()), (Some(true), None));
}

#[test]
fn bd_seq_wraps_after_255() {
    let mut node = EdgeNode::new("g", "n", Some(255));
    node.connecting(0);
    assert_eq!(node.bd_seq(), 0);
}

#[test]
fn commands_are_read_only_from_this_nodes_topics() {
    let node = EdgeNode::new("plant", "gw1", Some(0));
    let rebirth = hex("0805121a0a144e6f646520436f6e74726f6c2f52656269727468200b7001");
    assert_eq!(node.command("spBv1.0/plant/NCMD/gw1", &rebirth), Ok(Command::Rebirth));
    for other in
        ["spBv1.0/plant/NCMD/gw2", "spBv1.0/other/NCMD/gw1", "spBv1.0/plant/DCMD/gw1", "spBv1.0/plant/DCMD/gw1/a/b"]
    {
        assert_eq!(node.command(other, &rebirth), Err(CommandError::NotOurs), "{other}");
    }
    let write = Payload {
        metrics: vec![
            Metric { alias: Some(42), value: Some(MetricValue::Float(3.5)), ..Metric::default() },
            Metric { name: Some("binary-value,1/present-value".into()), is_null: Some(true), ..Metric::default() },
        ],
        ..Payload::default()
    };
    assert_eq!(
        node.command("spBv1.0/plant/DCMD/gw1/1001", &write.encode_to_vec()),
        Ok(Command::Device {
            device: "1001".into(),
            metrics: vec![
                CommandMetric { metric: MetricRef::Alias(42), value: Some(MetricValue::Float(3.5)) },
                CommandMetric { metric: MetricRef::Name("binary-value,1/present-value".into()), value: None },
            ]
        })
    );
    assert!(matches!(node.command("spBv1.0/plant/DCMD/gw1/1001", &[0xff, 0xff]), Err(CommandError::Payload(_))));
    let unnamed = Payload { metrics: vec![Metric::default()], ..Payload::default() };
    assert_eq!(node.command("spBv1.0/plant/DCMD/gw1/1001", &unnamed.encode_to_vec()), Err(CommandError::Unnamed));
}

proptest::proptest! {
    /// Whatever arrives on a command topic is a command or a refusal, never a panic.
    #[test]
    fn any_payload_on_a_command_topic_is_read_or_refused(payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let node = EdgeNode::new("plant", "gw1", Some(0));
        for topic in ["spBv1.0/plant/NCMD/gw1", "spBv1.0/plant/DCMD/gw1/1001"] {
            match node.command(topic, &payload) {
                Ok(_) | Err(CommandError::Payload(_)) | Err(CommandError::Unnamed) => {}
                Err(CommandError::NotOurs) => panic!("{topic} is ours"),
            }
        }
    }
}
