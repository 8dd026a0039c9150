//! Property values: application-tagged primitives ([`Value`]) and the
//! generic tree of any encoded `ABSTRACT-SYNTAX.&Type` ([`Element`]).
//!
//! A property's value on the wire is a sequence of elements: application
//! tagged primitives, context tagged primitives (whose datatype only the
//! property's definition knows, so they are kept as raw octets), and
//! constructed data between opening and closing tags, nested to any depth.
//! Decoding is bounded by [`MAX_NESTING_DEPTH`] and by the input's size: every
//! element consumes at least one input octet, so memory stays proportional to
//! the data received.

use crate::codec::tag::{self, TagClass, TagKind, app};
use crate::codec::{
    BitString, CharacterString, Date, Enumerated, MAX_NESTING_DEPTH, ObjectIdentifier, Primitive, Reader, Time,
    write_app, write_constructed,
};
use crate::error::DecodeError;
use alloc::vec::Vec;
use core::fmt;

/// One application-tagged primitive value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Null (also "relinquish" when written to a commandable property).
    Null,
    /// Boolean.
    Boolean(bool),
    /// Unsigned, up to 64 bits.
    Unsigned(u64),
    /// Signed, up to 64 bits.
    Signed(i64),
    /// Real (IEEE 754 single).
    Real(f32),
    /// Double (IEEE 754 double).
    Double(f64),
    /// OctetString.
    OctetString(Vec<u8>),
    /// CharacterString in any character set.
    CharacterString(CharacterString),
    /// BitString.
    BitString(BitString),
    /// Enumerated (the property's definition says which enumeration).
    Enumerated(u32),
    /// Date.
    Date(Date),
    /// Time.
    Time(Time),
    /// BACnetObjectIdentifier.
    ObjectIdentifier(ObjectIdentifier),
}

impl Value {
    /// The application tag number of this value's datatype.
    pub fn app_tag(&self) -> u8 {
        match self {
            Value::Null => app::NULL,
            Value::Boolean(_) => app::BOOLEAN,
            Value::Unsigned(_) => app::UNSIGNED,
            Value::Signed(_) => app::SIGNED,
            Value::Real(_) => app::REAL,
            Value::Double(_) => app::DOUBLE,
            Value::OctetString(_) => app::OCTET_STRING,
            Value::CharacterString(_) => app::CHARACTER_STRING,
            Value::BitString(_) => app::BIT_STRING,
            Value::Enumerated(_) => app::ENUMERATED,
            Value::Date(_) => app::DATE,
            Value::Time(_) => app::TIME,
            Value::ObjectIdentifier(_) => app::OBJECT_IDENTIFIER,
        }
    }

    /// Append the application-tagged encoding.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => write_app(out, &()),
            Value::Boolean(v) => write_app(out, v),
            Value::Unsigned(v) => write_app(out, v),
            Value::Signed(v) => write_app(out, v),
            Value::Real(v) => write_app(out, v),
            Value::Double(v) => write_app(out, v),
            Value::OctetString(v) => write_app(out, v),
            Value::CharacterString(v) => write_app(out, v),
            Value::BitString(v) => write_app(out, v),
            Value::Enumerated(v) => write_app(out, &Enumerated(*v)),
            Value::Date(v) => write_app(out, v),
            Value::Time(v) => write_app(out, v),
            Value::ObjectIdentifier(v) => write_app(out, v),
        }
    }

    /// Decode one application-tagged value. Reserved application tags
    /// (13–15) are `InvalidTag`.
    pub fn decode(r: &mut Reader<'_>) -> Result<Value, DecodeError> {
        match Self::read_app(r)? {
            AppContent::Boolean(b) => Ok(Value::Boolean(b)),
            AppContent::Octets { number, content, content_at, at } => {
                Self::from_content(number, content, content_at, at)
            }
        }
    }

    /// Check one application-tagged value as [`Value::decode`] would,
    /// without building it (no allocation).
    pub fn check(r: &mut Reader<'_>) -> Result<(), DecodeError> {
        match Self::read_app(r)? {
            AppContent::Boolean(_) => Ok(()),
            AppContent::Octets { number, content, content_at, at } => match number {
                app::OCTET_STRING => Ok(()),
                app::CHARACTER_STRING => CharacterString::parts(content, content_at).map(drop),
                app::BIT_STRING => BitString::parts(content, content_at).map(drop),
                // The other datatypes decode without allocating.
                _ => Self::from_content(number, content, content_at, at).map(drop),
            },
        }
    }

    /// An application tag and its content octets.
    fn read_app<'a>(r: &mut Reader<'a>) -> Result<AppContent<'a>, DecodeError> {
        let at = r.position();
        let t = tag::read_tag(r)?;
        if t.class != TagClass::Application {
            return Err(DecodeError::InvalidTag { at, what: "an application-tagged value" });
        }
        let TagKind::Primitive(len) = t.kind else {
            return Err(DecodeError::InvalidTag { at, what: "an application-tagged value" });
        };
        if t.number == app::BOOLEAN {
            return match len {
                0 => Ok(AppContent::Boolean(false)),
                1 => Ok(AppContent::Boolean(true)),
                _ => Err(DecodeError::OutOfRange { at, what: "a Boolean (0 or 1)" }),
            };
        }
        let content_at = r.position();
        let content = r.take_content(t.content_len(), at)?;
        Ok(AppContent::Octets { number: t.number, content, content_at, at })
    }

    fn from_content(number: u8, c: &[u8], cat: usize, at: usize) -> Result<Value, DecodeError> {
        Ok(match number {
            app::NULL => {
                <()>::decode_content(c, cat)?;
                Value::Null
            }
            app::UNSIGNED => Value::Unsigned(u64::decode_content(c, cat)?),
            app::SIGNED => Value::Signed(i64::decode_content(c, cat)?),
            app::REAL => Value::Real(f32::decode_content(c, cat)?),
            app::DOUBLE => Value::Double(f64::decode_content(c, cat)?),
            app::OCTET_STRING => Value::OctetString(c.to_vec()),
            app::CHARACTER_STRING => Value::CharacterString(CharacterString::decode_content(c, cat)?),
            app::BIT_STRING => Value::BitString(BitString::decode_content(c, cat)?),
            app::ENUMERATED => Value::Enumerated(Enumerated::decode_content(c, cat)?.0),
            app::DATE => Value::Date(Date::decode_content(c, cat)?),
            app::TIME => Value::Time(Time::decode_content(c, cat)?),
            app::OBJECT_IDENTIFIER => Value::ObjectIdentifier(ObjectIdentifier::decode_content(c, cat)?),
            _ => return Err(DecodeError::InvalidTag { at, what: "a standard application tag (0..=12)" }),
        })
    }

    /// The value as an f64 when it is numeric (Real, Double, Unsigned, Signed).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Real(v) => Some(*v as f64),
            Value::Double(v) => Some(*v),
            Value::Unsigned(v) => Some(*v as f64),
            Value::Signed(v) => Some(*v as f64),
            _ => None,
        }
    }
}

/// What follows an application tag: a Boolean's value (in the tag itself)
/// or the content octets of any other datatype.
enum AppContent<'a> {
    Boolean(bool),
    Octets { number: u8, content: &'a [u8], content_at: usize, at: usize },
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Boolean(v) => write!(f, "{v}"),
            Value::Unsigned(v) => write!(f, "{v}"),
            Value::Signed(v) => write!(f, "{v}"),
            Value::Real(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{v}"),
            Value::OctetString(v) => {
                for b in v {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            Value::CharacterString(s) => write!(f, "{s:?}", s = alloc::string::ToString::to_string(s)),
            Value::BitString(b) => {
                f.write_str("{")?;
                for (i, bit) in b.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(if bit { "T" } else { "F" })?;
                }
                f.write_str("}")
            }
            Value::Enumerated(v) => write!(f, "{v}"),
            Value::Date(d) => write!(f, "{d}"),
            Value::Time(t) => write!(f, "{t}"),
            Value::ObjectIdentifier(o) => write!(f, "{o}"),
        }
    }
}

/// One element of encoded constructed data.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    /// An application-tagged primitive.
    Application(Value),
    /// A context-tagged primitive; its datatype is defined by the production,
    /// so its content octets are kept as received.
    Context {
        /// Context tag number.
        tag: u8,
        /// Content octets.
        data: Vec<u8>,
    },
    /// Constructed data between an opening and a closing tag.
    Constructed {
        /// Context tag number of the opening/closing pair.
        tag: u8,
        /// The elements inside.
        elements: Vec<Element>,
    },
}

impl Element {
    /// Append the encoding of this element.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Element::Application(v) => v.encode(out),
            Element::Context { tag: n, data } => {
                tag::write_tag(out, *n, TagClass::Context, data.len());
                out.extend_from_slice(data);
            }
            Element::Constructed { tag: n, elements } => write_constructed(out, *n, |o| {
                for e in elements {
                    e.encode(o)
                }
            }),
        }
    }
}

/// The value of a property as it travels: any sequence of elements.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnyValue(pub Vec<Element>);

impl AnyValue {
    /// A single primitive.
    pub fn primitive(v: Value) -> Self {
        AnyValue(alloc::vec![Element::Application(v)])
    }

    /// The value when it is exactly one application-tagged primitive.
    pub fn as_primitive(&self) -> Option<&Value> {
        match self.0.as_slice() {
            [Element::Application(v)] => Some(v),
            _ => None,
        }
    }

    /// Append the encoding of every element.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for e in &self.0 {
            e.encode(out)
        }
    }

    /// Decode every element in `r` until it ends or a closing tag is next
    /// (the closing tag is not consumed).
    pub fn decode(r: &mut Reader<'_>) -> Result<AnyValue, DecodeError> {
        decode_elements(r, 0).map(AnyValue)
    }

    /// Decode the whole buffer as one value.
    pub fn from_bytes(data: &[u8]) -> Result<AnyValue, DecodeError> {
        let mut r = Reader::new(data);
        let v = Self::decode(&mut r)?;
        r.expect_end()?;
        Ok(v)
    }
}

/// Check that `data` is one well-formed property value — exactly what
/// [`AnyValue::from_bytes`] accepts — without building it: no allocation,
/// for values that only pass through (a plugin's encoded answer on its way
/// into a ReadProperty-ACK).
pub fn check_encoded(data: &[u8]) -> Result<(), DecodeError> {
    let mut r = Reader::new(data);
    walk_elements::<Checked>(&mut r, 0)?;
    r.expect_end()
}

/// What [`walk_elements`] builds from the elements it reads: the tree
/// ([`Vec<Element>`]) or nothing ([`Checked`]).
trait ElementSink: Default {
    /// Read one application-tagged value at `r`.
    fn application(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError>;
    /// A context-tagged primitive.
    fn context(&mut self, tag: u8, data: &[u8]);
    /// Constructed data: the elements between an opening and closing `tag`.
    fn constructed(&mut self, tag: u8, inner: Self);
}

impl ElementSink for Vec<Element> {
    fn application(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        self.push(Element::Application(Value::decode(r)?));
        Ok(())
    }
    fn context(&mut self, tag: u8, data: &[u8]) {
        self.push(Element::Context { tag, data: data.to_vec() });
    }
    fn constructed(&mut self, tag: u8, elements: Self) {
        self.push(Element::Constructed { tag, elements });
    }
}

/// Walks without building anything.
#[derive(Default)]
struct Checked;

impl ElementSink for Checked {
    fn application(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        Value::check(r)
    }
    fn context(&mut self, _: u8, _: &[u8]) {}
    fn constructed(&mut self, _: u8, _: Self) {}
}

fn decode_elements(r: &mut Reader<'_>, depth: usize) -> Result<Vec<Element>, DecodeError> {
    walk_elements(r, depth)
}

/// Read elements until the data ends or a closing tag is next (not consumed).
fn walk_elements<S: ElementSink>(r: &mut Reader<'_>, depth: usize) -> Result<S, DecodeError> {
    let mut out = S::default();
    while let Some(t) = tag::peek_tag(r) {
        let at = r.position();
        let t = t?;
        match (t.class, t.kind) {
            (_, TagKind::Closing) => break,
            (TagClass::Application, _) => out.application(r)?,
            (TagClass::Context, TagKind::Primitive(_)) => {
                let (t, data) = tag::read_tagged(r)?;
                out.context(t.number, data);
            }
            (TagClass::Context, TagKind::Opening) => {
                if depth >= MAX_NESTING_DEPTH {
                    return Err(DecodeError::LimitExceeded { at, what: "constructed nesting depth" });
                }
                tag::read_tag(r)?;
                let inner = walk_elements::<S>(r, depth + 1)?;
                let close_at = r.position();
                match tag::read_tag(r) {
                    Ok(c) if c.is_closing(t.number) => {}
                    Ok(_) => return Err(DecodeError::InvalidTag { at: close_at, what: "the matching closing tag" }),
                    Err(_) => return Err(DecodeError::InvalidTag { at: close_at, what: "a closing tag" }),
                }
                out.constructed(t.number, inner);
            }
        }
    }
    Ok(out)
}

impl From<Value> for AnyValue {
    fn from(v: Value) -> Self {
        AnyValue::primitive(v)
    }
}

impl fmt::Display for AnyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn elems(f: &mut fmt::Formatter<'_>, es: &[Element]) -> fmt::Result {
            for (i, e) in es.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                match e {
                    Element::Application(v) => write!(f, "{v}")?,
                    Element::Context { tag, data } => {
                        write!(f, "[{tag}]")?;
                        for b in data {
                            write!(f, "{b:02x}")?;
                        }
                    }
                    Element::Constructed { tag, elements } => {
                        write!(f, "[{tag}]{{")?;
                        elems(f, elements)?;
                        f.write_str("}")?;
                    }
                }
            }
            Ok(())
        }
        elems(f, &self.0)
    }
}
