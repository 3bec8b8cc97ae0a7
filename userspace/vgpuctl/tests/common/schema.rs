// SPDX-License-Identifier: GPL-2.0

//! A small JSON Schema validator for the keywords that
//! `tests/data/cdi-schema.json` uses: `type`, `required`, `properties`,
//! `additionalProperties` (boolean or schema), `items`, `pattern`, `enum`,
//! `minimum` and local `$ref`s (`#/definitions/NAME`). Unknown keywords are
//! an error, so the schema cannot silently ask for more than is checked.

use regex::Regex;
use serde_json::Value;

const KNOWN: &[&str] = &[
    "$comment",
    "$ref",
    "type",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "pattern",
    "enum",
    "minimum",
    "definitions",
];

/// Validates `v` against `schema` (the root, for `$ref`s); returns every
/// violation as `path: problem`.
pub fn validate(root: &Value, v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    check(root, root, v, "$", &mut errs);
    errs
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => panic!("unknown type {t}"),
    }
}

fn check(root: &Value, schema: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    let s = schema.as_object().expect("schema is an object");
    for k in s.keys() {
        assert!(KNOWN.contains(&k.as_str()), "unsupported keyword {k}");
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/definitions/").expect("local $ref");
        let target = &root["definitions"][name];
        assert!(target.is_object(), "dangling $ref {r}");
        check(root, target, v, path, errs);
    }
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        if !type_ok(t, v) {
            errs.push(format!("{path}: not of type {t}"));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errs.push(format!("{path}: {v} not one of {e:?}"));
        }
    }
    if let (Some(p), Some(st)) = (s.get("pattern").and_then(Value::as_str), v.as_str()) {
        if !Regex::new(p).expect("pattern compiles").is_match(st) {
            errs.push(format!("{path}: {st:?} does not match {p}"));
        }
    }
    if let (Some(m), Some(n)) = (s.get("minimum").and_then(Value::as_i64), v.as_i64()) {
        if n < m {
            errs.push(format!("{path}: {n} < {m}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().expect("required names are strings");
            if !obj.contains_key(r) {
                errs.push(format!("{path}: missing {r}"));
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            let sub = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(ps) => check(root, ps, val, &sub, errs),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{path}: unexpected {k}")),
                    Some(a @ Value::Object(_)) => check(root, a, val, &sub, errs),
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, it) in arr.iter().enumerate() {
            check(root, items, it, &format!("{path}[{i}]"), errs);
        }
    }
}
