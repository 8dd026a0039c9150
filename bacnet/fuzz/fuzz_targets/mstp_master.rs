//! Stateful fuzzing of the MS/TP Master Node state machine
//! (`bacnet::mstp::MasterNode`): two to four stations on a simulated line,
//! driven by operations the input chooses — let time run to the next
//! deadline, deliver what the stations sent (maybe corrupted, maybe lost),
//! inject arbitrary octets and UART errors, queue NPDUs, answer or postpone
//! requests, power stations off and on, jump the clock.
//!
//! Checks, for every input:
//! - nothing panics, nothing allocates without bound (queues are bounded);
//! - every frame a station sends is a valid frame from its own address;
//! - liveness: after `handle_timeout(now)` and draining `poll_transmit(now)`,
//!   the next deadline is later than `now` (no state is left due forever);
//! - a station's frames never start before the previous one ended;
//! - a slave node (an address octet with its top bit set makes one) sends
//!   nothing but replies and Test_Responses.
#![no_main]

use bacnet::mstp::{Frame, FrameType, MasterConfig, MasterEvent, MasterNode, Micros, bit_times};

const BAUD: u32 = 76_800;

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

struct Station {
    node: MasterNode,
    alive: bool,
    /// The last request handed up that expects a reply.
    requester: Option<u8>,
    /// When the last frame this station sent ends, by the node's instants.
    busy_until: Micros,
}

struct Sim {
    now: Micros,
    stations: Vec<Station>,
    /// Octets on their way: (arrival, sender, octet).
    in_flight: Vec<(Micros, usize, u8)>,
    corrupt_next: Option<u8>,
}

impl Sim {
    fn drain(&mut self) {
        for i in 0..self.stations.len() {
            self.drain_station(i);
        }
    }

    /// Put what station `i` has to send now on the line; take its events.
    fn drain_station(&mut self, i: usize) {
        let now = self.now;
        let s = &mut self.stations[i];
        if !s.alive {
            return;
        }
        let ts = s.node.config().this_station;
        while let Some(t) = s.node.poll_transmit(now) {
            let mut scratch = vec![0u8; t.octets.len()];
            let (frame, used) = Frame::decode(&t.octets, &mut scratch).expect("a station sent an invalid frame");
            assert_eq!(used, t.octets.len());
            assert_eq!(frame.source, ts, "a frame from another address");
            if s.node.config().slave {
                let t = frame.frame_type;
                assert!(
                    t == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY
                        || t == FrameType::BACNET_EXTENDED_DATA_NOT_EXPECTING_REPLY
                        || t == FrameType::TEST_RESPONSE,
                    "a slave sent {t:?}"
                );
            }
            assert!(t.at >= s.busy_until, "the node's frames overlap");
            assert!(t.at <= now, "a frame handed out before its instant");
            s.busy_until = t.at + bit_times(10 * t.octets.len() as u64, BAUD);
            let start = now;
            for (k, &o) in t.octets.iter().enumerate() {
                self.in_flight.push((start + bit_times(10 * (k as u64 + 1), BAUD), i, o));
            }
        }
        while let Some(e) = s.node.poll_event() {
            if let MasterEvent::Received { source, expecting_reply: true, .. } = e {
                s.requester = Some(source);
            }
        }
    }

    fn next_deadline(&self) -> Option<Micros> {
        let timers = self.stations.iter().filter(|s| s.alive).filter_map(|s| s.node.poll_timeout());
        let octets = self.in_flight.iter().map(|o| o.0);
        timers.chain(octets).min()
    }

    /// Advance to `t`, delivering octets and running timers on the way.
    fn advance_to(&mut self, t: Micros) {
        let mut steps = 0;
        while let Some(next) = self.next_deadline().filter(|&n| n <= t) {
            steps += 1;
            if steps > 2_000 {
                break; // enough for one operation; the rest waits
            }
            self.now = self.now.max(next);
            self.deliver();
            self.timers();
        }
        self.now = self.now.max(t);
        self.deliver();
        self.timers();
    }

    fn deliver(&mut self) {
        self.in_flight.sort_by_key(|o| o.0);
        let now = self.now;
        let due = self.in_flight.iter().take_while(|o| o.0 <= now).count();
        let octets: Vec<(Micros, usize, u8)> = self.in_flight.drain(..due).collect();
        for (_, sender, mut octet) in octets {
            if let Some(mask) = self.corrupt_next.take() {
                octet ^= mask;
            }
            for (i, s) in self.stations.iter_mut().enumerate() {
                if i != sender && s.alive {
                    s.node.handle_octets(now, &[octet]);
                }
            }
        }
        self.drain();
    }

    fn timers(&mut self) {
        let now = self.now;
        for i in 0..self.stations.len() {
            let s = &mut self.stations[i];
            if !s.alive || s.node.poll_timeout().is_none_or(|d| d > now) {
                continue;
            }
            s.node.handle_timeout(now);
            self.drain_station(i);
            // Liveness: once what is due has been sent, nothing is due.
            let s = &self.stations[i];
            if let Some(d) = s.node.poll_timeout() {
                assert!(d > now, "still due at {now} after handle_timeout, in {:?}", s.node.state());
            }
        }
    }
}

fn run(data: &[u8]) {
    let mut input = data.iter().copied();
    let mut next = move || input.next();
    let Some(setup) = next() else { return };
    let max_master = 7 + (setup & 7);
    let count = 2 + usize::from((setup >> 3) & 3).min(2);
    let mut stations = Vec::new();
    for k in 0..count {
        let octet = next().unwrap_or(k as u8);
        let ts = octet % (max_master + 1);
        let config = MasterConfig {
            max_master,
            max_info_frames: 1 + (setup >> 5),
            max_queue: 4,
            slave: octet & 0x80 != 0,
            ..MasterConfig::new(ts, BAUD)
        };
        stations.push(Station {
            node: MasterNode::new(config, 0).expect("valid settings"),
            alive: true,
            requester: None,
            busy_until: 0,
        });
    }
    let mut sim = Sim { now: 0, stations, in_flight: Vec::new(), corrupt_next: None };

    while let Some(op) = next() {
        let who = usize::from(op >> 4) % sim.stations.len();
        match op & 0x0F {
            // Let time run to the next deadlines.
            0..=5 => {
                let t = sim.next_deadline().unwrap_or(sim.now);
                sim.advance_to(t);
            }
            // Let a stretch of time pass.
            6 => {
                let d = Micros::from(next().unwrap_or(0)) * 500;
                sim.advance_to(sim.now + d);
            }
            // Queue an NPDU.
            7 => {
                let dest = next().unwrap_or(255);
                let len = usize::from(next().unwrap_or(2)) * 7 + 1;
                let expecting = dest & 1 == 1;
                let dest = if dest >= 0xF0 { 0xFF } else { dest % 16 };
                let _ = sim.stations[who].node.send(dest, vec![1; len], expecting);
            }
            // The host answers, or postpones.
            8 => {
                let now = sim.now;
                let s = &mut sim.stations[who];
                if let Some(r) = s.requester.take() {
                    let _ = s.node.reply(now, r, vec![1, 0, 0x30]);
                }
                sim.drain();
            }
            9 => {
                let now = sim.now;
                sim.stations[who].node.reply_postponed(now);
                sim.drain();
            }
            // Corrupt the next octet delivered.
            10 => sim.corrupt_next = Some(next().unwrap_or(1) | 1),
            // Arbitrary octets straight into one station.
            11 => {
                let n = usize::from(next().unwrap_or(0) % 16);
                let octets: Vec<u8> = (0..n).filter_map(|_| next()).collect();
                let now = sim.now;
                sim.stations[who].node.handle_octets(now, &octets);
                sim.drain();
            }
            // A UART error.
            12 => {
                let now = sim.now;
                sim.stations[who].node.handle_receive_error(now);
                sim.drain();
            }
            // Power a station off, or back on as a new node.
            13 => {
                let s = &mut sim.stations[who];
                if s.alive {
                    s.alive = false;
                } else {
                    let config = *s.node.config();
                    s.node = MasterNode::new(config, sim.now).expect("valid settings");
                    s.alive = true;
                    s.requester = None;
                    s.busy_until = sim.now;
                }
            }
            // Lose every octet in flight.
            14 => sim.in_flight.clear(),
            // Jump the clock (a driver that was late).
            _ => sim.now += Micros::from(next().unwrap_or(0)) * 10_000,
        }
    }
}
