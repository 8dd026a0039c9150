//! The Sparkplug B payload (Eclipse Sparkplug 3.0, `sparkplug_b.proto`) as
//! prost messages: the parts a BACnet edge node sends and reads.
//!
//! Field numbers and types are the specification's; what is left out
//! (`MetaData`, `DataSet`, `Template`, the extension messages, `body`'s
//! meaning) is skipped by prost when a peer sends it, never refused.

#![allow(missing_docs)] // the fields are the specification's, under its names

/// `org.eclipse.tahu.protobuf.Payload`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Payload {
    /// Milliseconds since the Unix epoch (UTC).
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
    /// 0..=255, NBIRTH is 0; absent in NDEATH.
    #[prost(uint64, optional, tag = "3")]
    pub seq: Option<u64>,
    #[prost(string, optional, tag = "4")]
    pub uuid: Option<String>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub body: Option<Vec<u8>>,
}

/// `Payload.Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Present in births; may be left out (alias only) in data and commands.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(uint64, optional, tag = "2")]
    pub alias: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub timestamp: Option<u64>,
    /// A [`DataType`] number; required in births.
    #[prost(uint32, optional, tag = "4")]
    pub datatype: Option<u32>,
    #[prost(bool, optional, tag = "5")]
    pub is_historical: Option<bool>,
    #[prost(bool, optional, tag = "6")]
    pub is_transient: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    pub is_null: Option<bool>,
    #[prost(message, optional, tag = "9")]
    pub properties: Option<PropertySet>,
    #[prost(oneof = "MetricValue", tags = "10, 11, 12, 13, 14, 15, 16")]
    pub value: Option<MetricValue>,
}

/// `Payload.Metric.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum MetricValue {
    /// Int8/16/32 (two's complement in 32 bits) and UInt8/16/32.
    #[prost(uint32, tag = "10")]
    Int(u32),
    /// Int64 (two's complement), UInt64, DateTime.
    #[prost(uint64, tag = "11")]
    Long(u64),
    #[prost(float, tag = "12")]
    Float(f32),
    #[prost(double, tag = "13")]
    Double(f64),
    #[prost(bool, tag = "14")]
    Boolean(bool),
    /// String, Text, UUID.
    #[prost(string, tag = "15")]
    String(String),
    #[prost(bytes = "vec", tag = "16")]
    Bytes(Vec<u8>),
}

/// `Payload.PropertySet`: a metric's properties (e.g. `engUnit`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PropertySet {
    #[prost(string, repeated, tag = "1")]
    pub keys: Vec<String>,
    #[prost(message, repeated, tag = "2")]
    pub values: Vec<PropertyValue>,
}

/// `Payload.PropertyValue` (the scalar kinds).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PropertyValue {
    #[prost(uint32, optional, tag = "1")]
    pub r#type: Option<u32>,
    #[prost(bool, optional, tag = "2")]
    pub is_null: Option<bool>,
    #[prost(oneof = "PropertyScalar", tags = "3, 4, 5, 6, 7, 8")]
    pub value: Option<PropertyScalar>,
}

/// `Payload.PropertyValue.value` (the scalar kinds).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum PropertyScalar {
    #[prost(uint32, tag = "3")]
    Int(u32),
    #[prost(uint64, tag = "4")]
    Long(u64),
    #[prost(float, tag = "5")]
    Float(f32),
    #[prost(double, tag = "6")]
    Double(f64),
    #[prost(bool, tag = "7")]
    Boolean(bool),
    #[prost(string, tag = "8")]
    String(String),
}

/// The specification's `DataType` numbers this edge node uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum DataType {
    Int32 = 3,
    Int64 = 4,
    UInt32 = 7,
    UInt64 = 8,
    Float = 9,
    Double = 10,
    Boolean = 11,
    String = 12,
}
