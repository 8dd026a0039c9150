//! The Ethernet port on a real link: a veth pair inside a network
//! namespace the test makes (and removes), the two ends two stations.
//!
//! Each test runs twice: outside, it makes the namespace and runs this
//! same test binary inside it (`ip netns exec`) with `TRELLIS_ETH_INSIDE`
//! set; inside, it opens the ports and checks what crosses. Needs root
//! (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW), which CI has.

use std::process::Command;
use std::time::Duration;
use trellis_ethernet::{EthernetConfig, EthernetDriver, Inbound, bind};

const INSIDE: &str = "TRELLIS_ETH_INSIDE";

/// Run `test` inside a fresh namespace with veth pair `e0`–`e1` up.
fn in_namespace(test: &str, body: impl FnOnce()) {
    if std::env::var_os(INSIDE).is_some() {
        return body();
    }
    let ns = format!("trellis-{}-eth-{test}", std::process::id());
    let ip = |args: &[&str]| {
        let o = Command::new("ip").args(args).output().expect("iproute2's ip is installed");
        assert!(o.status.success(), "ip {args:?} (needs root): {}", String::from_utf8_lossy(&o.stderr));
    };
    let _ = Command::new("ip").args(["netns", "del", &ns]).output();
    ip(&["netns", "add", &ns]);
    struct Remove(String);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
        }
    }
    let _remove = Remove(ns.clone());
    ip(&["-n", &ns, "link", "add", "e0", "type", "veth", "peer", "name", "e1"]);
    ip(&["-n", &ns, "link", "set", "e0", "up"]);
    ip(&["-n", &ns, "link", "set", "e1", "up"]);
    let out = Command::new("ip")
        .args(["netns", "exec", &ns])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(INSIDE, "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{test} inside {ns}:\n{text}");
}

/// The next NPDU the driver hands up (within 5 s).
async fn next(driver: &mut EthernetDriver) -> (trellis_ethernet::Mac, Vec<u8>, bool) {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            driver.readable().await.unwrap();
            let mut got = None;
            driver.drain(16, |n: Inbound<'_>| {
                got.get_or_insert((n.source, n.npdu.to_vec(), n.broadcast));
            });
            if let Some(g) = got {
                return g;
            }
        }
    })
    .await
    .expect("a frame within 5 s")
}

/// Who-Is broadcast from e0 reaches e1 with e0's MAC as its source; the
/// I-Am goes back unicast to that MAC. The NPDUs are the golden capture's
/// (bacnet-stack's Who-Is and I-Am, `bacnet/tests/it/vectors/ethernet.md`).
#[test]
fn a_broadcast_and_its_unicast_answer_cross_a_veth_pair() {
    in_namespace("a_broadcast_and_its_unicast_answer_cross_a_veth_pair", || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (a, mut a_rx) = bind(&EthernetConfig::new("e0")).unwrap();
            let (b, mut b_rx) = bind(&EthernetConfig::new("e1")).unwrap();
            assert_ne!(a.mac(), b.mac());
            let who_is = [0x01, 0x20, 0xff, 0xff, 0x00, 0xff, 0x10, 0x08];
            a.send_broadcast(&who_is).await.unwrap();
            assert_eq!(next(&mut b_rx).await, (a.mac(), who_is.to_vec(), true));
            let i_am =
                [0x01, 0x00, 0x10, 0x00, 0xc4, 0x02, 0x00, 0x1f, 0x41, 0x22, 0x05, 0xc4, 0x91, 0x03, 0x22, 0x01, 0x04];
            b.send_unicast(a.mac(), &i_am).await.unwrap();
            assert_eq!(next(&mut a_rx).await, (b.mac(), i_am.to_vec(), false));
            // A 1497-octet NPDU is the most a frame carries; one more is refused.
            let big = vec![0x01; trellis_ethernet::MAX_NPDU];
            a.send_unicast(b.mac(), &big).await.unwrap();
            assert_eq!(next(&mut b_rx).await.1.len(), trellis_ethernet::MAX_NPDU);
            let e = a.send_unicast(b.mac(), &[0x01; trellis_ethernet::MAX_NPDU + 1]).await.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            // Nothing we sent came back to us.
            a_rx.drain(16, |n| panic!("own frame handed up: {n:?}"));
            assert_eq!(a_rx.stats().npdus.load(std::sync::atomic::Ordering::Relaxed), 1);
            assert_eq!(a.stats().sent.load(std::sync::atomic::Ordering::Relaxed), 2);
            assert_eq!(a.stats().send_errors.load(std::sync::atomic::Ordering::Relaxed), 0);
        });
    });
}

/// An interface that does not exist is named in the error.
#[test]
fn a_missing_interface_is_named() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let e = bind(&EthernetConfig::new("no-such-if0")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(e.to_string().contains("no-such-if0"), "{e}");
    });
}

/// Loopback is not Ethernet (its hardware type is ARPHRD_LOOPBACK).
#[test]
fn loopback_is_refused_as_not_ethernet() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let e = bind(&EthernetConfig::new("lo")).unwrap_err();
        assert!(e.to_string().contains("not an Ethernet interface"), "{e}");
    });
}
