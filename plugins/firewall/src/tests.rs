//! The firewall's rules against routed NPDUs as the router builds them.

use super::*;
use trellis_routing_sdk::bacnet::npdu::NetAddress;
use trellis_routing_sdk::{ApduSummary, PortId};

const IP: u16 = 1;
const TRUNK: u16 = 2;
const BMS: [u8; 6] = [127, 0, 0, 1, 0xBA, 0xC0];
const LAPTOP: [u8; 6] = [127, 0, 0, 7, 0xBA, 0xC0];

const SETTINGS: &str = r#"
default = "forward"

[[rule]]
name = "no-device-control"
action = "drop"
services = ["device-communication-control", "reinitialize-device"]

[[rule]]
name = "bms-setpoints"
action = "forward"
arrival_networks = [1]
departure_networks = [2]
services = ["write-property"]
sources = ["1:7f000001bac0"]
objects = ["analog-value,1", "analog-value,2"]

[[rule]]
name = "trunk-read-only"
action = "reject"
reject_reason = "security-error"
departure_networks = [2]
services = ["write-property", "write-property-multiple"]
"#;

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance }
}

fn request(from: &[u8], to: u16, service: ConfirmedServiceChoice, object: Option<ObjectIdentifier>) -> Verdict {
    let mut fw = Firewall::configure(SETTINGS).unwrap();
    let npdu = RoutedNpdu {
        arrival_port: PortId(1),
        arrival_network: IP,
        departure_port: PortId(2),
        departure_network: to,
        source: NetAddress { net: IP, mac: from },
        link_source: from,
        destination: Destination::Station(NetAddress { net: to, mac: &[5] }),
        priority: NetworkPriority::NORMAL,
        hop_count: 255,
        expecting_reply: true,
        content: Content::Apdu(ApduSummary {
            pdu_type: 0,
            service: Some(service.0),
            invoke_id: Some(1),
            object,
            segmented: false,
        }),
    };
    fw.decide(0, &npdu)
}

#[test]
fn reads_reach_the_trunk() {
    assert_eq!(request(&LAPTOP, TRUNK, ConfirmedServiceChoice::READ_PROPERTY, Some(av(1))), Verdict::Forward);
}

#[test]
fn the_bms_writes_its_setpoints_and_nothing_else() {
    let w = ConfirmedServiceChoice::WRITE_PROPERTY;
    assert_eq!(request(&BMS, TRUNK, w, Some(av(2))), Verdict::Forward);
    let refused = Verdict::Reject(RejectMessageReason::SECURITY_ERROR);
    assert_eq!(request(&BMS, TRUNK, w, Some(av(3))), refused);
    assert_eq!(request(&BMS, TRUNK, w, None), refused, "several objects, or none: not one of the listed");
    assert_eq!(request(&LAPTOP, TRUNK, w, Some(av(1))), refused);
    assert_eq!(request(&LAPTOP, TRUNK, ConfirmedServiceChoice::WRITE_PROPERTY_MULTIPLE, Some(av(1))), refused);
}

#[test]
fn writes_elsewhere_pass() {
    assert_eq!(request(&LAPTOP, 3, ConfirmedServiceChoice::WRITE_PROPERTY, Some(av(1))), Verdict::Forward);
}

#[test]
fn device_control_is_dropped_everywhere_and_counted_under_its_rule() {
    for s in [ConfirmedServiceChoice::DEVICE_COMMUNICATION_CONTROL, ConfirmedServiceChoice::REINITIALIZE_DEVICE] {
        assert_eq!(request(&BMS, 3, s, None), Verdict::Drop(0));
    }
    let fw = Firewall::configure(SETTINGS).unwrap();
    assert_eq!(fw.info().drop_reasons, ["no-device-control", "bms-setpoints", "trunk-read-only", "default"]);
}

#[test]
fn a_default_drop_counts_under_default() {
    let mut fw = Firewall::configure("default = \"drop\"").unwrap();
    let npdu = RoutedNpdu {
        arrival_port: PortId(1),
        arrival_network: 1,
        departure_port: PortId(2),
        departure_network: 2,
        source: NetAddress { net: 1, mac: &BMS },
        link_source: &BMS,
        destination: Destination::GlobalBroadcast,
        priority: NetworkPriority::NORMAL,
        hop_count: 255,
        expecting_reply: false,
        content: Content::NetworkMessage(trellis_routing_sdk::NetworkMessageType(0)),
    };
    assert_eq!(fw.decide(0, &npdu), Verdict::Drop(0));
}

#[test]
fn a_deny_by_object_cannot_be_dodged_by_naming_two_objects_or_segmenting() {
    let mut fw = Firewall::configure(
        "[[rule]]\nname = \"no-outputs\"\naction = \"drop\"\nservices = [\"write-property-multiple\"]\n\
         objects = [\"analog-output,*\"]",
    )
    .unwrap();
    let mut ask = |object, segmented| {
        let npdu = RoutedNpdu {
            arrival_port: PortId(1),
            arrival_network: IP,
            departure_port: PortId(2),
            departure_network: TRUNK,
            source: NetAddress { net: IP, mac: &LAPTOP },
            link_source: &LAPTOP,
            destination: Destination::Station(NetAddress { net: TRUNK, mac: &[5] }),
            priority: NetworkPriority::NORMAL,
            hop_count: 255,
            expecting_reply: true,
            content: Content::Apdu(ApduSummary {
                pdu_type: 0,
                service: Some(ConfirmedServiceChoice::WRITE_PROPERTY_MULTIPLE.0),
                invoke_id: Some(1),
                object,
                segmented,
            }),
        };
        fw.decide(0, &npdu)
    };
    let ao1 = ObjectIdentifier { object_type: ObjectType::ANALOG_OUTPUT, instance: 1 };
    assert_eq!(ask(Some(ao1), false), Verdict::Drop(0));
    assert_eq!(ask(Some(av(1)), false), Verdict::Forward, "another object alone passes");
    assert_eq!(ask(None, false), Verdict::Drop(0), "AO1 and AV1 in one request: no object named, refused");
    assert_eq!(ask(None, true), Verdict::Drop(0), "a later segment: refused");
}

#[test]
fn bad_settings_say_what_is_wrong() {
    let e = |s: &str| Firewall::configure(s).unwrap_err();
    assert!(e("[[rule]]\naction = \"explode\"").contains("unknown action \"explode\""));
    assert!(e("[[rule]]\naction = \"drop\"\nservices = [\"write-propertee\"]").contains("unknown service"));
    assert!(e("[[rule]]\nname = \"x\"\naction = \"drop\"\nsources = [\"1-abc\"]").contains("x: source \"1-abc\""));
    assert!(e("[[rule]]\naction = \"drop\"\nobjects = [\"nothing\"]").contains("TYPE,INSTANCE"));
    assert!(e("[[rule]]\naction = \"priority\"").contains("needs priority"));
    assert!(e("colour = \"red\"").contains("unknown field"));
    assert!(e("[[rule]]\naction = \"drop\"\nsources = [\"1:é1\"]").contains("NET:MAC"), "no panic on non-ASCII");
}
