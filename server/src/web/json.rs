//! JSON bodies as every API reads them: as `serde_json` does, except that
//! an object holding a key twice is refused, naming the key.

use serde::Deserialize;
use serde_json::{Map, Value};

/// Parses JSON as `serde_json` does, except that an object holding a key
/// twice is refused (serde_json keeps the last, so `{"round":1,"round":2}`
/// would be stored as round 2 without a word).
pub fn strict_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(bytes).map(|Strict(value)| value)
}

/// Refuses JSON holding a key twice in one object, as [`strict_json`] does,
/// without building the value: for bodies that are then decoded into types
/// of their own (an OTLP export, a JSON-RPC message), whose decoders keep
/// the last of two keys or ignore unknown ones given twice.
pub fn refuse_keys_twice(bytes: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<KeysOnce>(bytes).map(|_| ())
}

/// A JSON value checked for keys given twice, and dropped.
struct KeysOnce;

impl<'de> Deserialize<'de> for KeysOnce {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<KeysOnce, D::Error> {
        deserializer.deserialize_any(KeysOnceVisitor)
    }
}

struct KeysOnceVisitor;

impl<'de> serde::de::Visitor<'de> for KeysOnceVisitor {
    type Value = KeysOnce;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_i64<E>(self, _: i64) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_u64<E>(self, _: u64) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_f64<E>(self, _: f64) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_str<E>(self, _: &str) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_unit<E>(self) -> Result<KeysOnce, E> {
        Ok(KeysOnce)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<KeysOnce, A::Error> {
        while seq.next_element::<KeysOnce>()?.is_some() {}
        Ok(KeysOnce)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<KeysOnce, A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                return Err(serde::de::Error::custom(format!("the key {key:?} is given twice")));
            }
            map.next_value::<KeysOnce>()?;
            keys.insert(key);
        }
        Ok(KeysOnce)
    }
}

/// A JSON value whose objects hold each key once.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Strict, E> {
        Ok(Strict(Value::from(value)))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Strict, E> {
        Ok(Strict(Value::from(value)))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Strict, E> {
        Ok(Strict(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(value)))
    }

    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Strict(Value::Array(items)))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("the key {key:?} is given twice")));
            }
            let Strict(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Strict(Value::Object(object)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_with_a_key_twice_is_refused_at_any_depth() {
        let body = br#"{"round": 1, "state": "a", "findings": [{"target": {"id": "x"}, "severity": "info", "criterion": "c"}], "spent": {"usd": 0.5, "tokens": 7}}"#;
        assert_eq!(strict_json(body).unwrap(), serde_json::from_slice::<Value>(body).unwrap());
        for twice in
            [&br#"{"round": 1, "round": 2}"#[..], br#"{"findings": [{"target": {"id": "a", "id": "b"}}]}"#]
        {
            let error = strict_json(twice).unwrap_err().to_string();
            assert!(error.contains("given twice"), "{error}");
        }
    }

    #[test]
    fn keys_given_twice_are_found_without_building_the_value() {
        let body = br#"{"a": [1, {"b": null, "c": {"d": "x"}}], "e": 2.5, "f": true}"#;
        assert!(refuse_keys_twice(body).is_ok());
        for (twice, key) in [
            (&br#"{"round": 1, "round": 2}"#[..], "round"),
            (
                br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a", "x": 1, "name": "b"}]}]}]}"#,
                "name",
            ),
            (br#"[{"k": {}, "k": {}}]"#, "k"),
        ] {
            let error = refuse_keys_twice(twice).unwrap_err().to_string();
            assert!(error.contains(&format!("the key {key:?} is given twice")), "{error}");
        }
        assert!(refuse_keys_twice(b"{\"a\": 1").is_err(), "not JSON at all");
    }
}
