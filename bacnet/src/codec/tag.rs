//! Tag headers (Clause 20.2.1): application and context tags, opening and
//! closing tags, extended tag numbers and extended lengths.
//!
//! ```text
//!   7   6   5   4   3   2   1   0
//! | tag number    |cls| length/value/type |
//! ```
//! Tag number 15 means "extended": the real number (15..=254) follows in one
//! octet. Length 5 means "extended": one octet follows (0..=253), or 254 then a
//! u16, or 255 then a u32. LVT 6/7 on a context tag are opening/closing tags.
//! For an application Boolean the LVT field is the value and there is no
//! content.

use super::Reader;
use crate::error::DecodeError;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// Application or context class (bit 3 of the initial octet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagClass {
    /// An application tag: the number is the datatype.
    Application,
    /// A context-specific tag: the number is the field's position in the production.
    Context,
}

/// What follows the tag header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagKind {
    /// A primitive value of this many octets (for an application Boolean, the
    /// value itself, with no content octets).
    Primitive(u32),
    /// A context opening tag: constructed data follows until the matching closing tag.
    Opening,
    /// A context closing tag.
    Closing,
}

/// A decoded tag header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    /// Tag number, 0..=254.
    pub number: u8,
    /// Application or context.
    pub class: TagClass,
    /// Primitive length, or opening/closing.
    pub kind: TagKind,
}

/// Application tag numbers (Clause 20.2.1.4).
pub mod app {
    #![allow(missing_docs)]
    pub const NULL: u8 = 0;
    pub const BOOLEAN: u8 = 1;
    pub const UNSIGNED: u8 = 2;
    pub const SIGNED: u8 = 3;
    pub const REAL: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const OCTET_STRING: u8 = 6;
    pub const CHARACTER_STRING: u8 = 7;
    pub const BIT_STRING: u8 = 8;
    pub const ENUMERATED: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const OBJECT_IDENTIFIER: u8 = 12;
}

impl Tag {
    /// True for a context tag `n` of any kind.
    pub fn is_context(&self, n: u8) -> bool {
        self.class == TagClass::Context && self.number == n
    }

    /// True for the opening tag of context `n`.
    pub fn is_opening(&self, n: u8) -> bool {
        self.is_context(n) && self.kind == TagKind::Opening
    }

    /// True for the closing tag of context `n`.
    pub fn is_closing(&self, n: u8) -> bool {
        self.is_context(n) && self.kind == TagKind::Closing
    }

    /// The primitive length, or `None` for opening/closing tags.
    pub fn primitive_len(&self) -> Option<u32> {
        match self.kind {
            TagKind::Primitive(n) => Some(n),
            _ => None,
        }
    }

    /// Octets of content that follow this header on the wire (0 for
    /// opening/closing tags and for application Booleans).
    pub fn content_len(&self) -> usize {
        match self.kind {
            TagKind::Primitive(_) if self.class == TagClass::Application && self.number == app::BOOLEAN => 0,
            TagKind::Primitive(n) => n as usize,
            _ => 0,
        }
    }
}

/// Read one tag header. Fails with `InvalidTag` for reserved encodings
/// (application opening/closing tags, extended tag number 255) and
/// `Truncated` when the header itself is cut off.
pub fn read_tag(r: &mut Reader<'_>) -> Result<Tag, DecodeError> {
    let at = r.position();
    let first = r.u8("a tag")?;
    let class = if first & 0x08 != 0 { TagClass::Context } else { TagClass::Application };
    let mut number = first >> 4;
    if number == 15 {
        number = r.u8("an extended tag number")?;
        if number == 255 {
            return Err(DecodeError::InvalidTag { at, what: "a tag number below 255" });
        }
    }
    let lvt = first & 0x07;
    let kind = match lvt {
        0..=4 => TagKind::Primitive(lvt as u32),
        5 if class == TagClass::Application && number == app::BOOLEAN => {
            return Err(DecodeError::InvalidTag { at, what: "an application Boolean (value in the LVT field)" });
        }
        5 => {
            let ext = r.u8("an extended length")?;
            let len = match ext {
                0..=253 => ext as u32,
                254 => r.u16("a 16-bit extended length")? as u32,
                255 => {
                    let b = r.take(4, "a 32-bit extended length")?;
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                }
            };
            TagKind::Primitive(len)
        }
        6 | 7 if class == TagClass::Application => {
            return Err(DecodeError::InvalidTag {
                at,
                what: "an application tag (opening/closing tags must be context tags)",
            });
        }
        6 => TagKind::Opening,
        _ => TagKind::Closing,
    };
    Ok(Tag { number, class, kind })
}

/// Peek at the next tag header without consuming it.
pub fn peek_tag(r: &Reader<'_>) -> Option<Result<Tag, DecodeError>> {
    if r.is_empty() {
        return None;
    }
    let mut probe = r.clone();
    Some(read_tag(&mut probe))
}

/// Read a tag header and its content octets.
pub fn read_tagged<'a>(r: &mut Reader<'a>) -> Result<(Tag, &'a [u8]), DecodeError> {
    let at = r.position();
    let tag = read_tag(r)?;
    let content = r.take_content(tag.content_len(), at)?;
    Ok((tag, content))
}

#[cfg(feature = "alloc")]
fn write_header(out: &mut Vec<u8>, number: u8, context: bool, lvt: u8) {
    let cls = if context { 0x08 } else { 0x00 };
    if number < 15 {
        out.push((number << 4) | cls | lvt);
    } else {
        out.push(0xF0 | cls | lvt);
        out.push(number);
    }
}

/// Encode a primitive tag header for `len` content octets into a fixed
/// buffer; returns the buffer and how many of its octets are used.
pub fn encode_header(number: u8, class: TagClass, len: usize) -> ([u8; 7], usize) {
    debug_assert!(number != 255, "tag number 255 is reserved");
    let mut h = [0u8; 7];
    let cls = if class == TagClass::Context { 0x08 } else { 0x00 };
    let lvt = if len <= 4 { len as u8 } else { 5 };
    let mut n = if number < 15 {
        h[0] = (number << 4) | cls | lvt;
        1
    } else {
        h[0] = 0xF0 | cls | lvt;
        h[1] = number;
        2
    };
    match len {
        0..=4 => {}
        5..=253 => {
            h[n] = len as u8;
            n += 1;
        }
        254..=65535 => {
            h[n] = 254;
            h[n + 1..n + 3].copy_from_slice(&(len as u16).to_be_bytes());
            n += 3;
        }
        _ => {
            h[n] = 255;
            h[n + 1..n + 5].copy_from_slice(&(len as u32).to_be_bytes());
            n += 5;
        }
    }
    (h, n)
}

/// Write a primitive tag header for `len` content octets.
///
/// `number` must be below 255 (255 is reserved); callers in this crate only
/// pass tag numbers from the standard's productions.
#[cfg(feature = "alloc")]
pub fn write_tag(out: &mut Vec<u8>, number: u8, class: TagClass, len: usize) {
    let (h, n) = encode_header(number, class, len);
    out.extend_from_slice(&h[..n]);
}

/// Write an opening tag for context `number`.
#[cfg(feature = "alloc")]
pub fn write_opening(out: &mut Vec<u8>, number: u8) {
    write_header(out, number, true, 6);
}

/// Write a closing tag for context `number`.
#[cfg(feature = "alloc")]
pub fn write_closing(out: &mut Vec<u8>, number: u8) {
    write_header(out, number, true, 7);
}

/// Octets a primitive tag header for `len` content octets takes.
pub fn tag_header_len(number: u8, len: usize) -> usize {
    let base = if number < 15 { 1 } else { 2 };
    base + match len {
        0..=4 => 0,
        5..=253 => 1,
        254..=65535 => 3,
        _ => 5,
    }
}
