mod connect;
mod reverse_tcp;
pub(crate) mod tcp;
pub(crate) use connect::Connector;
pub(crate) use reverse_tcp::ReverseTcpConnector;
