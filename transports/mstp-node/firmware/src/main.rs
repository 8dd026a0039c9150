//! An MS/TP master node on a Cortex-M4F: a device of four points that
//! answers Who-Is, ReadProperty and WriteProperty, passes the token and
//! polls for masters. The whole image, this file included, must fit 16 KiB
//! of flash (memory.x).
//!
//! The application's part is the table below and one rule: the Fan Status
//! input follows the Fan Command value a client writes, unless the input is
//! out of service.

#![no_std]
#![no_main]

mod board;

use trellis_mstp_node::bacnet::enums::EngineeringUnits;
use trellis_mstp_node::{Device, Node, NodeConfig, Point, PointKind};

/// This station's MAC address on the segment.
const THIS_STATION: u8 = 5;
/// The line's baud rate.
const BAUD: u32 = 38_400;
/// The Device object's instance.
const DEVICE_INSTANCE: u32 = 7805;

const FAN_STATUS: usize = 2;
const FAN_COMMAND: usize = 3;

#[cortex_m_rt::entry]
fn main() -> ! {
    let mut points = [
        Point::new(PointKind::AnalogInput(EngineeringUnits::DEGREES_CELSIUS), 1, "Supply Air Temp", 18.5),
        Point::new(PointKind::AnalogValue(EngineeringUnits::DEGREES_CELSIUS), 1, "Zone Setpoint", 21.0),
        Point::new(PointKind::BinaryInput, 1, "Fan Status", 0.0),
        Point::new(PointKind::BinaryValue, 1, "Fan Command", 0.0),
    ];
    let mut device = Device {
        instance: DEVICE_INSTANCE,
        name: "Trellis MS/TP node 5",
        vendor_name: "Trellis",
        vendor_identifier: 0xFFFF,
        model_name: "trellis-mstp-node (mps2-an386)",
        firmware_revision: env!("CARGO_PKG_VERSION"),
        application_software_version: "fan-demo 1",
        database_revision: 1,
        points: &mut points,
    };
    let mut clock = board::Clock::start();
    let mut uart = board::Uart0::new(BAUD);
    // Tframe_abort at 20 ms (the standard allows 60 bit times to 100 ms), as
    // the gateway uses on serial ports: on QEMU the octets reach the emulated
    // UART through the host's scheduler, in bursts, not one every 260 µs.
    // A board with a real UART can keep the default, 60 bit times.
    let config = NodeConfig { t_frame_abort: 20_000, ..NodeConfig::new(THIS_STATION, BAUD) };
    let Ok(mut node) = Node::new(config, clock.now()) else { halt() };
    loop {
        node.poll(clock.now(), &mut uart, &mut device);
        let command = device.points[FAN_COMMAND];
        if command.changed {
            device.points[FAN_COMMAND].changed = false;
            let status = &mut device.points[FAN_STATUS];
            if !status.out_of_service {
                status.present_value = command.present_value;
            }
        }
    }
}

fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // No message: formatting one would cost more flash than the node.
    halt()
}
