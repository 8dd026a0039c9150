//! `BACnetErrorCode` (Clause 21) through the 135-2020 addenda; cross-checked against bacnet-stack bacenum.h, bacpypes3 basetypes.py, Wireshark packet-bacapp.c value tables and BACnet4J.

use super::macros::bacnet_enum;

bacnet_enum! {
    /// `BACnetErrorCode`: the second half of an Error PDU. Values 0..=255 are
    /// reserved for ASHRAE; 256..=65535 are vendor proprietary.
    pub struct ErrorCode(u32) {
        OTHER = 0 => "other",
        /// Not in current revisions of the standard; kept so older devices still decode.
        AUTHENTICATION_FAILED = 1 => "authentication-failed",
        CONFIGURATION_IN_PROGRESS = 2 => "configuration-in-progress",
        DEVICE_BUSY = 3 => "device-busy",
        DYNAMIC_CREATION_NOT_SUPPORTED = 4 => "dynamic-creation-not-supported",
        FILE_ACCESS_DENIED = 5 => "file-access-denied",
        /// Not in current revisions of the standard; kept so older devices still decode.
        INCOMPATIBLE_SECURITY_LEVELS = 6 => "incompatible-security-levels",
        INCONSISTENT_PARAMETERS = 7 => "inconsistent-parameters",
        INCONSISTENT_SELECTION_CRITERION = 8 => "inconsistent-selection-criterion",
        INVALID_DATA_TYPE = 9 => "invalid-data-type",
        INVALID_FILE_ACCESS_METHOD = 10 => "invalid-file-access-method",
        INVALID_FILE_START_POSITION = 11 => "invalid-file-start-position",
        /// Not in current revisions of the standard; kept so older devices still decode.
        INVALID_OPERATOR_NAME = 12 => "invalid-operator-name",
        INVALID_PARAMETER_DATA_TYPE = 13 => "invalid-parameter-data-type",
        INVALID_TIME_STAMP = 14 => "invalid-time-stamp",
        /// Not in current revisions of the standard; kept so older devices still decode.
        KEY_GENERATION_ERROR = 15 => "key-generation-error",
        MISSING_REQUIRED_PARAMETER = 16 => "missing-required-parameter",
        NO_OBJECTS_OF_SPECIFIED_TYPE = 17 => "no-objects-of-specified-type",
        NO_SPACE_FOR_OBJECT = 18 => "no-space-for-object",
        NO_SPACE_TO_ADD_LIST_ELEMENT = 19 => "no-space-to-add-list-element",
        NO_SPACE_TO_WRITE_PROPERTY = 20 => "no-space-to-write-property",
        NO_VT_SESSIONS_AVAILABLE = 21 => "no-vt-sessions-available",
        PROPERTY_IS_NOT_A_LIST = 22 => "property-is-not-a-list",
        OBJECT_DELETION_NOT_PERMITTED = 23 => "object-deletion-not-permitted",
        OBJECT_IDENTIFIER_ALREADY_EXISTS = 24 => "object-identifier-already-exists",
        OPERATIONAL_PROBLEM = 25 => "operational-problem",
        PASSWORD_FAILURE = 26 => "password-failure",
        READ_ACCESS_DENIED = 27 => "read-access-denied",
        /// Not in current revisions of the standard; kept so older devices still decode.
        SECURITY_NOT_SUPPORTED = 28 => "security-not-supported",
        SERVICE_REQUEST_DENIED = 29 => "service-request-denied",
        TIMEOUT = 30 => "timeout",
        UNKNOWN_OBJECT = 31 => "unknown-object",
        UNKNOWN_PROPERTY = 32 => "unknown-property",
        UNKNOWN_VT_CLASS = 34 => "unknown-vt-class",
        UNKNOWN_VT_SESSION = 35 => "unknown-vt-session",
        UNSUPPORTED_OBJECT_TYPE = 36 => "unsupported-object-type",
        VALUE_OUT_OF_RANGE = 37 => "value-out-of-range",
        VT_SESSION_ALREADY_CLOSED = 38 => "vt-session-already-closed",
        VT_SESSION_TERMINATION_FAILURE = 39 => "vt-session-termination-failure",
        WRITE_ACCESS_DENIED = 40 => "write-access-denied",
        CHARACTER_SET_NOT_SUPPORTED = 41 => "character-set-not-supported",
        INVALID_ARRAY_INDEX = 42 => "invalid-array-index",
        COV_SUBSCRIPTION_FAILED = 43 => "cov-subscription-failed",
        NOT_COV_PROPERTY = 44 => "not-cov-property",
        OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED = 45 => "optional-functionality-not-supported",
        INVALID_CONFIGURATION_DATA = 46 => "invalid-configuration-data",
        DATATYPE_NOT_SUPPORTED = 47 => "datatype-not-supported",
        DUPLICATE_NAME = 48 => "duplicate-name",
        DUPLICATE_OBJECT_ID = 49 => "duplicate-object-id",
        PROPERTY_IS_NOT_AN_ARRAY = 50 => "property-is-not-an-array",
        ABORT_BUFFER_OVERFLOW = 51 => "abort-buffer-overflow",
        ABORT_INVALID_APDU_IN_THIS_STATE = 52 => "abort-invalid-apdu-in-this-state",
        ABORT_PREEMPTED_BY_HIGHER_PRIORITY_TASK = 53 => "abort-preempted-by-higher-priority-task",
        ABORT_SEGMENTATION_NOT_SUPPORTED = 54 => "abort-segmentation-not-supported",
        ABORT_PROPRIETARY = 55 => "abort-proprietary",
        ABORT_OTHER = 56 => "abort-other",
        INVALID_TAG = 57 => "invalid-tag",
        NETWORK_DOWN = 58 => "network-down",
        REJECT_BUFFER_OVERFLOW = 59 => "reject-buffer-overflow",
        REJECT_INCONSISTENT_PARAMETERS = 60 => "reject-inconsistent-parameters",
        REJECT_INVALID_PARAMETER_DATA_TYPE = 61 => "reject-invalid-parameter-data-type",
        REJECT_INVALID_TAG = 62 => "reject-invalid-tag",
        REJECT_MISSING_REQUIRED_PARAMETER = 63 => "reject-missing-required-parameter",
        REJECT_PARAMETER_OUT_OF_RANGE = 64 => "reject-parameter-out-of-range",
        REJECT_TOO_MANY_ARGUMENTS = 65 => "reject-too-many-arguments",
        REJECT_UNDEFINED_ENUMERATION = 66 => "reject-undefined-enumeration",
        REJECT_UNRECOGNIZED_SERVICE = 67 => "reject-unrecognized-service",
        REJECT_PROPRIETARY = 68 => "reject-proprietary",
        REJECT_OTHER = 69 => "reject-other",
        UNKNOWN_DEVICE = 70 => "unknown-device",
        UNKNOWN_ROUTE = 71 => "unknown-route",
        VALUE_NOT_INITIALIZED = 72 => "value-not-initialized",
        INVALID_EVENT_STATE = 73 => "invalid-event-state",
        NO_ALARM_CONFIGURED = 74 => "no-alarm-configured",
        LOG_BUFFER_FULL = 75 => "log-buffer-full",
        LOGGED_VALUE_PURGED = 76 => "logged-value-purged",
        NO_PROPERTY_SPECIFIED = 77 => "no-property-specified",
        NOT_CONFIGURED_FOR_TRIGGERED_LOGGING = 78 => "not-configured-for-triggered-logging",
        UNKNOWN_SUBSCRIPTION = 79 => "unknown-subscription",
        PARAMETER_OUT_OF_RANGE = 80 => "parameter-out-of-range",
        LIST_ELEMENT_NOT_FOUND = 81 => "list-element-not-found",
        BUSY = 82 => "busy",
        COMMUNICATION_DISABLED = 83 => "communication-disabled",
        SUCCESS = 84 => "success",
        ACCESS_DENIED = 85 => "access-denied",
        BAD_DESTINATION_ADDRESS = 86 => "bad-destination-address",
        BAD_DESTINATION_DEVICE_ID = 87 => "bad-destination-device-id",
        BAD_SIGNATURE = 88 => "bad-signature",
        BAD_SOURCE_ADDRESS = 89 => "bad-source-address",
        BAD_TIMESTAMP = 90 => "bad-timestamp",
        CANNOT_USE_KEY = 91 => "cannot-use-key",
        CANNOT_VERIFY_MESSAGE_ID = 92 => "cannot-verify-message-id",
        CORRECT_KEY_REVISION = 93 => "correct-key-revision",
        DESTINATION_DEVICE_ID_REQUIRED = 94 => "destination-device-id-required",
        DUPLICATE_MESSAGE = 95 => "duplicate-message",
        ENCRYPTION_NOT_CONFIGURED = 96 => "encryption-not-configured",
        ENCRYPTION_REQUIRED = 97 => "encryption-required",
        INCORRECT_KEY = 98 => "incorrect-key",
        INVALID_KEY_DATA = 99 => "invalid-key-data",
        KEY_UPDATE_IN_PROGRESS = 100 => "key-update-in-progress",
        MALFORMED_MESSAGE = 101 => "malformed-message",
        NOT_KEY_SERVER = 102 => "not-key-server",
        SECURITY_NOT_CONFIGURED = 103 => "security-not-configured",
        SOURCE_SECURITY_REQUIRED = 104 => "source-security-required",
        TOO_MANY_KEYS = 105 => "too-many-keys",
        UNKNOWN_AUTHENTICATION_TYPE = 106 => "unknown-authentication-type",
        UNKNOWN_KEY = 107 => "unknown-key",
        UNKNOWN_KEY_REVISION = 108 => "unknown-key-revision",
        UNKNOWN_SOURCE_MESSAGE = 109 => "unknown-source-message",
        NOT_ROUTER_TO_DNET = 110 => "not-router-to-dnet",
        ROUTER_BUSY = 111 => "router-busy",
        UNKNOWN_NETWORK_MESSAGE = 112 => "unknown-network-message",
        MESSAGE_TOO_LONG = 113 => "message-too-long",
        SECURITY_ERROR = 114 => "security-error",
        ADDRESSING_ERROR = 115 => "addressing-error",
        WRITE_BDT_FAILED = 116 => "write-bdt-failed",
        READ_BDT_FAILED = 117 => "read-bdt-failed",
        REGISTER_FOREIGN_DEVICE_FAILED = 118 => "register-foreign-device-failed",
        READ_FDT_FAILED = 119 => "read-fdt-failed",
        DELETE_FDT_ENTRY_FAILED = 120 => "delete-fdt-entry-failed",
        DISTRIBUTE_BROADCAST_FAILED = 121 => "distribute-broadcast-failed",
        UNKNOWN_FILE_SIZE = 122 => "unknown-file-size",
        ABORT_APDU_TOO_LONG = 123 => "abort-apdu-too-long",
        ABORT_APPLICATION_EXCEEDED_REPLY_TIME = 124 => "abort-application-exceeded-reply-time",
        ABORT_OUT_OF_RESOURCES = 125 => "abort-out-of-resources",
        ABORT_TSM_TIMEOUT = 126 => "abort-tsm-timeout",
        ABORT_WINDOW_SIZE_OUT_OF_RANGE = 127 => "abort-window-size-out-of-range",
        FILE_FULL = 128 => "file-full",
        INCONSISTENT_CONFIGURATION = 129 => "inconsistent-configuration",
        INCONSISTENT_OBJECT_TYPE = 130 => "inconsistent-object-type",
        INTERNAL_ERROR = 131 => "internal-error",
        NOT_CONFIGURED = 132 => "not-configured",
        OUT_OF_MEMORY = 133 => "out-of-memory",
        VALUE_TOO_LONG = 134 => "value-too-long",
        ABORT_INSUFFICIENT_SECURITY = 135 => "abort-insufficient-security",
        ABORT_SECURITY_ERROR = 136 => "abort-security-error",
        DUPLICATE_ENTRY = 137 => "duplicate-entry",
        INVALID_VALUE_IN_THIS_STATE = 138 => "invalid-value-in-this-state",
        INVALID_OPERATION_IN_THIS_STATE = 139 => "invalid-operation-in-this-state",
        LIST_ITEM_NOT_NUMBERED = 140 => "list-item-not-numbered",
        LIST_ITEM_NOT_TIMESTAMPED = 141 => "list-item-not-timestamped",
        INVALID_DATA_ENCODING = 142 => "invalid-data-encoding",
        BVLC_FUNCTION_UNKNOWN = 143 => "bvlc-function-unknown",
        BVLC_PROPRIETARY_FUNCTION_UNKNOWN = 144 => "bvlc-proprietary-function-unknown",
        HEADER_ENCODING_ERROR = 145 => "header-encoding-error",
        HEADER_NOT_UNDERSTOOD = 146 => "header-not-understood",
        MESSAGE_INCOMPLETE = 147 => "message-incomplete",
        NOT_A_BACNET_SC_HUB = 148 => "not-a-bacnet-sc-hub",
        PAYLOAD_EXPECTED = 149 => "payload-expected",
        UNEXPECTED_DATA = 150 => "unexpected-data",
        NODE_DUPLICATE_VMAC = 151 => "node-duplicate-vmac",
        HTTP_UNEXPECTED_RESPONSE_CODE = 152 => "http-unexpected-response-code",
        HTTP_NO_UPGRADE = 153 => "http-no-upgrade",
        HTTP_RESOURCE_NOT_LOCAL = 154 => "http-resource-not-local",
        HTTP_PROXY_AUTHENTICATION_FAILED = 155 => "http-proxy-authentication-failed",
        HTTP_RESPONSE_TIMEOUT = 156 => "http-response-timeout",
        HTTP_RESPONSE_SYNTAX_ERROR = 157 => "http-response-syntax-error",
        HTTP_RESPONSE_VALUE_ERROR = 158 => "http-response-value-error",
        HTTP_RESPONSE_MISSING_HEADER = 159 => "http-response-missing-header",
        HTTP_WEBSOCKET_HEADER_ERROR = 160 => "http-websocket-header-error",
        HTTP_UPGRADE_REQUIRED = 161 => "http-upgrade-required",
        HTTP_UPGRADE_ERROR = 162 => "http-upgrade-error",
        HTTP_TEMPORARY_UNAVAILABLE = 163 => "http-temporary-unavailable",
        HTTP_NOT_A_SERVER = 164 => "http-not-a-server",
        HTTP_ERROR = 165 => "http-error",
        WEBSOCKET_SCHEME_NOT_SUPPORTED = 166 => "websocket-scheme-not-supported",
        WEBSOCKET_UNKNOWN_CONTROL_MESSAGE = 167 => "websocket-unknown-control-message",
        WEBSOCKET_CLOSE_ERROR = 168 => "websocket-close-error",
        WEBSOCKET_CLOSED_BY_PEER = 169 => "websocket-closed-by-peer",
        WEBSOCKET_ENDPOINT_LEAVES = 170 => "websocket-endpoint-leaves",
        WEBSOCKET_PROTOCOL_ERROR = 171 => "websocket-protocol-error",
        WEBSOCKET_DATA_NOT_ACCEPTED = 172 => "websocket-data-not-accepted",
        WEBSOCKET_CLOSED_ABNORMALLY = 173 => "websocket-closed-abnormally",
        WEBSOCKET_DATA_INCONSISTENT = 174 => "websocket-data-inconsistent",
        WEBSOCKET_DATA_AGAINST_POLICY = 175 => "websocket-data-against-policy",
        WEBSOCKET_FRAME_TOO_LONG = 176 => "websocket-frame-too-long",
        WEBSOCKET_EXTENSION_MISSING = 177 => "websocket-extension-missing",
        WEBSOCKET_REQUEST_UNAVAILABLE = 178 => "websocket-request-unavailable",
        WEBSOCKET_ERROR = 179 => "websocket-error",
        TLS_CLIENT_CERTIFICATE_ERROR = 180 => "tls-client-certificate-error",
        TLS_SERVER_CERTIFICATE_ERROR = 181 => "tls-server-certificate-error",
        TLS_CLIENT_AUTHENTICATION_FAILED = 182 => "tls-client-authentication-failed",
        TLS_SERVER_AUTHENTICATION_FAILED = 183 => "tls-server-authentication-failed",
        TLS_CLIENT_CERTIFICATE_EXPIRED = 184 => "tls-client-certificate-expired",
        TLS_SERVER_CERTIFICATE_EXPIRED = 185 => "tls-server-certificate-expired",
        TLS_CLIENT_CERTIFICATE_REVOKED = 186 => "tls-client-certificate-revoked",
        TLS_SERVER_CERTIFICATE_REVOKED = 187 => "tls-server-certificate-revoked",
        TLS_ERROR = 188 => "tls-error",
        DNS_UNAVAILABLE = 189 => "dns-unavailable",
        DNS_NAME_RESOLUTION_FAILED = 190 => "dns-name-resolution-failed",
        DNS_RESOLVER_FAILURE = 191 => "dns-resolver-failure",
        DNS_ERROR = 192 => "dns-error",
        TCP_CONNECT_TIMEOUT = 193 => "tcp-connect-timeout",
        TCP_CONNECTION_REFUSED = 194 => "tcp-connection-refused",
        TCP_CLOSED_BY_LOCAL = 195 => "tcp-closed-by-local",
        TCP_CLOSED_OTHER = 196 => "tcp-closed-other",
        TCP_ERROR = 197 => "tcp-error",
        IP_ADDRESS_NOT_REACHABLE = 198 => "ip-address-not-reachable",
        IP_ERROR = 199 => "ip-error",
        CERTIFICATE_EXPIRED = 200 => "certificate-expired",
        CERTIFICATE_INVALID = 201 => "certificate-invalid",
        CERTIFICATE_MALFORMED = 202 => "certificate-malformed",
        CERTIFICATE_REVOKED = 203 => "certificate-revoked",
        /// bacnet-stack names this `unknown-security-key`; BACnet4J calls it `unknown-certificate-key`.
        UNKNOWN_SECURITY_KEY = 204 => "unknown-security-key",
        REFERENCED_PORT_IN_ERROR = 205 => "referenced-port-in-error",
        NOT_ENABLED = 206 => "not-enabled",
        ADJUST_SCOPE_REQUIRED = 207 => "adjust-scope-required",
        AUTH_SCOPE_REQUIRED = 208 => "auth-scope-required",
        BIND_SCOPE_REQUIRED = 209 => "bind-scope-required",
        CONFIG_SCOPE_REQUIRED = 210 => "config-scope-required",
        CONTROL_SCOPE_REQUIRED = 211 => "control-scope-required",
        EXTENDED_SCOPE_REQUIRED = 212 => "extended-scope-required",
        INCORRECT_CLIENT = 213 => "incorrect-client",
        INSTALL_SCOPE_REQUIRED = 214 => "install-scope-required",
        INSUFFICIENT_SCOPE = 215 => "insufficient-scope",
        NO_DEFAULT_SCOPE = 216 => "no-default-scope",
        NO_POLICY = 217 => "no-policy",
        REVOKED_TOKEN = 218 => "revoked-token",
        OVERRIDE_SCOPE_REQUIRED = 219 => "override-scope-required",
        INACTIVE_TOKEN = 220 => "inactive-token",
        UNKNOWN_AUDIENCE = 221 => "unknown-audience",
        UNKNOWN_CLIENT = 222 => "unknown-client",
        UNKNOWN_SCOPE = 223 => "unknown-scope",
        VIEW_SCOPE_REQUIRED = 224 => "view-scope-required",
        INCORRECT_AUDIENCE = 225 => "incorrect-audience",
        INCORRECT_CLIENT_ORIGIN = 226 => "incorrect-client-origin",
        INVALID_ARRAY_SIZE = 227 => "invalid-array-size",
        INCORRECT_ISSUER = 228 => "incorrect-issuer",
        INVALID_TOKEN = 229 => "invalid-token",
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;
    use alloc::collections::BTreeSet;

    #[test]
    fn known_values_and_names_are_unique() {
        let mut values = BTreeSet::new();
        let mut names = BTreeSet::new();
        for (value, name) in ErrorCode::KNOWN {
            assert!(values.insert(value.0), "duplicate value {}", value.0);
            assert!(names.insert(*name), "duplicate name {name}");
        }
    }

    #[test]
    fn known_names_are_lowercase_hyphenated_and_round_trip() {
        for (value, name) in ErrorCode::KNOWN {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{name}"
            );
            assert_eq!(ErrorCode::from_name(name), Some(*value), "{name}");
            assert_eq!(value.name(), Some(*name));
        }
    }

    #[test]
    fn spot_values() {
        assert_eq!(ErrorCode::OTHER.0, 0);
        assert_eq!(ErrorCode::TIMEOUT.0, 30);
        assert_eq!(ErrorCode::UNKNOWN_OBJECT.0, 31);
        assert_eq!(ErrorCode::UNKNOWN_PROPERTY.0, 32);
        assert_eq!(ErrorCode::VALUE_OUT_OF_RANGE.0, 37);
        assert_eq!(ErrorCode::WRITE_ACCESS_DENIED.0, 40);
        assert_eq!(ErrorCode::INVALID_ARRAY_INDEX.0, 42);
        assert_eq!(ErrorCode::PROPERTY_IS_NOT_AN_ARRAY.0, 50);
        assert_eq!(ErrorCode::ABORT_TSM_TIMEOUT.0, 126);
        assert_eq!(
            ErrorCode::from_name("unknown-property"),
            Some(ErrorCode::UNKNOWN_PROPERTY)
        );
        assert_eq!(ErrorCode(33).name(), None);
    }
}
