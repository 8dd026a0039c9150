//! trellis-mqtt's integration tests: the spool on a real file system, the
//! link against a real mosquitto.

mod link;
mod spool;
