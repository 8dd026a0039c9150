//! Service choices (`BACnetConfirmedServiceChoice`,
//! `BACnetUnconfirmedServiceChoice`).

use super::macros::bacnet_enum;

bacnet_enum! {
    /// `BACnetConfirmedServiceChoice`: the service octet of a confirmed request.
    pub struct ConfirmedServiceChoice(u8) {
        ACKNOWLEDGE_ALARM = 0 => "acknowledgeAlarm",
        CONFIRMED_COV_NOTIFICATION = 1 => "confirmedCOVNotification",
        CONFIRMED_EVENT_NOTIFICATION = 2 => "confirmedEventNotification",
        GET_ALARM_SUMMARY = 3 => "getAlarmSummary",
        GET_ENROLLMENT_SUMMARY = 4 => "getEnrollmentSummary",
        SUBSCRIBE_COV = 5 => "subscribeCOV",
        ATOMIC_READ_FILE = 6 => "atomicReadFile",
        ATOMIC_WRITE_FILE = 7 => "atomicWriteFile",
        ADD_LIST_ELEMENT = 8 => "addListElement",
        REMOVE_LIST_ELEMENT = 9 => "removeListElement",
        CREATE_OBJECT = 10 => "createObject",
        DELETE_OBJECT = 11 => "deleteObject",
        READ_PROPERTY = 12 => "readProperty",
        READ_PROPERTY_CONDITIONAL = 13 => "readPropertyConditional",
        READ_PROPERTY_MULTIPLE = 14 => "readPropertyMultiple",
        WRITE_PROPERTY = 15 => "writeProperty",
        WRITE_PROPERTY_MULTIPLE = 16 => "writePropertyMultiple",
        DEVICE_COMMUNICATION_CONTROL = 17 => "deviceCommunicationControl",
        CONFIRMED_PRIVATE_TRANSFER = 18 => "confirmedPrivateTransfer",
        CONFIRMED_TEXT_MESSAGE = 19 => "confirmedTextMessage",
        REINITIALIZE_DEVICE = 20 => "reinitializeDevice",
        VT_OPEN = 21 => "vtOpen",
        VT_CLOSE = 22 => "vtClose",
        VT_DATA = 23 => "vtData",
        AUTHENTICATE = 24 => "authenticate",
        REQUEST_KEY = 25 => "requestKey",
        READ_RANGE = 26 => "readRange",
        LIFE_SAFETY_OPERATION = 27 => "lifeSafetyOperation",
        SUBSCRIBE_COV_PROPERTY = 28 => "subscribeCOVProperty",
        GET_EVENT_INFORMATION = 29 => "getEventInformation",
        SUBSCRIBE_COV_PROPERTY_MULTIPLE = 30 => "subscribeCOVPropertyMultiple",
        CONFIRMED_COV_NOTIFICATION_MULTIPLE = 31 => "confirmedCOVNotificationMultiple",
        CONFIRMED_AUDIT_NOTIFICATION = 32 => "confirmedAuditNotification",
        AUDIT_LOG_QUERY = 33 => "auditLogQuery",
    }
}

bacnet_enum! {
    /// `BACnetUnconfirmedServiceChoice`: the service octet of an unconfirmed request.
    pub struct UnconfirmedServiceChoice(u8) {
        I_AM = 0 => "i-Am",
        I_HAVE = 1 => "i-Have",
        UNCONFIRMED_COV_NOTIFICATION = 2 => "unconfirmedCOVNotification",
        UNCONFIRMED_EVENT_NOTIFICATION = 3 => "unconfirmedEventNotification",
        UNCONFIRMED_PRIVATE_TRANSFER = 4 => "unconfirmedPrivateTransfer",
        UNCONFIRMED_TEXT_MESSAGE = 5 => "unconfirmedTextMessage",
        TIME_SYNCHRONIZATION = 6 => "timeSynchronization",
        WHO_HAS = 7 => "who-Has",
        WHO_IS = 8 => "who-Is",
        UTC_TIME_SYNCHRONIZATION = 9 => "utcTimeSynchronization",
        WRITE_GROUP = 10 => "writeGroup",
        UNCONFIRMED_COV_NOTIFICATION_MULTIPLE = 11 => "unconfirmedCOVNotificationMultiple",
        UNCONFIRMED_AUDIT_NOTIFICATION = 12 => "unconfirmedAuditNotification",
        WHO_AM_I = 13 => "who-Am-I",
        YOU_ARE = 14 => "you-Are",
    }
}
