//! One JSON object per line, its keys in the order written: the
//! stress-test's output reads like its documented format.

/// A JSON object that keeps its keys in the order written: the lines read
/// like the documented format. (serde_json's map sorts keys unless its
/// `preserve_order` feature is on, which would change the JSON every other
/// crate of the workspace prints.)
pub struct JsonLine(String);

impl JsonLine {
    /// An empty object.
    pub fn new() -> JsonLine {
        JsonLine(String::from("{"))
    }

    /// Add `key` with `json` already serialised.
    pub fn raw(mut self, key: &str, json: &str) -> JsonLine {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&serde_json::Value::from(key).to_string());
        self.0.push(':');
        self.0.push_str(json);
        self
    }

    /// Add `key` with `value`.
    pub fn put(self, key: &str, value: serde_json::Value) -> JsonLine {
        self.raw(key, &value.to_string())
    }

    /// Append every field of `other` (an unfinished line) after these.
    pub fn merge(mut self, other: JsonLine) -> JsonLine {
        let fields = &other.0[1..];
        if !fields.is_empty() {
            if self.0.len() > 1 {
                self.0.push(',');
            }
            self.0.push_str(fields);
        }
        self
    }

    /// Close the object.
    pub fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

impl Default for JsonLine {
    fn default() -> Self {
        JsonLine::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_keeps_its_keys_in_the_order_written_and_is_valid_json() {
        let inner = JsonLine::new().put("timeout", json!(2)).put("admission", json!(1)).finish();
        let line = JsonLine::new()
            .put("scenario", json!("clients"))
            .raw("failures", &inner)
            .put("p50_us", json!(null))
            .finish();
        assert_eq!(line, r#"{"scenario":"clients","failures":{"timeout":2,"admission":1},"p50_us":null}"#);
        assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
    }

    #[test]
    fn merging_appends_the_other_lines_fields_in_order() {
        let a = JsonLine::new().put("a", json!(1));
        let b = JsonLine::new().put("b", json!(2)).put("c", json!(3));
        assert_eq!(a.merge(b).finish(), r#"{"a":1,"b":2,"c":3}"#);
        assert_eq!(JsonLine::new().merge(JsonLine::new().put("x", json!(0))).finish(), r#"{"x":0}"#);
        assert_eq!(JsonLine::new().put("x", json!(0)).merge(JsonLine::new()).finish(), r#"{"x":0}"#);
    }
}
