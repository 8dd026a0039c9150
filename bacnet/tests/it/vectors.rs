//! Golden frames captured from real BACnet/IP peers, loaded from
//! `vectors/captured.txt`.
//!
//! The file is written by `host/tests/peers/capture_client.py`: a bacpypes3
//! client talking to bacpypes3 and rusty-bacnet servers on loopback while
//! tshark captures, each UDP payload (a whole BVLL datagram) written as one
//! block of `key: value` lines, blocks separated by blank lines:
//!
//! ```text
//! name: bacpypes3-client-readproperty-av1-pv-to-rusty
//! source: bacpypes3 0.0.110 client -> rusty-bacnet 0.14.0 server, loopback capture …, tshark 4.0.17 'bvlc' dissector
//! tshark: Confirmed-REQ readProperty[ 3] analog-value,1 present-value
//! hex: 810a0011…
//! ```
//!
//! An optional `layer:` line names the layer the hex starts at when it is
//! not a BVLL datagram (`npdu`, `apdu`); it defaults to `bvll`. Lines
//! starting with `#` are comments.

#![allow(dead_code)]

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Unique name: sender, exchange and APDU kind.
    pub name: &'static str,
    /// Who sent it to whom, and how it was captured.
    pub source: &'static str,
    /// tshark's one-line summary of the frame.
    pub tshark: &'static str,
    /// The layer `bytes` starts at: `bvll`, `npdu` or `apdu`.
    pub layer: &'static str,
    /// The frame's octets.
    pub bytes: Vec<u8>,
}

/// Every frame in `vectors/captured.txt`.
pub fn captured() -> Vec<Frame> {
    parse(include_str!("vectors/captured.txt"))
}

/// Every example in `vectors/standard.txt`: ASHRAE 135 encoding examples,
/// each checked with tshark, in the same block format.
pub fn standard() -> Vec<Frame> {
    parse(include_str!("vectors/standard.txt"))
}

/// Parse blocks of `key: value` lines. Panics, naming the line, on anything
/// malformed: a corrupt vector file must fail the tests, not shrink them.
pub fn parse(text: &'static str) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut block: Vec<(usize, &'static str)> = Vec::new();
    for (i, line) in text.lines().enumerate().chain([(usize::MAX, "")]) {
        let line = line.trim_end();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if !block.is_empty() {
                frames.push(parse_block(&block));
                block.clear();
            }
            continue;
        }
        block.push((i + 1, line));
    }
    let mut names: Vec<&str> = frames.iter().map(|f: &Frame| f.name).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        panic!("captured vectors: duplicate name {}", w[0]);
    }
    frames
}

fn parse_block(lines: &[(usize, &'static str)]) -> Frame {
    let first = lines[0].0;
    let (mut name, mut source, mut tshark, mut layer, mut bytes) = (None, None, "", "bvll", None);
    for &(n, line) in lines {
        let (key, value) =
            line.split_once(':').unwrap_or_else(|| panic!("captured vectors line {n}: expected `key: value`"));
        let value = value.trim();
        match key.trim() {
            "name" => name = Some(value),
            "source" => source = Some(value),
            "tshark" => tshark = value,
            "layer" => layer = value,
            "hex" => bytes = Some(hex(value)),
            other => panic!("captured vectors line {n}: unknown key `{other}`"),
        }
    }
    assert!(matches!(layer, "bvll" | "npdu" | "apdu"), "captured vectors block at line {first}: layer `{layer}`");
    Frame {
        name: name.unwrap_or_else(|| panic!("captured vectors block at line {first}: no name")),
        source: source.unwrap_or_else(|| panic!("captured vectors block at line {first}: no source")),
        tshark,
        layer,
        bytes: bytes.unwrap_or_else(|| panic!("captured vectors block at line {first}: no hex")),
    }
}

/// Octets from hex digits; whitespace and `:` between octets are ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b':').collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits in {s:?}");
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(core::str::from_utf8(p).unwrap(), 16).unwrap_or_else(|_| panic!("bad hex {s:?}")))
        .collect()
}

#[test]
fn blocks_parse_with_optional_layer_and_comments() {
    let text = "# comment\n\nname: a\nsource: s\ntshark: Who-Is\nhex: 81 0b:00 0c\n\n\nname: b\nsource: t\nlayer: npdu\nhex: 0100\n";
    let frames = parse(text);
    assert_eq!(frames.len(), 2);
    assert_eq!((frames[0].name, frames[0].layer, &frames[0].bytes[..]), ("a", "bvll", &[0x81, 0x0B, 0x00, 0x0C][..]));
    assert_eq!((frames[1].name, frames[1].tshark, frames[1].layer), ("b", "", "npdu"));
}

#[test]
#[should_panic(expected = "duplicate name")]
fn duplicate_names_are_refused() {
    parse("name: a\nsource: s\nhex: 00\n\nname: a\nsource: s\nhex: 00\n");
}
