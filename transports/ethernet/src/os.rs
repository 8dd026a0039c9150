//! The raw `AF_PACKET` socket (Linux `packet(7)`): opened on one interface
//! for the 802.2 LLC protocol (`ETH_P_802_2`, which the kernel gives every
//! frame whose type/length field is a length), non-blocking. The only
//! `unsafe` in the crate, each call a plain libc function on values owned
//! here.
//!
//! Must never: hand up a frame we sent ourselves (`PACKET_OUTGOING`), or
//! keep a descriptor on an error path (it is an [`OwnedFd`] from the start).
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// How the kernel says a frame reached us (`sll_pkttype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Addressed to us: our MAC, the broadcast or a multicast address.
    ToUs,
    /// Sent by us, looped back to the socket.
    Outgoing,
    /// Anything else (to another host, seen in promiscuous mode).
    Other,
}

/// An `AF_PACKET`/`SOCK_RAW` socket bound to one interface for `ETH_P_802_2`.
#[derive(Debug)]
pub(crate) struct PacketSocket {
    fd: OwnedFd,
    /// The interface's index.
    pub(crate) ifindex: i32,
    /// The interface's MAC address.
    pub(crate) mac: [u8; 6],
}

/// `ETH_P_802_2` in network order, as `socket(2)` and `sockaddr_ll` want it.
fn protocol() -> u16 {
    (libc::ETH_P_802_2 as u16).to_be()
}

impl PacketSocket {
    /// Open the socket on `interface`. Fails with `NotFound` when there is
    /// no such interface, `PermissionDenied` without CAP_NET_RAW, and
    /// `InvalidInput` when the interface is not an Ethernet one.
    pub(crate) fn open(interface: &str) -> io::Result<PacketSocket> {
        let name = CString::new(interface)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an interface name has no NUL octet"))?;
        // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no network interface named {interface:?}")));
        }
        let ifindex = i32::try_from(ifindex)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface index out of range"))?;
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(protocol()),
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "a BACnet Ethernet port needs a raw AF_PACKET socket, which needs CAP_NET_RAW: run as root, \
                     or give the binary the capability (`setcap cap_net_raw+ep $(which trellis)`)",
                ),
                _ => e,
            });
        }
        // SAFETY: `raw` is a descriptor socket(2) just returned, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut address = sockaddr_ll(ifindex);
        // SAFETY: `address` is a valid sockaddr_ll and the length given is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const address).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // The kernel says which hardware address the bound interface has.
        let mut length = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `address` is writable for `length` octets; the kernel writes at most that.
        let rc =
            unsafe { libc::getsockname(fd.as_raw_fd(), (&raw mut address).cast::<libc::sockaddr>(), &raw mut length) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if address.sll_hatype != libc::ARPHRD_ETHER || address.sll_halen != 6 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{interface:?} is not an Ethernet interface (hardware type {}, address length {})",
                    address.sll_hatype, address.sll_halen
                ),
            ));
        }
        let mut mac = [0; 6];
        mac.copy_from_slice(&address.sll_addr[..6]);
        let size: libc::c_int = 1 << 20;
        // SAFETY: SO_RCVBUF reads one c_int from `size`, which outlives the call.
        // A smaller buffer than asked for only means drops under load: not an error.
        let _ = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&raw const size).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        Ok(PacketSocket { fd, ifindex, mac })
    }

    /// Register the socket with the current tokio runtime's reactor
    /// (panics outside a runtime, as every tokio socket does).
    pub(crate) fn register(self) -> io::Result<tokio::io::unix::AsyncFd<PacketSocket>> {
        // SAFETY: `fd` is an open descriptor this value owns; it stays open,
        // the same one, until the AsyncFd (its owner from now on) is dropped.
        unsafe { tokio::io::unix::AsyncFd::register(self) }.map_err(Into::into)
    }

    /// Send one whole frame (MAC header first) out of the bound interface.
    pub(crate) fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is readable for its length; the socket is bound,
        // so no destination address is needed.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        if sent as usize != frame.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "the kernel sent part of an Ethernet frame"));
        }
        Ok(())
    }

    /// Receive one frame into `buf`: its length (the whole frame's, which
    /// may exceed `buf`: then it was truncated) and how it reached us.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, Delivery)> {
        let mut from = sockaddr_ll(0);
        let mut length = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `buf` is writable for its length and `from` for `length`
        // octets; MSG_TRUNC only changes the length returned.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
                (&raw mut from).cast::<libc::sockaddr>(),
                &raw mut length,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let delivery = match from.sll_pkttype {
            libc::PACKET_HOST | libc::PACKET_BROADCAST | libc::PACKET_MULTICAST => Delivery::ToUs,
            libc::PACKET_OUTGOING => Delivery::Outgoing,
            _ => Delivery::Other,
        };
        Ok((n as usize, delivery))
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn sockaddr_ll(ifindex: i32) -> libc::sockaddr_ll {
    libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol(),
        sll_ifindex: ifindex,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    }
}
