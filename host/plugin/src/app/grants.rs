//! What an application plugin may touch: point patterns (read and watch;
//! write) and MQTT topic filters (publish; subscribe), as the operator
//! granted them. Checked by the host at every call; a refusal names the
//! point or topic and what would grant it.
//!
//! Point patterns are `DEVICE[/OBJECT[/PROPERTY]]`, each part a value or
//! `*`, the object `TYPE,INSTANCE` with either half `*`; a part left out is
//! `*`: `1001` (every point of device 1001), `1001/analog-value,*`,
//! `*/binary-output,1/present-value`. Topic filters are MQTT's (`+` one
//! level, `#` the rest).
//!
//! Must never: grant a point or topic no pattern names.

use bacnet::{ObjectType, PropertyIdentifier};
use std::fmt;

/// A point as the host resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PointAddress {
    /// The device instance.
    pub device: u32,
    /// The object.
    pub object: bacnet::ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// An array element, or the whole property.
    pub array_index: Option<u32>,
}

impl fmt::Display for PointAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.device, self.object, self.property)?;
        if let Some(i) = self.array_index {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PointAddress {
    type Err = String;

    /// `1001/analog-value,1/present-value` (the property may be left out:
    /// Present_Value; `[N]` after it names an array element).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a point (DEVICE/OBJECT[/PROPERTY], e.g. 1001/analog-value,1/present-value)");
        let mut parts = s.split('/');
        let device = parts.next().and_then(|d| d.parse::<u32>().ok()).filter(|d| *d <= 0x3F_FFFF).ok_or_else(bad)?;
        let object = parts.next().and_then(|o| o.parse::<bacnet::ObjectIdentifier>().ok()).ok_or_else(bad)?;
        let (property, array_index) = match parts.next() {
            None => (PropertyIdentifier::PRESENT_VALUE, None),
            Some(p) => {
                let (name, index) = match p.split_once('[') {
                    Some((n, i)) => (n, Some(i.strip_suffix(']').and_then(|i| i.parse().ok()).ok_or_else(bad)?)),
                    None => (p, None),
                };
                let property = PropertyIdentifier::from_name(name)
                    .or_else(|| name.parse::<u32>().ok().map(PropertyIdentifier::from))
                    .ok_or_else(bad)?;
                (property, index)
            }
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(PointAddress { device, object, property, array_index })
    }
}

/// One point pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointPattern {
    device: Option<u32>,
    object_type: Option<ObjectType>,
    instance: Option<u32>,
    property: Option<PropertyIdentifier>,
    text: String,
}

impl std::str::FromStr for PointPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("point pattern `{s}`: {why} (DEVICE[/TYPE,INSTANCE[/PROPERTY]], parts may be *)");
        let mut parts = s.split('/');
        let any = |p: &str| p == "*";
        let device = match parts.next() {
            Some(d) if any(d) => None,
            Some(d) => Some(d.parse::<u32>().map_err(|_| bad("not a device instance"))?),
            None => None,
        };
        let (object_type, instance) = match parts.next() {
            None => (None, None),
            Some(o) if any(o) => (None, None),
            Some(o) => {
                let (t, i) = o.split_once(',').ok_or_else(|| bad("an object is TYPE,INSTANCE"))?;
                let t = if any(t) {
                    None
                } else {
                    Some(
                        ObjectType::from_name(t)
                            .or_else(|| t.parse::<u32>().ok().map(ObjectType::from))
                            .ok_or_else(|| bad("unknown object type"))?,
                    )
                };
                let i = if any(i) { None } else { Some(i.parse::<u32>().map_err(|_| bad("not an instance"))?) };
                (t, i)
            }
        };
        let property = match parts.next() {
            None => None,
            Some(p) if any(p) => None,
            Some(p) => Some(PropertyIdentifier::from_name(p).ok_or_else(|| bad("unknown property"))?),
        };
        if parts.next().is_some() {
            return Err(bad("too many parts"));
        }
        Ok(PointPattern { device, object_type, instance, property, text: s.to_string() })
    }
}

impl PointPattern {
    /// This pattern may name some point of `device`.
    pub fn may_name_device(&self, device: u32) -> bool {
        self.device.is_none_or(|d| d == device)
    }

    /// This pattern names `p`.
    pub fn matches(&self, p: &PointAddress) -> bool {
        self.device.is_none_or(|d| d == p.device)
            && self.object_type.is_none_or(|t| t == p.object.object_type)
            && self.instance.is_none_or(|i| i == p.object.instance)
            && self.property.is_none_or(|q| q == p.property)
    }
}

impl fmt::Display for PointPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// An MQTT topic filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicFilter(String);

impl std::str::FromStr for TopicFilter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let levels: Vec<&str> = s.split('/').collect();
        let well_formed = !s.is_empty()
            && levels.iter().enumerate().all(|(i, l)| match *l {
                "#" => i == levels.len() - 1,
                "+" => true,
                l => !l.contains(['+', '#']),
            });
        if !well_formed {
            return Err(format!("`{s}` is not an MQTT topic filter (+ is one whole level, # the last)"));
        }
        Ok(TopicFilter(s.to_string()))
    }
}

impl TopicFilter {
    /// `topic` (no wildcards) matches this filter.
    pub fn matches(&self, topic: &str) -> bool {
        within(topic, &self.0)
    }

    /// Every topic `filter` (maybe with wildcards) matches, this one does too.
    pub fn covers(&self, filter: &str) -> bool {
        within(filter, &self.0)
    }
}

impl fmt::Display for TopicFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether every topic `inner` names is named by `outer` (MQTT matching,
/// with `inner`'s wildcards only where `outer` has as wide a one).
fn within(inner: &str, outer: &str) -> bool {
    let mut a = inner.split('/');
    let mut b = outer.split('/');
    loop {
        match (a.next(), b.next()) {
            (_, Some("#")) => return true,
            (None, None) => return true,
            (Some("#"), _) => return false,
            (Some("+"), Some("+")) => {}
            (Some("+"), _) => return false,
            (Some(_), Some("+")) => {}
            (Some(x), Some(y)) if x == y => {}
            _ => return false,
        }
    }
}

/// What the operator granted one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Points it may read and watch.
    pub read: Vec<PointPattern>,
    /// Points it may write (reading them is granted too).
    pub write: Vec<PointPattern>,
    /// Topics it may publish on.
    pub publish: Vec<TopicFilter>,
    /// Topic filters it may subscribe to (and narrower ones).
    pub subscribe: Vec<TopicFilter>,
    /// What the plugin's own manifest asks for, if it says: nothing beyond
    /// it is granted, whatever the lists above say.
    pub ceiling: Option<Box<Grants>>,
}

impl Grants {
    /// `p` may be read or watched.
    pub fn may_read(&self, p: &PointAddress) -> bool {
        self.read.iter().chain(&self.write).any(|g| g.matches(p)) && self.ceiling.as_ref().is_none_or(|c| c.may_read(p))
    }

    /// `p` may be written.
    pub fn may_write(&self, p: &PointAddress) -> bool {
        self.write.iter().any(|g| g.matches(p)) && self.ceiling.as_ref().is_none_or(|c| c.may_write(p))
    }

    /// `topic` may be published on.
    pub fn may_publish(&self, topic: &str) -> bool {
        !topic.contains(['+', '#'])
            && self.publish.iter().any(|g| g.matches(topic))
            && self.ceiling.as_ref().is_none_or(|c| c.may_publish(topic))
    }

    /// `filter` may be subscribed to.
    pub fn may_subscribe(&self, filter: &str) -> bool {
        filter.parse::<TopicFilter>().is_ok()
            && self.subscribe.iter().any(|g| g.covers(filter))
            && self.ceiling.as_ref().is_none_or(|c| c.may_subscribe(filter))
    }

    /// Some point of `device` may be read.
    pub fn may_name_device(&self, device: u32) -> bool {
        self.read.iter().chain(&self.write).any(|g| g.may_name_device(device))
            && self.ceiling.as_ref().is_none_or(|c| c.may_name_device(device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(s: &str) -> PointAddress {
        s.parse().unwrap()
    }

    #[test]
    fn point_patterns_name_what_they_say() {
        let g = |s: &str| s.parse::<PointPattern>().unwrap();
        let av1 = point("1001/analog-value,1/present-value");
        assert_eq!(av1, point("1001/analog-value,1"), "Present_Value when the property is left out");
        assert!(g("1001").matches(&av1) && g("*").matches(&av1) && g("1001/analog-value,*").matches(&av1));
        assert!(g("*/*,1/present-value").matches(&av1));
        assert!(!g("1002").matches(&av1) && !g("1001/analog-value,2").matches(&av1));
        assert!(!g("1001/analog-value,1/units").matches(&av1));
        assert!(!g("1001/binary-value,*").matches(&av1));
        for bad in ["x", "1001/analog-value", "1001/nothing,1", "1001/analog-value,1/nothing", "1/a,1/b/c"] {
            assert!(bad.parse::<PointPattern>().is_err(), "{bad}");
        }
        assert_eq!(point("1001/analog-value,1/priority-array[8]").array_index, Some(8));
        assert!("1001/analog-value,1/present-value/x".parse::<PointAddress>().is_err());
    }

    #[test]
    fn topic_grants_cover_only_narrower_filters() {
        let f = |s: &str| s.parse::<TopicFilter>().unwrap();
        let grants =
            Grants { publish: vec![f("building/alarms/#")], subscribe: vec![f("building/+/cmd")], ..Grants::default() };
        assert!(grants.may_publish("building/alarms/zone-1"));
        assert!(!grants.may_publish("building/alarms/+"), "no wildcards in a published topic");
        assert!(!grants.may_publish("building/points/zone-1"));
        assert!(grants.may_subscribe("building/+/cmd") && grants.may_subscribe("building/a/cmd"));
        assert!(!grants.may_subscribe("building/#") && !grants.may_subscribe("building/a/+"));
        assert!("a/#/b".parse::<TopicFilter>().is_err() && "a/b+".parse::<TopicFilter>().is_err());
    }

    #[test]
    fn a_manifest_ceiling_narrows_what_the_operator_granted() {
        let p = |s: &str| s.parse::<PointPattern>().unwrap();
        let f = |s: &str| s.parse::<TopicFilter>().unwrap();
        let ceiling = Grants { read: vec![p("*/analog-input,*")], publish: vec![f("alarms/#")], ..Grants::default() };
        let grants = Grants {
            read: vec![p("1001")],
            write: vec![p("1001/binary-output,1")],
            publish: vec![f("#")],
            ceiling: Some(Box::new(ceiling)),
            ..Grants::default()
        };
        assert!(grants.may_read(&point("1001/analog-input,1")));
        assert!(!grants.may_read(&point("1001/analog-value,1")), "the operator allows it, the manifest does not ask");
        assert!(!grants.may_write(&point("1001/binary-output,1")), "the manifest asks for no write");
        assert!(grants.may_publish("alarms/zone") && !grants.may_publish("points/zone"));
    }
}
