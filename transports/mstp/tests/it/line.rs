//! The simulated line on its own, in virtual time driven by hand: octets
//! paced at 10 bit times, frames of one station queued behind each other,
//! collisions, noise, and the capture format.

use crate::support::{rp_request, temp_pcap};
use bacnet::mstp::{Frame, bit_times};
use trellis_mstp::sim::{Line, LineConfig, Noise};
use trellis_mstp::{Port, Rx, RxOctet};

fn read(port: &mut impl Port, now: u64) -> Vec<RxOctet> {
    let mut out = Vec::new();
    port.read(now, &mut out).unwrap();
    out
}

#[test]
fn each_octet_arrives_when_its_stop_bit_ends_and_never_at_its_sender() {
    // 9600 baud: 10 bits take 1041.67 µs, rounded up per octet.
    let line = Line::new_virtual(LineConfig::new(9600));
    let (mut a, mut b, mut c) = (line.attach(), line.attach(), line.attach());
    a.write(0, &[0x55, 0xFF, 0x00]).unwrap();
    assert!(read(&mut b, 1041).is_empty());
    line.advance_to(1042);
    assert_eq!(read(&mut b, 1042), [RxOctet { at: 1042, rx: Rx::Octet(0x55) }]);
    line.advance_to(3125);
    assert_eq!(
        read(&mut b, 3125),
        [RxOctet { at: 2084, rx: Rx::Octet(0xFF) }, RxOctet { at: 3125, rx: Rx::Octet(0x00) }]
    );
    assert_eq!(read(&mut c, 3125).len(), 3, "every other station hears the frame");
    assert!(read(&mut a, 3125).is_empty(), "no echo of one's own transmission");
    let frames = line.frames();
    assert_eq!(frames.len(), 1);
    assert_eq!((frames[0].start, frames[0].end), (0, 3125));
    assert_eq!(line.stats().busy, 3125);
}

#[test]
fn a_stations_frames_go_one_after_another() {
    let line = Line::new_virtual(LineConfig::new(38_400));
    let (mut a, _b) = (line.attach(), line.attach());
    let token = Frame::token(2, 1).to_vec().unwrap();
    a.write(0, &token).unwrap();
    a.write(0, &token).unwrap();
    line.advance_to(1_000_000);
    let frames = line.frames();
    let eight = bit_times(80, 38_400);
    assert_eq!((frames[0].start, frames[0].end), (0, eight));
    assert_eq!(frames[1].start, eight, "the second frame waits for the first");
    assert_eq!(line.stats().collisions, 0);
}

#[test]
fn two_stations_driving_at_once_garble_the_overlap_on_both_sides() {
    let line = Line::new_virtual(LineConfig::new(9600));
    let (mut a, mut b, mut c) = (line.attach(), line.attach(), line.attach());
    let octet = bit_times(10, 9600);
    a.write(0, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    // B starts during A's third octet and sends two: A's octets 3..=5
    // overlap them.
    line.advance_to(2 * octet + 100);
    b.write(2 * octet + 100, &[0xAA, 0xBB]).unwrap();
    line.advance_to(20 * octet);
    let heard: Vec<Rx> = read(&mut c, 20 * octet).into_iter().map(|r| r.rx).collect();
    let errors = heard.iter().filter(|r| **r == Rx::Error).count();
    assert_eq!(heard[..2], [Rx::Octet(1), Rx::Octet(2)], "A's octets before B started arrive intact");
    assert_eq!(errors, 3 + 2, "A's 3rd..5th octets and both of B's are UART errors");
    assert!(heard.contains(&Rx::Octet(6)) && heard.contains(&Rx::Octet(8)), "after B stopped, A's octets are clean");
    let stats = line.stats();
    assert_eq!((stats.collisions, stats.garbled), (1, 5));
    let frames = line.frames();
    assert!(frames.iter().all(|f| f.collided && !f.is_clean()));
    assert_eq!(frames[0].heard, [1, 2, 6, 7, 8], "the log keeps what a listener heard");
    // B itself hears A's garbled octets too.
    assert!(read(&mut b, 20 * octet).iter().any(|r| r.rx == Rx::Error));
    assert!(read(&mut a, 20 * octet).iter().all(|r| r.rx == Rx::Error), "A hears only B's garbled octets");
}

#[test]
fn noise_is_decided_by_the_seed() {
    let run = |seed: u64| {
        let mut config = LineConfig::new(115_200);
        config.noise = Noise { flip: 0.05, drop: 0.02, seed };
        let line = Line::new_virtual(config);
        let (mut a, _b) = (line.attach(), line.attach());
        for i in 0..200u8 {
            a.write(0, &rp_request(i)).unwrap();
        }
        line.advance_to(u64::MAX / 2);
        (line.frames().into_iter().map(|f| f.heard).collect::<Vec<_>>(), line.stats())
    };
    let (heard, stats) = run(7);
    assert_eq!(run(7).0, heard, "the same seed damages the same octets");
    assert_ne!(run(8).0, heard, "another seed, other damage");
    assert!(stats.flipped > 50 && stats.dropped > 20, "{stats:?}");
    let clean = heard.iter().filter(|h| h.len() == 13).count();
    assert!(clean > 0 && clean < 200);
}

#[test]
fn the_capture_has_the_header_and_records_of_the_bacnet_stack_captures() {
    let vector = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bacnet/tests/it/vectors/mstp-bacnet-stack-rp-short.pcap"
    ))
    .unwrap();
    let path = temp_pcap("format");
    let line = Line::new_virtual(LineConfig::new(38_400));
    line.capture_file(&path).unwrap();
    let (mut a, _b) = (line.attach(), line.attach());
    // The vector's first frame: Poll For Master 1 -> 2.
    let pfm = Frame::poll_for_master(2, 1).to_vec().unwrap();
    a.write(0, &pfm).unwrap();
    line.advance_to(10_000);
    line.flush().unwrap();
    let ours = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(ours[..24], vector[..24], "global header: µs pcap 2.4, snaplen 65535, linktype 165");
    // Record header (time 0, 8 octets, 8 octets) and the frame, as in the vector.
    assert_eq!(ours[24..], vector[24..24 + 16 + 8]);
}
