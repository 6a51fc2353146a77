//! JSON-aware mutations: a seed document is parsed into a [`Value`], changed node by node
//! ([`mutate`]), and written back with [`write()`], which varies what JSON leaves free (member
//! order, whitespace, escapes) and can repeat members, which a [`Value`] cannot hold.

use fastrand::Rng;
use serde_json::{Map, Number, Value};

/// Whether `body` may hold one of the two inputs where the runtime's fast object decoder
/// documents that it differs from `serde_json`: a number `-0` (read as the integer 0) or a `+`
/// before a map key's digits. The targets that compare that decoder with `serde_json` (the object
/// decoder's and the list page's) skip such inputs.
#[must_use]
pub fn negative_zero_or_plus_key(body: &[u8]) -> bool {
    body.windows(3).any(|w| {
        (matches!(w[0], b':' | b'[' | b',' | b' ' | b'\t' | b'\n' | b'\r')
            && w[1] == b'-'
            && w[2] == b'0')
            || (w[0] == b'"' && w[1] == b'+' && w[2].is_ascii_digit())
    })
}

/// Keys that the decoders under test look for, to add or rename members with.
pub const KEYS: &[&str] = &[
    "kind",
    "apiVersion",
    "metadata",
    "items",
    "resourceVersion",
    "continue",
    "type",
    "object",
    "name",
    "namespace",
    "labels",
    "annotations",
    "managedFields",
    "spec",
    "status",
    "containers",
    "k8s.io/initial-events-end",
    "code",
    "reason",
    "message",
];

/// The most [`write()`] writes: past it, the document is cut off (still an input, and one that
/// keeps each run fast).
const MAX_OUTPUT: usize = 4 * 1024 * 1024;

/// How [`write()`] may lay out a document.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout {
    /// Whitespace may include line breaks (not in a watch line, where a line break ends it).
    pub newlines: bool,
    /// Members may be written twice (the second time with the same or another value).
    pub duplicates: bool,
    /// Members may be written in another order than the value's.
    pub reorder: bool,
}

/// Applies `ops` mutations to random nodes of `value`, grafting subtrees of `donors`.
pub fn mutate(rng: &mut Rng, value: &mut Value, donors: &[Value], ops: usize) {
    for _ in 0..ops {
        let node = pick(rng, value);
        mutate_node(rng, node, donors);
    }
}

/// A random node of `value`: the root, or a node reached by random steps down.
pub fn pick<'a>(rng: &mut Rng, value: &'a mut Value) -> &'a mut Value {
    let len = match &*value {
        Value::Array(items) => items.len(),
        Value::Object(members) => members.len(),
        _ => 0,
    };
    if len == 0 || rng.u8(0..5) == 0 {
        return value;
    }
    let index = rng.usize(0..len);
    match value {
        Value::Array(items) => pick(rng, &mut items[index]),
        Value::Object(members) => match members.values_mut().nth(index) {
            Some(member) => pick(rng, member),
            None => unreachable!("index {index} is below the length {len}"),
        },
        other => other,
    }
}

fn mutate_node(rng: &mut Rng, node: &mut Value, donors: &[Value]) {
    match rng.u8(0..10) {
        0 => *node = scalar(rng),
        1 if !donors.is_empty() => {
            let mut donor = donors[rng.usize(0..donors.len())].clone();
            *node = pick(rng, &mut donor).take();
        }
        2 => {
            // Deeper nesting than any real object has, past the parsers' limits (128); a tree
            // much deeper than that would overflow this harness's own recursion (cloning,
            // writing, dropping), so deeper nesting is left to the byte mutations.
            let depth = crate::bytes::depth(rng).min(300);
            let mut deep = node.take();
            for _ in 0..depth {
                deep = if rng.bool() {
                    Value::Array(vec![deep])
                } else {
                    Value::Object(Map::from_iter([("a".to_owned(), deep)]))
                };
            }
            *node = deep;
        }
        3 => match node {
            Value::Object(members) if !members.is_empty() => {
                let key = members.keys().nth(rng.usize(0..members.len())).cloned();
                if let Some(key) = key {
                    members.remove(&key);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                items.remove(rng.usize(0..items.len()));
            }
            other => *other = Value::Null,
        },
        4 => {
            let value = if rng.bool() || donors.is_empty() {
                scalar(rng)
            } else {
                let mut donor = donors[rng.usize(0..donors.len())].clone();
                pick(rng, &mut donor).take()
            };
            match node {
                Value::Object(members) => {
                    members.insert(key(rng), value);
                }
                Value::Array(items) => items.insert(rng.usize(0..=items.len()), value),
                other => *other = Value::Array(vec![other.take(), value]),
            }
        }
        5 => {
            if let Value::Object(members) = node
                && let Some(old) = members.keys().nth(rng.usize(0..members.len().max(1))).cloned()
                && let Some(value) = members.remove(&old)
            {
                let new = match rng.u8(0..3) {
                    0 => old.to_uppercase(),
                    1 => format!("{old}\u{0}"),
                    _ => key(rng),
                };
                members.insert(new, value);
            }
        }
        6 => {
            // Repeated elements; not of a large one, as repeats compound into gigabytes.
            if let Value::Array(items) = node
                && !items.is_empty()
                && items.len() < 64
            {
                let item = items[rng.usize(0..items.len())].clone();
                if serde_json::to_vec(&item).map_or(true, |json| json.len() > 4096) {
                    return;
                }
                let count = rng.usize(1..=4);
                items.extend(std::iter::repeat_n(item, count));
            }
        }
        7 => {
            if let Value::String(text) = node {
                mutate_string(rng, text);
            } else {
                *node = Value::String(string(rng));
            }
        }
        8 => {
            // The same content as another type: "1" for 1, 1 for "1", [x] for x.
            *node = match node.take() {
                Value::String(text) => text
                    .parse::<i64>()
                    .map_or_else(|_| Value::Array(vec![Value::String(text)]), Value::from),
                Value::Number(number) => Value::String(number.to_string()),
                Value::Bool(flag) => Value::String(flag.to_string()),
                other => Value::Array(vec![other]),
            }
        }
        _ => *node = Value::Null,
    }
}

/// A key: one the decoders know, or a short odd one.
fn key(rng: &mut Rng) -> String {
    if rng.u8(0..4) == 0 { string(rng) } else { KEYS[rng.usize(0..KEYS.len())].to_owned() }
}

/// A scalar at the edges of what decoders take: extreme numbers, odd strings, literals.
#[must_use]
pub fn scalar(rng: &mut Rng) -> Value {
    match rng.u8(0..14) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => Value::from(0),
        3 => Value::from(-1),
        4 => Value::from(u64::MAX),
        5 => Value::from(i64::MIN),
        6 => Value::from(9_007_199_254_740_993_u64),
        7 => Number::from_f64(0.5).map_or(Value::Null, Value::Number),
        8 => Number::from_f64(1e308).map_or(Value::Null, Value::Number),
        9 => Number::from_f64(-0.0).map_or(Value::Null, Value::Number),
        10 => Value::Array(Vec::new()),
        11 => Value::Object(Map::new()),
        _ => Value::String(string(rng)),
    }
}

/// A string that stresses decoders: empty, long, control characters, non-ASCII, or a number.
#[must_use]
pub fn string(rng: &mut Rng) -> String {
    match rng.u8(0..9) {
        0 => String::new(),
        1 => "a".repeat(rng.usize(64..=70_000)),
        2 => "\u{0}\u{1f}\u{7f}".to_owned(),
        3 => "é😀\u{fffd}\u{10ffff}".to_owned(),
        4 => rng.i64(..).to_string(),
        5 => " ".to_owned(),
        6 => "Pod".to_owned(),
        7 => "v1".to_owned(),
        _ => {
            let len = rng.usize(1..=12);
            std::iter::repeat_with(|| rng.alphanumeric()).take(len).collect()
        }
    }
}

fn mutate_string(rng: &mut Rng, text: &mut String) {
    match rng.u8(0..4) {
        0 => text.clear(),
        1 => text.push_str(&string(rng)),
        2 => {
            let cut = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .nth(rng.usize(0..=text.len()));
            if let Some(cut) = cut {
                text.truncate(cut);
            }
        }
        _ if text.len() <= 4096 => *text = text.repeat(rng.usize(2..=64)),
        _ => text.push('\u{fffd}'),
    }
}

/// Writes `value` as JSON, laid out as `layout` allows: the same document a [`Value`] holds,
/// unless `layout.duplicates` repeats members (or it is cut off past 4 MiB).
pub fn write(rng: &mut Rng, value: &Value, layout: Layout, out: &mut Vec<u8>) {
    // How often each freedom is used, per document: some are written plainly, some oddly.
    let style = Style {
        layout,
        space: if rng.bool() { 0 } else { rng.u32(1..=8) },
        escape: if rng.bool() { 0 } else { rng.u32(1..=16) },
        reorder: layout.reorder && rng.bool(),
    };
    write_value(rng, &style, value, out);
}

struct Style {
    layout: Layout,
    /// One in `space` token gaps gets whitespace (never, for 0).
    space: u32,
    /// One in `escape` characters is written as an escape (never, for 0).
    escape: u32,
    reorder: bool,
}

fn one_in(rng: &mut Rng, n: u32) -> bool {
    n != 0 && rng.u32(0..n) == 0
}

fn space(rng: &mut Rng, style: &Style, out: &mut Vec<u8>) {
    if one_in(rng, style.space) {
        let choices: &[u8] = if style.layout.newlines { b" \t\n\r" } else { b" \t" };
        out.push(choices[rng.usize(0..choices.len())]);
    }
}

fn write_value(rng: &mut Rng, style: &Style, value: &Value, out: &mut Vec<u8>) {
    if out.len() > MAX_OUTPUT {
        return;
    }
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => out.extend_from_slice(number.to_string().as_bytes()),
        Value::String(text) => write_string(rng, style, text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                space(rng, style, out);
                write_value(rng, style, item, out);
                space(rng, style, out);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            if style.reorder {
                rng.shuffle(&mut members);
            }
            out.push(b'{');
            let mut first = true;
            for (key, member) in members {
                let times = if style.layout.duplicates && rng.u8(0..16) == 0 { 2 } else { 1 };
                for time in 0..times {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    space(rng, style, out);
                    write_string(rng, style, key, out);
                    space(rng, style, out);
                    out.push(b':');
                    space(rng, style, out);
                    if time == 1 && rng.bool() {
                        let other = scalar(rng);
                        write_value(rng, style, &other, out);
                    } else {
                        write_value(rng, style, member, out);
                    }
                    space(rng, style, out);
                }
            }
            out.push(b'}');
        }
    }
}

fn write_string(rng: &mut Rng, style: &Style, text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(br#"\""#),
            '\\' => out.extend_from_slice(br"\\"),
            '\n' => out.extend_from_slice(br"\n"),
            '\r' => out.extend_from_slice(br"\r"),
            '\t' => out.extend_from_slice(br"\t"),
            c if u32::from(c) < 0x20 || one_in(rng, style.escape) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
            c => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_documents_read_back_as_the_same_value_without_duplicates() {
        let seed: Value = serde_json::from_str(
            r#"{"kind":"Pod","metadata":{"name":"a\"b\\c\u0001","labels":{"x":"é😀"}},"n":[1,-2,3.5,null,true]}"#,
        )
        .unwrap();
        for s in 0..500 {
            let mut rng = Rng::with_seed(s);
            let mut out = Vec::new();
            let layout = Layout { newlines: true, duplicates: false, reorder: true };
            write(&mut rng, &seed, layout, &mut out);
            let back: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, seed, "{}", String::from_utf8_lossy(&out));
        }
    }

    /// A fuzz run once stalled on its own inputs: repeats of repeats grew strings and arrays to
    /// hundreds of MiB. What mutations make stays small enough to decode many times a second.
    #[test]
    fn mutations_do_not_compound_into_huge_documents() {
        let seed: Value =
            serde_json::from_str(r#"{"items":[{"a":"bbbbbbbb"},[1,2]],"s":"x"}"#).unwrap();
        for s in 0..200 {
            let mut rng = Rng::with_seed(s);
            let mut value = seed.clone();
            mutate(&mut rng, &mut value, std::slice::from_ref(&seed), 40);
            let mut out = Vec::new();
            write(
                &mut rng,
                &value,
                Layout { newlines: true, duplicates: true, reorder: true },
                &mut out,
            );
            assert!(out.len() <= MAX_OUTPUT + 512 * 1024, "seed {s}: {} bytes", out.len());
        }
    }

    #[test]
    fn mutated_values_still_write_as_json() {
        let seed: Value =
            serde_json::from_str(r#"{"items":[{"a":1},{"b":"c"}],"kind":"PodList"}"#).unwrap();
        for s in 0..300 {
            let mut rng = Rng::with_seed(s);
            let mut value = seed.clone();
            mutate(&mut rng, &mut value, std::slice::from_ref(&seed), 3);
            let mut out = Vec::new();
            write(&mut rng, &value, Layout::default(), &mut out);
            match serde_json::from_slice::<Value>(&out) {
                Ok(back) => assert_eq!(back, value),
                // Deepened past serde_json's own limit: the point of that mutation.
                Err(e) => assert!(e.to_string().contains("recursion limit"), "{e}"),
            }
        }
    }
}
