//! A list item's JSON read without decoding it: what a compact cache's list needs of an item
//! before the cache takes it.
//!
//! A cache in compact storage keeps each object as its JSON, compressed. When such a cache
//! lists, each item used to be decoded as it arrived, encoded again to JSON and compressed, then
//! decoded a second time when the cache took it: two decodes and a serialisation for one
//! object (`bench/PROFILES.md`). Kept as the server sent it instead, an item is compressed at
//! once and decoded once, when the cache takes it. What the list needs before that is read
//! here, in one pass over the bytes that builds nothing: the item's key (its namespace and
//! name, under which a later item replaces it and a relist finds the cache's own form of an
//! unchanged object), its resource version, whether it says its `apiVersion` and `kind` (lists
//! of built-in kinds leave them out of their items, and a typed object fills them in), and
//! where its `metadata.managedFields` is, which an informer drops unless told to keep it.
//!
//! What this reader cannot be sure of it refuses (`None`): an item that is not valid UTF-8,
//! not an object, without a string `metadata.name`, with an `apiVersion` or `kind` that is not
//! a string, with an escaped member name, with a member it needs given twice. The caller then
//! decodes such an item as it always did, and its errors are the decoder's. It checks the
//! structure only as far as it walks it: anything else wrong (a value of the wrong type, a
//! syntax error inside `spec`) is found by the decode that the item gets when the cache takes
//! it.

use std::borrow::Cow;
use std::ops::Range;

use crate::resource::ObjectKey;

/// What a compact list reads of one item's JSON; see the [module documentation](self).
#[derive(Debug)]
pub(crate) struct RawItem<'a> {
    json: &'a [u8],
    /// Where the item's object opens (its `{`).
    open: usize,
    key: ObjectKey,
    resource_version: Cow<'a, str>,
    /// The bytes of the `managedFields` member and of one comma beside it, if there is one.
    managed_fields: Option<Range<usize>>,
    has_api_version: bool,
    has_kind: bool,
}

impl<'a> RawItem<'a> {
    /// Reads `json`, one item of a list; `None` if it cannot be read without decoding it.
    pub(crate) fn read(json: &'a [u8]) -> Option<Self> {
        // The decoder would refuse invalid UTF-8 anywhere: so does this reader, so that what
        // it takes decodes as the item would have (std checks ASCII in words at a time).
        std::str::from_utf8(json).ok()?;
        let mut cursor = Cursor { json, at: 0 };
        cursor.skip_space();
        let open = cursor.at;
        let mut meta = None;
        let (mut has_api_version, mut has_kind) = (false, false);
        cursor.members(|cursor, name, _| {
            match name {
                // A string, which a decoded object keeps: `null` it would fill in.
                b"apiVersion" if !has_api_version => {
                    has_api_version = true;
                    return cursor.string().map(drop);
                }
                b"kind" if !has_kind => {
                    has_kind = true;
                    return cursor.string().map(drop);
                }
                b"metadata" if meta.is_none() => {
                    meta = Some(Meta::read(cursor)?);
                    return Some(());
                }
                b"apiVersion" | b"kind" | b"metadata" => return None,
                _ => {}
            }
            cursor.skip_value()
        })?;
        cursor.skip_space();
        if cursor.at != json.len() {
            return None;
        }
        let meta = meta?;
        let name = meta.name?;
        Some(Self {
            json,
            open,
            key: ObjectKey::new(meta.namespace.as_deref(), &name),
            resource_version: meta.resource_version.unwrap_or_default(),
            managed_fields: meta.managed_fields,
            has_api_version,
            has_kind,
        })
    }

    /// The item's key, as [`ObjectKey::of`] its decoded object.
    pub(crate) fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The item's `metadata.resourceVersion`, empty when it has none.
    pub(crate) fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// Writes into `out` (cleared first) the item's JSON as its object is to be decoded from:
    /// `apiVersion` and `kind` set to `served` where the item leaves them out (as a decoded
    /// item's [`fill_type`](crate::resource::Object::fill_type) sets them), and without
    /// `metadata.managedFields` unless `keep_managed_fields`.
    pub(crate) fn write_json(
        &self,
        served: (&str, &str),
        keep_managed_fields: bool,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        out.reserve(self.json.len().saturating_add(64));
        out.push(b'{');
        let (api_version, kind) = served;
        // The item has a member, its metadata, so a comma always follows what is put first.
        for (has, name, value) in
            [(self.has_api_version, "apiVersion", api_version), (self.has_kind, "kind", kind)]
        {
            if !has {
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
                // A `String` always serialises.
                let _ = serde_json::to_writer(&mut *out, value);
                out.push(b',');
            }
        }
        let body = self.open + 1;
        match &self.managed_fields {
            Some(cut) if !keep_managed_fields => {
                out.extend_from_slice(&self.json[body..cut.start]);
                out.extend_from_slice(&self.json[cut.end..]);
            }
            _ => out.extend_from_slice(&self.json[body..]),
        }
    }
}

/// What [`RawItem::read`] takes from `metadata`.
#[derive(Default)]
struct Meta<'a> {
    name: Option<Cow<'a, str>>,
    namespace: Option<Cow<'a, str>>,
    resource_version: Option<Cow<'a, str>>,
    managed_fields: Option<Range<usize>>,
}

impl<'a> Meta<'a> {
    /// Reads the `metadata` object at the cursor.
    fn read(cursor: &mut Cursor<'a>) -> Option<Self> {
        let mut meta = Self::default();
        // Where the previous member's value ended.
        let mut previous_end = None;
        cursor.members(|cursor, name, member_start| {
            let slot = match name {
                b"name" => &mut meta.name,
                b"namespace" => &mut meta.namespace,
                b"resourceVersion" => &mut meta.resource_version,
                b"managedFields" => {
                    if meta.managed_fields.is_some() {
                        return None;
                    }
                    cursor.skip_value()?;
                    let end = cursor.at;
                    // With the comma that follows, if one does; else the one before.
                    cursor.skip_space();
                    let cut = if cursor.json.get(cursor.at) == Some(&b',') {
                        member_start..cursor.at + 1
                    } else {
                        previous_end.unwrap_or(member_start)..end
                    };
                    meta.managed_fields = Some(cut);
                    previous_end = Some(end);
                    return Some(());
                }
                _ => {
                    cursor.skip_value()?;
                    previous_end = Some(cursor.at);
                    return Some(());
                }
            };
            if slot.is_some() {
                return None;
            }
            *slot = Some(cursor.string_value()?);
            previous_end = Some(cursor.at);
            Some(())
        })?;
        Some(meta)
    }
}

/// A position in a JSON text being walked.
struct Cursor<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) {
        while matches!(self.json.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    /// Consumes `byte` after any white space; `false` (nothing consumed but the space) if the
    /// next byte is another.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.json.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// Walks the members of the object at the cursor, calling `member` with the cursor on each
    /// one's value, its name (unescaped names only) and where the member starts (its name's
    /// opening quote); `member` must consume the value.
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8], usize) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.skip_space();
            let start = self.at;
            let name = self.string()?;
            let name = &self.json[name];
            if name.contains(&b'\\') || !self.eat(b':') {
                return None;
            }
            self.skip_space();
            member(self, name, start)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// Consumes the string at the cursor; the range of its content, between the quotes.
    fn string(&mut self) -> Option<Range<usize>> {
        if self.json.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut at = start;
        loop {
            match self.json.get(at)? {
                b'\\' => at += 2,
                b'"' => break,
                _ => at += 1,
            }
        }
        self.at = at + 1;
        Some(start..at)
    }

    /// Consumes the string value at the cursor and returns it unescaped; `None` if the value
    /// is not a string.
    fn string_value(&mut self) -> Option<Cow<'a, str>> {
        let quoted_start = self.at;
        let content = self.string()?;
        let text = &self.json[content];
        if text.contains(&b'\\') {
            serde_json::from_slice::<String>(&self.json[quoted_start..self.at]).ok().map(Cow::Owned)
        } else {
            std::str::from_utf8(text).ok().map(Cow::Borrowed)
        }
    }

    /// Consumes the value at the cursor, whatever it is, without recursing: an object or array
    /// of any depth is walked by counting brackets.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_space();
        match *self.json.get(self.at)? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0_usize;
                loop {
                    match *self.json.get(self.at)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while self.json.get(self.at).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                }) {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

    use super::*;

    fn written(json: &str, keep_managed_fields: bool) -> String {
        let item = RawItem::read(json.as_bytes()).unwrap();
        let mut out = Vec::new();
        item.write_json(("v1", "Pod"), keep_managed_fields, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn reads_the_key_and_the_version_without_decoding() {
        let item = RawItem::read(
            br#" {"metadata":{"namespace":"ns","name":"web-0","resourceVersion":"42"},"spec":{}} "#,
        )
        .unwrap();
        assert_eq!(item.key().as_str(), "ns/web-0");
        assert_eq!(item.resource_version(), "42");
        let cluster = RawItem::read(br#"{"metadata":{"name":"n\u0031","namespace":""}}"#).unwrap();
        assert_eq!(cluster.key().as_str(), "n1", "escapes are read, an empty namespace is none");
        assert_eq!(cluster.resource_version(), "");
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_stand() {
        let mf = r#""managedFields":[{"manager":"m","fieldsV1":{"f:a":{"}":"]"}}}]"#;
        for (json, want) in [
            (
                format!(r#"{{"metadata":{{{mf},"name":"a"}}}}"#),
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#,
            ),
            (
                format!(r#"{{"metadata":{{"name":"a", {mf} ,"uid":"u"}}}}"#),
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a", "uid":"u"}}"#,
            ),
            (
                format!(r#"{{"metadata":{{"name":"a" , {mf} }}}}"#),
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a" }}"#,
            ),
        ] {
            assert_eq!(written(&json, false), want);
            let kept = written(&json, true);
            assert!(kept.contains(mf), "kept when asked: {kept}");
        }
    }

    #[test]
    fn the_type_is_filled_in_only_where_it_is_missing() {
        assert_eq!(
            written(r#"{"kind":"Pod","metadata":{"name":"a"}}"#, false),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#
        );
        assert_eq!(
            written(r#"{"metadata":{"name":"a"},"apiVersion":"v1","kind":"Pod"}"#, false),
            r#"{"metadata":{"name":"a"},"apiVersion":"v1","kind":"Pod"}"#
        );
    }

    #[test]
    fn what_it_cannot_be_sure_of_it_refuses() {
        for json in [
            &b"nope"[..],
            br#"{"metadata":{}}"#,
            br#"{"metadata":{"name":1}}"#,
            br#"{"metadata":{"name":"a","name":"b"}}"#,
            br#"{"metadata":{"name":"a"},"metadata":{"name":"b"}}"#,
            br#"{"kind":"Pod","kind":"Pod","metadata":{"name":"a"}}"#,
            br#"{"apiVersion":null,"metadata":{"name":"a"}}"#,
            br#"{"metad\u0061ta":{"name":"a"}}"#,
            br#"{"metadata":{"name":"a"}"#,
            br#"{"metadata":{"name":"a"}} x"#,
            br#"{"metadata":{"name":"a"},"spec":{"x":[1,2}}"#,
            b"{\"metadata\":{\"name\":\"a\xff\"}}",
        ] {
            assert!(RawItem::read(json).is_none(), "{}", String::from_utf8_lossy(json));
        }
    }

    // Input from a server is not trusted: nesting of any depth is walked without recursing.
    #[test]
    fn deep_nesting_is_walked_without_recursing() {
        let deep = format!(
            r#"{{"metadata":{{"name":"a","labels":{{"l":{}{}}}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(RawItem::read(deep.as_bytes()).unwrap().key().as_str(), "a");
    }
}
