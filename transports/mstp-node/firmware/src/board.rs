//! The board: QEMU's mps2-an386 (Cortex-M4, 25 MHz), its UART0 (an Arm
//! CMSDK APB UART at 0x4000_4000) and the core's SysTick. The only
//! `unsafe` of the image: volatile accesses to these registers.

use trellis_mstp_node::{LineError, Micros, Uart};

/// The core clock, Hz.
const SYSCLK: u32 = 25_000_000;

fn read(addr: usize) -> u32 {
    // SAFETY: `addr` is one of the memory-mapped registers below, which are
    // always present on this board and readable at any time.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

fn write(addr: usize, value: u32) {
    // SAFETY: as in `read`; writing these registers has no effect on memory.
    unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
}

/// CMSDK APB UART registers (Arm DDI 0479, 4.3).
mod cmsdk {
    pub const DATA: usize = 0x00;
    pub const STATE: usize = 0x04;
    pub const CTRL: usize = 0x08;
    pub const BAUDDIV: usize = 0x10;
    pub const STATE_TX_FULL: u32 = 1 << 0;
    pub const STATE_RX_FULL: u32 = 1 << 1;
    pub const STATE_RX_OVERRUN: u32 = 1 << 3;
    pub const CTRL_TX_RX_ENABLE: u32 = 0b11;
}

/// UART0, wired to the RS-485 transceiver (on QEMU: to the host's
/// serial line). A transceiver with automatic direction control is assumed;
/// a board that switches DE from a GPIO does it around `write`.
pub struct Uart0 {
    base: usize,
}

impl Uart0 {
    pub fn new(baud: u32) -> Uart0 {
        let uart = Uart0 { base: 0x4000_4000 };
        write(uart.base + cmsdk::BAUDDIV, SYSCLK / baud);
        write(uart.base + cmsdk::CTRL, cmsdk::CTRL_TX_RX_ENABLE);
        uart
    }
}

impl Uart for Uart0 {
    fn read(&mut self) -> Option<Result<u8, LineError>> {
        let state = read(self.base + cmsdk::STATE);
        if state & cmsdk::STATE_RX_OVERRUN != 0 {
            // Write one to clear; the octets lost make the frame invalid.
            write(self.base + cmsdk::STATE, cmsdk::STATE_RX_OVERRUN);
            return Some(Err(LineError));
        }
        if state & cmsdk::STATE_RX_FULL == 0 {
            return None;
        }
        Some(Ok(read(self.base + cmsdk::DATA) as u8))
    }

    fn write(&mut self, octets: &[u8]) {
        for &octet in octets {
            while read(self.base + cmsdk::STATE) & cmsdk::STATE_TX_FULL != 0 {}
            write(self.base + cmsdk::DATA, u32::from(octet));
        }
    }
}

/// Microseconds from SysTick counting the core clock down from 2^24 - 1;
/// [`Clock::now`] must run at least every 0.67 s (one wrap) to count them
/// all, which the main loop does.
pub struct Clock {
    last: u32,
    ticks: u32,
    micros: Micros,
}

const SYST_CSR: usize = 0xE000_E010;
const SYST_RVR: usize = 0xE000_E014;
const SYST_CVR: usize = 0xE000_E018;

impl Clock {
    pub fn start() -> Clock {
        write(SYST_RVR, 0x00FF_FFFF);
        write(SYST_CVR, 0);
        // ENABLE, CLKSOURCE = the processor clock, no interrupt.
        write(SYST_CSR, 0b101);
        Clock { last: read(SYST_CVR), ticks: 0, micros: 0 }
    }

    pub fn now(&mut self) -> Micros {
        let current = read(SYST_CVR);
        self.ticks += self.last.wrapping_sub(current) & 0x00FF_FFFF;
        self.last = current;
        let per_micro = SYSCLK / 1_000_000;
        self.micros = self.micros.wrapping_add(self.ticks / per_micro);
        self.ticks %= per_micro;
        self.micros
    }
}
