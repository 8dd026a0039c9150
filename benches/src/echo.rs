//! The bare UDP echo server: every datagram goes back to its sender as it
//! came. One thread, blocking std sockets, one `recv_from` and one `send_to`
//! per datagram: the least any server on this machine can do per request,
//! so its round trip is the physical limit the BACnet servers are measured
//! against. `stress-test` runs it as a child process (`stress-test
//! serve-echo`), like every other target.

use std::io;
use std::net::UdpSocket;

/// Answer every datagram on `socket` with itself, until an error other than
/// an interrupted call or a refused send (a client that has gone away).
pub fn serve(socket: &UdpSocket) -> io::Result<()> {
    let mut buf = [0u8; 2048];
    loop {
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if transient(&e) => continue,
            Err(e) => return Err(e),
        };
        match socket.send_to(&buf[..n], from) {
            Ok(_) => {}
            Err(e) if transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionRefused | io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_datagram_comes_back_unchanged() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        std::thread::spawn(move || serve(&server));
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        client.connect(addr).unwrap();
        let mut buf = [0u8; 64];
        for msg in [&b"\x81\x0a\x00\x04"[..], b"x", &[0u8; 60]] {
            client.send(msg).unwrap();
            let n = client.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], msg);
        }
    }
}
