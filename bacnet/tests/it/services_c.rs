//! Service group C: files — AtomicReadFile and AtomicWriteFile (Clauses
//! 15.1, 15.2), both access methods.
//!
//! The vectors are hand-encoded, octet by octet from the Clause 20.2 rules
//! (the File object is type 10, so File 1 is `02 80 00 01`); they are
//! modelled on the Annex F.2.1/F.2.2 examples (a 27-octet stream read, a
//! record read of three records). What real stacks send is checked
//! end-to-end by the host's interop tests with bacpypes3 and rusty-bacnet.

use bacnet::codec::ObjectIdentifier;
use bacnet::enums::{ObjectType, RejectReason};
use bacnet::services::{
    AtomicReadFileAck, AtomicReadFileRequest, AtomicWriteFileAck, AtomicWriteFileRequest, FileData, ReadAccess,
    ServiceCodec,
};
use proptest::prelude::*;
use std::fmt::Debug;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

fn file(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::FILE, i).unwrap()
}

fn golden<T: ServiceCodec + PartialEq + Debug>(bytes: &[u8], want: &T) {
    assert_eq!(&T::decode(bytes).unwrap(), want, "decode {bytes:02x?}");
    assert_eq!(want.to_vec(), bytes, "encode {want:?}");
}

fn reject<T: ServiceCodec + Debug>(bytes: &[u8]) -> RejectReason {
    T::decode(bytes).unwrap_err().reject_reason()
}

/// Every proper prefix fails to decode, without panicking.
fn prefixes_fail<T: ServiceCodec + Debug>(bytes: &[u8]) {
    for n in 0..bytes.len() {
        assert!(T::decode(&bytes[..n]).is_err(), "prefix of {n} octets decoded");
    }
}

const CHILLER: &[u8] = b"Chiller01 On-Time=4.3 Hours";

/// Read 27 octets of File 1 from position 0.
const STREAM_READ: &str = "C4 02 80 00 01  0E 31 00 21 1B 0F";
/// The answer: not the end of the file, 27 octets from position 0.
const STREAM_READ_ACK_HEAD: &str = "10  0E 31 00 65 1B";
/// Read 3 records of File 2 from record 14.
const RECORD_READ: &str = "C4 02 80 00 02  1E 31 0E 21 03 1F";
/// The answer: the end of the file, 2 records from record 14.
const RECORD_READ_ACK: &str =
    "11  1E 31 0E 21 02  65 0B 31 32 3A 30 30 2C 34 35 2E 36 46  65 0B 31 32 3A 31 35 2C 34 34 2E 38 46 1F";
/// Write 27 octets at position 30 of File 1.
const STREAM_WRITE_HEAD: &str = "C4 02 80 00 01  0E 31 1E 65 1B";
/// Append one record to File 2.
const RECORD_APPEND: &str = "C4 02 80 00 02  1E 31 FF 21 01 65 0B 31 32 3A 34 35 2C 34 33 2E 39 46 1F";

fn with(head: &str, data: &[u8], tail: &str) -> Vec<u8> {
    let mut v = hex(head);
    v.extend_from_slice(data);
    v.extend(hex(tail));
    v
}

#[test]
fn a_stream_read_and_its_answer() {
    golden(
        &hex(STREAM_READ),
        &AtomicReadFileRequest { file: file(1), access: ReadAccess::Stream { start_position: 0, octet_count: 27 } },
    );
    golden(
        &with(STREAM_READ_ACK_HEAD, CHILLER, "0F"),
        &AtomicReadFileAck { end_of_file: false, data: FileData::Stream { start_position: 0, data: CHILLER.to_vec() } },
    );
}

#[test]
fn a_record_read_and_its_answer() {
    golden(
        &hex(RECORD_READ),
        &AtomicReadFileRequest { file: file(2), access: ReadAccess::Record { start_record: 14, record_count: 3 } },
    );
    golden(
        &hex(RECORD_READ_ACK),
        &AtomicReadFileAck {
            end_of_file: true,
            data: FileData::Record {
                start_record: 14,
                records: vec![b"12:00,45.6F".to_vec(), b"12:15,44.8F".to_vec()],
            },
        },
    );
}

#[test]
fn writes_and_their_answers() {
    golden(
        &with(STREAM_WRITE_HEAD, CHILLER, "0F"),
        &AtomicWriteFileRequest {
            file: file(1),
            data: FileData::Stream { start_position: 30, data: CHILLER.to_vec() },
        },
    );
    golden(
        &hex(RECORD_APPEND),
        &AtomicWriteFileRequest {
            file: file(2),
            data: FileData::Record { start_record: -1, records: vec![b"12:45,43.9F".to_vec()] },
        },
    );
    golden(&hex("09 1E"), &AtomicWriteFileAck::Stream(30));
    golden(&hex("19 0E"), &AtomicWriteFileAck::Record(14));
    golden(&hex("0A 01 00"), &AtomicWriteFileAck::Stream(256));
}

#[test]
fn truncated_bodies_are_refused() {
    prefixes_fail::<AtomicReadFileRequest>(&hex(STREAM_READ));
    prefixes_fail::<AtomicReadFileRequest>(&hex(RECORD_READ));
    prefixes_fail::<AtomicReadFileAck>(&hex(RECORD_READ_ACK));
    prefixes_fail::<AtomicWriteFileRequest>(&hex(RECORD_APPEND));
    prefixes_fail::<AtomicWriteFileRequest>(&with(STREAM_WRITE_HEAD, CHILLER, "0F"));
    assert_eq!(reject::<AtomicReadFileRequest>(&hex("C4 02 80 00 01")), RejectReason::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reject::<AtomicWriteFileAck>(&[]), RejectReason::MISSING_REQUIRED_PARAMETER);
}

#[test]
fn a_wrong_access_method_is_an_invalid_tag() {
    // [2] where [0] or [1] belongs.
    assert_eq!(reject::<AtomicReadFileRequest>(&hex("C4 02 80 00 01 2E 31 00 21 1B 2F")), RejectReason::INVALID_TAG);
    assert_eq!(reject::<AtomicWriteFileAck>(&hex("29 1E")), RejectReason::INVALID_TAG);
    // Context tags where the application-tagged start and count belong.
    assert_eq!(reject::<AtomicReadFileRequest>(&hex("C4 02 80 00 01 0E 09 00 19 1B 0F")), RejectReason::INVALID_TAG);
}

#[test]
fn a_record_count_that_disagrees_with_the_records_is_inconsistent() {
    // recordCount 2, one record.
    let body = hex("C4 02 80 00 02  1E 31 FF 21 02 65 0B 31 32 3A 34 35 2C 34 33 2E 39 46 1F");
    assert_eq!(reject::<AtomicWriteFileRequest>(&body), RejectReason::INCONSISTENT_PARAMETERS);
}

#[test]
fn trailing_octets_are_too_many_arguments() {
    let mut body = hex(STREAM_READ);
    body.push(0x21);
    assert_eq!(reject::<AtomicReadFileRequest>(&body), RejectReason::TOO_MANY_ARGUMENTS);
}

fn file_data() -> impl Strategy<Value = FileData> {
    prop_oneof![
        (any::<i32>(), proptest::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(start_position, data)| FileData::Stream { start_position, data }),
        (any::<i32>(), proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8))
            .prop_map(|(start_record, records)| FileData::Record { start_record, records }),
    ]
}

fn stable<T: ServiceCodec + Debug>(data: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = T::decode(data) {
        let again = v.to_vec();
        prop_assert_eq!(T::decode(&again).unwrap().to_vec(), again);
    }
    Ok(())
}

proptest! {
    #[test]
    fn file_bodies_round_trip(
        data in file_data(),
        instance in 0u32..0x3F_FFFF,
        end_of_file in any::<bool>(),
        start in any::<i32>(),
        count in any::<u32>(),
        record in any::<bool>(),
    ) {
        let read = AtomicReadFileRequest {
            file: file(instance),
            access: if record {
                ReadAccess::Record { start_record: start, record_count: count }
            } else {
                ReadAccess::Stream { start_position: start, octet_count: count }
            },
        };
        prop_assert_eq!(AtomicReadFileRequest::decode(&read.to_vec()).unwrap(), read);
        let ack = AtomicReadFileAck { end_of_file, data: data.clone() };
        prop_assert_eq!(AtomicReadFileAck::decode(&ack.to_vec()).unwrap(), ack);
        let write = AtomicWriteFileRequest { file: file(instance), data };
        prop_assert_eq!(AtomicWriteFileRequest::decode(&write.to_vec()).unwrap(), write);
        let answer = if record { AtomicWriteFileAck::Record(start) } else { AtomicWriteFileAck::Stream(start) };
        prop_assert_eq!(AtomicWriteFileAck::decode(&answer.to_vec()).unwrap(), answer);
    }

    #[test]
    fn arbitrary_octets_never_panic_a_file_decoder(data in proptest::collection::vec(any::<u8>(), 0..80)) {
        stable::<AtomicReadFileRequest>(&data)?;
        stable::<AtomicReadFileAck>(&data)?;
        stable::<AtomicWriteFileRequest>(&data)?;
        stable::<AtomicWriteFileAck>(&data)?;
    }
}
