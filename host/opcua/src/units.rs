//! BACnet engineering units → OPC UA `EUInformation` (OPC 30030 clause 11).
//!
//! Units with a UNECE Recommendation 20 common code get the OPC UA UnitId
//! of that code (Part 8: the code's ASCII octets, big-endian) in the UNECE
//! namespace; every other unit — and any unit this table does not list —
//! gets OPC 30030's fallback: the BACnet namespace with UnitId = the BACnet
//! enumeration value, named as ASHRAE 135 names it.
//!
//! The table covers the building-automation units met in practice, not all
//! 250-odd of Clause 21; what it lacks falls back, never disappears.

use bacnet::enums::EngineeringUnits as U;
use opcua::types::{EUInformation, LocalizedText, UAString};

/// The UNECE namespace of EngineeringUnits (OPC UA Part 8).
pub const UNECE_NAMESPACE: &str = "http://www.opcfoundation.org/UA/units/un/cefact";
/// OPC 30030's namespace, used for units without a UNECE code.
pub const BACNET_NAMESPACE: &str = "http://opcfoundation.org/UA/BACnet_V2/";

/// (BACnet unit, UNECE common code, symbol).
const UNECE: &[(U, &str, &str)] = &[
    (U::SQUARE_METERS, "MTK", "m²"),
    (U::MILLIAMPERES, "4K", "mA"),
    (U::AMPERES, "AMP", "A"),
    (U::VOLTS, "VLT", "V"),
    (U::WATT_HOURS, "WHR", "W·h"),
    (U::KILOWATT_HOURS, "KWH", "kW·h"),
    (U::HERTZ, "HTZ", "Hz"),
    (U::METERS, "MTR", "m"),
    (U::WATTS, "WTT", "W"),
    (U::KILOWATTS, "KWT", "kW"),
    (U::MEGAWATTS, "MAW", "MW"),
    (U::PASCALS, "PAL", "Pa"),
    (U::KILOPASCALS, "KPA", "kPa"),
    (U::BARS, "BAR", "bar"),
    (U::DEGREES_CELSIUS, "CEL", "°C"),
    (U::DEGREES_KELVIN, "KEL", "K"),
    (U::DEGREES_FAHRENHEIT, "FAH", "°F"),
    (U::DAYS, "DAY", "d"),
    (U::HOURS, "HUR", "h"),
    (U::MINUTES, "MIN", "min"),
    (U::SECONDS, "SEC", "s"),
    (U::METERS_PER_SECOND, "MTS", "m/s"),
    (U::CUBIC_METERS, "MTQ", "m³"),
    (U::CUBIC_METERS_PER_SECOND, "MQS", "m³/s"),
    (U::CUBIC_METERS_PER_HOUR, "MQH", "m³/h"),
    (U::PARTS_PER_MILLION, "59", "ppm"),
    (U::PERCENT, "P1", "%"),
];

/// The OPC UA UnitId of a UNECE common code.
pub fn unece_unit_id(code: &str) -> i32 {
    code.bytes().fold(0i32, |id, c| (id << 8) | i32::from(c))
}

/// The EngineeringUnits of a BACnet `Units` value.
pub fn eu_information(units: u32) -> EUInformation {
    let unit = U(units);
    match UNECE.iter().find(|(u, _, _)| *u == unit) {
        Some((_, code, symbol)) => EUInformation {
            namespace_uri: UAString::from(UNECE_NAMESPACE),
            unit_id: unece_unit_id(code),
            display_name: LocalizedText::new("", symbol),
            description: LocalizedText::new("", unit.name().unwrap_or("")),
        },
        None => {
            let name = unit.name().map(str::to_owned).unwrap_or_else(|| format!("units-{units}"));
            EUInformation {
                namespace_uri: UAString::from(BACNET_NAMESPACE),
                unit_id: i32::try_from(units).unwrap_or(-1),
                display_name: LocalizedText::new("", &name),
                description: LocalizedText::new("", &name),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degrees_celsius_is_the_unece_cel_code() {
        // OPC UA Part 8's own example: "CEL" → 4408652.
        let eu = eu_information(U::DEGREES_CELSIUS.0);
        assert_eq!(eu.unit_id, 4408652);
        assert_eq!(eu.namespace_uri.as_ref(), UNECE_NAMESPACE);
        assert_eq!(eu.display_name.text.as_ref(), "°C");
    }

    #[test]
    fn a_unit_without_a_code_keeps_its_bacnet_value() {
        let eu = eu_information(U::PERCENT_RELATIVE_HUMIDITY.0);
        assert_eq!((eu.unit_id, eu.namespace_uri.as_ref()), (29, BACNET_NAMESPACE));
        assert_eq!(eu.display_name.text.as_ref(), "percent-relative-humidity");
        assert_eq!(eu_information(65_000).display_name.text.as_ref(), "units-65000");
    }
}
