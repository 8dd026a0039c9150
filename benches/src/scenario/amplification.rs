//! `amplification`: what a requester that acknowledges blind can make each
//! server send — octets out ÷ octets in, in UDP payload octets, for the
//! attacks a reflection attacker would use with a spoofed source address.
//!
//! Every target serves N extra objects, so its Device's Object_List is a
//! large property (5,000 objects: ~25 KB, 18 segments of 1,476-octet
//! APDUs). Each attack reads it with a 17-octet ReadProperty that accepts
//! more than 64 segments, from a fresh socket, then:
//! - `no-ack`: acknowledges nothing (the server resends segment 0 for its
//!   retries);
//! - `blind-ack-127`: one Segment-ACK for segment 0 claiming window 127;
//! - `ack-every-segment`: a Segment-ACK for every sequence number at once,
//!   window 127, without waiting for the segments (they are predictable);
//! - `flood-20-ports`: `blind-ack-127` four times from each of 20 ports of
//!   one address (what a per-address budget bounds).
//!
//! The attacker waits until the target has been quiet for five seconds
//! (longer than any target's T_seg), so every resend is counted.

use super::{Env, bacnet_targets, check_alive};
use crate::json_line::JsonLine;
use crate::target::{Server, Setup, TargetKind};
use serde_json::json;
use std::net::{SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// The attacks, in the order run.
pub const ATTACKS: [&str; 4] = ["no-ack", "blind-ack-127", "ack-every-segment", "flood-20-ports"];

/// Quiet time that ends an attack.
const QUIET: Duration = Duration::from_secs(5);

/// Run the scenario: one JSON line per target and attack.
pub fn run(env: &Env, targets: &[TargetKind], objects: u32) -> anyhow::Result<()> {
    let setup = Setup { objects, segmentation: true, ..Setup::default() };
    for kind in bacnet_targets(targets) {
        let server = env.start(kind, &setup)?;
        for attack in ATTACKS {
            let started = Instant::now();
            let tally = match attack {
                "no-ack" => one(&server, kind, |_, _| Ok(0))?,
                "blind-ack-127" => one(&server, kind, |s, id| send(s, &segment_ack(id, 0, 127)))?,
                "ack-every-segment" => one(&server, kind, |s, id| {
                    let mut octets = 0;
                    for seq in 0..=255u8 {
                        octets += send(s, &segment_ack(id, seq, 127))?;
                    }
                    Ok(octets)
                })?,
                _ => flood(&server, kind)?,
            };
            check_alive(&server)?;
            let ratio = tally.octets_out as f64 / tally.octets_in.max(1) as f64;
            eprintln!(
                "stress-test: amplification {} {attack}: {} octets in, {} out ({} datagrams), ratio {ratio:.0}",
                kind.name(),
                tally.octets_in,
                tally.octets_out,
                tally.datagrams_out
            );
            let line = JsonLine::new()
                .put("scenario", json!("amplification"))
                .put("target", json!(kind.name()))
                .put("attack", json!(attack))
                .put("objects", json!(objects))
                .put("octets_in", json!(tally.octets_in))
                .put("octets_out", json!(tally.octets_out))
                .put("datagrams_out", json!(tally.datagrams_out))
                .put("aborts", json!(tally.aborts))
                .put("ratio", json!(super::round_to(ratio, 10.0)))
                .put("secs", json!(super::round_to(started.elapsed().as_secs_f64(), 10.0)))
                .finish();
            println!("{line}");
        }
    }
    Ok(())
}

/// What crossed the wire in one attack.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    octets_in: usize,
    octets_out: usize,
    datagrams_out: usize,
    aborts: usize,
}

/// The Device instance each target serves.
fn device_instance(kind: TargetKind) -> u32 {
    match kind {
        TargetKind::Trellis => 389_002,
        TargetKind::Rusty => 4001,
        _ => 3001,
    }
}

/// ReadProperty of the Device's Object_List accepting more than 64
/// segments of up to 1,476 octets: 17 octets on B/IP.
fn read_object_list(instance: u32, invoke_id: u8) -> Vec<u8> {
    let device = (8u32 << 22) | instance;
    let mut d = vec![0x81, 0x0A, 0, 17, 0x01, 0x04, 0x02, 0x75, invoke_id, 0x0C, 0x0C];
    d.extend_from_slice(&device.to_be_bytes());
    d.extend_from_slice(&[0x19, 0x4C]);
    d
}

/// A client's Segment-ACK: 10 octets on B/IP.
fn segment_ack(invoke_id: u8, sequence_number: u8, window: u8) -> Vec<u8> {
    vec![0x81, 0x0A, 0, 10, 0x01, 0x00, 0x40, invoke_id, sequence_number, window]
}

fn send(socket: &UdpSocket, datagram: &[u8]) -> anyhow::Result<usize> {
    Ok(socket.send(datagram)?)
}

fn attacker(to: SocketAddrV4) -> anyhow::Result<UdpSocket> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.connect(to)?;
    Ok(socket)
}

/// One request from a fresh socket; `then` sends the attack's follow-up
/// once the first datagram has come back (or a second has passed).
fn one(
    server: &Server,
    kind: TargetKind,
    then: impl FnOnce(&UdpSocket, u8) -> anyhow::Result<usize>,
) -> anyhow::Result<Tally> {
    let socket = attacker(server.addr)?;
    let mut tally =
        Tally { octets_in: send(&socket, &read_object_list(device_instance(kind), 1))?, ..Tally::default() };
    receive(&socket, Duration::from_secs(1), &mut tally, true)?;
    tally.octets_in += then(&socket, 1)?;
    receive(&socket, QUIET, &mut tally, false)?;
    Ok(tally)
}

/// `blind-ack-127` four times from each of 20 ports.
fn flood(server: &Server, kind: TargetKind) -> anyhow::Result<Tally> {
    let sockets = (0..20).map(|_| attacker(server.addr)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut tally = Tally::default();
    for invoke_id in 0..4u8 {
        for s in &sockets {
            tally.octets_in += send(s, &read_object_list(device_instance(kind), invoke_id))?;
        }
        std::thread::sleep(Duration::from_millis(20));
        for s in &sockets {
            tally.octets_in += send(s, &segment_ack(invoke_id, 0, 127))?;
        }
    }
    let handles: Vec<_> = sockets
        .into_iter()
        .map(|s| {
            std::thread::spawn(move || {
                let mut t = Tally::default();
                receive(&s, QUIET, &mut t, false).map(|_| t)
            })
        })
        .collect();
    for h in handles {
        let t = h.join().map_err(|_| anyhow::anyhow!("a receiving thread panicked"))??;
        tally.octets_out += t.octets_out;
        tally.datagrams_out += t.datagrams_out;
        tally.aborts += t.aborts;
    }
    Ok(tally)
}

/// Count what arrives until `quiet` passes with nothing (or, with `once`,
/// after the first datagram).
fn receive(socket: &UdpSocket, quiet: Duration, tally: &mut Tally, once: bool) -> anyhow::Result<()> {
    socket.set_read_timeout(Some(quiet))?;
    let mut buf = [0u8; 2048];
    loop {
        match socket.recv(&mut buf) {
            Ok(n) => {
                tally.octets_out += n;
                tally.datagrams_out += 1;
                tally.aborts += usize::from(n > 6 && buf[6] >> 4 == 7);
                if once {
                    return Ok(());
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
    }
}
