//! The few OS calls the driver thread makes that std does not offer:
//! real-time scheduling, timer slack, and `ppoll` with a µs timeout. The
//! only `unsafe` in the crate, each call a plain libc function on values
//! owned here.
#![allow(unsafe_code)]

use std::io;

/// Ask for SCHED_FIFO at `priority` (1..=99) for the calling thread. Fails
/// without CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it.
#[cfg(unix)]
pub(crate) fn try_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param that outlives the call;
    // pthread_self() is always a valid thread handle.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) }
}

#[cfg(not(unix))]
pub(crate) fn try_realtime(_priority: i32) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no SCHED_FIFO on this OS"))
}

/// Make the calling thread's timed sleeps end within 1 ns of their
/// deadline instead of Linux's default 50 µs slack (real-time threads have
/// none anyway).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn set_timer_slack_min() -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no
    // memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn set_timer_slack_min() -> io::Result<()> {
    Ok(())
}

/// Clear a terminal's exclusive-open flag (TIOCNXCL), without touching
/// any `flock` (serialport's `set_exclusive(false)` takes a shared one,
/// which would keep the next program's exclusive open out).
#[cfg(unix)]
pub(crate) fn clear_terminal_exclusive(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: TIOCNXCL takes no argument and touches no memory; `fd` is a
    // descriptor the caller owns (an invalid one is an EBADF error).
    let rc = unsafe { libc::ioctl(fd, libc::TIOCNXCL) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// What [`poll_readable`] saw on one descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Nothing yet.
    Idle,
    /// Input is waiting.
    Readable,
    /// Hung up, in error, or not open: reading will not help.
    Broken,
}

/// Wait up to `timeout` for any of `fds` to become readable (or broken);
/// says what each showed. EINTR counts as nothing ready. No allocation: the
/// serial driver calls this on every wait.
#[cfg(unix)]
pub(crate) fn poll_readable<const N: usize>(
    fds: [std::os::fd::RawFd; N],
    timeout: std::time::Duration,
) -> io::Result<[Readiness; N]> {
    let mut pfds = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    poll(&mut pfds, timeout)?;
    Ok(pfds.map(|p| readiness(&p)))
}

/// [`poll_readable`] over any number of descriptors: `out[i]` says what
/// `fds[i]` showed (`out` is cleared and refilled).
#[cfg(unix)]
pub(crate) fn poll_readable_into(
    fds: &[std::os::fd::RawFd],
    timeout: std::time::Duration,
    out: &mut Vec<Readiness>,
) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    poll(&mut pfds, timeout)?;
    out.clear();
    out.extend(pfds.iter().map(readiness));
    Ok(())
}

/// `ppoll` (µs timeout) on Linux, `poll` (ms) elsewhere. An EINTR leaves
/// every `revents` at 0: nothing ready.
#[cfg(unix)]
fn poll(pfds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<()> {
    let n = pfds.len() as libc::nfds_t;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let rc = {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: `pfds` holds `n` initialised pollfd and outlives the
        // call, `ts` is a valid timespec, and no signal mask is passed.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), n, &ts, std::ptr::null()) }
    };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let rc = {
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `pfds` holds `n` initialised pollfd and outlives the call.
        unsafe { libc::poll(pfds.as_mut_ptr(), n, ms) }
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        pfds.iter_mut().for_each(|p| p.revents = 0);
    }
    Ok(())
}

#[cfg(unix)]
fn readiness(p: &libc::pollfd) -> Readiness {
    if p.revents & libc::POLLIN != 0 {
        Readiness::Readable
    } else if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Readiness::Broken
    } else {
        Readiness::Idle
    }
}
