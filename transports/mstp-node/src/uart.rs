//! The serial port, as the node needs it: the application implements
//! [`Uart`] for its UART and RS-485 transceiver.

/// A character the UART received damaged: a framing or parity error, a
/// break, or an overrun that lost octets. The node treats it as the
/// standard's ReceiveError (the frame being received is invalid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineError;

/// A half-duplex serial port on an RS-485 segment.
pub trait Uart {
    /// The next octet received, oldest first; `None` when none is waiting.
    /// Never the node's own transmissions: a transceiver that hears itself
    /// must have its echo discarded here.
    fn read(&mut self) -> Option<Result<u8, LineError>>;

    /// Put `octets` on the line in order, as one frame with no gap longer
    /// than Tframe_gap (20 bit times) between octets, switching the
    /// transceiver's driver on before the first and off after the last stop
    /// bit. It may return before the last octet has left; the node counts
    /// the frame's time on the line from the baud rate.
    fn write(&mut self, octets: &[u8]);
}
