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

/// `struct serial_rs485` (`linux/serial.h`): the kernel's RS-485 mode of a
/// serial port, 32 octets. Delays are whole milliseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SerialRs485 {
    pub flags: u32,
    pub delay_rts_before_send: u32,
    pub delay_rts_after_send: u32,
    pub padding: [u32; 5],
}

const _: () = assert!(size_of::<SerialRs485>() == 32);

/// `SER_RS485_*` flags.
pub(crate) const SER_RS485_ENABLED: u32 = 1 << 0;
pub(crate) const SER_RS485_RTS_ON_SEND: u32 = 1 << 1;
pub(crate) const SER_RS485_RTS_AFTER_SEND: u32 = 1 << 2;
pub(crate) const SER_RS485_RX_DURING_TX: u32 = 1 << 4;

/// `TIOCSRS485`/`TIOCGRS485` (`asm-generic/ioctls.h`, the same on arm,
/// arm64 and x86).
const TIOCSRS485: libc::c_ulong = 0x542F;
const TIOCGRS485: libc::c_ulong = 0x542E;

/// Put terminal `fd` in the RS-485 mode `wanted` and read back what the
/// driver applied (drivers round delays and drop flags they lack).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn set_rs485(fd: std::os::fd::RawFd, wanted: SerialRs485) -> io::Result<SerialRs485> {
    let mut config = wanted;
    // SAFETY: TIOCSRS485 reads (and may write back) one serial_rs485 at the
    // pointer, which is valid and exclusively ours for the call.
    let rc = unsafe { libc::ioctl(fd, TIOCSRS485 as _, &raw mut config) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut applied = SerialRs485::default();
    // SAFETY: TIOCGRS485 writes one serial_rs485 at the pointer.
    let rc = unsafe { libc::ioctl(fd, TIOCGRS485 as _, &raw mut applied) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(applied)
}

/// `struct gpio_v2_line_attribute` with its union as one u64.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpioV2LineAttribute {
    pub id: u32,
    pub padding: u32,
    pub value: u64,
}

/// `struct gpio_v2_line_config_attribute`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpioV2LineConfigAttribute {
    pub attr: GpioV2LineAttribute,
    pub mask: u64,
}

/// `struct gpio_v2_line_config`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpioV2LineConfig {
    pub flags: u64,
    pub num_attrs: u32,
    pub padding: [u32; 5],
    pub attrs: [GpioV2LineConfigAttribute; 10],
}

/// `struct gpio_v2_line_request` (`linux/gpio.h`): asked of a GPIO chip's
/// character device; the kernel answers with the line's descriptor in `fd`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpioV2LineRequest {
    pub offsets: [u32; 64],
    pub consumer: [u8; 32],
    pub config: GpioV2LineConfig,
    pub num_lines: u32,
    pub event_buffer_size: u32,
    pub padding: [u32; 5],
    pub fd: i32,
}

/// `struct gpio_v2_line_values`: bit i is the i-th requested line.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GpioV2LineValues {
    pub bits: u64,
    pub mask: u64,
}

// The uAPI's sizes, on every architecture (its u64s are __aligned_u64).
const _: () = assert!(size_of::<GpioV2LineConfig>() == 272);
const _: () = assert!(size_of::<GpioV2LineRequest>() == 592);
const _: () = assert!(size_of::<GpioV2LineValues>() == 16);

pub(crate) const GPIO_V2_LINE_FLAG_ACTIVE_LOW: u64 = 1 << 1;
pub(crate) const GPIO_V2_LINE_FLAG_OUTPUT: u64 = 1 << 3;
pub(crate) const GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES: u32 = 2;
const GPIO_V2_GET_LINE_IOCTL: libc::c_ulong = 0xC250_B407;
const GPIO_V2_LINE_SET_VALUES_IOCTL: libc::c_ulong = 0xC010_B40F;

/// Ask GPIO chip `chip` (an open `/dev/gpiochipN`) for the lines in
/// `request`; the line descriptor the kernel hands back is owned.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn gpio_get_line(chip: std::os::fd::RawFd, request: &GpioV2LineRequest) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut r = *request;
    // SAFETY: GPIO_V2_GET_LINE_IOCTL reads and writes one gpio_v2_line_request
    // at the pointer, valid and exclusively ours for the call.
    let rc = unsafe { libc::ioctl(chip, GPIO_V2_GET_LINE_IOCTL as _, &raw mut r) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if r.fd < 0 {
        return Err(io::Error::other("the GPIO chip answered without a line descriptor"));
    }
    // SAFETY: the kernel just opened `r.fd` for us; nobody else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(r.fd) })
}

/// Set the values of a line descriptor's lines.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn gpio_set_values(line: std::os::fd::RawFd, values: GpioV2LineValues) -> io::Result<()> {
    let mut v = values;
    // SAFETY: GPIO_V2_LINE_SET_VALUES_IOCTL reads one gpio_v2_line_values at the pointer.
    let rc = unsafe { libc::ioctl(line, GPIO_V2_LINE_SET_VALUES_IOCTL as _, &raw mut v) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Wait until everything written to terminal `fd` has been sent (`tcdrain`).
#[cfg(unix)]
pub(crate) fn drain_output(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: tcdrain takes a descriptor and touches no memory of ours.
    let rc = unsafe { libc::tcdrain(fd) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The octets of one of the uAPI structs above, as the kernel reads them
/// (the tests compare them with the uAPI's offsets).
#[cfg(test)]
pub(crate) fn uapi_octets<T: UapiStruct>(value: &T) -> Vec<u8> {
    // SAFETY: T is a repr(C) uAPI struct without implicit padding (its
    // fields are laid out back to back, sizes asserted above), so all
    // size_of::<T>() octets are initialised.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// The uAPI structs [`uapi_octets`] may read.
#[cfg(test)]
pub(crate) trait UapiStruct {}
#[cfg(test)]
impl UapiStruct for SerialRs485 {}
#[cfg(test)]
impl UapiStruct for GpioV2LineRequest {}
