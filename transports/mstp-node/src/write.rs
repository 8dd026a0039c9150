//! Encoding into a fixed buffer (Clause 20.2): the handful of application
//! and context tags the node's answers need. Tag headers are the core's
//! (`bacnet::codec::tag::encode_header`). A write past the end sets
//! [`Writer::overflowed`] instead of panicking; the server then answers
//! with an Abort.

use bacnet::codec::tag::{TagClass, app, encode_header};

/// A cursor over an output buffer.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflowed: bool,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, len: 0, overflowed: false }
    }

    /// Octets written.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Something did not fit.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Forget everything after the first `len` octets.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
        self.overflowed = false;
    }

    pub(crate) fn octets(&mut self, octets: &[u8]) {
        match self.buf.get_mut(self.len..self.len + octets.len()) {
            Some(out) => {
                out.copy_from_slice(octets);
                self.len += octets.len();
            }
            None => self.overflowed = true,
        }
    }

    pub(crate) fn octet(&mut self, octet: u8) {
        self.octets(&[octet]);
    }

    fn header(&mut self, number: u8, class: TagClass, len: usize) {
        let (header, n) = encode_header(number, class, len);
        self.octets(&header[..n]);
    }

    fn unsigned_content(&mut self, number: u8, class: TagClass, v: u32) {
        let octets = v.to_be_bytes();
        let skip = (v.leading_zeros() / 8).min(3) as usize;
        self.header(number, class, 4 - skip);
        self.octets(&octets[skip..]);
    }

    pub(crate) fn app_boolean(&mut self, v: bool) {
        self.octet(0x10 | u8::from(v));
    }

    pub(crate) fn app_unsigned(&mut self, v: u32) {
        self.unsigned_content(app::UNSIGNED, TagClass::Application, v);
    }

    pub(crate) fn app_enumerated(&mut self, v: u32) {
        self.unsigned_content(app::ENUMERATED, TagClass::Application, v);
    }

    pub(crate) fn app_real(&mut self, v: f32) {
        self.header(app::REAL, TagClass::Application, 4);
        self.octets(&v.to_be_bytes());
    }

    pub(crate) fn app_object_id(&mut self, id: u32) {
        self.header(app::OBJECT_IDENTIFIER, TagClass::Application, 4);
        self.octets(&id.to_be_bytes());
    }

    /// A CharacterString in ISO 10646 UTF-8 (character set 0).
    pub(crate) fn app_character_string(&mut self, s: &str) {
        self.header(app::CHARACTER_STRING, TagClass::Application, s.len() + 1);
        self.octet(0);
        self.octets(s.as_bytes());
    }

    /// A BitString of `bits` bits, the first `set.len()` octets from `set`
    /// (bit 0 is the first octet's most significant bit), the rest clear.
    pub(crate) fn app_bit_string(&mut self, bits: usize, set: &[u8]) {
        let octets = bits.div_ceil(8);
        self.header(app::BIT_STRING, TagClass::Application, octets + 1);
        self.octet((octets * 8 - bits) as u8);
        for i in 0..octets {
            self.octet(set.get(i).copied().unwrap_or(0));
        }
    }

    pub(crate) fn ctx_unsigned(&mut self, number: u8, v: u32) {
        self.unsigned_content(number, TagClass::Context, v);
    }

    pub(crate) fn ctx_object_id(&mut self, number: u8, id: u32) {
        self.header(number, TagClass::Context, 4);
        self.octets(&id.to_be_bytes());
    }

    pub(crate) fn opening(&mut self, number: u8) {
        self.octet((number << 4) | 0x0E);
    }

    pub(crate) fn closing(&mut self, number: u8) {
        self.octet((number << 4) | 0x0F);
    }
}
