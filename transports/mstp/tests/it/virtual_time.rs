//! Stations on the simulated line in virtual time: the driver's own
//! per-turn code and handles, with the test as every station's host.
//! Conversations read like Clause 9's: the ring forms, a request is
//! answered in ANSWER_DATA_REQUEST, a slow answer follows Reply Postponed
//! at the next token, broadcasts reach everyone.

use crate::support::{answer, dissect_cleanly, i_am, rp_ack, rp_request, temp_pcap, who_is};
use bacnet::mstp::{FrameType, MasterConfig, Micros, bit_times};
use std::path::Path;
use trellis_mstp::sim::timing::{Percentiles, Timings};
use trellis_mstp::sim::{DriverTiming, LineConfig, LineFrame, Noise, Simulation};
use trellis_mstp::{MstpHandle, Received};

const BAUD: u32 = 38_400;
const MS: Micros = 1_000;
const S: Micros = 1_000_000;

/// A station's host: what it received, and how it answers requests.
struct Host {
    handle: MstpHandle,
    inbox: Vec<(Micros, Received)>,
    /// Answer requests this long after they arrive (`None`: postpone at
    /// once, answer after `postponed_answer`).
    reply_after: Option<Micros>,
    pending: Vec<(Micros, u8, Vec<u8>)>,
}

struct Net {
    sim: Simulation,
    hosts: Vec<Host>,
}

impl Net {
    fn new(macs: &[u8], line: LineConfig) -> Net {
        Net::with_drivers(&macs.iter().map(|&mac| (mac, DriverTiming::default())).collect::<Vec<_>>(), line)
    }

    /// Stations whose RS-485 drivers switch with the timing given.
    fn with_drivers(stations: &[(u8, DriverTiming)], line: LineConfig) -> Net {
        let mut sim = Simulation::new(line);
        let hosts = stations
            .iter()
            .map(|&(mac, driver)| {
                let node = MasterConfig { max_master: 4, ..MasterConfig::new(mac, line.baud) };
                Host {
                    handle: sim.add_station_with(node, driver).unwrap(),
                    inbox: Vec::new(),
                    reply_after: Some(0),
                    pending: Vec::new(),
                }
            })
            .collect();
        Net { sim, hosts }
    }

    fn host(&mut self, mac: u8) -> &mut Host {
        self.hosts.iter_mut().find(|h| h.handle.mac() == mac).unwrap()
    }

    /// One instant of the simulation, then every host takes what arrived
    /// and gives the answers that are due.
    fn step(&mut self) {
        self.sim.step();
        let now = self.sim.now();
        for h in &mut self.hosts {
            while let Ok(r) = h.handle.try_recv() {
                if r.expecting_reply
                    && let Some(a) = answer(&r.npdu)
                {
                    match h.reply_after {
                        Some(d) => h.pending.push((now + d, r.source_mac, a)),
                        None => {
                            h.handle.reply_postponed(r.source_mac).unwrap();
                            h.pending.push((now + 50 * MS, r.source_mac, a));
                        }
                    }
                }
                h.inbox.push((now, r));
            }
            let (due, later) = h.pending.drain(..).partition(|p| p.0 <= now);
            h.pending = later;
            for (_, to, npdu) in due {
                h.handle.reply(to, npdu).unwrap();
            }
        }
    }

    /// Step until `done` holds or `limit` µs of virtual time pass.
    fn run_until(&mut self, limit: Micros, done: impl Fn(&Net) -> bool) -> bool {
        let end = self.sim.now() + limit;
        while self.sim.now() < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    fn run_for(&mut self, duration: Micros) {
        self.run_until(duration, |_| false);
    }

    /// Until every station passes the token to the next.
    fn form_ring(&mut self) {
        let macs: Vec<u8> = self.hosts.iter().map(|h| h.handle.mac()).collect();
        let formed = self.run_until(5 * S, |n| {
            n.hosts.iter().enumerate().all(|(i, h)| h.handle.status().next_station == macs[(i + 1) % macs.len()])
        });
        assert!(formed, "the ring formed: {:?}", self.hosts.iter().map(|h| h.handle.status()).collect::<Vec<_>>());
    }

    fn received(&self, mac: u8) -> Vec<Received> {
        self.hosts.iter().find(|h| h.handle.mac() == mac).unwrap().inbox.iter().map(|(_, r)| r.clone()).collect()
    }
}

fn kind(f: &LineFrame) -> (FrameType, u8, u8) {
    let h = f.header().unwrap();
    (h.frame_type, h.source, h.destination)
}

fn received(source_mac: u8, npdu: Vec<u8>, expecting_reply: bool) -> Received {
    Received { source_mac, npdu, expecting_reply, broadcast: false }
}

#[test]
fn two_stations_form_a_ring_and_pass_the_token_back_and_forth() {
    let mut net = Net::new(&[1, 2], LineConfig::new(BAUD));
    net.form_ring();
    net.run_for(S);
    let (s1, s2) = (net.host(1).handle.status(), net.host(2).handle.status());
    assert!(s1.master.tokens_received > 100 && s2.master.tokens_received > 100, "{s1:?} {s2:?}");
    let frames = net.sim.line().frames();
    let tokens = frames.iter().filter(|f| kind(f).0 == FrameType::TOKEN).count();
    assert!(tokens > 200);
    // Once formed, the token alternates 1 -> 2 -> 1, with a maintenance
    // Poll For Master (to 3 and 4, which are silent) every Npoll tokens.
    let last: Vec<_> = frames.iter().rev().take(20).map(kind).filter(|k| k.0 == FrameType::TOKEN).collect();
    assert!(last.windows(2).all(|w| w[0].1 != w[1].1 && w[0].1 == w[1].2));
    assert_eq!(net.sim.line().stats().collisions, 0);
}

#[test]
fn a_request_is_answered_while_the_requester_waits_for_the_reply() {
    let mut net = Net::new(&[1, 2], LineConfig::new(BAUD));
    net.form_ring();
    net.host(1).handle.send(2, rp_request(7), true).unwrap();
    assert!(net.run_until(S, |n| !n.received(1).is_empty()));
    assert_eq!(net.received(2), [received(1, rp_request(7), true)]);
    assert_eq!(net.received(1), [received(2, rp_ack(7), false)]);

    // On the line: BACnet Data Expecting Reply 1 -> 2, then at once BACnet
    // Data Not Expecting Reply 2 -> 1, Tturnaround after it.
    let frames = net.sim.line().frames();
    let i = frames.iter().position(|f| kind(f) == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 2)).unwrap();
    assert_eq!(kind(&frames[i + 1]), (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 2, 1));
    assert_eq!(frames[i + 1].start - frames[i].end, bit_times(40, BAUD), "the host answered at once");
    let s2 = net.host(2).handle.status();
    assert_eq!((s2.driver.replies_in_time, s2.driver.replies_late, s2.master.replies_postponed), (1, 0, 0));
}

#[test]
fn a_slow_answer_follows_reply_postponed_at_the_next_token() {
    let mut net = Net::new(&[1, 2], LineConfig::new(BAUD));
    net.form_ring();
    net.host(2).reply_after = Some(300 * MS);
    net.host(1).handle.send(2, rp_request(9), true).unwrap();
    assert!(net.run_until(2 * S, |n| !n.received(1).is_empty()));
    assert_eq!(net.received(1), [received(2, rp_ack(9), false)]);

    let frames = net.sim.line().frames();
    let i = frames.iter().position(|f| kind(f) == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 2)).unwrap();
    // Treply_delay (the node's 200 ms) passes: Reply Postponed.
    assert_eq!(kind(&frames[i + 1]), (FrameType::REPLY_POSTPONED, 2, 1));
    let waited = frames[i + 1].start - frames[i].end;
    assert!((200 * MS..200 * MS + bit_times(40, BAUD) + 1).contains(&waited), "{waited} µs");
    // The answer goes in a frame of its own when 2 next holds the token.
    let j = frames.iter().position(|f| kind(f) == (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 2, 1)).unwrap();
    assert_eq!(kind(&frames[j - 1]), (FrameType::TOKEN, 1, 2));
    let s2 = net.host(2).handle.status();
    assert_eq!((s2.driver.replies_in_time, s2.driver.replies_late, s2.master.replies_postponed), (0, 1, 1));
}

#[test]
fn a_host_may_postpone_at_once_and_answer_later() {
    let mut net = Net::new(&[1, 2], LineConfig::new(BAUD));
    net.form_ring();
    net.host(2).reply_after = None;
    net.host(1).handle.send(2, rp_request(3), true).unwrap();
    assert!(net.run_until(2 * S, |n| !n.received(1).is_empty()));
    assert_eq!(net.received(1), [received(2, rp_ack(3), false)]);
    let frames = net.sim.line().frames();
    let i = frames.iter().position(|f| kind(f) == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 2)).unwrap();
    assert_eq!(kind(&frames[i + 1]), (FrameType::REPLY_POSTPONED, 2, 1));
    assert_eq!(frames[i + 1].start - frames[i].end, bit_times(40, BAUD), "postponed without waiting");
}

#[test]
fn data_not_expecting_reply_and_broadcasts_reach_their_stations() {
    let mut net = Net::new(&[1, 2, 3], LineConfig::new(BAUD));
    net.form_ring();
    net.host(1).handle.send(3, i_am(1), false).unwrap();
    net.host(2).handle.send(255, who_is(), false).unwrap();
    assert!(net.run_until(S, |n| n.received(3).len() == 2 && n.received(1).len() == 1));
    let broadcast = Received { source_mac: 2, npdu: who_is(), expecting_reply: false, broadcast: true };
    assert_eq!(net.received(1), std::slice::from_ref(&broadcast));
    let mut at3 = net.received(3);
    at3.sort_by_key(|r| r.source_mac);
    assert_eq!(at3, [received(1, i_am(1), false), broadcast]);
    assert!(net.received(2).is_empty(), "a station does not hear its own broadcast");
}

/// Three stations: each asks each other for a property (a BACnet Data
/// Expecting Reply answered at once) and announces itself to each other
/// (BACnet Data Not Expecting Reply).
fn three_stations_exchange(capture: Option<&Path>) -> Net {
    let mut net = Net::new(&[1, 2, 3], LineConfig::new(BAUD));
    if let Some(path) = capture {
        net.sim.line().capture_file(path).unwrap();
    }
    net.form_ring();
    for from in 1..=3u8 {
        for to in (1..=3u8).filter(|&t| t != from) {
            let h = &net.host(from).handle;
            h.send(to, rp_request(from * 10 + to), true).unwrap();
            h.send(to, i_am(from), false).unwrap();
        }
    }
    // Each station receives 2 requests, 2 I-Ams and 2 answers.
    assert!(net.run_until(5 * S, |n| (1..=3).all(|m| n.received(m).len() == 6)), "all delivered");
    net.run_for(100 * MS);
    net.sim.line().flush().unwrap();
    net
}

#[test]
fn three_stations_exchange_npdus_both_ways_and_the_token_goes_round() {
    let net = three_stations_exchange(None);
    for me in 1..=3u8 {
        let got = net.received(me);
        for other in (1..=3u8).filter(|&o| o != me) {
            assert!(got.contains(&received(other, rp_request(other * 10 + me), true)), "{me} asked by {other}");
            assert!(got.contains(&received(other, i_am(other), false)), "{me} told by {other}");
            assert!(got.contains(&received(other, rp_ack(me * 10 + other), false)), "{me} answered by {other}");
        }
        let s = net.hosts[usize::from(me) - 1].handle.status();
        assert_eq!(s.next_station, me % 3 + 1);
        assert_eq!((s.driver.replies_in_time, s.master.replies_postponed, s.driver.up_dropped), (2, 0, 0));
        assert!(s.master.tokens_received > 0);
    }
    let frames = net.sim.line().frames();
    assert!(frames.iter().all(|f| f.is_clean()), "no collisions, no noise");
    // The token went 1 -> 2 -> 3 -> 1.
    for pair in [(1, 2), (2, 3), (3, 1)] {
        assert!(frames.iter().any(|f| kind(f) == (FrameType::TOKEN, pair.0, pair.1)));
    }
    // In virtual time every handover is exactly Tturnaround: the node's
    // 40 bit times, nothing of the OS.
    let t = Timings::from_frames(&frames);
    let turnaround = Percentiles::of(&t.turnaround).unwrap();
    assert_eq!(turnaround.min, bit_times(40, BAUD));
    println!("virtual time, {BAUD} baud, Tturnaround: {turnaround}");
    println!("virtual time, reply delay: {}", Percentiles::of(&t.reply_delay).unwrap());
    println!("virtual time, Tusage_delay: {}", Percentiles::of(&t.usage_delay).unwrap());
}

#[test]
fn a_capture_of_three_stations_dissects_cleanly_with_tshark() {
    let path = temp_pcap("three-stations");
    let net = three_stations_exchange(Some(&path));
    let text = dissect_cleanly(&path);
    let _ = std::fs::remove_file(&path);
    let frames = net.sim.line().frames().len();
    assert_eq!(text.matches("\nFrame ").count() + usize::from(text.starts_with("Frame ")), frames);
    for what in [
        "Token (0)",
        "Poll For Master (1)",
        "Reply To Poll For Master (2)",
        "BACnet Data Expecting Reply (5)",
        "BACnet Data Not Expecting Reply (6)",
        "Data CRC: ",
        "readProperty",
        "i-Am",
    ] {
        assert!(text.contains(what), "tshark shows {what}");
    }
}

#[test]
fn virtual_time_runs_are_deterministic() {
    let run = || {
        let mut config = LineConfig::new(BAUD);
        config.noise = Noise { flip: 0.001, drop: 0.0005, seed: 42 };
        let mut net = Net::new(&[1, 2, 3], config);
        net.run_for(S);
        for i in 0..20 {
            net.host(1).handle.send(2, rp_request(i), true).unwrap();
            net.run_for(20 * MS);
        }
        net.run_for(S);
        net.sim.line().flush().unwrap();
        net.sim.line().frames()
    };
    let first = run();
    assert!(first.len() > 500);
    assert_eq!(first, run());
}

#[test]
fn the_ring_survives_a_noisy_line() {
    let mut config = LineConfig::new(BAUD);
    config.noise = Noise { flip: 0.002, drop: 0.001, seed: 1 };
    let mut net = Net::new(&[1, 2, 3], config);
    net.run_for(10 * S);
    let stats = net.sim.line().stats();
    assert!(stats.flipped > 0 && stats.dropped > 0);
    let refused: u64 = net
        .hosts
        .iter()
        .map(|h| {
            let r = h.handle.status().receive;
            r.bad_header_crc + r.bad_data_crc + r.frame_abort
        })
        .sum();
    assert!(refused > 0, "damaged frames were refused");
    // The token still goes round at the end.
    let frames = net.sim.line().frames();
    let recent: Vec<_> = frames.iter().rev().take(60).filter(|f| f.is_clean()).map(kind).collect();
    for pair in [(1, 2), (2, 3), (3, 1)] {
        assert!(recent.contains(&(FrameType::TOKEN, pair.0, pair.1)), "token {pair:?} in {recent:?}");
    }
}

#[test]
fn two_stations_with_one_address_collide_and_the_line_counts_it() {
    // Both answer Poll For Master 2 at the same instant.
    let mut net = Net::new(&[1, 2, 2], LineConfig::new(BAUD));
    net.run_for(3 * S);
    let stats = net.sim.line().stats();
    assert!(stats.collisions > 0 && stats.garbled > 0, "{stats:?}");
    let frames = net.sim.line().frames();
    let collided = frames.iter().filter(|f| f.collided).collect::<Vec<_>>();
    assert!(collided.iter().any(|f| kind(f) == (FrameType::REPLY_TO_POLL_FOR_MASTER, 2, 1)));
    let receive_errors: u64 = net.hosts.iter().map(|h| h.handle.status().receive.receive_errors).sum();
    assert!(receive_errors > 0, "the stations saw UART errors");
}

/// What direction control costs on the line, in one run: station 2's
/// driver switched with `driver`, station 1 asking it one ReadProperty
/// after another for 5 s of line time.
#[derive(Debug)]
struct DriverCost {
    answered: usize,
    collisions: u64,
    /// End of station 1's request to the start of station 2's answer.
    reply: Option<Percentiles>,
    /// End of a Token to the start of the addressed station's first frame.
    usage: Option<Percentiles>,
}

fn driver_cost(baud: u32, driver: DriverTiming) -> DriverCost {
    let mut net = Net::with_drivers(&[(1, DriverTiming::default()), (2, driver)], LineConfig::new(baud));
    let mut invoke = 0u8;
    while net.sim.now() < 5 * S {
        // One request, then its answer (or 300 ms without one).
        let before = net.received(1).len();
        net.host(1).handle.send(2, rp_request(invoke), true).unwrap();
        invoke = invoke.wrapping_add(1);
        net.run_until(300 * MS, |n| n.received(1).len() > before);
    }
    let t = Timings::from_frames(&net.sim.line().frames());
    DriverCost {
        answered: net.received(1).len(),
        collisions: net.sim.line().stats().collisions,
        reply: Percentiles::of(&t.reply_delay),
        usage: Percentiles::of(&t.usage_delay),
    }
}

/// Direction control's cost (`docs/rs485.md`): a driver enabled 1 ms
/// before the first bit (the kernel's `delay_rts_before_send = 1`) starts
/// every frame of that station 1 ms later — its answers and its use of
/// the token, well inside Treply_delay (250 ms) and Tusage_timeout (20 ms)
/// — and nothing collides. A driver held 1 ms after the last bit
/// (`delay_rts_after_send = 1`) stays inside the other station's 40-bit
/// turnaround at 38,400 baud (1,042 µs) but not at 57,600 (694 µs), where
/// the answers and tokens that follow collide with it.
#[test]
fn driver_enable_delays_cost_what_they_say_and_a_late_release_collides_above_38400() {
    let none = driver_cost(BAUD, DriverTiming::default());
    let before = driver_cost(BAUD, DriverTiming { enable: MS, release: 0 });
    let after = driver_cost(BAUD, DriverTiming { enable: 0, release: MS });
    let after_fast = driver_cost(57_600, DriverTiming { enable: 0, release: MS });
    let fast = driver_cost(57_600, DriverTiming::default());
    for (name, c) in [
        ("38400 none", &none),
        ("38400 before 1 ms", &before),
        ("38400 after 1 ms", &after),
        ("57600 none", &fast),
        ("57600 after 1 ms", &after_fast),
    ] {
        eprintln!(
            "{name}: {} answers, {} collisions, reply {}, usage {}",
            c.answered,
            c.collisions,
            c.reply.map_or("-".into(), |p| p.to_string()),
            c.usage.map_or("-".into(), |p| p.to_string())
        );
    }
    let (reply, usage) = (none.reply.unwrap(), none.usage.unwrap());
    assert_eq!(none.collisions, 0);
    assert_eq!(reply.p50, bit_times(40, BAUD), "the host answers at once: Tturnaround");

    // 1 ms before: every answer and every token use 1 ms later, no collision.
    assert_eq!(before.collisions, 0);
    assert_eq!(before.reply.unwrap().p50, reply.p50 + MS);
    assert_eq!(before.reply.unwrap().max, reply.max + MS);
    assert!(before.usage.unwrap().max <= usage.max + MS, "{:?} vs {:?}", before.usage, usage);
    assert!(
        before.answered * 100 >= none.answered * 90,
        "a few % fewer answers: {} vs {}",
        before.answered,
        none.answered
    );

    // 1 ms after at 38,400: inside the turnaround, nothing collides.
    assert_eq!(after.collisions, 0);
    assert!(after.answered * 100 >= none.answered * 90, "{} vs {}", after.answered, none.answered);

    // 1 ms after at 57,600: beyond the turnaround, the next frames collide.
    assert_eq!(fast.collisions, 0);
    assert!(after_fast.collisions > 0, "a 1 ms hold at 57,600 baud collides: {after_fast:?}");
    assert!(after_fast.answered < fast.answered / 2, "{after_fast:?} vs {fast:?}");
}
