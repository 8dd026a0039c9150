//! trellis-mstp: the simulated line, stations on it in virtual time, and
//! the driver thread in real time (on the simulated line and on a
//! pseudo-terminal pair through the serial port code).

mod driver;
mod line;
mod pty_line;
mod support;
mod virtual_time;
