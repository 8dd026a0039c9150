//! File objects and file transfer (Clauses 12.13, 15.1, 15.2): the
//! `examples/files.toml` gateway, driven by our client and CLI, by
//! rusty-bacnet and by bacpypes3. Each sequence is a front end's: find the
//! files in the Object_List, read their properties, replace a 1 MB file in
//! segments and read it back, work a record file, and meet every refusal
//! the standard lists.

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::{AtomicWriteFileAck, FileData, ReadAccess};
use bacnet::{AnyValue, Element, ObjectIdentifier, ObjectType, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use trellis::client::{Client, ClientConfig, ClientError, DeviceAddress};

const INSTANCE: u32 = 389005;

fn file(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::FILE, i).unwrap()
}

/// `examples/files.toml` and its data directory copied into `scratch`, on a
/// free port; the gateway serving it.
fn start(scratch: &Scratch) -> (Gateway, u16, PathBuf) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let text = std::fs::read_to_string(examples.join("files.toml")).unwrap();
    let port = free_port();
    let config = scratch.path("files.toml");
    std::fs::write(&config, text.replace("port = 47808", &format!("port = {port}"))).unwrap();
    let data = scratch.path("files-data");
    copy_dir(&examples.join("files-data"), &data);
    let gateway = Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    (gateway, port, data)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// 1 MB that is not all the same octet, so a misplaced chunk shows.
pub fn megabyte() -> Vec<u8> {
    (0..1_048_576u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

fn error_of<T: std::fmt::Debug>(r: Result<T, ClientError>) -> (ErrorClass, ErrorCode) {
    match r {
        Err(e) => e.bacnet_error().unwrap_or_else(|| panic!("expected a BACnet Error, got {e:?}")),
        Ok(v) => panic!("expected a BACnet Error, got {v:?}"),
    }
}

fn unsigned(v: &AnyValue) -> u64 {
    match v.as_primitive() {
        Some(Value::Unsigned(n)) => *n,
        other => panic!("not an Unsigned: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_end_finds_the_files_replaces_one_of_a_megabyte_and_reads_it_back() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("files", "megabyte");
    let (_gateway, port, data) = start(&scratch);
    let dev = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let c =
        Client::bind(ClientConfig { bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
            .await
            .unwrap();
    let device = ObjectIdentifier::new(ObjectType::DEVICE, INSTANCE).unwrap();

    // The files follow the model's objects in the Object_List.
    let list = c.read_property(&dev, device, P::OBJECT_LIST, None).await.unwrap();
    let ids: Vec<ObjectIdentifier> = list
        .0
        .iter()
        .filter_map(|e| match e {
            Element::Application(Value::ObjectIdentifier(o)) => Some(*o),
            _ => None,
        })
        .collect();
    assert_eq!(&ids[ids.len() - 3..], &[file(1), file(2), file(3)], "{ids:?}");
    let count = c.read_property(&dev, device, P::OBJECT_LIST, Some(0)).await.unwrap();
    assert_eq!(unsigned(&count), ids.len() as u64);
    let types = c.read_property(&dev, device, P::PROTOCOL_OBJECT_TYPES_SUPPORTED, None).await.unwrap();
    let Some(Value::BitString(bits)) = types.as_primitive() else { panic!("{types:?}") };
    assert!(bits.get(ObjectType::FILE.0 as usize), "File in {bits:?}");
    let services = c.read_property(&dev, device, P::PROTOCOL_SERVICES_SUPPORTED, None).await.unwrap();
    let Some(Value::BitString(bits)) = services.as_primitive() else { panic!("{services:?}") };
    assert!(bits.get(6) && bits.get(7), "atomicReadFile, atomicWriteFile in {bits:?}");

    // The manifest's properties, as a commissioning tool reads them.
    let manifest = std::fs::read(data.join("firmware/manifest.txt")).unwrap();
    let read = |o, p| c.read_property(&dev, o, p, None);
    assert_eq!(unsigned(&read(file(3), P::FILE_SIZE).await.unwrap()), manifest.len() as u64);
    assert_eq!(read(file(3), P::READ_ONLY).await.unwrap().as_primitive(), Some(&Value::Boolean(true)));
    assert_eq!(read(file(1), P::READ_ONLY).await.unwrap().as_primitive(), Some(&Value::Boolean(false)));
    assert_eq!(read(file(3), P::FILE_ACCESS_METHOD).await.unwrap().as_primitive(), Some(&Value::Enumerated(1)));
    let modified = read(file(3), P::MODIFICATION_DATE).await.unwrap();
    assert!(
        matches!(modified.0.as_slice(), [Element::Application(Value::Date(d)), Element::Application(Value::Time(_))]
            if d.year >= 126),
        "{modified:?}"
    );
    assert_eq!(c.read_file(&dev, file(3), 1 << 20).await.unwrap(), manifest);

    // Replace the notes with 1 MB: cut, then 256 writes of 4 KiB, each in
    // segments; read back in 256 reads.
    let mb = megabyte();
    c.write_property(&dev, file(1), P::ARCHIVE, None, Value::Boolean(true).into(), None).await.unwrap();
    c.write_property(&dev, file(1), P::FILE_SIZE, None, Value::Unsigned(0).into(), None).await.unwrap();
    c.write_file(&dev, file(1), &mb).await.unwrap();
    assert_eq!(unsigned(&read(file(1), P::FILE_SIZE).await.unwrap()), mb.len() as u64);
    assert_eq!(read(file(1), P::ARCHIVE).await.unwrap().as_primitive(), Some(&Value::Boolean(false)), "modified");
    assert!(c.read_file(&dev, file(1), 1 << 20).await.unwrap() == mb, "the megabyte read back differs");
    assert!(std::fs::read(data.join("notes.txt")).unwrap() == mb, "the megabyte on disk differs");

    // Appending (-1) answers where the octets went.
    let ack = c.atomic_write_file(&dev, file(1), FileData::Stream { start_position: -1, data: b"end".to_vec() });
    assert_eq!(ack.await.unwrap(), AtomicWriteFileAck::Stream(1_048_576));

    // The refusals of Clause 15.
    let at = |start_position, octet_count| ReadAccess::Stream { start_position, octet_count };
    let past_end = c.atomic_read_file(&dev, file(3), at(10_000, 10)).await;
    assert_eq!(error_of(past_end), (ErrorClass::SERVICES, ErrorCode::INVALID_FILE_START_POSITION));
    let wrong_method = c.atomic_read_file(&dev, file(1), ReadAccess::Record { start_record: 0, record_count: 1 });
    assert_eq!(error_of(wrong_method.await), (ErrorClass::SERVICES, ErrorCode::INVALID_FILE_ACCESS_METHOD));
    let read_only = c.atomic_write_file(&dev, file(3), FileData::Stream { start_position: 0, data: b"x".to_vec() });
    assert_eq!(error_of(read_only.await), (ErrorClass::SERVICES, ErrorCode::FILE_ACCESS_DENIED));
    assert_eq!(std::fs::read(data.join("firmware/manifest.txt")).unwrap(), manifest, "the read-only file is unchanged");
    let full = c.atomic_write_file(&dev, file(1), FileData::Stream { start_position: 2_097_151, data: vec![0; 2] });
    assert_eq!(error_of(full.await), (ErrorClass::SERVICES, ErrorCode::INVALID_FILE_START_POSITION), "past the end");
    // Appending 16 KiB at a time fills the file to its max_size (2 MiB), and no further.
    let mut size = 1_048_579u64;
    loop {
        let more = c.atomic_write_file(&dev, file(1), FileData::Stream { start_position: -1, data: vec![7; 16_384] });
        if size + 16_384 > 2_097_152 {
            assert_eq!(error_of(more.await), (ErrorClass::SERVICES, ErrorCode::FILE_FULL));
            break;
        }
        assert_eq!(more.await.unwrap(), AtomicWriteFileAck::Stream(size as i32));
        size += 16_384;
    }
    assert_eq!(std::fs::metadata(data.join("notes.txt")).unwrap().len(), size);
    let unknown = c.atomic_read_file(&dev, file(99), at(0, 10)).await;
    assert_eq!(error_of(unknown), (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
    let not_a_file = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    assert_eq!(error_of(c.atomic_read_file(&dev, not_a_file, at(0, 10)).await).1, ErrorCode::UNKNOWN_OBJECT);
    let denied = c.write_property(&dev, file(3), P::FILE_SIZE, None, Value::Unsigned(0).into(), None).await;
    assert_eq!(error_of(denied), (ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_file_is_read_and_written_by_record() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("files", "records");
    let (_gateway, port, data) = start(&scratch);
    let dev = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let c =
        Client::bind(ClientConfig { bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
            .await
            .unwrap();
    let log = file(2);
    assert_eq!(unsigned(&c.read_property(&dev, log, P::RECORD_COUNT, None).await.unwrap()), 2);

    let row = |s: &str| s.as_bytes().to_vec();
    let append = FileData::Record {
        start_record: -1,
        records: vec![row("2026-12-01T09:00,1,22.0"), row("2026-12-01T10:00,1,22.5")],
    };
    assert_eq!(c.atomic_write_file(&dev, log, append).await.unwrap(), AtomicWriteFileAck::Record(2));
    let replace = FileData::Record { start_record: 0, records: vec![row("time,zone,setpoint_c")] };
    assert_eq!(c.atomic_write_file(&dev, log, replace).await.unwrap(), AtomicWriteFileAck::Record(0));

    let ack = c.atomic_read_file(&dev, log, ReadAccess::Record { start_record: 1, record_count: 2 }).await.unwrap();
    assert!(!ack.end_of_file);
    assert_eq!(
        ack.data,
        FileData::Record {
            start_record: 1,
            records: vec![row("2026-12-01T08:00,1,21.0"), row("2026-12-01T09:00,1,22.0")]
        }
    );
    let last = c.atomic_read_file(&dev, log, ReadAccess::Record { start_record: 3, record_count: 10 }).await.unwrap();
    assert!(last.end_of_file);
    assert_eq!(
        std::fs::read_to_string(data.join("setpoint-log.csv")).unwrap(),
        "time,zone,setpoint_c\n2026-12-01T08:00,1,21.0\n2026-12-01T09:00,1,22.0\n2026-12-01T10:00,1,22.5\n"
    );
    let split = FileData::Record { start_record: -1, records: vec![row("two\nlines")] };
    assert_eq!(
        error_of(c.atomic_write_file(&dev, log, split).await),
        (ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE)
    );
    c.write_property(&dev, log, P::RECORD_COUNT, None, Value::Unsigned(1).into(), None).await.unwrap();
    assert_eq!(std::fs::read_to_string(data.join("setpoint-log.csv")).unwrap(), "time,zone,setpoint_c\n");
}

#[test]
fn the_cli_reads_and_replaces_files() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("files", "cli");
    let (_gateway, port, data) = start(&scratch);
    let target = format!("127.0.0.1:{port}");
    let trellis = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().unwrap();
        assert!(out.status.success(), "trellis {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let manifest = std::fs::read(data.join("firmware/manifest.txt")).unwrap();
    assert_eq!(trellis(&["file", "read", &target, "file,3"]), manifest);

    let local = scratch.path("new-notes.txt");
    std::fs::write(&local, megabyte()).unwrap();
    trellis(&["file", "write", &target, "file,1", local.to_str().unwrap()]);
    assert!(std::fs::read(data.join("notes.txt")).unwrap() == megabyte());
    let back = scratch.path("back.txt");
    trellis(&["file", "read", &target, "file,1", "--output", back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == megabyte());

    let rows = scratch.path("rows.csv");
    std::fs::write(&rows, "a,b\n1,2\n3,4\n").unwrap();
    trellis(&["file", "write", &target, "file,2", rows.to_str().unwrap()]);
    assert_eq!(trellis(&["file", "read", &target, "file,2"]), b"a,b\n1,2\n3,4\n");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["file", "write", &target, "file,3", rows.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "a read-only file: the device's Error");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("write-access-denied"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `host/tests/peers/file_client.py` as `stack` against the device on
/// `port`: a megabyte written and read back in `chunk`-octet requests, a
/// record appended and read. Returns its JSON line.
fn third_party_transfer(stack: &str, port: u16, chunk: usize, gateway: &Gateway) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/file_client.py");
    let out = std::process::Command::new(crate::peers::python())
        .arg(&script)
        .args(["--stack", stack, "--target", &format!("127.0.0.1:{port}"), "--device", &INSTANCE.to_string()])
        .args(["--port", &free_port().to_string(), "--file", "1", "--record-file", "2"])
        .args(["--chunk", &chunk.to_string()])
        .output()
        .expect("run file_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stack}: {stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gateway.log()
    );
    stdout.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn bacpypes3_and_rusty_bacnet_transfer_a_megabyte_and_tshark_dissects_it() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("files", "peers");
    let (gateway, port, data) = start(&scratch);
    let pcap = scratch.path("files.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);

    // bacpypes3 in 4 KiB requests: each answer is three segments.
    let line = third_party_transfer("bacpypes3", port, 4096, &gateway);
    assert!(line.contains(r#""equal": true"#) && line.contains("bacpypes3,was,here"), "{line}");
    assert!(std::fs::read(data.join("notes.txt")).unwrap() == megabyte(), "the file on disk is what bacpypes3 wrote");

    // rusty-bacnet in 60 KiB requests (its client waits out the segment
    // timeout on every segmented answer: see file_client.py).
    let line = third_party_transfer("rusty", port, 61_440, &gateway);
    assert!(line.contains(r#""equal": true"#) && line.contains("rusty,was,here"), "{line}");
    assert!(
        std::fs::read(data.join("notes.txt")).unwrap() == megabyte(),
        "the file on disk is what rusty-bacnet wrote"
    );
    let log = std::fs::read_to_string(data.join("setpoint-log.csv")).unwrap();
    assert!(log.ends_with("bacpypes3,was,here\nrusty,was,here\n"), "records appended in order:\n{log}");

    capture.finish(&[port], &["atomicWriteFile", "atomicReadFile", "Segment-ACK"]);
}
