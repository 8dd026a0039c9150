//! Contents of the primitive datatypes (Clause 20.2.2 – 20.2.14) and the
//! [`Primitive`] trait that ties each Rust type to its application tag.
//!
//! Content decoders see only the content octets of one tag; a content of the
//! wrong size for its type is a malformed tag (`InvalidTag`), a value too wide
//! for its Rust type is `OutOfRange`.

use crate::enums::{
    AcknowledgmentFilter, BinaryPV, DeviceStatus, EnableDisable, EngineeringUnits, ErrorClass, ErrorCode, EventState,
    EventStateFilter, EventType, NotifyType, ObjectType, Polarity, PropertyIdentifier, ReinitializedState, Reliability,
    Segmentation,
};
use crate::error::{DecodeError, EncodeError};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::tag::app;

/// A Rust type that is one BACnet primitive datatype.
pub trait Primitive: Sized {
    /// The application tag number of the datatype.
    const APP_TAG: u8;
    /// Name of the datatype for error messages.
    const NAME: &'static str;
    /// Decode from content octets; `at` is the content's offset for errors.
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError>;
    /// Append the content octets.
    fn encode_content(&self, out: &mut Vec<u8>);
}

fn bad_len(at: usize, what: &'static str) -> DecodeError {
    DecodeError::InvalidTag { at, what }
}

/// Decode a big-endian unsigned of 1..=8 octets.
pub(crate) fn decode_unsigned(content: &[u8], at: usize) -> Result<u64, DecodeError> {
    match content.len() {
        0 => Err(bad_len(at, "an Unsigned of 1 to 8 octets")),
        1..=8 => Ok(content.iter().fold(0u64, |acc, b| (acc << 8) | *b as u64)),
        _ => Err(DecodeError::OutOfRange { at, what: "an Unsigned wider than 64 bits" }),
    }
}

/// Append the shortest big-endian encoding of `v` (at least one octet).
pub(crate) fn encode_unsigned(v: u64, out: &mut Vec<u8>) {
    let n = unsigned_len(v);
    out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
}

/// Octets [`encode_unsigned`] writes for `v`.
pub(crate) fn unsigned_len(v: u64) -> usize {
    (8 - (v.leading_zeros() as usize / 8)).max(1)
}

impl Primitive for () {
    const APP_TAG: u8 = app::NULL;
    const NAME: &'static str = "a Null";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        if content.is_empty() { Ok(()) } else { Err(bad_len(at, "a Null with no content")) }
    }
    fn encode_content(&self, _: &mut Vec<u8>) {}
}

/// Booleans: as a context tag the value is one content octet; as an
/// application tag it lives in the LVT field (see `codec::field`).
impl Primitive for bool {
    const APP_TAG: u8 = app::BOOLEAN;
    const NAME: &'static str = "a Boolean";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        match content {
            [0] => Ok(false),
            [1] => Ok(true),
            [_] => Err(DecodeError::OutOfRange { at, what: "a Boolean (0 or 1)" }),
            _ => Err(bad_len(at, "a Boolean of one octet")),
        }
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
}

impl Primitive for u64 {
    const APP_TAG: u8 = app::UNSIGNED;
    const NAME: &'static str = "an Unsigned";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        decode_unsigned(content, at)
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        encode_unsigned(*self, out)
    }
}

macro_rules! narrow_unsigned {
    ($($t:ty => $what:literal),*) => {$(
        impl Primitive for $t {
            const APP_TAG: u8 = app::UNSIGNED;
            const NAME: &'static str = "an Unsigned";
            fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
                let v = decode_unsigned(content, at)?;
                <$t>::try_from(v).map_err(|_| DecodeError::OutOfRange { at, what: $what })
            }
            fn encode_content(&self, out: &mut Vec<u8>) {
                encode_unsigned(*self as u64, out)
            }
        }
    )*};
}
narrow_unsigned!(u32 => "an Unsigned32", u16 => "an Unsigned16", u8 => "an Unsigned8");

impl Primitive for i64 {
    const APP_TAG: u8 = app::SIGNED;
    const NAME: &'static str = "a Signed";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        match content.len() {
            0 => Err(bad_len(at, "a Signed of 1 to 8 octets")),
            1..=8 => {
                let init: i64 = if content[0] & 0x80 != 0 { -1 } else { 0 };
                Ok(content.iter().fold(init, |acc, b| (acc << 8) | *b as i64))
            }
            _ => Err(DecodeError::OutOfRange { at, what: "a Signed wider than 64 bits" }),
        }
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        let v = *self;
        let bytes = v.to_be_bytes();
        // Shortest two's-complement form: drop leading octets that only repeat the sign.
        let mut start = 0;
        while start < 7 {
            let (b, next) = (bytes[start], bytes[start + 1]);
            if (b == 0x00 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0) {
                start += 1;
            } else {
                break;
            }
        }
        out.extend_from_slice(&bytes[start..]);
    }
}

impl Primitive for i32 {
    const APP_TAG: u8 = app::SIGNED;
    const NAME: &'static str = "a Signed";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let v = i64::decode_content(content, at)?;
        i32::try_from(v).map_err(|_| DecodeError::OutOfRange { at, what: "a Signed32" })
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        (*self as i64).encode_content(out)
    }
}

impl Primitive for f32 {
    const APP_TAG: u8 = app::REAL;
    const NAME: &'static str = "a Real";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let b: [u8; 4] = content.try_into().map_err(|_| bad_len(at, "a Real of 4 octets"))?;
        Ok(f32::from_be_bytes(b))
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes())
    }
}

impl Primitive for f64 {
    const APP_TAG: u8 = app::DOUBLE;
    const NAME: &'static str = "a Double";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let b: [u8; 8] = content.try_into().map_err(|_| bad_len(at, "a Double of 8 octets"))?;
        Ok(f64::from_be_bytes(b))
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes())
    }
}

/// Octet strings are plain byte vectors.
impl Primitive for Vec<u8> {
    const APP_TAG: u8 = app::OCTET_STRING;
    const NAME: &'static str = "an OctetString";
    fn decode_content(content: &[u8], _: usize) -> Result<Self, DecodeError> {
        Ok(content.to_vec())
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self)
    }
}

crate::enums::macros::bacnet_enum! {
    /// The character-set octet of a CharacterString (Clause 20.2.9).
    pub struct CharacterSet(u8) {
        /// ISO 10646 (UTF-8); ANSI X3.4 before 135-2008.
        UTF_8 = 0 => "utf-8",
        /// IBM/Microsoft DBCS; a two-octet code page follows the set octet.
        IBM_MICROSOFT_DBCS = 1 => "ibm-microsoft-dbcs",
        /// JIS X 0208.
        JIS_X_0208 = 2 => "jis-x-0208",
        /// ISO 10646 UCS-4 (big-endian).
        ISO_10646_UCS_4 = 3 => "iso-10646-ucs-4",
        /// ISO 10646 UCS-2 (big-endian).
        ISO_10646_UCS_2 = 4 => "iso-10646-ucs-2",
        /// ISO 8859-1 (Latin-1).
        ISO_8859_1 = 5 => "iso-8859-1",
    }
}

/// A CharacterString as it travels: its set, and its octets untouched, so a
/// string in any set (even one this crate cannot convert) round-trips.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CharacterString {
    /// The character set octet.
    pub charset: CharacterSet,
    /// The DBCS code page (only meaningful for `IBM_MICROSOFT_DBCS`).
    pub code_page: u16,
    /// The encoded characters, without the set octet (and code page).
    pub bytes: Vec<u8>,
}

/// Why a CharacterString could not be converted to or from Rust text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharsetError {
    /// A character set number the standard does not define.
    UnsupportedCharacterSet(u8),
    /// A DBCS code page this crate has no table for (932, 936, 949 and 950 are supported).
    UnsupportedCodePage(u16),
    /// Octets that are not valid in the named set.
    InvalidEncoding(CharacterSet),
    /// A character the target set cannot represent.
    Unrepresentable(CharacterSet),
}

impl fmt::Display for CharsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CharsetError::UnsupportedCharacterSet(n) => write!(f, "unsupported character set {n}"),
            CharsetError::UnsupportedCodePage(n) => {
                write!(f, "unsupported DBCS code page {n} (supported: 932, 936, 949, 950)")
            }
            CharsetError::InvalidEncoding(cs) => write!(f, "octets not valid in character set {cs}"),
            CharsetError::Unrepresentable(cs) => write!(f, "text not representable in character set {cs}"),
        }
    }
}

impl core::error::Error for CharsetError {}

fn dbcs_encoding(code_page: u16) -> Result<&'static encoding_rs::Encoding, CharsetError> {
    match code_page {
        932 => Ok(encoding_rs::SHIFT_JIS),
        936 => Ok(encoding_rs::GBK),
        949 => Ok(encoding_rs::EUC_KR),
        950 => Ok(encoding_rs::BIG5),
        other => Err(CharsetError::UnsupportedCodePage(other)),
    }
}

impl CharacterString {
    /// The character set, the DBCS code page (0 for other sets) and the
    /// string's octets of a CharacterString's content octets, checked as
    /// decoding checks them.
    pub fn parts(content: &[u8], at: usize) -> Result<(CharacterSet, u16, &[u8]), DecodeError> {
        let (&set, rest) = content.split_first().ok_or(bad_len(at, "a CharacterString with a set octet"))?;
        let charset = CharacterSet(set);
        if charset == CharacterSet::IBM_MICROSOFT_DBCS {
            if rest.len() < 2 {
                return Err(bad_len(at, "a DBCS CharacterString with a code page"));
            }
            return Ok((charset, u16::from_be_bytes([rest[0], rest[1]]), &rest[2..]));
        }
        Ok((charset, 0, rest))
    }

    /// A UTF-8 string, the set every current device should accept.
    pub fn utf8(s: &str) -> Self {
        CharacterString { charset: CharacterSet::UTF_8, code_page: 0, bytes: s.as_bytes().to_vec() }
    }

    /// Encode `s` in `charset` (with `code_page` for DBCS).
    pub fn encode(charset: CharacterSet, code_page: u16, s: &str) -> Result<Self, CharsetError> {
        let bytes = match charset {
            CharacterSet::UTF_8 => s.as_bytes().to_vec(),
            CharacterSet::ISO_8859_1 => s
                .chars()
                .map(|c| u8::try_from(c as u32).map_err(|_| CharsetError::Unrepresentable(charset)))
                .collect::<Result<_, _>>()?,
            CharacterSet::ISO_10646_UCS_2 => {
                let mut v = Vec::with_capacity(s.len() * 2);
                for c in s.chars() {
                    let u = u16::try_from(c as u32).map_err(|_| CharsetError::Unrepresentable(charset))?;
                    v.extend_from_slice(&u.to_be_bytes());
                }
                v
            }
            CharacterSet::ISO_10646_UCS_4 => s.chars().flat_map(|c| (c as u32).to_be_bytes()).collect(),
            CharacterSet::IBM_MICROSOFT_DBCS => {
                let (out, _, errors) = dbcs_encoding(code_page)?.encode(s);
                if errors {
                    return Err(CharsetError::Unrepresentable(charset));
                }
                out.into_owned()
            }
            CharacterSet::JIS_X_0208 => {
                let (out, _, errors) = encoding_rs::EUC_JP.encode(s);
                if errors || out.iter().any(|b| *b < 0xA1 || *b == 0xFF) {
                    return Err(CharsetError::Unrepresentable(charset));
                }
                out.iter().map(|b| b & 0x7F).collect()
            }
            other => return Err(CharsetError::UnsupportedCharacterSet(other.0)),
        };
        Ok(CharacterString { charset, code_page, bytes })
    }

    /// Convert to Rust text. Every set the standard names is supported (DBCS
    /// for code pages 932, 936, 949 and 950); anything else is a clear error.
    pub fn to_text(&self) -> Result<String, CharsetError> {
        let cs = self.charset;
        match cs {
            CharacterSet::UTF_8 => {
                core::str::from_utf8(&self.bytes).map(String::from).map_err(|_| CharsetError::InvalidEncoding(cs))
            }
            CharacterSet::ISO_8859_1 => Ok(self.bytes.iter().map(|b| *b as char).collect()),
            CharacterSet::ISO_10646_UCS_2 => {
                if !self.bytes.len().is_multiple_of(2) {
                    return Err(CharsetError::InvalidEncoding(cs));
                }
                let units = self.bytes.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
                char::decode_utf16(units).collect::<Result<String, _>>().map_err(|_| CharsetError::InvalidEncoding(cs))
            }
            CharacterSet::ISO_10646_UCS_4 => {
                if !self.bytes.len().is_multiple_of(4) {
                    return Err(CharsetError::InvalidEncoding(cs));
                }
                self.bytes
                    .chunks_exact(4)
                    .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                    .collect::<Option<String>>()
                    .ok_or(CharsetError::InvalidEncoding(cs))
            }
            CharacterSet::IBM_MICROSOFT_DBCS => dbcs_encoding(self.code_page)?
                .decode_without_bom_handling_and_without_replacement(&self.bytes)
                .map(|c| c.into_owned())
                .ok_or(CharsetError::InvalidEncoding(cs)),
            CharacterSet::JIS_X_0208 => {
                // JIS X 0208 row/cell octets are EUC-JP's with the high bit cleared.
                if !self.bytes.len().is_multiple_of(2) || self.bytes.iter().any(|b| !(0x21..=0x7E).contains(b)) {
                    return Err(CharsetError::InvalidEncoding(cs));
                }
                let euc: Vec<u8> = self.bytes.iter().map(|b| b | 0x80).collect();
                encoding_rs::EUC_JP
                    .decode_without_bom_handling_and_without_replacement(&euc)
                    .map(|c| c.into_owned())
                    .ok_or(CharsetError::InvalidEncoding(cs))
            }
            other => Err(CharsetError::UnsupportedCharacterSet(other.0)),
        }
    }
}

impl fmt::Display for CharacterString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_text() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<{} octets: {e}>", self.bytes.len()),
        }
    }
}

impl Primitive for CharacterString {
    const APP_TAG: u8 = app::CHARACTER_STRING;
    const NAME: &'static str = "a CharacterString";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let (charset, code_page, bytes) = CharacterString::parts(content, at)?;
        Ok(CharacterString { charset, code_page, bytes: bytes.to_vec() })
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.push(self.charset.0);
        if self.charset == CharacterSet::IBM_MICROSOFT_DBCS {
            out.extend_from_slice(&self.code_page.to_be_bytes());
        }
        out.extend_from_slice(&self.bytes);
    }
}

/// A BitString (Clause 20.2.10): bit 0 is the most significant bit of the
/// first octet. Unused trailing bits are kept as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BitString {
    unused: u8,
    bytes: Vec<u8>,
}

impl BitString {
    /// The unused-bits count and the octets of a BitString's content
    /// octets, checked as decoding checks them.
    pub fn parts(content: &[u8], at: usize) -> Result<(u8, &[u8]), DecodeError> {
        let (&unused, rest) = content.split_first().ok_or(bad_len(at, "a BitString with an unused-bits octet"))?;
        if unused > 7 || (rest.is_empty() && unused != 0) {
            return Err(DecodeError::OutOfRange { at, what: "BitString unused-bits count" });
        }
        Ok((unused, rest))
    }

    /// A bit string of `len` bits, all clear.
    pub fn with_len(len: usize) -> Self {
        let nbytes = len.div_ceil(8);
        BitString { unused: (nbytes * 8 - len) as u8, bytes: alloc::vec![0; nbytes] }
    }

    /// A bit string from booleans, bit 0 first.
    pub fn from_bits(bits: &[bool]) -> Self {
        let mut b = Self::with_len(bits.len());
        for (i, v) in bits.iter().enumerate() {
            b.set(i, *v);
        }
        b
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.bytes.len() * 8 - self.unused as usize
    }

    /// True when the string has no bits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bit `i`, or `false` beyond the end.
    pub fn get(&self, i: usize) -> bool {
        i < self.len() && self.bytes[i / 8] & (0x80 >> (i % 8)) != 0
    }

    /// Set bit `i`, growing the string if needed.
    pub fn set(&mut self, i: usize, v: bool) {
        if i >= self.len() {
            let len = i + 1;
            self.bytes.resize(len.div_ceil(8), 0);
            self.unused = (self.bytes.len() * 8 - len) as u8;
        }
        if v {
            self.bytes[i / 8] |= 0x80 >> (i % 8);
        } else {
            self.bytes[i / 8] &= !(0x80 >> (i % 8));
        }
    }

    /// The bits, bit 0 first.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl Primitive for BitString {
    const APP_TAG: u8 = app::BIT_STRING;
    const NAME: &'static str = "a BitString";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let (unused, bytes) = BitString::parts(content, at)?;
        Ok(BitString { unused, bytes: bytes.to_vec() })
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.push(self.unused);
        out.extend_from_slice(&self.bytes);
    }
}

/// A raw Enumerated value, for enumerations this crate has no type for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Enumerated(pub u32);

macro_rules! enumerated {
    ($($t:ty),*) => {$(
        impl Primitive for $t {
            const APP_TAG: u8 = app::ENUMERATED;
            const NAME: &'static str = "an Enumerated";
            fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
                let v = decode_unsigned(content, at)?;
                u32::try_from(v).map(Self::from).map_err(|_| DecodeError::OutOfRange { at, what: "an Enumerated wider than 32 bits" })
            }
            fn encode_content(&self, out: &mut Vec<u8>) {
                encode_unsigned(u32::from(*self) as u64, out)
            }
        }
    )*};
}

impl From<u32> for Enumerated {
    fn from(v: u32) -> Self {
        Enumerated(v)
    }
}
impl From<Enumerated> for u32 {
    fn from(v: Enumerated) -> u32 {
        v.0
    }
}

enumerated!(
    Enumerated,
    ObjectType,
    PropertyIdentifier,
    ErrorClass,
    ErrorCode,
    Segmentation,
    EngineeringUnits,
    ReinitializedState,
    EnableDisable,
    BinaryPV,
    EventState,
    EventType,
    NotifyType,
    AcknowledgmentFilter,
    EventStateFilter,
    Reliability,
    DeviceStatus,
    Polarity
);

/// A Date (Clause 20.2.12). Each field may be 255 ("unspecified"); month 13/14
/// mean odd/even months, day 32/33/34 mean last/odd/even days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date {
    /// Year minus 1900, or 255.
    pub year: u8,
    /// 1..=12, 13 odd, 14 even, or 255.
    pub month: u8,
    /// 1..=31, 32 last, 33 odd, 34 even, or 255.
    pub day: u8,
    /// 1 (Monday)..=7, or 255.
    pub weekday: u8,
}

/// The "unspecified" value of every Date and Time field.
pub const UNSPECIFIED: u8 = 255;

impl Date {
    /// The year, or `None` when unspecified.
    pub fn year(&self) -> Option<u16> {
        (self.year != UNSPECIFIED).then_some(1900 + self.year as u16)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        match self.year() {
            Some(y) => write!(f, "{y:04}")?,
            None => f.write_str("*")?,
        }
        match self.month {
            UNSPECIFIED => f.write_str("-*")?,
            13 => f.write_str("-odd")?,
            14 => f.write_str("-even")?,
            m => write!(f, "-{m:02}")?,
        }
        match self.day {
            UNSPECIFIED => f.write_str("-*")?,
            32 => f.write_str("-last")?,
            33 => f.write_str("-odd")?,
            34 => f.write_str("-even")?,
            d => write!(f, "-{d:02}")?,
        }
        match self.weekday {
            1..=7 => write!(f, " {}", DAYS[self.weekday as usize - 1]),
            UNSPECIFIED => Ok(()),
            w => write!(f, " weekday-{w}"),
        }
    }
}

impl Primitive for Date {
    const APP_TAG: u8 = app::DATE;
    const NAME: &'static str = "a Date";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let b: [u8; 4] = content.try_into().map_err(|_| bad_len(at, "a Date of 4 octets"))?;
        Ok(Date { year: b[0], month: b[1], day: b[2], weekday: b[3] })
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.year, self.month, self.day, self.weekday])
    }
}

/// A Time (Clause 20.2.13); each field may be 255 ("unspecified").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Time {
    /// 0..=23 or 255.
    pub hour: u8,
    /// 0..=59 or 255.
    pub minute: u8,
    /// 0..=59 or 255.
    pub second: u8,
    /// 0..=99 or 255.
    pub hundredths: u8,
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = |f: &mut fmt::Formatter<'_>, v: u8| {
            if v == UNSPECIFIED { f.write_str("*") } else { write!(f, "{v:02}") }
        };
        field(f, self.hour)?;
        f.write_str(":")?;
        field(f, self.minute)?;
        f.write_str(":")?;
        field(f, self.second)?;
        f.write_str(".")?;
        field(f, self.hundredths)
    }
}

impl Primitive for Time {
    const APP_TAG: u8 = app::TIME;
    const NAME: &'static str = "a Time";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let b: [u8; 4] = content.try_into().map_err(|_| bad_len(at, "a Time of 4 octets"))?;
        Ok(Time { hour: b[0], minute: b[1], second: b[2], hundredths: b[3] })
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.hour, self.minute, self.second, self.hundredths])
    }
}

/// A `BACnetObjectIdentifier`: 10 bits of object type, 22 bits of instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectIdentifier {
    /// The object type (0..=1023).
    pub object_type: ObjectType,
    /// The instance number (0..=4,194,303; 4,194,303 is the "wildcard" instance).
    pub instance: u32,
}

impl ObjectIdentifier {
    /// The largest instance number; as a Device instance it means "this device".
    pub const MAX_INSTANCE: u32 = 0x3F_FFFF;
    /// The largest object type number.
    pub const MAX_TYPE: u32 = 0x3FF;

    /// A checked constructor.
    pub fn new(object_type: ObjectType, instance: u32) -> Result<Self, EncodeError> {
        if object_type.0 > Self::MAX_TYPE {
            return Err(EncodeError::OutOfRange("object type"));
        }
        if instance > Self::MAX_INSTANCE {
            return Err(EncodeError::OutOfRange("object instance"));
        }
        Ok(ObjectIdentifier { object_type, instance })
    }

    /// The 32-bit wire form. Out-of-range fields are masked; use [`Self::new`]
    /// to reject them up front.
    pub fn to_u32(&self) -> u32 {
        ((self.object_type.0 & Self::MAX_TYPE) << 22) | (self.instance & Self::MAX_INSTANCE)
    }

    /// From the 32-bit wire form; every value is valid.
    pub fn from_u32(v: u32) -> Self {
        ObjectIdentifier { object_type: ObjectType(v >> 22), instance: v & Self::MAX_INSTANCE }
    }
}

impl fmt::Display for ObjectIdentifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.object_type, self.instance)
    }
}

/// Why an object identifier string did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseObjectIdError;

impl fmt::Display for ParseObjectIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected an object identifier like `analog-value,1` or `analog-value:1` (type name or number, instance 0..=4194303)")
    }
}

impl core::error::Error for ParseObjectIdError {}

impl core::str::FromStr for ObjectIdentifier {
    type Err = ParseObjectIdError;
    /// Accepts `analog-value,1`, `analog-value:1`, `analogValue 1` and `2,1`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (ty, inst) = s.rsplit_once([',', ':', ' ']).ok_or(ParseObjectIdError)?;
        let object_type = ObjectType::from_name(ty.trim()).ok_or(ParseObjectIdError)?;
        let instance: u32 = inst.trim().parse().map_err(|_| ParseObjectIdError)?;
        ObjectIdentifier::new(object_type, instance).map_err(|_| ParseObjectIdError)
    }
}

impl Primitive for ObjectIdentifier {
    const APP_TAG: u8 = app::OBJECT_IDENTIFIER;
    const NAME: &'static str = "a BACnetObjectIdentifier";
    fn decode_content(content: &[u8], at: usize) -> Result<Self, DecodeError> {
        let b: [u8; 4] = content.try_into().map_err(|_| bad_len(at, "an object identifier of 4 octets"))?;
        Ok(ObjectIdentifier::from_u32(u32::from_be_bytes(b)))
    }
    fn encode_content(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_u32().to_be_bytes())
    }
}
