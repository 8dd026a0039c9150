//! A BACnet/SC port's Network Port properties (Clause 12.56, Annex AB):
//! the hub URIs, the hub connector's state read live from the node, the
//! timers in effect, whether the hub function and direct connections are
//! on, the largest BVLC message and NPDU accepted.
//!
//! Not yet answered: the constructed connection-status properties
//! (SC_Primary_Hub_Connection_Status, SC_Hub_Function_Connection_Status,
//! SC_Failed_Connection_Requests, …) and the certificate file properties.
//!
//! Must never: block on the node (its status is a copy behind a lock).

use bacnet::enums::PropertyIdentifier as P;
use bacnet::{AnyValue, CharacterString, Value};
use trellis_sc::node::ScNode;

/// BACnetNetworkType secure-connect.
pub(super) const NETWORK_TYPE_SECURE_CONNECT: u32 = 11;

/// What a BACnet/SC port's Network Port object shows.
#[derive(Debug, Clone)]
pub struct ScView {
    /// SC_Primary_Hub_URI.
    pub primary_hub: String,
    /// SC_Failover_Hub_URI (empty when none).
    pub failover_hub: Option<String>,
    /// SC_Hub_Function_Binding when the port runs the hub function.
    pub hub_function: Option<String>,
    /// SC_Heartbeat_Timeout, SC_Connect_Wait_Timeout,
    /// SC_Disconnect_Wait_Timeout (seconds).
    pub heartbeat_s: u32,
    /// See `heartbeat_s`.
    pub connect_wait_s: u32,
    /// See `heartbeat_s`.
    pub disconnect_wait_s: u32,
    /// SC_Minimum_Reconnect_Time and SC_Maximum_Reconnect_Time (seconds).
    pub reconnect_s: (u32, u32),
    /// Max_BVLC_Length_Accepted and Max_NPDU_Length_Accepted.
    pub max_bvlc: u16,
    /// See `max_bvlc`.
    pub max_npdu: u16,
    /// SC_Direct_Connect_Initiate_Enable.
    pub direct_initiate: bool,
    /// SC_Direct_Connect_Binding, when direct connections are taken.
    pub direct_accept: Option<String>,
    /// SC_Direct_Connect_Accept_URIs.
    pub direct_accept_uris: Vec<String>,
    /// The node, for its state and VMAC now.
    pub node: ScNode,
}

impl PartialEq for ScView {
    fn eq(&self, other: &Self) -> bool {
        (&self.primary_hub, &self.failover_hub, &self.hub_function)
            == (&other.primary_hub, &other.failover_hub, &other.hub_function)
    }
}

impl Eq for ScView {}

/// The SC properties, in Property_List order.
pub(super) const PROPERTIES: [P; 16] = [
    P::MAX_BVLC_LENGTH_ACCEPTED,
    P::MAX_NPDU_LENGTH_ACCEPTED,
    P::SC_PRIMARY_HUB_URI,
    P::SC_FAILOVER_HUB_URI,
    P::SC_MINIMUM_RECONNECT_TIME,
    P::SC_MAXIMUM_RECONNECT_TIME,
    P::SC_CONNECT_WAIT_TIMEOUT,
    P::SC_DISCONNECT_WAIT_TIMEOUT,
    P::SC_HEARTBEAT_TIMEOUT,
    P::SC_HUB_CONNECTOR_STATE,
    P::SC_HUB_FUNCTION_ENABLE,
    P::SC_HUB_FUNCTION_BINDING,
    P::SC_DIRECT_CONNECT_INITIATE_ENABLE,
    P::SC_DIRECT_CONNECT_ACCEPT_ENABLE,
    P::SC_DIRECT_CONNECT_BINDING,
    P::SC_DIRECT_CONNECT_ACCEPT_URIS,
];

impl ScView {
    /// The port's MAC_Address: its VMAC now.
    pub(super) fn vmac(&self) -> Vec<u8> {
        self.node.status().vmac.to_vec()
    }

    /// One of [`PROPERTIES`]; `None` for any other.
    pub(super) fn read(&self, p: P) -> Option<AnyValue> {
        let text = |s: &str| Value::CharacterString(CharacterString::utf8(s)).into();
        let unsigned = |n: u32| Value::Unsigned(n.into()).into();
        Some(match p {
            P::MAX_BVLC_LENGTH_ACCEPTED => unsigned(self.max_bvlc.into()),
            P::MAX_NPDU_LENGTH_ACCEPTED => unsigned(self.max_npdu.into()),
            P::SC_PRIMARY_HUB_URI => text(&self.primary_hub),
            P::SC_FAILOVER_HUB_URI => text(self.failover_hub.as_deref().unwrap_or("")),
            P::SC_MINIMUM_RECONNECT_TIME => unsigned(self.reconnect_s.0),
            P::SC_MAXIMUM_RECONNECT_TIME => unsigned(self.reconnect_s.1),
            P::SC_CONNECT_WAIT_TIMEOUT => unsigned(self.connect_wait_s),
            P::SC_DISCONNECT_WAIT_TIMEOUT => unsigned(self.disconnect_wait_s),
            P::SC_HEARTBEAT_TIMEOUT => unsigned(self.heartbeat_s),
            // BACnetSCHubConnectorState: no-hub-connection (0),
            // connected-to-primary (1), connected-to-failover (2).
            P::SC_HUB_CONNECTOR_STATE => Value::Enumerated(self.node.status().hub.0.into()).into(),
            P::SC_HUB_FUNCTION_ENABLE => Value::Boolean(self.hub_function.is_some()).into(),
            P::SC_HUB_FUNCTION_BINDING => text(self.hub_function.as_deref().unwrap_or("")),
            P::SC_DIRECT_CONNECT_INITIATE_ENABLE => Value::Boolean(self.direct_initiate).into(),
            P::SC_DIRECT_CONNECT_ACCEPT_ENABLE => Value::Boolean(self.direct_accept.is_some()).into(),
            P::SC_DIRECT_CONNECT_BINDING => text(self.direct_accept.as_deref().unwrap_or("")),
            // BACnetARRAY of CharacterString: the whole array.
            P::SC_DIRECT_CONNECT_ACCEPT_URIS => AnyValue(
                self.direct_accept_uris
                    .iter()
                    .map(|u| bacnet::Element::Application(Value::CharacterString(CharacterString::utf8(u))))
                    .collect(),
            ),
            _ => return None,
        })
    }
}
