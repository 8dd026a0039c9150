//! RS-485 direction control of a serial port: who switches the
//! transceiver's driver on while this station sends and off after, so that
//! the other stations can answer.
//!
//! * [`DirectionControl::Adapter`] — the adapter does it (USB RS-485
//!   adapters with automatic direction control; the default).
//! * [`DirectionControl::Kernel`] — the UART driver's RS-485 mode
//!   (`TIOCSRS485`): RTS drives DE, raised (or lowered) from before the
//!   first bit to after the last, with the configured delays. What the
//!   driver applied is read back (`TIOCGRS485`) and logged; a driver
//!   without the mode is refused at open with an error naming the port.
//! * [`DirectionControl::Gpio`] — a GPIO line drives DE, through the
//!   character-device GPIO interface (v2): asserted before each frame is
//!   written, released once `tcdrain` says its last bit has left the UART.
//!
//! The system calls go through [`Ioctls`], so the tests check what would be
//! asked of the kernel (struct by struct, octet by octet) without hardware.
//! What the timing costs on the line is measured on the simulated line
//! (`sim::DriverTiming`, `docs/rs485.md`).
//!
//! Must never: leave the driver enabled after a frame (a stuck DE holds the
//! whole bus), or start a frame before DE is asserted.

use crate::os::{self, GpioV2LineRequest, GpioV2LineValues, SerialRs485};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

/// How a serial port's RS-485 transceiver is switched between sending and
/// receiving.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DirectionControl {
    /// The adapter switches by itself.
    #[default]
    Adapter,
    /// The kernel's RS-485 mode drives RTS as driver enable.
    Kernel(KernelRs485),
    /// A GPIO line drives the transceiver's DE.
    Gpio(GpioDriverEnable),
}

/// `TIOCSRS485` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRs485 {
    /// RTS is high while sending (low otherwise); false inverts it.
    pub rts_on_send: bool,
    /// Milliseconds between raising DE and the first bit.
    pub delay_before_send_ms: u32,
    /// Milliseconds DE stays up after the last bit: must be shorter than
    /// the other stations' turnaround (40 bit times: 1.04 ms at 38,400
    /// baud), or their answers collide with our driver.
    pub delay_after_send_ms: u32,
}

impl Default for KernelRs485 {
    fn default() -> Self {
        KernelRs485 { rts_on_send: true, delay_before_send_ms: 0, delay_after_send_ms: 0 }
    }
}

impl KernelRs485 {
    /// The `serial_rs485` asked of the kernel: enabled, RTS polarity,
    /// delays, and not receiving while sending (MS/TP must not hear its own
    /// frames).
    pub(crate) fn request(&self) -> SerialRs485 {
        let polarity = if self.rts_on_send { os::SER_RS485_RTS_ON_SEND } else { os::SER_RS485_RTS_AFTER_SEND };
        SerialRs485 {
            flags: os::SER_RS485_ENABLED | polarity,
            delay_rts_before_send: self.delay_before_send_ms,
            delay_rts_after_send: self.delay_after_send_ms,
            padding: [0; 5],
        }
    }
}

/// A GPIO line driving DE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpioDriverEnable {
    /// The GPIO chip's character device, e.g. `/dev/gpiochip0`.
    pub chip: PathBuf,
    /// The line's offset on the chip.
    pub line: u32,
    /// DE is asserted by driving the line low.
    pub active_low: bool,
}

impl GpioDriverEnable {
    /// The line request: one output line, starting released (the station
    /// listens until it sends), named `trellis-mstp` for `gpioinfo`.
    pub(crate) fn request(&self) -> GpioV2LineRequest {
        let mut r = GpioV2LineRequest {
            offsets: [0; 64],
            consumer: [0; 32],
            config: os::GpioV2LineConfig::default(),
            num_lines: 1,
            event_buffer_size: 0,
            padding: [0; 5],
            fd: -1,
        };
        r.offsets[0] = self.line;
        let name = b"trellis-mstp";
        r.consumer[..name.len()].copy_from_slice(name);
        r.config.flags =
            os::GPIO_V2_LINE_FLAG_OUTPUT | if self.active_low { os::GPIO_V2_LINE_FLAG_ACTIVE_LOW } else { 0 };
        r.config.num_attrs = 1;
        r.config.attrs[0].attr.id = os::GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
        r.config.attrs[0].attr.value = 0; // released
        r.config.attrs[0].mask = 1;
        r
    }
}

/// The system calls direction control makes (the real ones: [`Linux`]).
pub(crate) trait Ioctls: Send + std::fmt::Debug {
    /// `TIOCSRS485` then `TIOCGRS485`: what the driver applied.
    fn set_rs485(&mut self, tty: RawFd, wanted: SerialRs485) -> io::Result<SerialRs485>;
    /// Open `chip` and request the line(s) of `request`.
    fn request_line(&mut self, chip: &Path, request: &GpioV2LineRequest) -> io::Result<OwnedFd>;
    /// `GPIO_V2_LINE_SET_VALUES_IOCTL`.
    fn set_values(&mut self, line: RawFd, values: GpioV2LineValues) -> io::Result<()>;
    /// `tcdrain`: until the last written bit has left.
    fn drain(&mut self, tty: RawFd) -> io::Result<()>;
}

/// The kernel's calls.
#[derive(Debug)]
pub(crate) struct Linux;

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Ioctls for Linux {
    fn set_rs485(&mut self, tty: RawFd, wanted: SerialRs485) -> io::Result<SerialRs485> {
        os::set_rs485(tty, wanted)
    }
    fn request_line(&mut self, chip: &Path, request: &GpioV2LineRequest) -> io::Result<OwnedFd> {
        let chip = std::fs::OpenOptions::new().read(true).write(true).open(chip)?;
        os::gpio_get_line(chip.as_raw_fd(), request)
    }
    fn set_values(&mut self, line: RawFd, values: GpioV2LineValues) -> io::Result<()> {
        os::gpio_set_values(line, values)
    }
    fn drain(&mut self, tty: RawFd) -> io::Result<()> {
        os::drain_output(tty)
    }
}

/// Direction control as a port applies it, once set up.
#[derive(Debug)]
pub(crate) enum Direction {
    /// Nothing to do around a write.
    Passive,
    /// DE on a GPIO line: asserted around each write.
    Gpio { line: OwnedFd, ioctls: Box<dyn Ioctls> },
}

impl Direction {
    /// Set up `control` on terminal `tty` (named `port` in errors).
    pub(crate) fn set_up(
        control: &DirectionControl,
        tty: RawFd,
        port: &str,
        mut ioctls: Box<dyn Ioctls>,
    ) -> io::Result<Direction> {
        match control {
            DirectionControl::Adapter => Ok(Direction::Passive),
            DirectionControl::Kernel(k) => {
                let applied = ioctls.set_rs485(tty, k.request()).map_err(|e| {
                    let why = if e.raw_os_error() == Some(libc::ENOTTY) {
                        "its serial driver has no RS-485 mode".to_string()
                    } else {
                        e.to_string()
                    };
                    io::Error::new(e.kind(), format!("kernel RS-485 mode (TIOCSRS485) refused: {why}"))
                })?;
                if applied.flags & os::SER_RS485_ENABLED == 0 {
                    return Err(io::Error::other("the serial driver did not enable RS-485 mode"));
                }
                let wanted = k.request();
                if (applied.delay_rts_before_send, applied.delay_rts_after_send)
                    != (wanted.delay_rts_before_send, wanted.delay_rts_after_send)
                {
                    tracing::warn!(
                        port,
                        asked_before_ms = wanted.delay_rts_before_send,
                        asked_after_ms = wanted.delay_rts_after_send,
                        before_ms = applied.delay_rts_before_send,
                        after_ms = applied.delay_rts_after_send,
                        "the serial driver changed the RS-485 delays"
                    );
                }
                tracing::info!(
                    port,
                    rts_on_send = applied.flags & os::SER_RS485_RTS_ON_SEND != 0,
                    before_ms = applied.delay_rts_before_send,
                    after_ms = applied.delay_rts_after_send,
                    rx_during_tx = applied.flags & os::SER_RS485_RX_DURING_TX != 0,
                    "kernel RS-485 mode on"
                );
                Ok(Direction::Passive)
            }
            DirectionControl::Gpio(g) => {
                let line = ioctls.request_line(&g.chip, &g.request()).map_err(|e| {
                    io::Error::new(e.kind(), format!("driver-enable GPIO line {} on {}: {e}", g.line, g.chip.display()))
                })?;
                Ok(Direction::Gpio { line, ioctls })
            }
        }
    }

    /// Send `frame` with `write`, the driver enabled around it.
    pub(crate) fn around_write(
        &mut self,
        tty: RawFd,
        frame: &[u8],
        write: impl FnOnce(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            Direction::Passive => write(frame),
            Direction::Gpio { line, ioctls } => {
                let fd = line.as_raw_fd();
                ioctls.set_values(fd, GpioV2LineValues { bits: 1, mask: 1 })?;
                let sent = write(frame).and_then(|()| ioctls.drain(tty));
                // Released whatever happened: a stuck driver holds the bus.
                let released = ioctls.set_values(fd, GpioV2LineValues { bits: 0, mask: 1 });
                sent.and(released)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What a fake kernel was asked, in order.
    #[derive(Debug, Default)]
    struct Asked(Vec<String>);

    #[derive(Debug)]
    struct Fake {
        asked: Arc<Mutex<Asked>>,
        rs485: io::Result<SerialRs485>,
    }

    use crate::os::uapi_octets as octets;

    impl Ioctls for Fake {
        fn set_rs485(&mut self, tty: RawFd, wanted: SerialRs485) -> io::Result<SerialRs485> {
            self.asked.lock().unwrap().0.push(format!("TIOCSRS485 fd {tty} {:02x?}", octets(&wanted)));
            match &self.rs485 {
                Ok(applied) => Ok(*applied),
                Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0))),
            }
        }
        fn request_line(&mut self, chip: &Path, request: &GpioV2LineRequest) -> io::Result<OwnedFd> {
            let o = octets(request);
            let u32_at = |at: usize| u32::from_ne_bytes(o[at..at + 4].try_into().unwrap());
            let u64_at = |at: usize| u64::from_ne_bytes(o[at..at + 8].try_into().unwrap());
            self.asked.lock().unwrap().0.push(format!(
                "GET_LINE {} offset {} consumer {:?} flags {:#x} attrs {} attr0 id {} value {} mask {} lines {} fd {}",
                chip.display(),
                u32_at(0),
                String::from_utf8_lossy(&o[256..288]).trim_end_matches('\0'),
                u64_at(288),
                u32_at(296),
                u32_at(320),
                u64_at(328),
                u64_at(336),
                u32_at(560),
                u32_at(588) as i32,
            ));
            // Any descriptor will do: the fake never uses it.
            Ok(std::fs::File::open("/dev/null")?.into())
        }
        fn set_values(&mut self, _line: RawFd, values: GpioV2LineValues) -> io::Result<()> {
            self.asked.lock().unwrap().0.push(format!("SET_VALUES bits {} mask {}", values.bits, values.mask));
            Ok(())
        }
        fn drain(&mut self, tty: RawFd) -> io::Result<()> {
            self.asked.lock().unwrap().0.push(format!("tcdrain fd {tty}"));
            Ok(())
        }
    }

    fn fake(rs485: io::Result<SerialRs485>) -> (Box<Fake>, Arc<Mutex<Asked>>) {
        let asked = Arc::new(Mutex::new(Asked::default()));
        (Box::new(Fake { asked: asked.clone(), rs485 }), asked)
    }

    #[test]
    fn kernel_mode_asks_for_rts_on_send_with_the_delays_in_the_uapi_layout() {
        let k = KernelRs485 { rts_on_send: true, delay_before_send_ms: 1, delay_after_send_ms: 0 };
        let (f, asked) = fake(Ok(k.request()));
        let mut d = Direction::set_up(&DirectionControl::Kernel(k), 7, "/dev/ttyS1", f).unwrap();
        assert!(matches!(d, Direction::Passive));
        // flags = ENABLED | RTS_ON_SEND = 3, before = 1, after = 0, 20 octets of padding.
        let mut expected = vec![3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        expected.extend([0; 20]);
        assert_eq!(asked.lock().unwrap().0, [format!("TIOCSRS485 fd 7 {:02x?}", expected)]);
        // The kernel drives RTS itself: a write is only a write.
        let mut written = Vec::new();
        d.around_write(7, &[0x55, 0xff], |f| {
            written.extend_from_slice(f);
            Ok(())
        })
        .unwrap();
        assert_eq!(written, [0x55, 0xff]);
        assert_eq!(asked.lock().unwrap().0.len(), 1);
        // Inverted polarity: RTS_AFTER_SEND instead.
        let inverted = KernelRs485 { rts_on_send: false, ..k }.request();
        assert_eq!(inverted.flags, os::SER_RS485_ENABLED | os::SER_RS485_RTS_AFTER_SEND);
    }

    #[test]
    fn a_serial_driver_without_rs485_mode_is_named_in_the_error() {
        let (f, _) = fake(Err(io::Error::from_raw_os_error(libc::ENOTTY)));
        let e = Direction::set_up(&DirectionControl::Kernel(KernelRs485::default()), 3, "/dev/ttyUSB0", f).unwrap_err();
        assert_eq!(e.to_string(), "kernel RS-485 mode (TIOCSRS485) refused: its serial driver has no RS-485 mode");
        let (f, _) = fake(Ok(SerialRs485::default()));
        let e = Direction::set_up(&DirectionControl::Kernel(KernelRs485::default()), 3, "/dev/ttyS2", f).unwrap_err();
        assert!(e.to_string().contains("did not enable RS-485 mode"), "{e}");
    }

    #[test]
    fn a_gpio_line_is_requested_as_a_released_output_and_asserted_around_each_frame() {
        let g = GpioDriverEnable { chip: "/dev/gpiochip0".into(), line: 17, active_low: true };
        let (f, asked) = fake(Ok(SerialRs485::default()));
        let mut d = Direction::set_up(&DirectionControl::Gpio(g), 5, "/dev/ttyAMA0", f).unwrap();
        d.around_write(5, &[0x55, 0xff, 0x00], |_| Ok(())).unwrap();
        // Offsets at 0, consumer at 256, config.flags at 288 (OUTPUT | ACTIVE_LOW),
        // num_attrs at 296, the OUTPUT_VALUES attribute at 320 (value 0 = released,
        // mask 1), num_lines at 560, fd at 588.
        assert_eq!(
            asked.lock().unwrap().0,
            [
                "GET_LINE /dev/gpiochip0 offset 17 consumer \"trellis-mstp\" flags 0xa attrs 1 attr0 id 2 value 0 mask 1 lines 1 fd -1",
                "SET_VALUES bits 1 mask 1",
                "tcdrain fd 5",
                "SET_VALUES bits 0 mask 1",
            ]
        );
    }

    #[test]
    fn the_gpio_driver_is_released_even_when_the_write_fails() {
        let g = GpioDriverEnable { chip: "/dev/gpiochip1".into(), line: 4, active_low: false };
        let (f, asked) = fake(Ok(SerialRs485::default()));
        let mut d = Direction::set_up(&DirectionControl::Gpio(g), 5, "/dev/ttyAMA0", f).unwrap();
        let e = d.around_write(5, &[1], |_| Err(io::Error::other("unplugged"))).unwrap_err();
        assert_eq!(e.to_string(), "unplugged");
        let asked = &asked.lock().unwrap().0;
        assert!(asked[0].contains("flags 0x8 "), "output, active high: {}", asked[0]);
        assert_eq!(asked[1..], ["SET_VALUES bits 1 mask 1".to_string(), "SET_VALUES bits 0 mask 1".to_string()]);
    }

    #[test]
    fn the_real_kernel_refuses_rs485_mode_on_a_pseudo_terminal() {
        // A pty has no RS-485 mode: the error an operator would see with
        // the wrong device.
        let (pty, _other) = serialport::TTYPort::pair().unwrap();
        let e = Direction::set_up(
            &DirectionControl::Kernel(KernelRs485::default()),
            pty.as_raw_fd(),
            "/dev/pts/x",
            Box::new(Linux),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no RS-485 mode"), "{e}");
    }
}
