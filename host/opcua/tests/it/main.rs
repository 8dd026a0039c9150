//! trellis-opcua's integration tests: the server over a point source held
//! in memory, driven by the crate's own OPC UA client.

mod server;
