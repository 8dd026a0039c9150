//! Sending side of a BACnet/IP port.

use bacnet::bvll::{BVLC_TYPE_BIP, Bvll};
use bacnet::enums::BvlcFunction;
use std::net::SocketAddrV4;
use std::sync::Arc;
use tokio::net::UdpSocket;

/// Sends NPDUs; cheap to clone, shareable across tasks.
#[derive(Debug, Clone)]
pub struct BipHandle {
    socket: Arc<UdpSocket>,
    local: SocketAddrV4,
    broadcast: SocketAddrV4,
    /// The port's BBMD, when it is one: our broadcasts go to its peers and
    /// foreign devices too.
    pub(crate) bbmd: Option<Arc<crate::PortBbmd>>,
    /// The port's counters, shared with its driver (datagrams sent here).
    stats: Arc<crate::driver::DriverStats>,
}

impl BipHandle {
    pub(crate) fn new(
        socket: Arc<UdpSocket>,
        local: SocketAddrV4,
        broadcast: SocketAddrV4,
        stats: Arc<crate::driver::DriverStats>,
    ) -> Self {
        BipHandle { socket, local, broadcast, bbmd: None, stats }
    }

    /// Our unicast B/IP address.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The local broadcast address and port.
    pub fn broadcast_addr(&self) -> SocketAddrV4 {
        self.broadcast
    }

    /// Send an NPDU to one station as an Original-Unicast-NPDU.
    pub async fn send_unicast(&self, to: SocketAddrV4, npdu: &[u8]) -> std::io::Result<()> {
        self.send(to, Bvll::OriginalUnicastNpdu(npdu)).await
    }

    /// Send an NPDU to the local broadcast address as an
    /// Original-Broadcast-NPDU.
    pub async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        self.send(self.broadcast, Bvll::OriginalBroadcastNpdu(npdu)).await
    }

    /// Send an NPDU as an Original-Broadcast-NPDU to a specific address
    /// (a directed broadcast, or a single station for testing).
    pub async fn send_broadcast_to(&self, to: SocketAddrV4, npdu: &[u8]) -> std::io::Result<()> {
        self.send(to, Bvll::OriginalBroadcastNpdu(npdu)).await
    }

    /// Send any BVLL message.
    pub async fn send(&self, to: SocketAddrV4, msg: Bvll<'_>) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(4 + msg.npdu().map_or(16, |n| n.len()));
        msg.encode(&mut buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.socket.send_to(&buf, to).await?;
        self.stats.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let (Some(bbmd), Bvll::OriginalBroadcastNpdu(npdu)) = (&self.bbmd, msg) {
            bbmd.with(&self.socket, |b, now| b.handle_local_broadcast(now, npdu));
        }
        Ok(())
    }

    /// Send datagrams prepared in place, in as few system calls as the
    /// socket allows (`sendmmsg` on Linux): each frame is an NPDU behind
    /// [`HEADROOM`] octets that [`write_header`] filled. Waits only while
    /// the socket's buffer is full. A datagram the kernel refuses is skipped
    /// and the rest still go; the first such error is returned at the end.
    pub async fn send_frames(&self, frames: &[(SocketAddrV4, &[u8])]) -> std::io::Result<()> {
        if let Some(bbmd) = &self.bbmd {
            for (_, frame) in frames {
                if frame.get(1) == Some(&BvlcFunction::ORIGINAL_BROADCAST_NPDU.0) && frame.len() > HEADROOM {
                    bbmd.with(&self.socket, |b, now| b.handle_local_broadcast(now, &frame[HEADROOM..]));
                }
            }
        }
        let mut rest = frames;
        let mut first_error = None;
        while !rest.is_empty() {
            match self.try_send_frames(rest) {
                Ok(0) => {
                    // Nothing went and nothing was said: skip this one rather than spin.
                    first_error.get_or_insert_with(|| std::io::Error::from(std::io::ErrorKind::WriteZero));
                    rest = &rest[1..];
                }
                Ok(sent) => {
                    self.stats.sent.fetch_add(sent as u64, std::sync::atomic::Ordering::Relaxed);
                    rest = &rest[sent.min(rest.len())..]
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.socket.writable().await?,
                // The kernel refused this datagram (its destination, say): the
                // others still go.
                Err(e) => {
                    first_error.get_or_insert(e);
                    rest = &rest[1..];
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One system call's worth of [`send_frames`](Self::send_frames):
    /// how many went.
    fn try_send_frames(&self, frames: &[(SocketAddrV4, &[u8])]) -> std::io::Result<usize> {
        match frames {
            [(to, frame)] => self.socket.try_send_to(frame, (*to).into()).map(|_| 1),
            _ => batch::try_send(&self.socket, frames),
        }
    }
}

/// Octets in front of an NPDU that [`write_header`] fills: the BVLL header.
pub const HEADROOM: usize = 4;

/// Fill the BVLL header of `frame` (an NPDU behind [`HEADROOM`] octets) as
/// an Original-Unicast-NPDU or Original-Broadcast-NPDU.
pub fn write_header(frame: &mut [u8], broadcast: bool) -> std::io::Result<()> {
    let function = if broadcast { BvlcFunction::ORIGINAL_BROADCAST_NPDU } else { BvlcFunction::ORIGINAL_UNICAST_NPDU };
    let len = u16::try_from(frame.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NPDU too long for a BVLL message"))?;
    let [hi, lo] = len.to_be_bytes();
    frame[..HEADROOM].copy_from_slice(&[BVLC_TYPE_BIP, function.0, hi, lo]);
    Ok(())
}

#[cfg(target_os = "linux")]
mod batch {
    use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny, sendmmsg};
    use std::io::IoSlice;
    use std::net::SocketAddrV4;
    use tokio::io::Interest;
    use tokio::net::UdpSocket;

    /// Datagrams one `sendmmsg` carries at most.
    const MAX: usize = 64;

    /// Send up to [`MAX`] frames in one `sendmmsg`; how many went.
    pub fn try_send(socket: &UdpSocket, frames: &[(SocketAddrV4, &[u8])]) -> std::io::Result<usize> {
        let frames = &frames[..frames.len().min(MAX)];
        let addrs: Vec<SocketAddrAny> = frames.iter().map(|(a, _)| SocketAddrAny::from(*a)).collect();
        let iovs: Vec<[IoSlice<'_>; 1]> = frames.iter().map(|(_, f)| [IoSlice::new(f)]).collect();
        let mut control: Vec<SendAncillaryBuffer<'_, '_, '_>> =
            frames.iter().map(|_| SendAncillaryBuffer::default()).collect();
        let mut msgs: Vec<MMsgHdr<'_>> = addrs
            .iter()
            .zip(&iovs)
            .zip(control.iter_mut())
            .map(|((a, iov), c)| MMsgHdr::new_with_addr(a, iov, c))
            .collect();
        socket.try_io(Interest::WRITABLE, || Ok(sendmmsg(socket, &mut msgs, SendFlags::empty())?))
    }
}

#[cfg(not(target_os = "linux"))]
mod batch {
    use std::net::SocketAddrV4;
    use tokio::net::UdpSocket;

    /// One datagram per system call where `sendmmsg` does not exist.
    pub fn try_send(socket: &UdpSocket, frames: &[(SocketAddrV4, &[u8])]) -> std::io::Result<usize> {
        let (to, frame) = frames[0];
        socket.try_send_to(frame, to.into()).map(|_| 1)
    }
}
