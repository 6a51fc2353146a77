//! Decode-time pruning: fields the cache would drop are skipped while an object is decoded, so
//! they are never allocated.
//!
//! Both decode paths of the HTTP lister-watcher (list pages and watch events) decode each object
//! through an [`ObjectSeed`]. When pruning, it hands the object's `Deserialize` impl a wrapped
//! deserializer that sees exactly two maps: the object's own top-level map, and the map that is
//! the value of its `metadata` key. From the second it filters the keys in
//! `PRUNED_METADATA_FIELDS`, consuming their values as [`IgnoredAny`]: the deserializer skips
//! them without building anything. Every other value (`spec`, `status`, the rest of `metadata`)
//! goes to the wrapped deserializer untouched, so a `managedFields` key deeper in an object (in
//! `spec`, in an annotation's value) is kept, decoding costs nothing extra there, and decode errors
//! keep `serde_json`'s positions.
//!
//! `metadata.managedFields` is the target: server-side apply's field ownership, which
//! controllers almost never read, yet as k8s-openapi decodes it (`FieldsV1(serde_json::Value)`)
//! it is tens of KiB of heap per realistic pod, often more than the rest of the object. client-go
//! recommends stripping it in informers; here it is never decoded at all.
//!
//! The wrapper expects self-describing input with string keys (JSON), which is all the HTTP
//! client reads.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// The keys of an object's `metadata` that pruning skips.
const PRUNED_METADATA_FIELDS: &[&str] = &["managedFields"];

/// Decodes one object of type `K`, skipping `metadata.managedFields` unless told to keep it.
///
/// Public for the HTTP client's decoders and fuzz targets, not a user API (see the `codec` module).
pub struct ObjectSeed<K> {
    keep_managed_fields: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K> ObjectSeed<K> {
    /// A seed whose object keeps `metadata.managedFields` only if `keep_managed_fields` is set.
    #[must_use]
    pub fn new(keep_managed_fields: bool) -> Self {
        Self { keep_managed_fields, _kind: PhantomData }
    }
}

impl<'de, K: de::Deserialize<'de>> DeserializeSeed<'de> for ObjectSeed<K> {
    type Value = K;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K, D::Error> {
        if self.keep_managed_fields {
            K::deserialize(deserializer)
        } else {
            K::deserialize(Pruned { inner: deserializer, level: Level::Object })
        }
    }
}

/// Which map a wrapped deserializer stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The object itself: watch for its `metadata` key.
    Object,
    /// The object's `metadata`: skip the pruned keys.
    Metadata,
}

/// A deserializer whose maps (at `level`) are filtered; everything else is forwarded.
struct Pruned<D> {
    inner: D,
    level: Level,
}

/// Forwards `deserialize_*` methods whose visitor never sees one of the filtered maps.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method($($arg,)* visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Pruned<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(Wrap { inner: visitor, level: self.level })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Wrap { inner: visitor, level: self.level })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(name, fields, Wrap { inner: visitor, level: self.level })
    }

    // `Option<ObjectMeta>` and newtype wrappers reach the map through `visit_some` and
    // `visit_newtype_struct`, which re-wrap at the same level.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_option(Wrap { inner: visitor, level: self.level })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_newtype_struct(name, Wrap { inner: visitor, level: self.level })
    }

    forward! {
        deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16();
        deserialize_u32(); deserialize_u64(); deserialize_u128(); deserialize_f32();
        deserialize_f64(); deserialize_char(); deserialize_str(); deserialize_string();
        deserialize_bytes(); deserialize_byte_buf(); deserialize_unit(); deserialize_seq();
        deserialize_identifier(); deserialize_ignored_any();
        deserialize_unit_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor whose maps are filtered at `level`; every other value is forwarded.
struct Wrap<V> {
    inner: V,
    level: Level,
}

/// Forwards `visit_*` methods of plain values.
macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(PrunedMap { inner: map, level: self.level, value_is_metadata: false })
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Pruned { inner: deserializer, level: self.level })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Pruned { inner: deserializer, level: self.level })
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }

    forward_visit! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64);
        visit_i128(i128); visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64);
        visit_u128(u128); visit_f32(f32); visit_f64(f64); visit_char(char);
        visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }
}

/// The object's map or its metadata's map, with the pruned keys filtered out of the latter.
struct PrunedMap<A> {
    inner: A,
    level: Level,
    /// The key just read is the object's `metadata`: its value is wrapped.
    value_is_metadata: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for PrunedMap<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        // The key is read as a string first to decide on it; the visitor's own seed is then fed
        // that string (seeds are used up once given a key, so a skipped key must not reach one).
        loop {
            let Some(key) = self.inner.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match self.level {
                Level::Object => self.value_is_metadata = key.as_str() == "metadata",
                Level::Metadata if PRUNED_METADATA_FIELDS.contains(&key.as_str()) => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                Level::Metadata => {}
            }
            return key.feed(seed).map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.value_is_metadata) {
            self.inner.next_value_seed(Nested { seed, level: Level::Metadata })
        } else {
            self.inner.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A seed whose deserializer is wrapped at `level`.
struct Nested<S> {
    seed: S,
    level: Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nested<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Pruned { inner: deserializer, level: self.level })
    }
}

/// A map key: borrowed from the input when it has no escapes (`serde_json`'s common case).
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Key<'de> {
    /// Gives the key to the visitor's own key seed, as the input would have.
    fn feed<S: DeserializeSeed<'de>, E: de::Error>(self, seed: S) -> Result<S::Value, E> {
        match self {
            Key::Borrowed(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
            Key::Owned(s) => seed.deserialize(StringDeserializer::new(s)),
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests;
