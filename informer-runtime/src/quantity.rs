//! [`NumberOrQuantity`]: a resource quantity as a custom resource holds it, a JSON number or a
//! string, written back the way it was read.
//!
//! **Who it is for.** Code that `informer-gen` generates, and programs that read or write those
//! fields; built-in kinds use k8s-openapi's [`Quantity`].
//!
//! controller-gen marks every Go `resource.Quantity` field of a CRD `x-kubernetes-int-or-string`
//! with the quantity pattern, so the API server accepts `cpu: 2` as well as `cpu: "500m"`, and,
//! having no Go type to decode a custom resource into, stores whichever was sent. k8s-openapi's
//! [`Quantity`] reads a number too but writes it back as a string, so a controller that reads
//! and updates the object would change `2` into `"2"` behind its author's back. Types that
//! `informer-gen` generates use [`NumberOrQuantity`] for such fields instead: a number stays
//! the same number and a string the same string.

use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use serde_json::Number;

/// A resource quantity written as a JSON number (`2`, `0.5`) or as a string (`"500m"`,
/// `"1Gi"`), which serialises back to the same JSON.
///
/// [`to_quantity`](NumberOrQuantity::to_quantity) gives k8s-openapi's [`Quantity`] for either
/// form, as Go's `resource.Quantity` reads both.
///
/// ```
/// use informer_runtime::quantity::NumberOrQuantity;
/// use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
///
/// let cpu: NumberOrQuantity = serde_json::from_str("2").unwrap();
/// assert_eq!(serde_json::to_string(&cpu).unwrap(), "2");
/// assert_eq!(cpu.to_quantity(), Quantity("2".to_owned()));
///
/// let memory: NumberOrQuantity = serde_json::from_str(r#""1Gi""#).unwrap();
/// assert_eq!(serde_json::to_string(&memory).unwrap(), r#""1Gi""#);
///
/// let set = NumberOrQuantity::from(Quantity("500m".to_owned()));
/// assert_eq!(set.to_string(), "500m");
/// assert_eq!(NumberOrQuantity::from("500m"), set);
/// assert_eq!(NumberOrQuantity::from(4).to_string(), "4");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum NumberOrQuantity {
    /// Written as a JSON number: an integer of any size JSON numbers hold in `i64` or `u64`,
    /// or a float.
    Number(Number),
    /// Written as a string.
    Quantity(Quantity),
}

impl NumberOrQuantity {
    /// The quantity, whichever form it was written in: a number as its decimal text (what Go's
    /// `resource.Quantity` reads from it).
    #[must_use]
    pub fn to_quantity(&self) -> Quantity {
        self.clone().into()
    }
}

/// An empty quantity string, as k8s-openapi's [`Quantity::default`].
impl Default for NumberOrQuantity {
    fn default() -> Self {
        NumberOrQuantity::Quantity(Quantity::default())
    }
}

/// The number's text, or the quantity string.
impl fmt::Display for NumberOrQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberOrQuantity::Number(number) => fmt::Display::fmt(number, f),
            NumberOrQuantity::Quantity(quantity) => f.write_str(&quantity.0),
        }
    }
}

impl From<Quantity> for NumberOrQuantity {
    fn from(quantity: Quantity) -> Self {
        NumberOrQuantity::Quantity(quantity)
    }
}

impl From<NumberOrQuantity> for Quantity {
    fn from(value: NumberOrQuantity) -> Self {
        match value {
            NumberOrQuantity::Number(number) => Quantity(number.to_string()),
            NumberOrQuantity::Quantity(quantity) => quantity,
        }
    }
}

/// A quantity string (`"500m"`), not checked: the API server checks it against the schema.
impl From<&str> for NumberOrQuantity {
    fn from(quantity: &str) -> Self {
        NumberOrQuantity::Quantity(Quantity(quantity.to_owned()))
    }
}

/// A quantity string (`"500m"`), not checked: the API server checks it against the schema.
impl From<String> for NumberOrQuantity {
    fn from(quantity: String) -> Self {
        NumberOrQuantity::Quantity(Quantity(quantity))
    }
}

macro_rules! from_integer {
    ($($t:ty),*) => {$(
        /// A JSON number.
        impl From<$t> for NumberOrQuantity {
            fn from(value: $t) -> Self {
                NumberOrQuantity::Number(Number::from(value))
            }
        }
    )*};
}

from_integer!(i32, i64, u32, u64);

impl Serialize for NumberOrQuantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NumberOrQuantity::Number(number) => number.serialize(serializer),
            NumberOrQuantity::Quantity(quantity) => serializer.serialize_str(&quantity.0),
        }
    }
}

impl<'de> Deserialize<'de> for NumberOrQuantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumberOrQuantityVisitor)
    }
}

struct NumberOrQuantityVisitor;

impl Visitor<'_> for NumberOrQuantityVisitor {
    type Value = NumberOrQuantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity: a number, or a string such as \"500m\" or \"1Gi\"")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(NumberOrQuantity::Number(Number::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(NumberOrQuantity::Number(Number::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Number::from_f64(value)
            .map(NumberOrQuantity::Number)
            .ok_or_else(|| E::custom(format!("{value} is not a JSON number")))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(NumberOrQuantity::Quantity(Quantity(value.to_owned())))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(NumberOrQuantity::Quantity(Quantity(value)))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde_json::json;

    use super::NumberOrQuantity;

    #[test]
    fn every_form_serialises_back_to_the_same_json() {
        for value in [
            json!(2),
            json!(-3),
            json!(0.5),
            json!(9_007_199_254_740_993_u64),
            json!(u64::MAX),
            json!("500m"),
            json!("1Gi"),
            json!("2"),
            json!(""),
        ] {
            let parsed: NumberOrQuantity = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
            let text = serde_json::to_string(&value).unwrap();
            let parsed: NumberOrQuantity = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
        }
    }

    #[test]
    fn a_number_is_not_a_string_and_reads_as_its_quantity() {
        let number: NumberOrQuantity = serde_json::from_str("2").unwrap();
        let string: NumberOrQuantity = serde_json::from_str("\"2\"").unwrap();
        assert_ne!(number, string);
        assert_eq!(number.to_quantity(), string.to_quantity());
        assert_eq!(Quantity::from(number), Quantity("2".to_owned()));
    }

    #[test]
    fn other_json_is_an_error_saying_what_is_expected() {
        for value in [json!(true), json!(null), json!([1]), json!({"cpu": 1})] {
            let error = serde_json::from_value::<NumberOrQuantity>(value).unwrap_err();
            assert!(error.to_string().contains("a quantity: a number, or a string"), "{error}");
        }
    }
}
