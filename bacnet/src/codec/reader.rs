//! A bounds-checked cursor over untrusted octets.
//!
//! Every read is checked; nothing here panics. Offsets in errors are absolute
//! within the buffer the `Reader` was created over, so nested decoders report
//! positions an operator can find in a capture.

use crate::error::DecodeError;

/// A cursor over a borrowed buffer.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Current offset from the start of the buffer.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Octets not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every octet has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The unconsumed octets, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// The whole underlying buffer.
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// The next octet, without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consume one octet; `what` names it in the error if the data has ended.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let b = self.peek().ok_or(DecodeError::Truncated { at: self.pos, what })?;
        self.pos += 1;
        Ok(b)
    }

    /// Consume a big-endian u16.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Consume exactly `n` octets.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated { at: self.buf.len(), what });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Consume the `n` content octets a tag header at `_tag_at` announced.
    ///
    /// Content cut off by the end of the data is `Truncated`
    /// (missing-required-parameter), the answer rusty-bacnet gives to the
    /// same truncated request in our captures
    /// (`rusty-server-readproperty-truncated-reject`); a header that is
    /// itself malformed is `InvalidTag`.
    pub fn take_content(&mut self, n: usize, _tag_at: usize) -> Result<&'a [u8], DecodeError> {
        self.take(n, "tag content")
    }

    /// Consume everything that is left.
    pub fn take_rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    /// Fail with `TrailingData` unless every octet has been consumed.
    pub fn expect_end(&self) -> Result<(), DecodeError> {
        if self.is_empty() { Ok(()) } else { Err(DecodeError::TrailingData { at: self.pos }) }
    }
}
