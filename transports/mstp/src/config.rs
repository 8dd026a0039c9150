//! A port's settings, and the error for a port that cannot be bound.

use crate::sim::Line;
use bacnet::mstp::master::ConfigError;
use bacnet::mstp::{MasterConfig, Micros};
use std::io;
use std::time::Duration;

/// Tframe_abort for a real serial port: above the 16 ms an FTDI adapter may
/// hold octets by default, so a frame split across two USB transfers is not
/// cut (Clause 9 allows up to 100 ms). The simulated line delivers each
/// octet at its own instant and keeps the standard's 60 bit times.
pub const SERIAL_T_FRAME_ABORT: Micros = 20_000;

/// Where the port's octets go.
#[derive(Debug, Clone)]
pub enum PortConfig {
    /// A serial device such as `/dev/ttyUSB0` (8N1 at the node's baud).
    Serial {
        /// The device path.
        path: String,
        /// Who switches the RS-485 transceiver's driver.
        direction: crate::DirectionControl,
    },
    /// A station on a simulated line in real time.
    Sim(Line),
}

/// How the driver thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverOptions {
    /// The bound of each channel between the host and the driver (NPDUs
    /// waiting to be handed up; commands waiting to be taken).
    pub channel_bound: usize,
    /// SCHED_FIFO priority to ask for (1..=99); `None` stays at normal
    /// priority. Refused quietly when not permitted (logged either way).
    pub realtime_priority: Option<i32>,
    /// How long before a deadline the thread stops sleeping and spins, so
    /// it wakes on time to a few µs whatever the OS's timer slack.
    pub spin: Duration,
}

impl Default for DriverOptions {
    /// 64 per channel, SCHED_FIFO priority 20 when allowed, a 200 µs spin.
    fn default() -> Self {
        DriverOptions { channel_bound: 64, realtime_priority: Some(20), spin: Duration::from_micros(200) }
    }
}

/// One MS/TP port: the line, the master node's settings, the driver's.
#[derive(Debug, Clone)]
pub struct MstpConfig {
    /// The line.
    pub port: PortConfig,
    /// The master node: MAC address (`this_station`), baud, Max_Master,
    /// Max_Info_Frames, timers.
    pub node: MasterConfig,
    /// The driver thread.
    pub options: DriverOptions,
}

impl MstpConfig {
    /// Station `mac` on serial device `path` at `baud`, with the core's
    /// defaults and [`SERIAL_T_FRAME_ABORT`].
    pub fn serial(path: impl Into<String>, mac: u8, baud: u32) -> MstpConfig {
        let mut node = MasterConfig::new(mac, baud);
        node.receive.t_frame_abort = SERIAL_T_FRAME_ABORT;
        MstpConfig {
            port: PortConfig::Serial { path: path.into(), direction: crate::DirectionControl::Adapter },
            node,
            options: DriverOptions::default(),
        }
    }

    /// Station `mac` on a simulated line (at its baud), with the core's
    /// defaults.
    pub fn sim(line: &Line, mac: u8) -> MstpConfig {
        MstpConfig {
            port: PortConfig::Sim(line.clone()),
            node: MasterConfig::new(mac, line.baud()),
            options: DriverOptions::default(),
        }
    }
}

/// A port could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The master node refused its settings.
    #[error("MS/TP settings: {0}")]
    Config(#[from] ConfigError),
    /// The serial device could not be opened.
    #[error("cannot open serial port {path}")]
    Open {
        /// The device path.
        path: String,
        /// Why.
        #[source]
        source: serialport::Error,
    },
    /// Setting up the port failed.
    #[error("cannot set up MS/TP port {port}")]
    Io {
        /// The port.
        port: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The node's baud rate is not the simulated line's.
    #[error("the simulated line runs at {line} baud, the node at {node}")]
    BaudMismatch {
        /// The line's.
        line: u32,
        /// The node's.
        node: u32,
    },
    /// A driver thread was asked to run on a virtual-time line.
    #[error("a driver thread needs a line in real time; a virtual-time line belongs to its Simulation")]
    VirtualLine,
}
