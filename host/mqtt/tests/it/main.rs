//! trellis-mqtt's integration tests: the spool on a real file system.

mod spool;
