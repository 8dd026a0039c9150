//! Notification Class objects (Clause 12.21) as a commissioning tool meets
//! them: `examples/notification-classes.toml` served, the classes found in
//! the Object_List, their Priority, Ack_Required and Recipient_List read
//! (by our client and by bacpypes3, which decodes every BACnetDestination),
//! Recipient_List rewritten and read back, and the refusals the standard
//! names for what may not be written.

use crate::gateway::Gateway;
use crate::peers::{free_port, python};
use crate::scratch::Scratch;
use bacnet::codec::Reader;
use bacnet::cov::Recipient;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::{Destination, ServiceCodec};
use bacnet::{AnyValue, BitString, Element, ObjectIdentifier, ObjectType, Time, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use trellis::client::{Client, ClientConfig, DeviceAddress};

fn class(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::NOTIFICATION_CLASS, i).unwrap()
}

fn destinations(v: &AnyValue) -> Vec<Destination> {
    let mut octets = Vec::new();
    v.encode(&mut octets);
    let mut r = Reader::new(&octets);
    let mut list = Vec::new();
    while !r.is_empty() {
        list.push(Destination::decode_from(&mut r).unwrap());
    }
    list
}

fn as_value(list: &[Destination]) -> AnyValue {
    let mut octets = Vec::new();
    for d in list {
        d.encode(&mut octets);
    }
    AnyValue::decode(&mut Reader::new(&octets)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commissioning_tool_reads_and_rewrites_the_recipients() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("notification-class", "commissioning");
    let (config, port) = crate::examples::on_a_free_port(&scratch, "notification-classes.toml");
    let gateway = Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let c =
        Client::bind(ClientConfig { bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
            .await
            .unwrap();
    let dev = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let device = ObjectIdentifier::new(ObjectType::DEVICE, 389006).unwrap();

    let list = c.read_property(&dev, device, P::OBJECT_LIST, None).await.unwrap();
    for i in [1, 2] {
        assert!(list.0.contains(&Element::Application(Value::ObjectIdentifier(class(i)))), "{list:?}");
    }
    let read = |p: P, index: Option<u32>| {
        let c = &c;
        let dev = &dev;
        async move { c.read_property(dev, class(1), p, index).await }
    };
    let priority = read(P::PRIORITY, None).await.unwrap();
    let unsigned = |v: u64| Element::Application(Value::Unsigned(v));
    assert_eq!(priority.0, vec![unsigned(100), unsigned(100), unsigned(200)]);
    assert_eq!(read(P::PRIORITY, Some(0)).await.unwrap().as_primitive(), Some(&Value::Unsigned(3)));
    assert_eq!(
        read(P::ACK_REQUIRED, None).await.unwrap().as_primitive(),
        Some(&Value::BitString(BitString::from_bits(&[true, true, false])))
    );
    assert_eq!(read(P::NOTIFICATION_CLASS, None).await.unwrap().as_primitive(), Some(&Value::Unsigned(1)));
    let recipients = destinations(&read(P::RECIPIENT_LIST, None).await.unwrap());
    assert_eq!(recipients.len(), 2);
    assert_eq!(
        recipients[0].recipient,
        Recipient::Address { network_number: 0, mac_address: vec![127, 0, 0, 1, 0xBA, 0xC1] }
    );
    assert!(recipients[0].issue_confirmed_notifications);
    assert_eq!(recipients[1].recipient, Recipient::Device(ObjectIdentifier::new(ObjectType::DEVICE, 389100).unwrap()));
    assert_eq!(recipients[1].from_time, Time { hour: 7, minute: 0, second: 0, hundredths: 0 });

    // bacpypes3 decodes the same list, destination by destination.
    let script = format!(
        r#"
import asyncio
from bacpypes3.app import Application
from bacpypes3.argparse import SimpleArgumentParser
from bacpypes3.pdu import Address
async def main():
    app = Application.from_args(SimpleArgumentParser().parse_args(["--address", "127.0.0.1/8:{client_port}", "--instance", "3999002"]))
    await asyncio.sleep(0.3)
    value = await app.read_property(Address("127.0.0.1:{port}"), "notification-class,1", "recipient-list")
    for d in value:
        print(d.processIdentifier, bool(d.issueConfirmedNotifications), d.recipient.device if d.recipient.device is not None else bytes(d.recipient.address.macAddress).hex())
    app.close()
asyncio.run(main())
"#,
        client_port = free_port()
    );
    let out = std::process::Command::new(python()).args(["-c", &script]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "1 True 7f000001bac1");
    assert!(lines[1].starts_with("7 False") && lines[1].contains("389100"), "{text}");

    // The tool replaces the list with one recipient; it reads back.
    let mut replaced = recipients[0].clone();
    replaced.process_identifier = 42;
    replaced.transitions = BitString::from_bits(&[true, false, true]);
    c.write_property(&dev, class(1), P::RECIPIENT_LIST, None, as_value(std::slice::from_ref(&replaced)), None)
        .await
        .unwrap();
    assert_eq!(destinations(&read(P::RECIPIENT_LIST, None).await.unwrap()), vec![replaced.clone()]);
    c.write_property(&dev, class(1), P::PRIORITY, Some(3), Value::Unsigned(180).into(), None).await.unwrap();
    assert_eq!(read(P::PRIORITY, Some(3)).await.unwrap().as_primitive(), Some(&Value::Unsigned(180)));

    // What may not be written.
    let error = |r: Result<(), trellis::client::ClientError>| r.unwrap_err().bacnet_error();
    assert_eq!(
        error(c.write_property(&dev, class(1), P::RECIPIENT_LIST, None, Value::Real(1.0).into(), None).await),
        Some((ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE))
    );
    assert_eq!(
        error(c.write_property(&dev, class(1), P::PRIORITY, Some(1), Value::Unsigned(300).into(), None).await),
        Some((ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE))
    );
    assert_eq!(
        error(c.write_property(&dev, class(1), P::OBJECT_NAME, None, Value::Unsigned(1).into(), None).await),
        Some((ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED))
    );
    assert_eq!(
        error(c.write_property(&dev, class(1), P::PRIORITY, Some(0), Value::Unsigned(4).into(), None).await),
        Some((ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)),
        "the length of a fixed array"
    );
    assert_eq!(
        error(c.write_property(&dev, class(2), P::PRIORITY, Some(1), Value::Unsigned(1).into(), None).await),
        Some((ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)),
        "class 2 is not writable"
    );
    let too_many = vec![replaced.clone(); notification_max() + 1];
    assert_eq!(
        error(c.write_property(&dev, class(1), P::RECIPIENT_LIST, None, as_value(&too_many), None).await),
        Some((ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_WRITE_PROPERTY))
    );
    assert_eq!(
        error(c.write_property(&dev, class(9), P::PRIORITY, None, Value::Unsigned(1).into(), None).await),
        Some((ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)),
        "a class that is not configured belongs to the model, which has none"
    );
    drop(gateway);
}

fn notification_max() -> usize {
    trellis::server::notification_class::MAX_RECIPIENTS
}
