//! NPDUs the tests carry, and tshark as the judge of captures.

use std::path::{Path, PathBuf};
use std::process::Command;

/// ReadProperty analog-value,1 present-value, invoke ID `invoke`: the NPDU
/// of frame 4 of `bacnet/tests/it/vectors/mstp-bacnet-stack-rp-short.pcap`
/// (tshark: Confirmed-REQ readProperty[1]).
pub fn rp_request(invoke: u8) -> Vec<u8> {
    vec![0x01, 0x04, 0x00, 0x03, invoke, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55]
}

/// Its ComplexACK with a REAL: the NPDU of frame 5 of the same capture
/// (tshark: Complex-ACK readProperty[1]).
pub fn rp_ack(invoke: u8) -> Vec<u8> {
    vec![
        0x01, 0x00, 0x30, invoke, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x28, 0x00, 0x00,
        0x3F,
    ]
}

/// The answer a test host gives: a ComplexACK for a ReadProperty request.
pub fn answer(request: &[u8]) -> Option<Vec<u8>> {
    (request.len() == 13 && request[2] == 0x00 && request[5] == 0x0C).then(|| rp_ack(request[4]))
}

/// I-Am device,`instance`, max APDU 480, no segmentation, vendor 7.
pub fn i_am(instance: u8) -> Vec<u8> {
    vec![0x01, 0x00, 0x10, 0x00, 0xC4, 0x02, 0x00, 0x00, instance, 0x22, 0x01, 0xE0, 0x91, 0x03, 0x21, 0x07]
}

/// Who-Is without limits.
pub fn who_is() -> Vec<u8> {
    vec![0x01, 0x00, 0x10, 0x08]
}

/// A fresh path in the temporary directory.
pub fn temp_pcap(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("trellis-mstp-{}-{name}.pcap", std::process::id()))
}

/// `tshark -r path -V`, failing the test on any malformed packet, dissector
/// error or bad CRC; returns the dissection. tshark is installed by the
/// README's test command (`.ci/test`): its absence fails the test.
pub fn dissect_cleanly(path: &Path) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .arg("-V")
        .output()
        .expect("tshark is installed by the README's test command (.ci/test)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "tshark -r failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.is_empty(), "tshark printed nothing for {}", path.display());
    for bad in ["Malformed", "Expert Info (Error", "Expert Info (Warning", "[incorrect]", "Unknown"] {
        assert!(!text.contains(bad), "tshark reports `{bad}` in {}:\n{text}", path.display());
    }
    text
}
