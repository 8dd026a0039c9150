//! Error classes, Reject and Abort reasons, and segmentation support
//! (Clause 21, `BACnetErrorClass`, `BACnetRejectReason`, `BACnetAbortReason`,
//! `BACnetSegmentation`).

use super::macros::bacnet_enum;

bacnet_enum! {
    /// `BACnetErrorClass`: the first half of an Error PDU.
    pub struct ErrorClass(u32) {
        DEVICE = 0 => "device",
        OBJECT = 1 => "object",
        PROPERTY = 2 => "property",
        RESOURCES = 3 => "resources",
        SECURITY = 4 => "security",
        SERVICES = 5 => "services",
        VT = 6 => "vt",
        COMMUNICATION = 7 => "communication",
    }
}

bacnet_enum! {
    /// `BACnetRejectReason`, carried in one octet of a Reject PDU.
    pub struct RejectReason(u8) {
        OTHER = 0 => "other",
        BUFFER_OVERFLOW = 1 => "buffer-overflow",
        INCONSISTENT_PARAMETERS = 2 => "inconsistent-parameters",
        INVALID_PARAMETER_DATA_TYPE = 3 => "invalid-parameter-data-type",
        INVALID_TAG = 4 => "invalid-tag",
        MISSING_REQUIRED_PARAMETER = 5 => "missing-required-parameter",
        PARAMETER_OUT_OF_RANGE = 6 => "parameter-out-of-range",
        TOO_MANY_ARGUMENTS = 7 => "too-many-arguments",
        UNDEFINED_ENUMERATION = 8 => "undefined-enumeration",
        UNRECOGNIZED_SERVICE = 9 => "unrecognized-service",
        INVALID_DATA_ENCODING = 10 => "invalid-data-encoding",
    }
}

bacnet_enum! {
    /// `BACnetAbortReason`, carried in one octet of an Abort PDU.
    pub struct AbortReason(u8) {
        OTHER = 0 => "other",
        BUFFER_OVERFLOW = 1 => "buffer-overflow",
        INVALID_APDU_IN_THIS_STATE = 2 => "invalid-apdu-in-this-state",
        PREEMPTED_BY_HIGHER_PRIORITY_TASK = 3 => "preempted-by-higher-priority-task",
        SEGMENTATION_NOT_SUPPORTED = 4 => "segmentation-not-supported",
        SECURITY_ERROR = 5 => "security-error",
        INSUFFICIENT_SECURITY = 6 => "insufficient-security",
        WINDOW_SIZE_OUT_OF_RANGE = 7 => "window-size-out-of-range",
        APPLICATION_EXCEEDED_REPLY_TIME = 8 => "application-exceeded-reply-time",
        OUT_OF_RESOURCES = 9 => "out-of-resources",
        TSM_TIMEOUT = 10 => "tsm-timeout",
        APDU_TOO_LONG = 11 => "apdu-too-long",
    }
}

bacnet_enum! {
    /// `BACnetSegmentation`: which directions a device can segment.
    pub struct Segmentation(u32) {
        SEGMENTED_BOTH = 0 => "segmented-both",
        SEGMENTED_TRANSMIT = 1 => "segmented-transmit",
        SEGMENTED_RECEIVE = 2 => "segmented-receive",
        NO_SEGMENTATION = 3 => "no-segmentation",
    }
}
