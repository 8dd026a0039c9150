//! An MS/TP port as the runtime sees it, for the server's stations and the
//! client alike: the bridge thread that carries what the driver received
//! into a tokio channel, and a refused send as the I/O error both report.
//!
//! Must never: let the driver's thread wait on the runtime, or the runtime
//! on the driver's channel (the bridge thread is the only one that blocks).

use tokio::sync::mpsc;
use trellis_mstp::Received;

/// The MS/TP broadcast MAC: every station on the line hears it.
pub const BROADCAST_MAC: u8 = 255;

/// Start the thread ("mstp rx") that carries every NPDU the driver received
/// into `to`, converted by `convert`. It ends when the driver's channel or
/// `to` closes; if it cannot start, the failure is logged and nothing is
/// received.
pub fn bridge<T: Send + 'static>(
    received: std::sync::mpsc::Receiver<Received>,
    to: mpsc::Sender<T>,
    convert: impl Fn(Received) -> T + Send + 'static,
) {
    let spawned = std::thread::Builder::new().name("mstp rx".into()).spawn(move || {
        while let Ok(r) = received.recv() {
            if to.blocking_send(convert(r)).is_err() {
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the MS/TP receive thread");
    }
}

/// An MS/TP send refused, as the I/O error the client and the server report.
pub fn send_error(e: trellis_mstp::SendError) -> std::io::Error {
    let kind = match e {
        trellis_mstp::SendError::BadLength => std::io::ErrorKind::InvalidInput,
        trellis_mstp::SendError::Full => std::io::ErrorKind::WouldBlock,
        trellis_mstp::SendError::Stopped => std::io::ErrorKind::BrokenPipe,
        trellis_mstp::SendError::Slave => std::io::ErrorKind::Unsupported,
    };
    std::io::Error::new(kind, e)
}
