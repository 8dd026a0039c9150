//! `BACnetObjectType` (Clause 21) through the 135-2020 addenda; cross-checked against bacnet-stack bacenum.h, bacpypes3 basetypes.py and Wireshark packet-bacapp.c value tables.

use super::macros::bacnet_enum;

bacnet_enum! {
    /// `BACnetObjectType`: the type half of an object identifier. Values
    /// 0..=127 are reserved for ASHRAE and 128..=1023 are vendor proprietary.
    pub struct ObjectType(u32) {
        ANALOG_INPUT = 0 => "analog-input",
        ANALOG_OUTPUT = 1 => "analog-output",
        ANALOG_VALUE = 2 => "analog-value",
        BINARY_INPUT = 3 => "binary-input",
        BINARY_OUTPUT = 4 => "binary-output",
        BINARY_VALUE = 5 => "binary-value",
        CALENDAR = 6 => "calendar",
        COMMAND = 7 => "command",
        DEVICE = 8 => "device",
        EVENT_ENROLLMENT = 9 => "event-enrollment",
        FILE = 10 => "file",
        GROUP = 11 => "group",
        LOOP = 12 => "loop",
        MULTI_STATE_INPUT = 13 => "multi-state-input",
        MULTI_STATE_OUTPUT = 14 => "multi-state-output",
        NOTIFICATION_CLASS = 15 => "notification-class",
        PROGRAM = 16 => "program",
        SCHEDULE = 17 => "schedule",
        AVERAGING = 18 => "averaging",
        MULTI_STATE_VALUE = 19 => "multi-state-value",
        TREND_LOG = 20 => "trend-log",
        LIFE_SAFETY_POINT = 21 => "life-safety-point",
        LIFE_SAFETY_ZONE = 22 => "life-safety-zone",
        ACCUMULATOR = 23 => "accumulator",
        PULSE_CONVERTER = 24 => "pulse-converter",
        EVENT_LOG = 25 => "event-log",
        GLOBAL_GROUP = 26 => "global-group",
        TREND_LOG_MULTIPLE = 27 => "trend-log-multiple",
        LOAD_CONTROL = 28 => "load-control",
        STRUCTURED_VIEW = 29 => "structured-view",
        ACCESS_DOOR = 30 => "access-door",
        TIMER = 31 => "timer",
        ACCESS_CREDENTIAL = 32 => "access-credential",
        ACCESS_POINT = 33 => "access-point",
        ACCESS_RIGHTS = 34 => "access-rights",
        ACCESS_USER = 35 => "access-user",
        ACCESS_ZONE = 36 => "access-zone",
        CREDENTIAL_DATA_INPUT = 37 => "credential-data-input",
        /// Withdrawn along with the original network-security clause; kept so older devices still decode.
        NETWORK_SECURITY = 38 => "network-security",
        BITSTRING_VALUE = 39 => "bitstring-value",
        CHARACTERSTRING_VALUE = 40 => "characterstring-value",
        DATE_PATTERN_VALUE = 41 => "date-pattern-value",
        DATE_VALUE = 42 => "date-value",
        DATETIME_PATTERN_VALUE = 43 => "datetime-pattern-value",
        DATETIME_VALUE = 44 => "datetime-value",
        INTEGER_VALUE = 45 => "integer-value",
        LARGE_ANALOG_VALUE = 46 => "large-analog-value",
        OCTETSTRING_VALUE = 47 => "octetstring-value",
        POSITIVE_INTEGER_VALUE = 48 => "positive-integer-value",
        TIME_PATTERN_VALUE = 49 => "time-pattern-value",
        TIME_VALUE = 50 => "time-value",
        NOTIFICATION_FORWARDER = 51 => "notification-forwarder",
        ALERT_ENROLLMENT = 52 => "alert-enrollment",
        CHANNEL = 53 => "channel",
        LIGHTING_OUTPUT = 54 => "lighting-output",
        BINARY_LIGHTING_OUTPUT = 55 => "binary-lighting-output",
        NETWORK_PORT = 56 => "network-port",
        ELEVATOR_GROUP = 57 => "elevator-group",
        ESCALATOR = 58 => "escalator",
        LIFT = 59 => "lift",
        STAGING = 60 => "staging",
        AUDIT_LOG = 61 => "audit-log",
        AUDIT_REPORTER = 62 => "audit-reporter",
        COLOR = 63 => "color",
        COLOR_TEMPERATURE = 64 => "color-temperature",
    }
}

impl ObjectType {
    /// True for the vendor-proprietary range, 128..=1023.
    pub const fn is_proprietary(self) -> bool {
        self.0 >= 128 && self.0 <= 1023
    }
}

#[cfg(test)]
mod tests {
    use super::ObjectType;
    use alloc::collections::BTreeSet;

    #[test]
    fn known_values_and_names_are_unique() {
        let mut values = BTreeSet::new();
        let mut names = BTreeSet::new();
        for (value, name) in ObjectType::KNOWN {
            assert!(values.insert(value.0), "duplicate value {}", value.0);
            assert!(names.insert(*name), "duplicate name {name}");
        }
    }

    #[test]
    fn known_names_are_lowercase_hyphenated_and_round_trip() {
        for (value, name) in ObjectType::KNOWN {
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{name}");
            assert_eq!(ObjectType::from_name(name), Some(*value), "{name}");
            assert_eq!(value.name(), Some(*name));
        }
    }

    #[test]
    fn spot_values() {
        assert_eq!(ObjectType::from_name("analogValue"), Some(ObjectType::ANALOG_VALUE));
        assert_eq!(ObjectType::from_name("ANALOG_VALUE"), Some(ObjectType::ANALOG_VALUE));
        assert_eq!(ObjectType::ANALOG_INPUT.0, 0);
        assert_eq!(ObjectType::ANALOG_VALUE.0, 2);
        assert_eq!(ObjectType::DEVICE.0, 8);
        assert_eq!(ObjectType::TREND_LOG.0, 20);
        assert_eq!(ObjectType::CHARACTERSTRING_VALUE.0, 40);
        assert_eq!(ObjectType::NETWORK_PORT.0, 56);
        assert_eq!(ObjectType::AUDIT_LOG.0, 61);
        assert_eq!(ObjectType::AUDIT_REPORTER.0, 62);
        assert_eq!(ObjectType::COLOR_TEMPERATURE.0, 64);
        assert_eq!(ObjectType::MULTI_STATE_VALUE.name(), Some("multi-state-value"));
    }

    #[test]
    fn proprietary_range() {
        assert!(!ObjectType::DEVICE.is_proprietary());
        assert!(!ObjectType(127).is_proprietary());
        assert!(ObjectType(128).is_proprietary());
        assert!(ObjectType(1023).is_proprietary());
        assert!(!ObjectType(1024).is_proprietary());
    }
}
