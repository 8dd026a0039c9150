//! Trellis benchmarks: the load generator behind the `stress-test` binary.
//!
//! - [`request`]: the one request the load generator sends (a confirmed
//!   ReadProperty encoded with the `bacnet` core: BVLL, NPDU, APDU) and the
//!   classification of every answer by invoke ID.
//! - [`load`]: many UDP sockets (one per simulated client), each keeping K
//!   requests in flight, on single-threaded tokio runtimes; latency per
//!   request, failures classified.
//! - [`stats`]: outcome counters and latency percentiles.
//! - [`workload`]: the service load generator (every BACnet service,
//!   through the `trellis` crate's client) for the scenarios the raw
//!   generator cannot speak.
//! - [`scenario`]: the named scenarios and the fields every JSON line carries.
//! - [`target`]: the servers under test as child processes (Trellis, the
//!   rusty-bacnet and bacpypes3 peers, a bare UDP echo), on free loopback
//!   ports, optionally pinned to a CPU, killed by PID when done.
//! - [`echo`]: the bare UDP echo server, the physical limit of a loopback
//!   round trip on this machine.
//! - [`mstp`]: the MS/TP wire-limit benchmark (two of our stations on the
//!   simulated line in real time).
//! - [`json_line`]: the output format, one JSON object per line.
//! - [`alloc_count`]: the counting global allocator of `stress-test`.
//! - [`procfs`]: peak resident memory and CPU time of a process, from `/proc`.
//!
//! See `benches/README.md` for the scenarios and how to read their output.

pub mod alloc_count;
pub mod echo;
pub mod json_line;
pub mod load;
pub mod mstp;
pub mod procfs;
pub mod report;
pub mod request;
pub mod scenario;
pub mod stats;
pub mod target;
pub mod workload;
