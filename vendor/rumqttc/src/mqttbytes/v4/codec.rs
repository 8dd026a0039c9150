use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{parse_fixed_header, Error, Packet, PacketType, Publish};

/// MQTT v4 codec
#[derive(Debug, Clone)]
pub struct Codec {
    /// Maximum packet size allowed by client
    pub max_incoming_size: usize,
    /// Maximum packet size allowed by broker
    pub max_outgoing_size: usize,
    /// Trellis patch: octets of an oversized PUBLISH still to be discarded
    /// as they arrive.
    pub discarding: usize,
}

impl Decoder for Codec {
    type Item = Packet;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if !self.discard(src) {
            return Ok(None);
        }
        match Packet::read(src, self.max_incoming_size) {
            Ok(packet) => Ok(Some(packet)),
            Err(Error::InsufficientBytes(b)) => {
                // Get more packets to construct the incomplete packet
                src.reserve(b);
                Ok(None)
            }
            // Trellis patch: upstream ends the connection here, so one
            // publisher on a subscribed topic could keep the client off its
            // broker (and every message queued behind it lost).
            Err(Error::PayloadSizeLimitExceeded(len)) => self.oversized_publish(src, len),
            Err(e) => Err(e),
        }
    }
}

impl Codec {
    /// Trellis patch: drop what is left of an oversized PUBLISH; whether
    /// it is all gone.
    fn discard(&mut self, src: &mut BytesMut) -> bool {
        let n = self.discarding.min(src.len());
        src.advance(n);
        self.discarding -= n;
        self.discarding == 0
    }

    /// Trellis patch: a packet whose remaining length `len` is over the
    /// limit. A PUBLISH is handed on with its topic, QoS and packet
    /// identifier, an empty payload and `oversized` set (so it is counted,
    /// answered where it can be, and acknowledged), once its variable
    /// header is in; its payload is discarded as it arrives, never
    /// buffered. Any other packet that large is an error, as upstream.
    fn oversized_publish(&mut self, src: &mut BytesMut, len: usize) -> Result<Option<Packet>, Error> {
        let header = parse_fixed_header(src.iter())?;
        if header.packet_type()? != PacketType::Publish {
            return Err(Error::PayloadSizeLimitExceeded(len));
        }
        let start = header.fixed_header_len;
        let Some(topic_len) = src.get(start..start + 2) else {
            src.reserve(start + 2 - src.len());
            return Ok(None);
        };
        let pkid_len = if header.byte1 & 0b0110 == 0 { 0 } else { 2 };
        let variable_header = start + 2 + usize::from(u16::from_be_bytes([topic_len[0], topic_len[1]])) + pkid_len;
        if variable_header > header.frame_length() {
            return Err(Error::MalformedPacket);
        }
        if src.len() < variable_header {
            src.reserve(variable_header - src.len());
            return Ok(None);
        }
        let mut publish = Publish::read(header, src.split_to(variable_header).freeze())?;
        let payload = header.frame_length() - variable_header;
        publish.oversized = Some(payload);
        self.discarding = payload;
        self.discard(src);
        Ok(Some(Packet::Publish(publish)))
    }
}

impl Encoder<Packet> for Codec {
    type Error = Error;

    fn encode(&mut self, item: Packet, dst: &mut BytesMut) -> Result<(), Self::Error> {
        item.write(dst, self.max_outgoing_size)?;

        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use tokio_util::codec::Encoder;

    use super::Codec;
    use crate::{mqttbytes::Error, Packet, Publish, QoS};
    use tokio_util::codec::Decoder;

    fn publish_octets(topic: &str, qos: QoS, pkid: u16, payload: usize) -> BytesMut {
        let mut publish = Publish::new(topic, qos, vec![7; payload]);
        publish.pkid = pkid;
        let mut buf = BytesMut::new();
        publish.write(&mut buf).unwrap();
        buf
    }

    /// Trellis patch: an oversized PUBLISH arriving in pieces is handed on
    /// once without its payload, and the packets after it still decode.
    #[test]
    fn an_oversized_publish_is_handed_on_without_its_payload_and_the_stream_goes_on() {
        let mut codec = Codec {
            max_incoming_size: 100,
            max_outgoing_size: 100,
            discarding: 0,
        };
        let mut wire = publish_octets("big/set", QoS::AtLeastOnce, 9, 5000);
        wire.extend_from_slice(&publish_octets("small/set", QoS::AtLeastOnce, 10, 3));
        let mut src = BytesMut::new();
        let mut got = Vec::new();
        for piece in wire.chunks(7) {
            src.extend_from_slice(piece);
            while let Some(packet) = codec.decode(&mut src).unwrap() {
                got.push(packet);
            }
            assert!(src.len() < 200, "the payload is never buffered");
        }
        let [Packet::Publish(big), Packet::Publish(small)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!((big.topic.as_str(), big.pkid, big.oversized, big.payload.len()), ("big/set", 9, Some(5000), 0));
        assert_eq!((small.topic.as_str(), small.pkid, small.oversized, &small.payload[..]), ("small/set", 10, None, &[7u8; 3][..]));
        assert!(src.is_empty());
    }

    /// Trellis patch: a QoS 0 one has no packet identifier to read.
    #[test]
    fn an_oversized_qos0_publish_arriving_whole_is_handed_on() {
        let mut codec = Codec {
            max_incoming_size: 100,
            max_outgoing_size: 100,
            discarding: 0,
        };
        let mut src = publish_octets("t", QoS::AtMostOnce, 0, 300);
        let Some(Packet::Publish(p)) = codec.decode(&mut src).unwrap() else {
            panic!()
        };
        assert_eq!((p.topic.as_str(), p.oversized, codec.discarding), ("t", Some(300), 0));
        assert!(src.is_empty());
    }

    /// Trellis patch: a topic length beyond the packet is malformed.
    #[test]
    fn an_oversized_publish_whose_topic_overruns_it_is_malformed() {
        let mut codec = Codec {
            max_incoming_size: 10,
            max_outgoing_size: 10,
            discarding: 0,
        };
        // PUBLISH QoS 0, remaining length 20, topic length 0xFFFF.
        let mut src = BytesMut::from(&[0x30, 20, 0xFF, 0xFF][..]);
        src.extend_from_slice(&[0; 18]);
        assert!(matches!(codec.decode(&mut src), Err(Error::MalformedPacket)));
    }

    #[test]
    fn outgoing_max_packet_size_check() {
        let mut buf = BytesMut::new();
        let mut codec = Codec {
            max_incoming_size: 100,
            max_outgoing_size: 200,
            discarding: 0,
        };

        let mut small_publish = Publish::new("hello/world", QoS::AtLeastOnce, vec![1; 100]);
        small_publish.pkid = 1;
        codec
            .encode(Packet::Publish(small_publish), &mut buf)
            .unwrap();

        let large_publish = Publish::new("hello/world", QoS::AtLeastOnce, vec![1; 265]);
        match codec.encode(Packet::Publish(large_publish), &mut buf) {
            Err(Error::OutgoingPacketTooLarge {
                pkt_size: 281,
                max: 200,
            }) => {}
            _ => unreachable!(),
        }
    }
}
