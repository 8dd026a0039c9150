//! Typed readers and writers for the fields of a production: application
//! tagged values, context tagged values, and opening/closing tag pairs.
//!
//! Service codecs are written in terms of these so every one of them reports
//! errors the same way: a wrong tag is `InvalidTag`, a wrong application type
//! is `WrongDataType`, a missing field is `Truncated`.

use super::Reader;
use super::primitive::Primitive;
use super::tag::{self, Tag, TagClass, TagKind, app};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// Bound on the nesting depth of constructed data this crate decodes.
pub const MAX_NESTING_DEPTH: usize = 32;

fn write_with_header(out: &mut Vec<u8>, number: u8, class: TagClass, content: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    content(out);
    let (header, n) = tag::encode_header(number, class, out.len() - start);
    out.splice(start..start, header[..n].iter().copied());
}

/// Write `v` with its application tag.
pub fn write_app<T: Primitive>(out: &mut Vec<u8>, v: &T) {
    if T::APP_TAG == app::BOOLEAN {
        // The value lives in the LVT field: encode to learn it.
        let mut tmp = Vec::with_capacity(1);
        v.encode_content(&mut tmp);
        out.push((app::BOOLEAN << 4) | (tmp[0] & 1));
        return;
    }
    write_with_header(out, T::APP_TAG, TagClass::Application, |o| v.encode_content(o));
}

/// Write `v` with context tag `n`.
pub fn write_ctx<T: Primitive>(out: &mut Vec<u8>, n: u8, v: &T) {
    write_with_header(out, n, TagClass::Context, |o| v.encode_content(o));
}

/// Write `v` with context tag `n` when it is `Some`.
pub fn write_opt_ctx<T: Primitive>(out: &mut Vec<u8>, n: u8, v: &Option<T>) {
    if let Some(v) = v {
        write_ctx(out, n, v);
    }
}

/// Write an opening tag `n`, the output of `body`, and a closing tag `n`.
pub fn write_constructed(out: &mut Vec<u8>, n: u8, body: impl FnOnce(&mut Vec<u8>)) {
    tag::write_opening(out, n);
    body(out);
    tag::write_closing(out, n);
}

/// Read an application-tagged `T`.
pub fn read_app<T: Primitive>(r: &mut Reader<'_>, what: &'static str) -> Result<T, DecodeError> {
    let at = r.position();
    let tag = tag::read_tag(r).map_err(|e| missing_as(e, what))?;
    app_from_tag(r, tag, at, what)
}

fn app_from_tag<T: Primitive>(r: &mut Reader<'_>, tag: Tag, at: usize, what: &'static str) -> Result<T, DecodeError> {
    if tag.class != TagClass::Application {
        return Err(DecodeError::InvalidTag { at, what });
    }
    let TagKind::Primitive(len) = tag.kind else {
        return Err(DecodeError::InvalidTag { at, what });
    };
    if tag.number != T::APP_TAG {
        return Err(DecodeError::WrongDataType { at, what: T::NAME });
    }
    if tag.number == app::BOOLEAN {
        let v = u8::try_from(len).map_err(|_| DecodeError::OutOfRange { at, what: "a Boolean (0 or 1)" })?;
        return T::decode_content(&[v], at);
    }
    let content_at = r.position();
    let content = r.take_content(tag.content_len(), at)?;
    T::decode_content(content, content_at)
}

/// Read a context-tagged primitive `T` with tag number `n`.
pub fn read_ctx<T: Primitive>(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<T, DecodeError> {
    let at = r.position();
    let tag = tag::read_tag(r).map_err(|e| missing_as(e, what))?;
    if tag.class != TagClass::Context || tag.number != n || !matches!(tag.kind, TagKind::Primitive(_)) {
        return Err(DecodeError::InvalidTag { at, what });
    }
    let content_at = r.position();
    let content = r.take_content(tag.content_len(), at)?;
    T::decode_content(content, content_at)
}

/// Read a context-tagged primitive `T` with tag number `n` if it is next.
pub fn read_opt_ctx<T: Primitive>(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<Option<T>, DecodeError> {
    if next_is_primitive_ctx(r, n) { read_ctx(r, n, what).map(Some) } else { Ok(None) }
}

/// True when the next tag is a primitive context tag `n`.
pub fn next_is_primitive_ctx(r: &Reader<'_>, n: u8) -> bool {
    matches!(tag::peek_tag(r), Some(Ok(t)) if t.is_context(n) && matches!(t.kind, TagKind::Primitive(_)))
}

/// True when the next tag is the opening tag `n`.
pub fn next_is_opening(r: &Reader<'_>, n: u8) -> bool {
    matches!(tag::peek_tag(r), Some(Ok(t)) if t.is_opening(n))
}

/// True when the next tag is the closing tag `n`.
pub fn next_is_closing(r: &Reader<'_>, n: u8) -> bool {
    matches!(tag::peek_tag(r), Some(Ok(t)) if t.is_closing(n))
}

/// True when the next tag is an application tag (any type).
pub fn next_is_application(r: &Reader<'_>) -> bool {
    matches!(tag::peek_tag(r), Some(Ok(t)) if t.class == TagClass::Application)
}

/// Consume the opening tag `n`.
pub fn expect_opening(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<(), DecodeError> {
    let at = r.position();
    let tag = tag::read_tag(r).map_err(|e| missing_as(e, what))?;
    if tag.is_opening(n) { Ok(()) } else { Err(DecodeError::InvalidTag { at, what }) }
}

/// Consume the closing tag `n`.
pub fn expect_closing(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<(), DecodeError> {
    let at = r.position();
    let tag = tag::read_tag(r).map_err(|e| missing_as(e, what))?;
    if tag.is_closing(n) { Ok(()) } else { Err(DecodeError::InvalidTag { at, what }) }
}

/// Consume an opening tag `n`, everything up to its matching closing tag, and
/// the closing tag; return the octets in between. Nesting is bounded by
/// [`MAX_NESTING_DEPTH`].
pub fn read_constructed<'a>(r: &mut Reader<'a>, n: u8, what: &'static str) -> Result<&'a [u8], DecodeError> {
    expect_opening(r, n, what)?;
    let start = r.position();
    // Open inner tags, innermost last, so every closing tag must match.
    let mut open = [0u8; MAX_NESTING_DEPTH];
    let mut depth = 0usize;
    loop {
        let at = r.position();
        let tag = tag::read_tag(r).map_err(|e| match e {
            DecodeError::Truncated { at, .. } => DecodeError::InvalidTag { at, what: "a closing tag" },
            other => other,
        })?;
        match tag.kind {
            TagKind::Opening => {
                if depth == MAX_NESTING_DEPTH {
                    return Err(DecodeError::LimitExceeded { at, what: "constructed nesting depth" });
                }
                open[depth] = tag.number;
                depth += 1;
            }
            TagKind::Closing if depth == 0 => {
                if tag.number != n {
                    return Err(DecodeError::InvalidTag { at, what: "the matching closing tag" });
                }
                return Ok(&r.buffer()[start..at]);
            }
            TagKind::Closing => {
                depth -= 1;
                if open[depth] != tag.number {
                    return Err(DecodeError::InvalidTag { at, what: "the matching closing tag" });
                }
            }
            TagKind::Primitive(_) => {
                r.take(tag.content_len(), "tag content")
                    .map_err(|_| DecodeError::InvalidTag { at, what: "a tag whose length fits the data" })?;
            }
        }
    }
}

/// A tag header cut off where a required field starts is a missing parameter;
/// keep the field's name in the error.
fn missing_as(e: DecodeError, what: &'static str) -> DecodeError {
    match e {
        DecodeError::Truncated { at, .. } => DecodeError::Truncated { at, what },
        other => other,
    }
}
