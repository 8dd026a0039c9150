//! The driver thread in real time: on the simulated line (request and
//! reply between two threads, the timing achieved), on a pseudo-terminal
//! pair through the serial port code, and the errors `bind` gives.

use crate::support::{answer, rp_ack, rp_request};
use bacnet::mstp::{MasterConfig, bit_times};
use std::sync::mpsc::RecvTimeoutError;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use trellis_mstp::sim::timing::{Percentiles, Timings};
use trellis_mstp::sim::{Line, LineConfig};
use trellis_mstp::{
    BindError, DriverOptions, DriverReport, MstpConfig, MstpHandle, MstpSender, PortConfig, Received, SendError,
    SerialLine,
};

/// Generous: the machine is shared with other builds.
const TIMEOUT: Duration = Duration::from_secs(20);

fn start(line: &Line, mac: u8) -> (MstpHandle, JoinHandle<DriverReport>) {
    let mut config = MstpConfig::sim(line, mac);
    config.node.max_master = 3;
    let (handle, driver) = trellis_mstp::bind(config).unwrap();
    (handle, driver.spawn().unwrap())
}

/// A host that answers every ReadProperty at once, on its own thread, until
/// the driver stops.
fn answer_requests(handle: MstpHandle) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        let (sender, received) = handle.into_parts();
        let mut answered = 0;
        while let Ok(r) = received.recv() {
            if r.expecting_reply
                && let Some(a) = answer(&r.npdu)
            {
                sender.reply(r.source_mac, a).unwrap();
                answered += 1;
            }
        }
        answered
    })
}

/// Send ReadProperty requests one after another, each when the previous
/// answer came, for `count` requests or `duration`.
fn ask(client: &MstpHandle, server: u8, count: usize, duration: Duration) -> usize {
    let end = Instant::now() + duration;
    let mut answered = 0;
    for i in 0..count {
        if Instant::now() > end {
            break;
        }
        let invoke = i as u8;
        client.send(server, rp_request(invoke), true).unwrap();
        match client.recv_timeout(TIMEOUT) {
            Ok(r) => {
                assert_eq!(
                    r,
                    Received { source_mac: server, npdu: rp_ack(invoke), expecting_reply: false, broadcast: false }
                );
                answered += 1;
            }
            Err(RecvTimeoutError::Timeout) => panic!("no answer to request {i} within {TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("driver stopped"),
        }
    }
    answered
}

#[test]
fn two_driver_threads_exchange_a_request_and_its_reply_on_the_simulated_line() {
    let line = Line::new(LineConfig::new(38_400));
    let (client, client_thread) = start(&line, 1);
    let (server, server_thread) = start(&line, 2);
    let server_sender: MstpSender = server.sender().clone();
    let responder = answer_requests(server);

    assert_eq!(ask(&client, 2, 3, TIMEOUT), 3);

    client.shutdown();
    server_sender.shutdown();
    let (c, s) = (client_thread.join().unwrap(), server_thread.join().unwrap());
    assert_eq!(responder.join().unwrap(), 3, "the responder ends when its driver stops");
    assert!(client.sender().is_stopped());
    assert_eq!(client.send(2, rp_request(0), true), Err(SendError::Stopped));
    assert_eq!(c.status.driver.npdus_up, 3);
    assert!(c.status.master.tokens_received > 0 && s.status.master.tokens_received > 0);
    assert_eq!(s.status.driver.replies_in_time + s.status.driver.replies_late, 3);
    println!(
        "real time, 38400 baud: {} of 3 replies in ANSWER_DATA_REQUEST, SCHED_FIFO: {}",
        s.status.driver.replies_in_time, s.realtime
    );
}

/// Print the achieved Tturnaround, reply delay and Tusage_delay of two
/// driver threads on the simulated line in real time (no speed asserts:
/// the figures depend on the machine and its load).
#[test]
fn timing_achieved_by_driver_threads_on_the_simulated_line() {
    for baud in [38_400, 115_200] {
        let line = Line::new(LineConfig::new(baud));
        let (client, client_thread) = start(&line, 1);
        let (server, server_thread) = start(&line, 2);
        let server_sender = server.sender().clone();
        let responder = answer_requests(server);
        // Let the ring form, then measure only the exchange.
        std::thread::sleep(Duration::from_millis(1500));
        let _ = line.take_frames();
        let started = Instant::now();
        let answered = ask(&client, 2, 300, Duration::from_secs(3));
        let elapsed = started.elapsed();
        client.shutdown();
        server_sender.shutdown();
        let (c, s) = (client_thread.join().unwrap(), server_thread.join().unwrap());
        responder.join().unwrap();
        line.flush().unwrap();
        let frames = line.frames();
        let t = Timings::from_frames(&frames);
        let bits = |us: u64| us as f64 * f64::from(baud) / 1e6;
        println!(
            "real time, {baud} baud: {answered} ReadProperty in {elapsed:.2?} ({:.0}/s), SCHED_FIFO {}/{}, \
             line busy {:.0} %, collisions {}",
            answered as f64 / elapsed.as_secs_f64(),
            c.realtime,
            s.realtime,
            100.0 * line.stats().busy as f64 / elapsed.as_micros() as f64,
            line.stats().collisions,
        );
        println!("  (40 bit times = {} µs)", bit_times(40, baud));
        for (name, sample) in
            [("Tturnaround", &t.turnaround), ("reply delay", &t.reply_delay), ("Tusage_delay", &t.usage_delay)]
        {
            match Percentiles::of(sample) {
                Some(p) => println!("  {name:12}: {p} (p50 {:.0} bit times)", bits(p.p50)),
                None => println!("  {name:12}: no sample"),
            }
        }
        for (who, r) in [("client", &c), ("server", &s)] {
            let d = &r.status.driver;
            println!(
                "  {who}: frames {}, written late by mean {:.1} µs / max {} µs, replies in time {} / late {}",
                d.transmits,
                d.transmit_late_total as f64 / d.transmits.max(1) as f64,
                d.transmit_late_max,
                d.replies_in_time,
                d.replies_late
            );
        }
        assert!(answered > 0);
        assert!(!t.reply_delay.is_empty() && !t.usage_delay.is_empty() && !t.turnaround.is_empty());
    }
}

#[test]
fn two_drivers_talk_over_a_pseudo_terminal_pair_through_the_serial_port_code() {
    let (a, b) = serialport::TTYPort::pair().unwrap();
    let options = DriverOptions { realtime_priority: None, ..DriverOptions::default() };
    let node = |mac| {
        let mut n = MasterConfig::new(mac, 38_400);
        n.max_master = 3;
        n.receive.t_frame_abort = trellis_mstp::SERIAL_T_FRAME_ABORT;
        n
    };
    let (client, client_driver) =
        trellis_mstp::bind_port(Box::new(SerialLine::from_tty(a, "pty-a").unwrap()), node(1), options).unwrap();
    let (server, server_driver) =
        trellis_mstp::bind_port(Box::new(SerialLine::from_tty(b, "pty-b").unwrap()), node(2), options).unwrap();
    assert_eq!(client_driver.name(), "pty-a");
    let (client_thread, server_thread) = (client_driver.spawn().unwrap(), server_driver.spawn().unwrap());
    let server_sender = server.sender().clone();
    let responder = answer_requests(server);

    assert_eq!(ask(&client, 2, 3, TIMEOUT), 3);

    client.shutdown();
    server_sender.shutdown();
    let (c, s) = (client_thread.join().unwrap(), server_thread.join().unwrap());
    assert_eq!(responder.join().unwrap(), 3);
    assert!(!c.realtime && !s.realtime, "not requested");
    assert_eq!(c.status.master.duplicate_station, 0, "no echo of our own frames");
    assert_eq!(c.status.driver.read_errors + s.status.driver.write_errors, 0);
}

#[test]
fn bind_refuses_what_cannot_work() {
    let line = Line::new(LineConfig::new(38_400));
    let mut config = MstpConfig::sim(&line, 1);
    config.node.baud = 9600;
    assert!(matches!(trellis_mstp::bind(config), Err(BindError::BaudMismatch { line: 38_400, node: 9600 })));

    let virtual_line = Line::new_virtual(LineConfig::new(38_400));
    let config = MstpConfig::sim(&virtual_line, 1);
    assert!(matches!(trellis_mstp::bind(config), Err(BindError::VirtualLine)));

    let mut config = MstpConfig::sim(&line, 1);
    config.node.max_master = 0;
    assert!(matches!(trellis_mstp::bind(config), Err(BindError::Config(_))));

    let config = MstpConfig::serial("/dev/trellis-no-such-tty", 1, 38_400);
    let err = trellis_mstp::bind(config).unwrap_err();
    assert!(matches!(err, BindError::Open { .. }), "{err}");
    assert!(err.to_string().contains("/dev/trellis-no-such-tty"));
    assert!(matches!(PortConfig::Sim(line), PortConfig::Sim(_)));
}

#[test]
fn a_driver_whose_senders_are_all_dropped_stops() {
    let line = Line::new(LineConfig::new(38_400));
    let (handle, thread) = start(&line, 1);
    let (sender, received) = handle.into_parts();
    drop(sender);
    let report = thread.join().unwrap();
    assert_eq!(report.status.master.tokens_received, 0, "alone on the line");
    assert!(received.recv().is_err(), "the channel closes with the driver");
}
