//! The load generator: many UDP sockets, many requests in flight on each.
//!
//! Each simulated client is one UDP socket on 127.0.0.1 (its own B/IP
//! address, so a server's per-peer admission control sees N peers), connected
//! to the target, that keeps `in_flight` confirmed ReadProperty requests
//! outstanding: every answer is matched to its request by invoke ID, timed,
//! classified, and immediately replaced by a new request.
//!
//! Why tokio, and single-threaded runtimes: a client spends its life waiting
//! for datagrams. Plain threads would need one thread per socket (100
//! threads and a context switch per answer on a 2-core machine); one
//! current-thread runtime multiplexes every socket on one thread through
//! epoll, with no cross-thread wake-ups, so the generator costs a few
//! system calls per request and fits on the one core the server does not
//! use. `threads` splits the clients over several such runtimes when one
//! core is not enough. Sockets are non-blocking and read with `try_recv`
//! until they would block; the generator waits only when there is nothing
//! to read (it sleeps, never spins).
//!
//! A step is warm-up, then the measured window, then a drain: requests sent
//! before the window are answered but not counted; requests sent inside it
//! are all resolved (answered, refused or timed out) before the step ends,
//! so a server that drops requests shows timeouts, not missing requests.

use crate::request::{Answer, ReadPropertyTemplate, classify};
use crate::stats::{Latencies, Outcomes};
use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One step's load.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The server under test.
    pub target: SocketAddr,
    /// More addresses of it (other devices of one gateway): client `i`
    /// talks to `[target, also…][i % (1 + also.len())]`.
    pub also: Vec<SocketAddr>,
    /// Simulated clients (one UDP socket each).
    pub clients: usize,
    /// Requests each client keeps in flight (1..=255: one per invoke ID,
    /// leaving one for the rotation).
    pub in_flight: usize,
    /// Requests answered in this time are not counted.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// A request unanswered this long is a timeout; its invoke ID is not
    /// reused for as long again, so a late answer cannot be mistaken for
    /// the answer to a newer request.
    pub timeout: Duration,
    /// Generator threads (one current-thread runtime each).
    pub threads: usize,
    /// The target is a bare UDP echo: our own request coming back is the answer.
    pub echo: bool,
    /// The requests: each client sends them in turn, starting at a
    /// different one (one template is the common case: every request reads
    /// the same property).
    pub requests: Arc<[ReadPropertyTemplate]>,
}

/// The coordinating thread's marks, for sampling the server's CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The measured window begins.
    WindowStart,
    /// The measured window ends (clients stop sending and drain).
    WindowEnd,
}

/// What one step measured.
#[derive(Debug, Clone, Default)]
pub struct StepResult {
    /// Outcomes of the requests sent in the measured window.
    pub outcomes: Outcomes,
    /// Round trips of those answered with a value.
    pub latencies: Latencies,
}

/// Run one step; `mark` is called at the start and the end of the measured
/// window, on the calling thread.
pub fn run(cfg: &LoadConfig, mut mark: impl FnMut(Mark)) -> io::Result<StepResult> {
    if cfg.clients == 0 || !(1..=255).contains(&cfg.in_flight) || cfg.timeout.is_zero() || cfg.requests.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "clients ≥ 1, in_flight 1..=255, timeout > 0, at least one request",
        ));
    }
    let threads = cfg.threads.clamp(1, cfg.clients);
    // Bind every socket first: a failure is reported before anything runs.
    let mut groups: Vec<Vec<UdpSocket>> = (0..threads).map(|_| Vec::new()).collect();
    for i in 0..cfg.clients {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let to = if i % (1 + cfg.also.len()) == 0 { cfg.target } else { cfg.also[i % (1 + cfg.also.len()) - 1] };
        s.connect(to)?;
        s.set_nonblocking(true)?;
        groups[i % threads].push(s);
    }
    let barrier = Arc::new(Barrier::new(threads + 1));
    let mut workers = Vec::with_capacity(threads);
    for (i, sockets) in groups.into_iter().enumerate() {
        let (barrier, cfg) = (barrier.clone(), cfg.clone());
        // A thread that cannot be spawned fails the step; the ones already
        // started stay parked at the barrier until the process exits.
        workers.push(
            std::thread::Builder::new()
                .name(format!("load-{i}"))
                .spawn(move || generator_thread(sockets, &cfg, &barrier))?,
        );
    }
    barrier.wait();
    let t0 = Instant::now();
    sleep_until(t0 + cfg.warmup);
    mark(Mark::WindowStart);
    sleep_until(t0 + cfg.warmup + cfg.measure);
    mark(Mark::WindowEnd);
    let mut result = StepResult::default();
    for w in workers {
        for client in w.join().map_err(|_| io::Error::other("a load generator thread panicked"))?? {
            result.outcomes.merge(&client.outcomes);
            result.latencies.merge(client.latencies);
        }
    }
    Ok(result)
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// When a client sends and which of its requests count.
#[derive(Debug, Clone, Copy)]
struct Plan {
    measure_from: Instant,
    send_until: Instant,
    timeout: Duration,
    in_flight: usize,
    echo: bool,
}

fn generator_thread(sockets: Vec<UdpSocket>, cfg: &LoadConfig, barrier: &Barrier) -> io::Result<Vec<StepResult>> {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() {
        Ok(r) => r,
        Err(e) => {
            barrier.wait();
            return Err(e);
        }
    };
    runtime.block_on(async {
        let sockets: io::Result<Vec<_>> = sockets.into_iter().map(tokio::net::UdpSocket::from_std).collect();
        barrier.wait();
        let t0 = Instant::now();
        let plan = Plan {
            measure_from: t0 + cfg.warmup,
            send_until: t0 + cfg.warmup + cfg.measure,
            timeout: cfg.timeout,
            in_flight: cfg.in_flight,
            echo: cfg.echo,
        };
        // Clients start one after another over the first half of the
        // warm-up, each at one request in flight (see `client`).
        let sockets = sockets?;
        let n = sockets.len() as u32;
        let tasks: Vec<_> = sockets
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let start = t0 + cfg.warmup / 2 * i as u32 / n;
                tokio::spawn(client(s, plan, start, cfg.requests.clone(), i))
            })
            .collect();
        let mut results = Vec::with_capacity(tasks.len());
        for t in tasks {
            results.push(t.await.map_err(io::Error::other)?);
        }
        Ok(results)
    })
}

/// One invoke ID's state.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Free,
    InFlight {
        sent: Instant,
    },
    /// Timed out: not reused until `until`, so its late answer is recognised.
    Quarantined {
        until: Instant,
    },
}

/// One simulated client: its invoke IDs, counts and samples.
struct Client {
    plan: Plan,
    slots: [Slot; 256],
    /// Requests in the order sent (oldest first), for timeouts; entries whose
    /// slot has moved on are skipped lazily.
    order: VecDeque<(u8, Instant)>,
    next_id: u8,
    in_flight: usize,
    /// Requests this client may have in flight now: 1 at its start, one
    /// more per answer, up to `plan.in_flight`.
    window: usize,
    result: StepResult,
}

impl Client {
    /// The next usable invoke ID after the last one used.
    fn take_id(&mut self, now: Instant) -> Option<u8> {
        for k in 0..=255u8 {
            let id = self.next_id.wrapping_add(k);
            let free = match self.slots[id as usize] {
                Slot::Free => true,
                Slot::Quarantined { until } => until <= now,
                Slot::InFlight { .. } => false,
            };
            if free {
                self.next_id = id.wrapping_add(1);
                return Some(id);
            }
        }
        None
    }

    fn sent(&mut self, id: u8, sent: Instant) {
        self.slots[id as usize] = Slot::InFlight { sent };
        self.order.push_back((id, sent));
        self.in_flight += 1;
    }

    fn answered(&mut self, datagram: &[u8], at: Instant) {
        let Some((id, answer)) = classify(datagram, self.plan.echo) else { return };
        let Slot::InFlight { sent } = self.slots[id as usize] else {
            self.result.outcomes.late += 1;
            return;
        };
        self.slots[id as usize] = Slot::Free;
        self.in_flight -= 1;
        self.window = (self.window + 1).min(self.plan.in_flight);
        if sent >= self.plan.measure_from {
            self.result.outcomes.count(answer);
            if answer == Answer::Ack {
                self.result.latencies.record(at - sent);
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(id, sent)) = self.order.front() {
            match self.slots[id as usize] {
                Slot::InFlight { sent: s } if s == sent => {
                    if now.duration_since(sent) < self.plan.timeout {
                        break;
                    }
                    self.slots[id as usize] = Slot::Quarantined { until: now + self.plan.timeout };
                    self.in_flight -= 1;
                    if sent >= self.plan.measure_from {
                        self.result.outcomes.timeout += 1;
                    }
                }
                _ => {}
            }
            self.order.pop_front();
        }
    }
}

/// One client's life: from `start`, keep requests in flight until
/// `plan.send_until`, then drain.
///
/// It opens its window gradually (one request, then one more per answer),
/// and the clients of a step start one after another over the first half of
/// the warm-up, so the first N×K requests do not arrive as one burst (a
/// burst is a scenario of its own). A server that cannot hold N×K requests
/// in its socket buffer and queues still drops the excess in the steady
/// state; those requests are the timeouts the step reports, each re-sent
/// after its timeout like a BACnet client's retry.
async fn client(
    socket: tokio::net::UdpSocket,
    plan: Plan,
    start: Instant,
    requests: Arc<[ReadPropertyTemplate]>,
    client_index: usize,
) -> StepResult {
    // Clients start at different requests (a prime stride spreads them).
    let mut next_request = client_index.wrapping_mul(7919) % requests.len();
    let mut datagram = Vec::with_capacity(64);
    tokio::time::sleep_until(start.into()).await;
    let mut c = Client {
        plan,
        slots: [Slot::Free; 256],
        order: VecDeque::with_capacity(plan.in_flight * 4),
        next_id: 0,
        in_flight: 0,
        window: 1,
        result: StepResult::default(),
    };
    let mut buf = [0u8; 2048];
    // Timeouts are checked this often (and whenever the client wakes).
    let check_every = (plan.timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(20));
    let mut next_check = Instant::now() + check_every;
    let tick = tokio::time::sleep_until(next_check.into());
    tokio::pin!(tick);
    loop {
        let now = Instant::now();
        if now >= next_check {
            c.expire(now);
            next_check = now + check_every;
            tick.as_mut().reset(next_check.into());
        }
        if now < plan.send_until {
            while c.in_flight < c.window {
                let Some(id) = c.take_id(now) else { break };
                requests[next_request].copy_with_invoke_id(id, &mut datagram);
                next_request = (next_request + 1) % requests.len();
                let sent = Instant::now();
                match socket.try_send(&datagram) {
                    Ok(_) => c.sent(id, sent),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        // e.g. ICMP port unreachable reported on this
                        // connected socket: try again at the next wake-up.
                        c.result.outcomes.io_errors += 1;
                        break;
                    }
                }
            }
        } else if c.in_flight == 0 {
            break;
        }
        match socket.try_recv(&mut buf) {
            Ok(n) => {
                c.answered(&buf[..n], Instant::now());
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => c.result.outcomes.io_errors += 1,
        }
        tokio::select! {
            biased;
            ready = socket.readable() => {
                if ready.is_err() {
                    c.result.outcomes.io_errors += 1;
                    (&mut tick).await;
                }
            }
            _ = &mut tick => {}
        }
    }
    c.result
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::enums::PropertyIdentifier;
    use bacnet::{ObjectIdentifier, ObjectType};

    fn config(target: SocketAddr, echo: bool, timeout: Duration) -> LoadConfig {
        LoadConfig {
            target,
            also: Vec::new(),
            clients: 3,
            in_flight: 4,
            warmup: Duration::from_millis(20),
            measure: Duration::from_millis(200),
            timeout,
            threads: 2,
            echo,
            requests: Arc::new([ReadPropertyTemplate::new(
                ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap(),
                PropertyIdentifier::PRESENT_VALUE,
            )
            .unwrap()]),
        }
    }

    #[test]
    fn against_an_echo_server_every_request_is_answered_and_timed() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        std::thread::spawn(move || crate::echo::serve(&server));
        let mut marks = Vec::new();
        let mut r = run(&config(addr, true, Duration::from_secs(5)), |m| marks.push(m)).unwrap();
        assert_eq!(marks, [Mark::WindowStart, Mark::WindowEnd]);
        let o = r.outcomes;
        assert!(o.ok > 100, "{o:?}");
        assert_eq!(o.requests(), o.ok, "no failures: {o:?}");
        assert_eq!(r.latencies.len() as u64, o.ok);
        assert!(r.latencies.summary().unwrap().p50 < Duration::from_secs(5));
    }

    #[test]
    fn a_silent_server_gives_timeouts_for_every_measured_request() {
        // Bound but never read: requests vanish.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let r = run(&config(silent.local_addr().unwrap(), false, Duration::from_millis(100)), |_| {}).unwrap();
        let o = r.outcomes;
        assert_eq!(o.ok, 0);
        assert!(o.timeout > 0 && o.requests() == o.timeout, "{o:?}");
    }

    #[test]
    fn an_echo_is_not_an_answer_from_a_bacnet_server() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        std::thread::spawn(move || crate::echo::serve(&server));
        let r = run(&config(addr, false, Duration::from_secs(5)), |_| {}).unwrap();
        assert_eq!(r.outcomes.ok, 0);
        assert_eq!(r.outcomes.unexpected, r.outcomes.requests(), "{:?}", r.outcomes);
    }
}
