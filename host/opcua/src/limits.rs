//! The server's limits, chosen together: what it advertises in
//! ServerCapabilities (MaxArrayLength, OperationLimits) and in its
//! Acknowledge (MaxMessageSize, MaxChunkCount) must hold for each other.
//!
//! The stack decodes a request before the service looks at it, so the
//! decoding limits sit well above the operation limits: a Read of
//! MaxNodesPerRead nodes succeeds, and one of a node more (or of 50,000)
//! still decodes and is answered Bad_TooManyOperations, as OPC UA Part 4
//! asks, rather than Bad_DecodingError or a closed connection.
//!
//! | limit | value | why |
//! |---|---|---|
//! | MaxNodesPerRead, MaxNodesPerWrite | 10,000 | the stack's defaults, kept |
//! | MaxArrayLength | 100,000 | ten times the largest operation limit |
//! | MaxMessageSize | 4 MiB | a Read of MaxArrayLength numeric NodeIds (≈ 21 octets each, 2.1 MB) fits |
//! | MaxChunkCount | MaxMessageSize ÷ (8,192 − 256), rounded up | the message in the smallest chunks a peer may ask for, less their headers, padding and signature |
//!
//! A request over MaxMessageSize is one a conforming client refuses to
//! send (Part 6, 7.1.2.4: it aborts with Bad_RequestTooLarge); the stack
//! ends the connection of a client that sends one anyway.
//!
//! Must never: advertise an operation limit that a request at that limit
//! cannot reach (MaxArrayLength or MaxMessageSize too small for it).

use opcua::server::Limits;

/// Nodes in one Read.
pub const MAX_NODES_PER_READ: usize = 10_000;
/// Nodes in one Write.
pub const MAX_NODES_PER_WRITE: usize = 10_000;
/// Elements of any array in a message.
pub const MAX_ARRAY_LENGTH: usize = 100_000;
/// Octets of a request or response message (the body, all chunks).
pub const MAX_MESSAGE_SIZE: usize = 4 << 20;
/// The smallest chunk (receive buffer) Part 6 lets a peer ask for.
const SMALLEST_CHUNK: usize = 8_192;
/// What of a chunk is not the message body, at most: the message and
/// security headers (24 octets, more with an asymmetric header), the
/// sequence header, padding and a signature under Sign/SignAndEncrypt.
const CHUNK_OVERHEAD: usize = 256;
/// Chunks of one message.
pub const MAX_CHUNK_COUNT: usize = MAX_MESSAGE_SIZE.div_ceil(SMALLEST_CHUNK - CHUNK_OVERHEAD);

/// Set `limits` to these (the stack's other operation limits are all
/// below MaxArrayLength; the tests check).
pub fn apply(limits: &mut Limits) {
    limits.max_array_length = MAX_ARRAY_LENGTH;
    limits.max_message_size = MAX_MESSAGE_SIZE;
    limits.max_chunk_count = MAX_CHUNK_COUNT;
    let ops = &mut limits.operational;
    ops.max_nodes_per_read = MAX_NODES_PER_READ;
    ops.max_nodes_per_write = MAX_NODES_PER_WRITE;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Octets a ReadValueId takes with a numeric NodeId in namespace 2 and no
    /// index range or data encoding: NodeId (7), AttributeId (4), IndexRange
    /// (null string, 4), DataEncoding (QualifiedName: 2 + null string 4).
    const READ_VALUE_ID_OCTETS: usize = 7 + 4 + 4 + 6;

    /// Every per-call operation limit in `limits`.
    fn operation_limits(limits: &Limits) -> [usize; 11] {
        let o = &limits.operational;
        [
            o.max_nodes_per_read,
            o.max_nodes_per_write,
            o.max_nodes_per_browse,
            o.max_nodes_per_method_call,
            o.max_nodes_per_register_nodes,
            o.max_nodes_per_translate_browse_paths_to_node_ids,
            o.max_monitored_items_per_call,
            o.max_nodes_per_history_read_data,
            o.max_nodes_per_history_read_events,
            o.max_nodes_per_history_update,
            o.max_nodes_per_node_management,
        ]
    }

    #[test]
    fn a_request_past_every_operation_limit_still_decodes() {
        let mut limits = Limits::default();
        apply(&mut limits);
        for limit in operation_limits(&limits) {
            assert!(limit < limits.max_array_length, "{limit}");
        }
        // The largest Read the array limit lets through fits the message limit.
        assert!(limits.max_array_length * READ_VALUE_ID_OCTETS < limits.max_message_size);
        // The message fits in the chunks when they are the smallest a peer may ask for.
        assert!(limits.max_chunk_count * (SMALLEST_CHUNK - CHUNK_OVERHEAD) >= limits.max_message_size);
    }
}
