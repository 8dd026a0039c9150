//! WriteProperty semantics (Clause 15.9 and the object types of Clause 12).
//!
//! Checks run in the order a client can tell apart: the object exists, the
//! property exists, an array index is only given for an array, the property
//! is writable (Present_Value of an input only while out of service), the
//! datatype, then the range. Writable: Present_Value (inputs while out of
//! service, Value objects, commanded objects), Object_Name, Description,
//! Out_Of_Service, COV_Increment; on the Device object Object_Name,
//! Description and Location; on a Trend Log Object_Name, Description, Enable
//! and Record_Count (zero only: it clears the buffer). Everything else is
//! write-access-denied.

use super::trend_log::status;
use super::{Class, LogRecord, Object, PresentValue, Role, Store};
use crate::errors;
use crate::model::Write;
use crate::value::{as_boolean, as_real, as_text, as_unsigned, is_null};
use bacnet::services::BacnetError;
use bacnet::{PropertyIdentifier as P, Value};

/// The priority a command without one takes (Clause 19.2.1.1).
pub const DEFAULT_PRIORITY: u8 = 16;

/// Reserved for the Minimum On/Off algorithm (Clause 19.2.3).
pub const MINIMUM_ON_OFF_PRIORITY: u8 = 6;

impl Store {
    /// Apply one client write with the standard's rules.
    ///
    /// A priority is ignored for properties that are not commandable
    /// (Clause 15.9.1.1.5). A command at priority 6 is refused with
    /// property/write-access-denied: the standard reserves it for Minimum
    /// On/Off (Clause 19.2.3), which this store does not implement, and
    /// names no error for it; write-access-denied is what the reference
    /// implementations answer.
    pub fn write(&mut self, w: &Write) -> Result<(), BacnetError> {
        let id = w.target.object;
        let p = w.target.property;
        if !self.has_property(id, p).ok_or(errors::UNKNOWN_OBJECT)? {
            return Err(errors::UNKNOWN_PROPERTY);
        }
        if w.target.array_index.is_some() && !Self::is_array(p) {
            return Err(errors::PROPERTY_IS_NOT_AN_ARRAY);
        }
        if id == self.device.id() {
            return self.write_device(w);
        }
        if self.trend_logs.contains_key(&id) {
            return self.write_trend_log(w);
        }
        match p {
            P::OBJECT_NAME => {
                let name = writable_name(as_text(&w.value)?)?;
                if !self.rename(id, name) {
                    return Err(errors::DUPLICATE_NAME);
                }
                if let Some(o) = self.objects.get_mut(&id) {
                    o.written.name = true;
                }
                Ok(())
            }
            P::DESCRIPTION => {
                let text = as_text(&w.value)?;
                let o = self.objects.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
                o.description = text;
                o.written.description = true;
                Ok(())
            }
            P::OUT_OF_SERVICE => {
                let oos = as_boolean(&w.value)?;
                let o = self.objects.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
                o.out_of_service = oos;
                self.mark_dirty(id);
                Ok(())
            }
            P::COV_INCREMENT => {
                let x = as_real(&w.value)?;
                if !(x.is_finite() && x >= 0.0) {
                    return Err(errors::VALUE_OUT_OF_RANGE);
                }
                let o = self.objects.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
                if let Class::Analog { cov_increment, .. } = &mut o.class {
                    *cov_increment = x;
                    o.written.cov_increment = true;
                }
                Ok(())
            }
            P::PRESENT_VALUE => {
                let o = self.objects.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
                write_present_value(o, w)?;
                self.mark_dirty(id);
                Ok(())
            }
            _ => {
                let o = self.objects.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
                let r = o.reporting.as_mut().ok_or(errors::WRITE_ACCESS_DENIED)?;
                r.write(w)?;
                // Detection runs again at the end of the call.
                self.mark_dirty(id);
                Ok(())
            }
        }
    }

    fn write_device(&mut self, w: &Write) -> Result<(), BacnetError> {
        match w.target.property {
            P::OBJECT_NAME => {
                let name = writable_name(as_text(&w.value)?)?;
                if !self.rename(self.device.id(), name) {
                    return Err(errors::DUPLICATE_NAME);
                }
                self.device_written.name = true;
                Ok(())
            }
            P::DESCRIPTION => {
                self.device.description = as_text(&w.value)?;
                self.device_written.description = true;
                Ok(())
            }
            P::LOCATION => {
                self.device.location = as_text(&w.value)?;
                self.device_written.location = true;
                Ok(())
            }
            _ => Err(errors::WRITE_ACCESS_DENIED),
        }
    }
}

impl Store {
    /// A Trend Log's writable properties (Clause 12.25): Object_Name,
    /// Description, Enable and Record_Count.
    ///
    /// Changing Enable adds a log-status record (log-disabled set when
    /// disabling, clear when enabling), stamped with [`Store::now`];
    /// enabling a full log with Stop_When_Full is object/log-buffer-full.
    /// Writing 0 to Record_Count empties the buffer and adds a log-status
    /// record with buffer-purged set (so Record_Count then reads 1);
    /// any other number is property/value-out-of-range.
    fn write_trend_log(&mut self, w: &Write) -> Result<(), BacnetError> {
        let id = w.target.object;
        let now = self.now();
        if w.target.property == P::OBJECT_NAME {
            let name = writable_name(as_text(&w.value)?)?;
            if !self.rename(id, name) {
                return Err(errors::DUPLICATE_NAME);
            }
            if let Some(t) = self.trend_logs.get_mut(&id) {
                t.written.name = true;
            }
            return Ok(());
        }
        let t = self.trend_logs.get_mut(&id).ok_or(errors::UNKNOWN_OBJECT)?;
        match w.target.property {
            P::DESCRIPTION => {
                t.description = as_text(&w.value)?;
                t.written.description = true;
                Ok(())
            }
            P::ENABLE => {
                let enable = as_boolean(&w.value)?;
                if enable == t.enable {
                    return Ok(());
                }
                if enable && t.stop_when_full && t.is_full() {
                    return Err(errors::LOG_BUFFER_FULL);
                }
                t.enable = enable;
                t.next_due_ms = None;
                t.push(LogRecord::new(now, status(!enable, false), None));
                Ok(())
            }
            P::RECORD_COUNT => {
                if as_unsigned(&w.value)? != 0 {
                    return Err(errors::VALUE_OUT_OF_RANGE);
                }
                t.records.clear();
                t.push(LogRecord::new(now, status(!t.enable, true), None));
                Ok(())
            }
            _ => Err(errors::WRITE_ACCESS_DENIED),
        }
    }
}

/// Object_Name must hold at least one printable character (Clause 12.1.1.2
/// and friends); an empty name is out of range.
fn writable_name(name: String) -> Result<String, BacnetError> {
    if name.trim().is_empty() {
        return Err(errors::VALUE_OUT_OF_RANGE);
    }
    Ok(name)
}

fn write_present_value(o: &mut Object, w: &Write) -> Result<(), BacnetError> {
    if o.command.is_none() {
        // Present_Value of an input is writable only while out of service
        // (Clause 12.2.4 and siblings); of a Value object always.
        if o.role == Role::Input && !o.out_of_service {
            return Err(errors::WRITE_ACCESS_DENIED);
        }
        o.value = decode_present_value(o, &w.value)?.ok_or(errors::INVALID_DATA_TYPE)?;
        return Ok(());
    }
    let priority = w.priority.unwrap_or(DEFAULT_PRIORITY);
    if !(1..=16).contains(&priority) {
        return Err(errors::VALUE_OUT_OF_RANGE);
    }
    let value = decode_present_value(o, &w.value)?;
    if priority == MINIMUM_ON_OFF_PRIORITY {
        return Err(errors::WRITE_ACCESS_DENIED);
    }
    if let Some(c) = o.command.as_mut() {
        c.slots[priority as usize - 1] = value;
    }
    Ok(())
}

/// The written value as this object's Present_Value (`None` for Null, a
/// relinquish), with the datatype and range checks of its object type.
fn decode_present_value(o: &Object, v: &bacnet::AnyValue) -> Result<Option<PresentValue>, BacnetError> {
    if is_null(v) {
        return Ok(None);
    }
    let p = v.as_primitive().ok_or(errors::INVALID_DATA_TYPE)?;
    let pv = match (&o.class, p) {
        (Class::Analog { .. }, Value::Real(x)) if x.is_finite() => PresentValue::Analog(*x),
        (Class::Analog { .. }, Value::Real(_)) => return Err(errors::VALUE_OUT_OF_RANGE),
        (Class::Binary { .. }, Value::Enumerated(0)) => PresentValue::Binary(false),
        (Class::Binary { .. }, Value::Enumerated(1)) => PresentValue::Binary(true),
        (Class::Binary { .. }, Value::Enumerated(_)) => return Err(errors::VALUE_OUT_OF_RANGE),
        (Class::MultiState { states }, Value::Unsigned(n)) => {
            if *n < 1 || *n > states.len() as u64 {
                return Err(errors::VALUE_OUT_OF_RANGE);
            }
            PresentValue::MultiState(*n as u32)
        }
        _ => return Err(errors::INVALID_DATA_TYPE),
    };
    Ok(Some(pv))
}
