//! BACnet MS/TP (ASHRAE 135 Clause 9) datalink for Trellis: one driver
//! thread per port, over a serial port or a simulated RS-485 line.
//!
//! [`bind`] returns an [`MstpHandle`] (send, receive, answer requests) and
//! an [`MstpDriver`] the host runs on a thread of its own
//! ([`MstpDriver::spawn`]). The driver owns the [`Port`] and the core's
//! [`MasterNode`](bacnet::mstp::MasterNode); it never awaits tokio and
//! never calls into the host. NPDUs for this station cross to the host over
//! a bounded channel; the answer to a BACnet Data Expecting Reply comes
//! back over another ([`MstpSender::reply`]) and wakes the driver, which
//! gives it to the node at once: sent in ANSWER_DATA_REQUEST if it came
//! within the configured Treply_delay, else the node has sent Reply
//! Postponed and the answer goes at the next token.
//!
//! Between turns the thread sleeps to an absolute deadline (the node's
//! next timer or frame), with Linux's timer slack lowered to 1 ns, and
//! spins the last [`DriverOptions::spin`] so that frames start on time to
//! a few µs; it asks for SCHED_FIFO and says in the log whether it got it.
//!
//! Ports: [`SerialLine`] (the `serialport` crate, 8N1, RS-485 direction
//! control by the adapter, the kernel's RS-485 mode or a GPIO line:
//! [`DirectionControl`]) and
//! [`sim::SimPort`], a station on a [`sim::Line`], which also runs in
//! virtual time ([`sim::Simulation`]). Like every transport, this crate
//! knows only its datalink: it never decodes an NPDU.
//!
//! Shutdown is explicit: [`MstpSender::shutdown`] (or dropping every
//! sender) ends [`MstpDriver::run`], which returns a [`DriverReport`].

mod config;
#[cfg(unix)]
mod direction;
mod driver;
mod engine;
mod handle;
mod os;
pub mod pcap;
mod port;
#[cfg(unix)]
mod serial;
pub mod sim;

pub use config::{BindError, DriverOptions, MstpConfig, PortConfig, SERIAL_T_FRAME_ABORT};
#[cfg(unix)]
pub use direction::{DirectionControl, GpioDriverEnable, KernelRs485};
pub use driver::{DriverReport, MstpDriver};
pub use handle::{DriverCounters, MstpHandle, MstpSender, PortStatus, Received, SendError};
pub use port::{Port, Rx, RxOctet, Waker};
#[cfg(unix)]
pub use serial::{STANDARD_BAUD_RATES, SerialLine};

use bacnet::mstp::MasterConfig;

/// Open the port `config` names and set up its node.
pub fn bind(config: MstpConfig) -> Result<(MstpHandle, MstpDriver), BindError> {
    let MstpConfig { port, node, options } = config;
    let port: Box<dyn Port> = match port {
        #[cfg(unix)]
        PortConfig::Serial { path, direction } => Box::new(
            SerialLine::open_with(&path, node.baud, &direction).map_err(|source| BindError::Open { path, source })?,
        ),
        #[cfg(not(unix))]
        PortConfig::Serial { path, .. } => {
            return Err(BindError::Io {
                port: path,
                source: std::io::Error::new(std::io::ErrorKind::Unsupported, "serial ports need a Unix OS here"),
            });
        }
        PortConfig::Sim(line) => {
            if line.is_virtual() {
                return Err(BindError::VirtualLine);
            }
            if line.baud() != node.baud {
                return Err(BindError::BaudMismatch { line: line.baud(), node: node.baud });
            }
            Box::new(line.attach())
        }
    };
    bind_port(port, node, options)
}

/// Set up a node on a port opened elsewhere (e.g. [`SerialLine::from_tty`]).
pub fn bind_port(
    port: Box<dyn Port>,
    node: MasterConfig,
    options: DriverOptions,
) -> Result<(MstpHandle, MstpDriver), BindError> {
    let now = port::micros_since(port.epoch());
    let (handle, engine) = engine::engine(port, node, options.channel_bound, now)?;
    Ok((handle, MstpDriver::new(engine, options)))
}
