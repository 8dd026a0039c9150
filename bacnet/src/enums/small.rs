//! Small enumerations used by services and common properties.

use super::macros::bacnet_enum;

bacnet_enum! {
    /// `BACnetReinitializedState` (ReinitializeDevice).
    pub struct ReinitializedState(u32) {
        COLDSTART = 0 => "coldstart",
        WARMSTART = 1 => "warmstart",
        START_BACKUP = 2 => "start-backup",
        END_BACKUP = 3 => "end-backup",
        START_RESTORE = 4 => "start-restore",
        END_RESTORE = 5 => "end-restore",
        ABORT_RESTORE = 6 => "abort-restore",
        ACTIVATE_CHANGES = 7 => "activate-changes",
    }
}

bacnet_enum! {
    /// The enable-disable parameter of DeviceCommunicationControl.
    pub struct EnableDisable(u32) {
        ENABLE = 0 => "enable",
        DISABLE = 1 => "disable",
        DISABLE_INITIATION = 2 => "disable-initiation",
    }
}

bacnet_enum! {
    /// `BACnetBinaryPV`.
    pub struct BinaryPV(u32) {
        INACTIVE = 0 => "inactive",
        ACTIVE = 1 => "active",
    }
}

bacnet_enum! {
    /// `BACnetPolarity`.
    pub struct Polarity(u32) {
        NORMAL = 0 => "normal",
        REVERSE = 1 => "reverse",
    }
}

bacnet_enum! {
    /// `BACnetEventState`.
    pub struct EventState(u32) {
        NORMAL = 0 => "normal",
        FAULT = 1 => "fault",
        OFFNORMAL = 2 => "offnormal",
        HIGH_LIMIT = 3 => "high-limit",
        LOW_LIMIT = 4 => "low-limit",
        LIFE_SAFETY_ALARM = 5 => "life-safety-alarm",
    }
}

bacnet_enum! {
    /// `BACnetRestartReason` (Last_Restart_Reason).
    pub struct RestartReason(u32) {
        UNKNOWN = 0 => "unknown",
        COLDSTART = 1 => "coldstart",
        WARMSTART = 2 => "warmstart",
        DETECTED_POWER_LOST = 3 => "detected-power-lost",
        DETECTED_POWERED_OFF = 4 => "detected-powered-off",
        HARDWARE_WATCHDOG = 5 => "hardware-watchdog",
        SOFTWARE_WATCHDOG = 6 => "software-watchdog",
        SUSPENDED = 7 => "suspended",
        ACTIVATE_CHANGES = 8 => "activate-changes",
    }
}

bacnet_enum! {
    /// `BACnetDeviceStatus`.
    pub struct DeviceStatus(u32) {
        OPERATIONAL = 0 => "operational",
        OPERATIONAL_READ_ONLY = 1 => "operational-read-only",
        DOWNLOAD_REQUIRED = 2 => "download-required",
        DOWNLOAD_IN_PROGRESS = 3 => "download-in-progress",
        NON_OPERATIONAL = 4 => "non-operational",
        BACKUP_IN_PROGRESS = 5 => "backup-in-progress",
    }
}

bacnet_enum! {
    /// `BACnetReliability`.
    pub struct Reliability(u32) {
        NO_FAULT_DETECTED = 0 => "no-fault-detected",
        NO_SENSOR = 1 => "no-sensor",
        OVER_RANGE = 2 => "over-range",
        UNDER_RANGE = 3 => "under-range",
        OPEN_LOOP = 4 => "open-loop",
        SHORTED_LOOP = 5 => "shorted-loop",
        NO_OUTPUT = 6 => "no-output",
        UNRELIABLE_OTHER = 7 => "unreliable-other",
        PROCESS_ERROR = 8 => "process-error",
        MULTI_STATE_FAULT = 9 => "multi-state-fault",
        CONFIGURATION_ERROR = 10 => "configuration-error",
        COMMUNICATION_FAILURE = 12 => "communication-failure",
        MEMBER_FAULT = 13 => "member-fault",
        MONITORED_OBJECT_FAULT = 14 => "monitored-object-fault",
        TRIPPED = 15 => "tripped",
        LAMP_FAILURE = 16 => "lamp-failure",
        ACTIVATION_FAILURE = 17 => "activation-failure",
        RENEW_DHCP_FAILURE = 18 => "renew-dhcp-failure",
        RENEW_FD_REGISTRATION_FAILURE = 19 => "renew-fd-registration-failure",
        RESTART_AUTO_NEGOTIATION_FAILURE = 20 => "restart-auto-negotiation-failure",
        RESTART_FAILURE = 21 => "restart-failure",
        PROPRIETARY_COMMAND_FAILURE = 22 => "proprietary-command-failure",
        FAULTS_LISTED = 23 => "faults-listed",
        REFERENCED_OBJECT_FAULT = 24 => "referenced-object-fault",
    }
}

bacnet_enum! {
    /// The network priority of an NPDU (Clause 6.2.2, control octet bits 1..0).
    pub struct NetworkPriority(u8) {
        NORMAL = 0 => "normal",
        URGENT = 1 => "urgent",
        CRITICAL_EQUIPMENT = 2 => "critical-equipment",
        LIFE_SAFETY = 3 => "life-safety",
    }
}

bacnet_enum! {
    /// The choice of a `BACnetTimeStamp`.
    pub struct TimeStampKind(u8) {
        TIME = 0 => "time",
        SEQUENCE_NUMBER = 1 => "sequence-number",
        DATE_TIME = 2 => "date-time",
    }
}

bacnet_enum! {
    /// `BACnetEventType`: the event algorithm an object or Event Enrollment
    /// applies (Clause 13.3).
    pub struct EventType(u32) {
        CHANGE_OF_BITSTRING = 0 => "change-of-bitstring",
        CHANGE_OF_STATE = 1 => "change-of-state",
        CHANGE_OF_VALUE = 2 => "change-of-value",
        COMMAND_FAILURE = 3 => "command-failure",
        FLOATING_LIMIT = 4 => "floating-limit",
        OUT_OF_RANGE = 5 => "out-of-range",
        COMPLEX_EVENT_TYPE = 6 => "complex-event-type",
        CHANGE_OF_LIFE_SAFETY = 8 => "change-of-life-safety",
        EXTENDED = 9 => "extended",
        BUFFER_READY = 10 => "buffer-ready",
        UNSIGNED_RANGE = 11 => "unsigned-range",
        ACCESS_EVENT = 13 => "access-event",
        DOUBLE_OUT_OF_RANGE = 14 => "double-out-of-range",
        SIGNED_OUT_OF_RANGE = 15 => "signed-out-of-range",
        UNSIGNED_OUT_OF_RANGE = 16 => "unsigned-out-of-range",
        CHANGE_OF_CHARACTERSTRING = 17 => "change-of-characterstring",
        CHANGE_OF_STATUS_FLAGS = 18 => "change-of-status-flags",
        CHANGE_OF_RELIABILITY = 19 => "change-of-reliability",
        NONE = 20 => "none",
        CHANGE_OF_DISCRETE_VALUE = 21 => "change-of-discrete-value",
        CHANGE_OF_TIMER = 22 => "change-of-timer",
    }
}

bacnet_enum! {
    /// `BACnetNotifyType`: what a notification is.
    pub struct NotifyType(u32) {
        ALARM = 0 => "alarm",
        EVENT = 1 => "event",
        ACK_NOTIFICATION = 2 => "ack-notification",
    }
}

bacnet_enum! {
    /// The acknowledgmentFilter of GetEnrollmentSummary.
    pub struct AcknowledgmentFilter(u32) {
        ALL = 0 => "all",
        ACKED = 1 => "acked",
        NOT_ACKED = 2 => "not-acked",
    }
}

bacnet_enum! {
    /// The eventStateFilter of GetEnrollmentSummary.
    pub struct EventStateFilter(u32) {
        OFFNORMAL = 0 => "offnormal",
        FAULT = 1 => "fault",
        NORMAL = 2 => "normal",
        ALL = 3 => "all",
        ACTIVE = 4 => "active",
    }
}
