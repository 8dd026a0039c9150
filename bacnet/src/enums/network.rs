//! Network-layer message types (Clause 6.2.4) and BVLL functions for
//! BACnet/IP (Annex J.2).

use super::macros::bacnet_enum;

bacnet_enum! {
    /// The message type octet of a network-layer message.
    pub struct NetworkMessageType(u8) {
        WHO_IS_ROUTER_TO_NETWORK = 0x00 => "Who-Is-Router-To-Network",
        I_AM_ROUTER_TO_NETWORK = 0x01 => "I-Am-Router-To-Network",
        I_COULD_BE_ROUTER_TO_NETWORK = 0x02 => "I-Could-Be-Router-To-Network",
        REJECT_MESSAGE_TO_NETWORK = 0x03 => "Reject-Message-To-Network",
        ROUTER_BUSY_TO_NETWORK = 0x04 => "Router-Busy-To-Network",
        ROUTER_AVAILABLE_TO_NETWORK = 0x05 => "Router-Available-To-Network",
        INITIALIZE_ROUTING_TABLE = 0x06 => "Initialize-Routing-Table",
        INITIALIZE_ROUTING_TABLE_ACK = 0x07 => "Initialize-Routing-Table-Ack",
        ESTABLISH_CONNECTION_TO_NETWORK = 0x08 => "Establish-Connection-To-Network",
        DISCONNECT_CONNECTION_TO_NETWORK = 0x09 => "Disconnect-Connection-To-Network",
        CHALLENGE_REQUEST = 0x0A => "Challenge-Request",
        SECURITY_PAYLOAD = 0x0B => "Security-Payload",
        SECURITY_RESPONSE = 0x0C => "Security-Response",
        REQUEST_KEY_UPDATE = 0x0D => "Request-Key-Update",
        UPDATE_KEY_SET = 0x0E => "Update-Key-Set",
        UPDATE_DISTRIBUTION_KEY = 0x0F => "Update-Distribution-Key",
        REQUEST_MASTER_KEY = 0x10 => "Request-Master-Key",
        SET_MASTER_KEY = 0x11 => "Set-Master-Key",
        WHAT_IS_NETWORK_NUMBER = 0x12 => "What-Is-Network-Number",
        NETWORK_NUMBER_IS = 0x13 => "Network-Number-Is",
    }
}

bacnet_enum! {
    /// The reason octet of a Reject-Message-To-Network (Clause 6.4.4).
    pub struct RejectMessageReason(u8) {
        OTHER = 0 => "other",
        NOT_DIRECTLY_CONNECTED = 1 => "not-directly-connected",
        ROUTER_BUSY = 2 => "router-busy",
        UNKNOWN_MESSAGE_TYPE = 3 => "unknown-network-message-type",
        MESSAGE_TOO_LONG = 4 => "message-too-long",
        SECURITY_ERROR = 5 => "security-error",
        ADDRESSING_ERROR = 6 => "addressing-error",
    }
}

bacnet_enum! {
    /// The BVLC function octet of a BACnet/IP (Annex J) message.
    pub struct BvlcFunction(u8) {
        RESULT = 0x00 => "BVLC-Result",
        WRITE_BROADCAST_DISTRIBUTION_TABLE = 0x01 => "Write-Broadcast-Distribution-Table",
        READ_BROADCAST_DISTRIBUTION_TABLE = 0x02 => "Read-Broadcast-Distribution-Table",
        READ_BROADCAST_DISTRIBUTION_TABLE_ACK = 0x03 => "Read-Broadcast-Distribution-Table-Ack",
        FORWARDED_NPDU = 0x04 => "Forwarded-NPDU",
        REGISTER_FOREIGN_DEVICE = 0x05 => "Register-Foreign-Device",
        READ_FOREIGN_DEVICE_TABLE = 0x06 => "Read-Foreign-Device-Table",
        READ_FOREIGN_DEVICE_TABLE_ACK = 0x07 => "Read-Foreign-Device-Table-Ack",
        DELETE_FOREIGN_DEVICE_TABLE_ENTRY = 0x08 => "Delete-Foreign-Device-Table-Entry",
        DISTRIBUTE_BROADCAST_TO_NETWORK = 0x09 => "Distribute-Broadcast-To-Network",
        ORIGINAL_UNICAST_NPDU = 0x0A => "Original-Unicast-NPDU",
        ORIGINAL_BROADCAST_NPDU = 0x0B => "Original-Broadcast-NPDU",
        SECURE_BVLL = 0x0C => "Secure-BVLL",
    }
}

bacnet_enum! {
    /// The result code of a BVLC-Result message (Annex J.2.1.1).
    pub struct BvlcResultCode(u16) {
        SUCCESSFUL_COMPLETION = 0x0000 => "Successful-Completion",
        WRITE_BROADCAST_DISTRIBUTION_TABLE_NAK = 0x0010 => "Write-Broadcast-Distribution-Table-NAK",
        READ_BROADCAST_DISTRIBUTION_TABLE_NAK = 0x0020 => "Read-Broadcast-Distribution-Table-NAK",
        REGISTER_FOREIGN_DEVICE_NAK = 0x0030 => "Register-Foreign-Device-NAK",
        READ_FOREIGN_DEVICE_TABLE_NAK = 0x0040 => "Read-Foreign-Device-Table-NAK",
        DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK = 0x0050 => "Delete-Foreign-Device-Table-Entry-NAK",
        DISTRIBUTE_BROADCAST_TO_NETWORK_NAK = 0x0060 => "Distribute-Broadcast-To-Network-NAK",
    }
}
