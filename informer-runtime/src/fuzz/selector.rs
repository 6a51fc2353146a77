//! `label_selector`: the label-selector parser ([`LabelSelector::parse`]) and
//! [`LabelSelector::from_label_selector`], on selectors built from the grammar (valid and
//! invalid keys, values and operators, odd whitespace), mutated selectors, and random text.
//!
//! Properties:
//! - what it accepts round-trips: parse, display, parse gives an equal selector, and displaying
//!   that gives the same text;
//! - what it refuses is an error (no panic) with a message, at a position within the text;
//! - an accepted selector matches labels as each requirement's operator says;
//! - a `metav1.LabelSelector` that converts displays as a selector that parses back equal.

use std::collections::BTreeMap;

use fastrand::Rng;
use informer_fuzz::{Unstructured, arbitrary, bytes};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;

use crate::selector::{LabelSelector, Operator, SelectorParseError};

/// Selectors as people write them, to mutate.
const SEEDS: &[&str] = &[
    "app=web,tier in (front,back),!legacy,replicas>1",
    "environment = production, tier != frontend",
    "k8s.io/app==x,example.com/tier notin (a, b ,c)",
    "a in (),b notin ( x ),c",
    "x>-5,y<9223372036854775807",
    "app.kubernetes.io/name=my-app_1.2",
    "",
];

/// Pieces of the grammar, to build selectors from.
const TOKENS: &[&[u8]] = &[
    b"=",
    b"==",
    b"!=",
    b"!",
    b">",
    b"<",
    b" in ",
    b" notin ",
    b"(",
    b")",
    b",",
    b" ",
    b"\t",
    b"in",
    b"notin",
    b"/",
    b".",
    b"-",
    b"_",
    b"\xc3\xa9",
];

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let text = match u.int_in_range(0..=4)? {
        0 | 1 => grammar(&mut rng),
        2 => {
            let mut text = SEEDS[rng.usize(0..SEEDS.len())].as_bytes().to_vec();
            let others: Vec<&[u8]> = SEEDS.iter().map(|s| s.as_bytes()).collect();
            let ops = rng.usize(1..=4);
            bytes::mutate(&mut rng, &mut text, &others, TOKENS, ops);
            String::from_utf8_lossy(&text).into_owned()
        }
        3 => String::from_utf8_lossy(u.bytes(u.len())?).into_owned(),
        _ => {
            from_metav1(&mut rng);
            return Ok(());
        }
    };
    check(&text, &mut rng);
    Ok(())
}

/// The properties, for one selector text.
pub(super) fn check(text: &str, rng: &mut Rng) {
    informer_fuzz::note("selector.txt", text.as_bytes());
    match LabelSelector::parse(text) {
        Ok(selector) => {
            let shown = selector.to_string();
            let again = LabelSelector::parse(&shown).unwrap_or_else(|e| {
                panic!("{text:?} displays as {shown:?}, which does not parse: {e}")
            });
            assert_eq!(again, selector, "{text:?} displays as {shown:?}, which parses differently");
            assert_eq!(again.to_string(), shown, "displaying is not stable");
            for _ in 0..4 {
                let labels = labels_for(&selector, rng);
                assert_eq!(
                    selector.matches(&labels),
                    expected_match(&selector, &labels),
                    "{shown:?} on {labels:?}"
                );
            }
        }
        Err(error) => {
            assert!(!error.to_string().is_empty());
            if let SelectorParseError::Syntax { position, .. }
            | SelectorParseError::InvalidRequirement { position, .. } = &error
            {
                assert!((1..=text.len() + 1).contains(position), "{error} for {text:?}");
            }
        }
    }
}

/// Labels that may or may not satisfy `selector`: its keys with its values, other values, or
/// absent.
fn labels_for(selector: &LabelSelector, rng: &mut Rng) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    for requirement in selector.requirements() {
        let values: Vec<&str> = requirement.values().collect();
        let value = match rng.u8(0..5) {
            0 => continue,
            1 | 2 if !values.is_empty() => values[rng.usize(0..values.len())].to_owned(),
            3 => rng.i64(-3..=3).to_string(),
            _ => "other".to_owned(),
        };
        labels.insert(requirement.key().to_owned(), value);
    }
    labels
}

/// Every requirement holds, each as its operator is documented.
fn expected_match(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector.requirements().iter().all(|requirement| {
        let label = labels.get(requirement.key()).map(String::as_str);
        let mut values = requirement.values();
        let bound = || requirement.values().next().and_then(|v| v.parse::<i64>().ok());
        let number = label.and_then(|l| l.parse::<i64>().ok());
        match requirement.operator() {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                label.is_some_and(|l| values.any(|v| v == l))
            }
            Operator::NotEquals | Operator::NotIn => !label.is_some_and(|l| values.any(|v| v == l)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan => matches!((number, bound()), (Some(n), Some(b)) if n > b),
            Operator::LessThan => matches!((number, bound()), (Some(n), Some(b)) if n < b),
        }
    })
}

/// A selector from the grammar, with valid and invalid parts.
fn grammar(rng: &mut Rng) -> String {
    let mut text = String::new();
    for i in 0..rng.usize(0..=5) {
        if i > 0 {
            text.push_str(pick(rng, &[",", ", ", " ,", ",,"]));
        }
        let key = key(rng);
        let term = match rng.u8(0..9) {
            0 => key,
            1 => format!("!{key}"),
            2 => format!("{key}={}", value(rng)),
            3 => format!("{key} == {}", value(rng)),
            4 => format!("{key}!={}", value(rng)),
            5 | 6 => {
                let values: Vec<String> = (0..rng.usize(0..=4)).map(|_| value(rng)).collect();
                let op = if rng.bool() { "in" } else { "notin" };
                format!("{key} {op} ({})", values.join(pick(rng, &[",", " , "])))
            }
            7 => format!("{key}>{}", rng.i64(..)),
            _ => format!("{key}<{}", value(rng)),
        };
        text.push_str(&term);
    }
    text
}

fn pick<'a>(rng: &mut Rng, choices: &[&'a str]) -> &'a str {
    choices[rng.usize(0..choices.len())]
}

/// A label key: `[prefix/]name`, at and past the length limits, sometimes with a bad character.
fn key(rng: &mut Rng) -> String {
    let name = name(rng);
    match rng.u8(0..4) {
        0 => {
            let labels: Vec<String> = (0..rng.usize(1..=4))
                .map(|_| {
                    let len = rng.usize(1..=8);
                    name_of(rng, "abcxyz0189-", len)
                })
                .collect();
            format!("{}/{name}", labels.join("."))
        }
        1 => format!("{}/{name}", "a".repeat(rng.usize(250..=256))),
        _ => name,
    }
}

fn name(rng: &mut Rng) -> String {
    let len = match rng.u8(0..4) {
        0 => rng.usize(62..=64),
        _ => rng.usize(1..=10),
    };
    name_of(rng, "abcXYZ0189-_.", len)
}

fn name_of(rng: &mut Rng, alphabet: &str, len: usize) -> String {
    let alphabet: Vec<char> = alphabet.chars().collect();
    let mut name: String = (0..len).map(|_| alphabet[rng.usize(0..alphabet.len())]).collect();
    if rng.u8(0..8) == 0 {
        name.insert(
            rng.usize(0..=name.len()),
            pick(rng, &["é", "*", "(", " ", "="]).chars().next().unwrap_or('*'),
        );
    }
    name
}

fn value(rng: &mut Rng) -> String {
    match rng.u8(0..5) {
        0 => String::new(),
        1 => rng.i64(..).to_string(),
        _ => name(rng),
    }
}

/// A `metav1.LabelSelector` converts to a selector that round-trips, or is refused.
fn from_metav1(rng: &mut Rng) {
    let operators = ["In", "NotIn", "Exists", "DoesNotExist", "in", "Equals", ""];
    let selector = metav1::LabelSelector {
        match_labels: rng
            .bool()
            .then(|| (0..rng.usize(0..=3)).map(|_| (key(rng), value(rng))).collect()),
        match_expressions: rng.bool().then(|| {
            (0..rng.usize(0..=3))
                .map(|_| metav1::LabelSelectorRequirement {
                    key: key(rng),
                    operator: pick(rng, &operators).to_owned(),
                    values: rng.bool().then(|| (0..rng.usize(0..=3)).map(|_| value(rng)).collect()),
                })
                .collect()
        }),
    };
    if let Ok(converted) = LabelSelector::from_label_selector(&selector) {
        let shown = converted.to_string();
        let parsed = LabelSelector::parse(&shown).unwrap_or_else(|e| {
            panic!("{selector:?} converts to {shown:?}, which does not parse: {e}")
        });
        assert_eq!(
            parsed, converted,
            "{selector:?} converts to {shown:?}, which parses differently"
        );
    }
}
