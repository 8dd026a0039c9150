//! The pty relay in real time: what a program writes to its pseudo-terminal
//! becomes one transmission once the frame is whole, however many writes it
//! took; a frame whose writer pauses past `PIECE_WAIT` mid-frame goes on the
//! line cut short, and the relay says so.

use crate::support::rp_request;
use bacnet::mstp::{Frame, FrameType};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use trellis_mstp::sim::{Line, LineConfig, PIECE_WAIT, PtyLine, PtyLineStats};

/// A two-station pty line at 38,400 baud: the relay's stop flag and thread,
/// the line, and each station's port opened as a program would.
struct Relay {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<std::io::Result<PtyLineStats>>,
    line: Line,
    ports: Vec<serialport::TTYPort>,
}

impl Relay {
    fn start() -> Relay {
        let line = Line::new(LineConfig::new(38_400));
        let ptys = PtyLine::open(&line, 2).unwrap();
        let ports = ptys
            .paths()
            .iter()
            // Opened as a serial port: raw, no echo.
            .map(|path| serialport::new(path, 38_400).timeout(Duration::from_millis(20)).open_native().unwrap())
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = ptys.spawn(stop.clone()).unwrap();
        Relay { stop, thread, line, ports }
    }

    /// Stop the relay; what it did.
    fn stop(self) -> (Line, PtyLineStats) {
        self.stop.store(true, Ordering::Relaxed);
        (self.line, self.thread.join().unwrap().unwrap())
    }
}

/// What `port` reads within `within`, until it holds `len` octets.
fn read_up_to(port: &mut serialport::TTYPort, len: usize, within: Duration) -> Vec<u8> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while got.len() < len && Instant::now() < deadline {
        let n = port.read(&mut buf).unwrap_or(0);
        got.extend_from_slice(&buf[..n]);
    }
    got
}

fn data_frame() -> Vec<u8> {
    let npdu = rp_request(7);
    Frame { frame_type: FrameType::BACNET_DATA_EXPECTING_REPLY, destination: 2, source: 1, data: &npdu }
        .to_vec()
        .unwrap()
}

#[test]
fn a_frame_written_octet_by_octet_is_one_transmission() {
    let mut relay = Relay::start();
    let frame = data_frame();
    // Like an emulated UART: one write per octet, a little apart.
    for octet in &frame {
        relay.ports[0].write_all(std::slice::from_ref(octet)).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    }
    let heard = read_up_to(&mut relay.ports[1], frame.len(), Duration::from_secs(5));
    assert_eq!(heard, frame, "the other station hears the frame as written");
    let (line, stats) = relay.stop();
    let frames = line.frames();
    assert_eq!(frames.len(), 1, "one transmission: {frames:?}");
    assert_eq!(frames[0].sent, frame);
    assert_eq!((stats.cut_short, stats.cut_pieces), (0, 0), "{stats:?}");
    assert_eq!(stats.octets_in, frame.len() as u64);
}

#[test]
fn a_writer_that_pauses_mid_frame_has_its_frame_cut_short_and_counted() {
    let mut relay = Relay::start();
    let frame = data_frame();
    let (start, rest) = frame.split_at(3);
    relay.ports[0].write_all(start).unwrap();
    std::thread::sleep(PIECE_WAIT * 4);
    // The rest comes octet by octet, as a starved UART's would.
    for octet in rest {
        relay.ports[0].write_all(std::slice::from_ref(octet)).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    }
    // A whole frame after it is a frame again.
    let token = Frame::token(1, 2).to_vec().unwrap();
    std::thread::sleep(PIECE_WAIT * 2);
    relay.ports[0].write_all(&token).unwrap();
    let heard = read_up_to(&mut relay.ports[1], frame.len() + token.len(), Duration::from_secs(5));
    assert_eq!(heard, [&frame[..], &token[..]].concat(), "every octet still reaches the line");
    let (line, stats) = relay.stop();
    let frames = line.frames();
    assert_eq!(frames.first().map(|f| f.sent.as_slice()), Some(start), "the start went alone: {frames:?}");
    assert_eq!(frames.last().map(|f| f.sent.clone()), Some(token), "then the token, whole");
    assert_eq!(stats.cut_short, 1, "{stats:?}");
    assert_eq!(
        stats.cut_pieces,
        frames.len() as u64 - 1,
        "every transmission but the token is a piece of the cut frame: {frames:?}"
    );
}
