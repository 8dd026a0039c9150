//! The change-of-value criteria of Clause 13.1: which object types
//! SubscribeCOV is served for here, and when a new value differs enough from
//! the one last notified to be reported again.

use crate::enums::ObjectType;
use crate::value::{AnyValue, Value};

/// The object types whose SubscribeCOV criteria this module implements: the
/// rows of Table 13-1 ("Standard Objects That Support COV Reporting") that
/// report Present_Value and Status_Flags. Status_Flags is reported on any
/// change; Present_Value by the object's COV_Increment for the types
/// [`reports_by_cov_increment`] names, on any change for the others.
///
/// Left out, so SubscribeCOV for them is refused with
/// `object: optional-functionality-not-supported` even when the host offers
/// them: the rows with other criteria or other reported properties (Loop,
/// Pulse_Converter, Trend_Log and the other log objects, Life_Safety_Point
/// and Life_Safety_Zone, Access_Door and the access-control objects,
/// Lighting_Output, Channel, Staging, Timer…) and the remaining value object
/// types. SubscribeCOVProperty is not limited by this list: the host decides
/// which properties can be monitored.
pub const SUBSCRIBE_COV_OBJECT_TYPES: &[ObjectType] = &[
    ObjectType::ANALOG_INPUT,
    ObjectType::ANALOG_OUTPUT,
    ObjectType::ANALOG_VALUE,
    ObjectType::LARGE_ANALOG_VALUE,
    ObjectType::INTEGER_VALUE,
    ObjectType::POSITIVE_INTEGER_VALUE,
    ObjectType::BINARY_INPUT,
    ObjectType::BINARY_OUTPUT,
    ObjectType::BINARY_VALUE,
    ObjectType::MULTI_STATE_INPUT,
    ObjectType::MULTI_STATE_OUTPUT,
    ObjectType::MULTI_STATE_VALUE,
];

/// True when SubscribeCOV can be served for objects of type `t` (see
/// [`SUBSCRIBE_COV_OBJECT_TYPES`]).
pub fn supports_subscribe_cov(t: ObjectType) -> bool {
    SUBSCRIBE_COV_OBJECT_TYPES.contains(&t)
}

/// True for the object types whose Present_Value SubscribeCOV reports by the
/// object's COV_Increment (Analog Input/Output/Value, Large Analog Value,
/// Integer Value, Positive Integer Value). For the other types of
/// [`SUBSCRIBE_COV_OBJECT_TYPES`] any change is reported, even of a numeric
/// Present_Value (Multi-state objects' Unsigned), and COV_Increment is not
/// read.
pub fn reports_by_cov_increment(t: ObjectType) -> bool {
    matches!(
        t,
        ObjectType::ANALOG_INPUT
            | ObjectType::ANALOG_OUTPUT
            | ObjectType::ANALOG_VALUE
            | ObjectType::LARGE_ANALOG_VALUE
            | ObjectType::INTEGER_VALUE
            | ObjectType::POSITIVE_INTEGER_VALUE
    )
}

/// A COV increment as the table uses it: a number ≥ 0 (0 reports any change,
/// +∞ only a change to or from an infinity or NaN). `None` for a negative
/// value or NaN, which are no increment at all: any change is reported.
pub(crate) fn usable_increment(v: f64) -> Option<f64> {
    (v >= 0.0).then_some(v)
}

/// The object's COV_Increment property value as an increment: a REAL (or
/// Double, Unsigned, Signed) that [`usable_increment`] accepts.
pub(crate) fn increment_from(v: &AnyValue) -> Option<f64> {
    v.as_primitive().and_then(Value::as_f64).and_then(usable_increment)
}

/// True when `new` must be reported to a subscriber that was last told `old`
/// (`None`: told nothing yet).
///
/// Two numeric primitives of the same datatype (Real, Double, Unsigned,
/// Signed) differ when `|new − old| ≥ increment`; without an increment (or
/// with 0) any change counts. NaN counts as one value: NaN → NaN is no
/// change, a number ↔ NaN is always one. Every other value (Boolean,
/// Enumerated, BitString, strings, constructed data, a change of datatype)
/// differs on any change.
pub(crate) fn value_changed(old: Option<&AnyValue>, new: &AnyValue, increment: Option<f64>) -> bool {
    let Some(old) = old else { return true };
    if old == new {
        return false;
    }
    let (Some(o), Some(n)) = (old.as_primitive(), new.as_primitive()) else { return true };
    let (Some(a), Some(b)) = (o.as_f64(), n.as_f64()) else { return true };
    if o.app_tag() != n.app_tag() {
        return true;
    }
    if a.is_nan() || b.is_nan() {
        return a.is_nan() != b.is_nan();
    }
    match increment {
        // `old != new` above, so the values differ; for Unsigned and Signed
        // beyond 2^53 the f64 difference may round to 0, which is still a
        // change when no increment is in force.
        None => true,
        Some(inc) if inc <= 0.0 => true,
        // Non-NaN operands that are not equal: the difference is a number or
        // +inf (from opposite infinities), never NaN.
        Some(inc) => (b - a).abs() >= inc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(v: f32) -> AnyValue {
        AnyValue::primitive(Value::Real(v))
    }

    #[test]
    fn nan_is_one_value_and_infinities_compare_by_difference() {
        assert!(!value_changed(Some(&real(f32::NAN)), &real(f32::NAN), Some(1.0)));
        assert!(value_changed(Some(&real(1.0)), &real(f32::NAN), Some(1.0)));
        assert!(value_changed(Some(&real(f32::NAN)), &real(1.0), None));
        assert!(!value_changed(Some(&real(f32::INFINITY)), &real(f32::INFINITY), Some(1.0)));
        assert!(value_changed(Some(&real(f32::NEG_INFINITY)), &real(f32::INFINITY), Some(1.0)));
    }

    #[test]
    fn a_change_of_datatype_is_a_change_whatever_the_increment() {
        let unsigned = AnyValue::primitive(Value::Unsigned(1));
        assert!(value_changed(Some(&real(1.0)), &unsigned, Some(10.0)));
        assert!(value_changed(Some(&real(1.0)), &AnyValue::primitive(Value::Null), Some(10.0)));
    }

    #[test]
    fn unusable_increments_are_dropped() {
        assert_eq!(usable_increment(-0.5), None);
        assert_eq!(usable_increment(f64::NAN), None);
        assert_eq!(usable_increment(f64::NEG_INFINITY), None);
        assert_eq!(usable_increment(f64::INFINITY), Some(f64::INFINITY));
        assert_eq!(usable_increment(0.0), Some(0.0));
        assert_eq!(increment_from(&AnyValue::primitive(Value::Enumerated(1))), None);
        assert_eq!(increment_from(&real(0.5)), Some(0.5));
    }
}
