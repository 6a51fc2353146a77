//! Kubernetes label selectors, as listers and list/watch tweaks use them.
//!
//! **Who it is for.** Programs that filter what they list or watch: listers take a
//! [`LabelSelector`], and list/watch tweaks a label or field selector.
//!
//! This is a port of `k8s.io/apimachinery/pkg/labels` (the selector grammar
//! accepted by `labels.Parse`, `Requirement` and the validation done by
//! `NewRequirement`) and of `metav1.LabelSelectorAsSelector`:
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUE { "," VALUE } ")"
//!                         | ("=" | "==" | "!=" | ">" | "<") VALUE ]
//! ```
//!
//! A bare `KEY` requires the label to exist, `!KEY` requires it to be absent,
//! `!=` and `notin` also match objects without the label, and `>`/`<` compare
//! integer label values. All requirements must hold; the empty selector matches
//! everything. Like client-go, a parsed selector keeps its requirements
//! sorted by key and each requirement's values as a sorted set, so
//! [`LabelSelector`]'s `Display` output is canonical and parses back to an
//! equal selector.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;

/// Maximum length of a label value and of the name part of a label key.
const MAX_NAME_LEN: usize = 63;
/// Maximum length of the DNS-subdomain prefix of a label key.
const MAX_PREFIX_LEN: usize = 253;

/// The relation a [`Requirement`] expresses between a label and its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`: the label exists and equals the value.
    Equals,
    /// `key==value`: same as [`Operator::Equals`].
    DoubleEquals,
    /// `key!=value`: the label is absent or differs from the value.
    NotEquals,
    /// `key in (a,b)`: the label exists and is one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or is none of the values.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label exists, is an integer, and is greater than `n`.
    GreaterThan,
    /// `key<n`: the label exists, is an integer, and is less than `n`.
    LessThan,
}

/// Why a label selector, or one of its requirements, is invalid.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectorParseError {
    /// The selector string is malformed: a token the grammar does not allow.
    #[error(
        "invalid label selector {selector:?}: expected {expected} at position {position}{}",
        found_suffix(.found.as_deref())
    )]
    Syntax {
        /// The whole selector string.
        selector: String,
        /// 1-based byte position of the offending token (`len + 1` at the end).
        position: usize,
        /// What the parser would have accepted there.
        expected: &'static str,
        /// The offending token, or `None` when the string ended.
        found: Option<String>,
    },
    /// A requirement of a selector string has an invalid key or value.
    #[error("invalid label selector {selector:?} at position {position}: {error}")]
    InvalidRequirement {
        /// The whole selector string.
        selector: String,
        /// 1-based byte position of the offending key or value.
        position: usize,
        /// The validation failure, one of the other variants.
        error: Box<SelectorParseError>,
    },
    /// A label key is not a qualified name `[prefix/]name`: the prefix a
    /// lowercase DNS subdomain of at most 253 characters, the name at most 63
    /// characters of `[A-Za-z0-9._-]` starting and ending with an alphanumeric.
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// The rule the key breaks.
        reason: &'static str,
    },
    /// A label value is neither empty nor a valid name part (see `InvalidKey`),
    /// or the value of a `>`/`<` requirement is not a 64-bit integer.
    #[error("invalid label value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// The rule the value breaks.
        reason: &'static str,
    },
    /// Wrong number of values for the operator (see [`Requirement::new`]).
    #[error("invalid values for label key {key:?}: {} (got {count})", arity_rule(*.operator))]
    InvalidValueCount {
        /// The key of the requirement.
        key: String,
        /// The operator of the requirement.
        operator: Operator,
        /// How many values were given.
        count: usize,
    },
    /// A `matchExpressions` operator is not `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[error(
        "invalid operator {operator:?} for label key {key:?}: expected In, NotIn, Exists or DoesNotExist"
    )]
    UnsupportedOperator {
        /// The key of the requirement.
        key: String,
        /// The rejected operator.
        operator: String,
    },
}

/// The `, found "..."` tail of a syntax error message.
fn found_suffix(found: Option<&str>) -> String {
    found.map(|f| format!(", found {f:?}")).unwrap_or_default()
}

/// The value-count rule an operator imposes, for error messages.
const fn arity_rule(operator: Operator) -> &'static str {
    match operator {
        Operator::In | Operator::NotIn => "'in' and 'notin' require at least one value",
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
            "'=', '==' and '!=' require exactly one value"
        }
        Operator::Exists | Operator::DoesNotExist => "'exists' and '!' take no values",
        Operator::GreaterThan | Operator::LessThan => "'>' and '<' require exactly one value",
    }
}

/// One condition on one label: a key, an operator and a sorted set of values.
///
/// Only [`Requirement::new`] (or parsing) creates one, so every requirement
/// is valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated.
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating it like client-go's `NewRequirement`.
    ///
    /// # Errors
    ///
    /// [`SelectorParseError::InvalidKey`] for a bad key;
    /// [`SelectorParseError::InvalidValueCount`] unless `In`/`NotIn` get at
    /// least one value, `Exists`/`DoesNotExist` none, and the others exactly
    /// one; [`SelectorParseError::InvalidValue`] for a bad value (the empty
    /// string is valid) or a `GreaterThan`/`LessThan` value that is not an `i64`.
    pub fn new(
        key: &str,
        op: Operator,
        values: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, SelectorParseError> {
        let values = values.into_iter().map(Into::into).collect();
        Self::build(key, op, values).map_err(|(_, error)| error)
    }

    /// Validates and normalises; on failure also gives the index of the
    /// offending value, if a single value is to blame.
    fn build(
        key: &str,
        operator: Operator,
        mut values: Vec<String>,
    ) -> Result<Self, (Option<usize>, SelectorParseError)> {
        validate_key(key).map_err(|e| (None, e))?;
        let arity = match operator {
            Operator::In | Operator::NotIn => 1..=usize::MAX,
            Operator::Exists | Operator::DoesNotExist => 0..=0,
            _ => 1..=1,
        };
        if !arity.contains(&values.len()) {
            let error = SelectorParseError::InvalidValueCount {
                key: key.to_owned(),
                operator,
                count: values.len(),
            };
            return Err((None, error));
        }
        let integer = matches!(operator, Operator::GreaterThan | Operator::LessThan);
        for (i, value) in values.iter().enumerate() {
            validate_value(key, value, integer).map_err(|e| (Some(i), e))?;
        }
        values.sort_unstable();
        values.dedup();
        Ok(Self { key: key.to_owned(), operator, values })
    }

    /// The label key this requirement is about.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator relating the label to the values.
    #[must_use]
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and without duplicates (none for `Exists` and
    /// `DoesNotExist`).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(String::as_str)
    }

    /// Whether `labels` satisfy this requirement.
    ///
    /// `In`/`Equals`/`DoubleEquals` need the label present with one of the
    /// values; `NotIn`/`NotEquals` match when the label is absent or has none
    /// of the values; `Exists`/`DoesNotExist` test presence; `GreaterThan`/
    /// `LessThan` need the label present and parsable as a 64-bit integer.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|name| labels.get(name).map(String::as_str))
    }

    /// Whether labels that `get` reads (a label's value by its key) satisfy this requirement:
    /// [`matches`](Self::matches) for labels held other than as a map.
    pub(crate) fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let label = get(self.key.as_str());
        let listed = |value: &str| self.values.iter().any(|v| v == value);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => label.is_some_and(listed),
            Operator::NotIn | Operator::NotEquals => !label.is_some_and(listed),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let int = |v: Option<&str>| v.and_then(|v| v.parse::<i64>().ok());
                match (int(label), int(self.values.first().map(String::as_str))) {
                    (Some(label), Some(bound)) if self.operator == Operator::GreaterThan => {
                        label > bound
                    }
                    (Some(label), Some(bound)) => label < bound,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Writes the requirement in selector syntax, e.g. `a in (x,y)` or `!b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, close) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", ""),
            Operator::DoubleEquals => ("==", ""),
            Operator::NotEquals => ("!=", ""),
            Operator::GreaterThan => (">", ""),
            Operator::LessThan => ("<", ""),
            Operator::In => (" in (", ")"),
            Operator::NotIn => (" notin (", ")"),
        };
        write!(f, "{op}{}{close}", self.values.join(","))
    }
}

/// A label selector: the AND of its [`Requirement`]s, kept sorted by key.
///
/// The default value matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches every object, whatever its labels.
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the selector syntax of `kubectl -l` and `?labelSelector=`,
    /// e.g. `app=web,tier in (front,back),!legacy,replicas>1`.
    ///
    /// Whitespace around tokens is ignored, `,` means AND, and the empty
    /// string is [`LabelSelector::everything`].
    ///
    /// # Errors
    ///
    /// [`SelectorParseError::Syntax`] if the string does not follow the
    /// grammar, [`SelectorParseError::InvalidRequirement`] if a requirement
    /// has an invalid key or value (see [`Requirement::new`]).
    pub fn parse(s: &str) -> Result<Self, SelectorParseError> {
        let tokens = lex(s);
        let parser = Parser { input: s, tokens, position: 0 };
        parser.parse().map(Self::from_requirements)
    }

    /// Converts a `metav1::LabelSelector` like `metav1.LabelSelectorAsSelector`:
    /// each `matchLabels` entry becomes an `Equals` requirement and each
    /// `matchExpressions` entry an `In`, `NotIn`, `Exists` or `DoesNotExist`
    /// requirement. An empty selector matches everything.
    ///
    /// # Errors
    ///
    /// [`SelectorParseError::UnsupportedOperator`] for any other operator,
    /// and the errors of [`Requirement::new`] for invalid keys, values, or
    /// value counts.
    pub fn from_label_selector(sel: &metav1::LabelSelector) -> Result<Self, SelectorParseError> {
        let mut requirements = Vec::new();
        for (key, value) in sel.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Operator::Equals, [value])?);
        }
        for expr in sel.match_expressions.iter().flatten() {
            let op = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorParseError::UnsupportedOperator {
                        key: expr.key.clone(),
                        operator: other.to_owned(),
                    });
                }
            };
            let values = expr.values.iter().flatten();
            requirements.push(Requirement::new(&expr.key, op, values)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Sorts by key, stably so that requirements on one key keep their order.
    fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// Whether this selector has no requirements and so matches everything.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether labels that `get` reads (a label's value by its key) satisfy every requirement.
    pub(crate) fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Like [`LabelSelector::matches`], with `None` meaning no labels at all
    /// (as for an object whose `metadata.labels` is unset).
    #[must_use]
    pub fn matches_opt(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.matches(labels.unwrap_or(&BTreeMap::new()))
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorParseError;

    /// Same as [`LabelSelector::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for LabelSelector {
    /// Writes the canonical form, like client-go's `String()`: requirements
    /// sorted by key and joined by `,`, values sorted, e.g.
    /// `a=b,c in (x,y),!d`. Everything is the empty string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            fmt::Display::fmt(requirement, f)?;
        }
        Ok(())
    }
}

/// Checks that `key` is a qualified name, like Go's `validation.IsQualifiedName`.
fn validate_key(key: &str) -> Result<(), SelectorParseError> {
    let (prefix, name) = key.split_once('/').map_or((None, key), |(p, n)| (Some(p), n));
    let reason = if name.contains('/') {
        "a qualified name has at most one '/', between an optional DNS subdomain prefix and a name"
    } else if prefix.is_some_and(str::is_empty) {
        "prefix part must be non-empty"
    } else if prefix.is_some_and(|p| p.len() > MAX_PREFIX_LEN) {
        "prefix part must be no more than 253 characters"
    } else if prefix.is_some_and(|p| !is_dns_subdomain(p)) {
        "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumerics, '-' or '.', \
         starting and ending with an alphanumeric"
    } else if name.is_empty() {
        "name part must be non-empty"
    } else if name.len() > MAX_NAME_LEN {
        "name part must be no more than 63 characters"
    } else if !is_name(name) {
        "name part must consist of alphanumerics, '-', '_' or '.', \
         starting and ending with an alphanumeric"
    } else {
        return Ok(());
    };
    Err(SelectorParseError::InvalidKey { key: key.to_owned(), reason })
}

/// Checks a label value, like Go's `validation.IsValidLabelValue`, and
/// whether it is an integer if `integer` (for `>` and `<`).
fn validate_value(key: &str, value: &str, integer: bool) -> Result<(), SelectorParseError> {
    let reason = if integer && value.parse::<i64>().is_err() {
        "the value of a '>' or '<' requirement must be an integer"
    } else if value.len() > MAX_NAME_LEN {
        "must be no more than 63 characters"
    } else if !value.is_empty() && !is_name(value) {
        "must be empty or consist of alphanumerics, '-', '_' or '.', \
         starting and ending with an alphanumeric"
    } else {
        return Ok(());
    };
    Err(SelectorParseError::InvalidValue { key: key.to_owned(), value: value.to_owned(), reason })
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    matches!((bytes.first(), bytes.last()), (Some(first), Some(last))
        if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric())
        && bytes.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
fn is_dns_subdomain(s: &str) -> bool {
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        bytes.first().is_some_and(lower_alnum)
            && bytes.last().is_some_and(lower_alnum)
            && bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
    })
}

/// Lexical token kinds of the selector grammar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum TokenKind {
    /// Keys, values, and the keywords `in`/`notin` (which only the operator
    /// position treats as keywords, as client-go's parser contexts do).
    Identifier,
    /// `!`
    Bang,
    /// `=`, `==`, `!=`, `>` or `<`.
    Op(Operator),
    OpenParen,
    CloseParen,
    Comma,
    #[default]
    End,
}

/// A token with its text and 0-based byte offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Token<'a> {
    kind: TokenKind,
    text: &'a str,
    pos: usize,
}

const fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

const fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits `input` into tokens, the last one [`TokenKind::End`].
///
/// Like client-go's lexer: operators are the longest match among `=`, `==`,
/// `!`, `!=`, `>`, `<`, `(`, `)`, `,`; any other run of characters up to
/// whitespace or an operator is an identifier.
fn lex(input: &str) -> Vec<Token<'_>> {
    use TokenKind::Op;
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        let kind = match c {
            _ if is_whitespace(c) => continue,
            '=' if chars.next_if(|&(_, n)| n == '=').is_some() => Op(Operator::DoubleEquals),
            '!' if chars.next_if(|&(_, n)| n == '=').is_some() => Op(Operator::NotEquals),
            '=' => Op(Operator::Equals),
            '>' => Op(Operator::GreaterThan),
            '<' => Op(Operator::LessThan),
            '!' => TokenKind::Bang,
            '(' => TokenKind::OpenParen,
            ')' => TokenKind::CloseParen,
            ',' => TokenKind::Comma,
            _ => {
                while chars.next_if(|&(_, n)| !is_special(n) && !is_whitespace(n)).is_some() {}
                TokenKind::Identifier
            }
        };
        let end = chars.peek().map_or(input.len(), |&(end, _)| end);
        let text = input.get(pos..end).unwrap_or_default();
        tokens.push(Token { kind, text, pos });
    }
    let pos = input.len();
    tokens.push(Token { pos, ..Token::default() });
    tokens
}

/// A value with the byte offset it was read at.
type Positioned<'a> = (&'a str, usize);

/// Recursive-descent parser over the token list, following client-go's.
struct Parser<'a> {
    input: &'a str,
    tokens: Vec<Token<'a>>,
    position: usize,
}

impl<'a> Parser<'a> {
    fn lookahead(&self) -> Token<'a> {
        // Never past the final `End` token: parsing stops there.
        self.tokens.get(self.position).copied().unwrap_or_default()
    }

    fn consume(&mut self) -> Token<'a> {
        let token = self.lookahead();
        self.position = self.position.saturating_add(1);
        token
    }

    fn syntax_error(&self, token: Token<'a>, expected: &'static str) -> SelectorParseError {
        SelectorParseError::Syntax {
            selector: self.input.to_owned(),
            position: token.pos + 1,
            expected,
            found: (token.kind != TokenKind::End).then(|| token.text.to_owned()),
        }
    }

    fn parse(mut self) -> Result<Vec<Requirement>, SelectorParseError> {
        let mut requirements = Vec::new();
        loop {
            let token = self.lookahead();
            match token.kind {
                TokenKind::Identifier | TokenKind::Bang => {}
                TokenKind::End => return Ok(requirements),
                _ => return Err(self.syntax_error(token, r#"a label key, "!" or end of string"#)),
            }
            requirements.push(self.parse_requirement()?);
            let next = self.consume();
            match next.kind {
                TokenKind::End => return Ok(requirements),
                TokenKind::Comma => {
                    let after = self.lookahead();
                    if !matches!(after.kind, TokenKind::Identifier | TokenKind::Bang) {
                        return Err(self.syntax_error(after, r#"a label key or "!" after ",""#));
                    }
                }
                _ => return Err(self.syntax_error(next, r#""," or end of string"#)),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorParseError> {
        let mut token = self.consume();
        let negated = token.kind == TokenKind::Bang;
        if negated {
            token = self.consume();
        }
        if token.kind != TokenKind::Identifier {
            return Err(self.syntax_error(token, "a label key"));
        }
        let (key, key_pos) = (token.text, token.pos);
        let invalid = |pos: usize, error| SelectorParseError::InvalidRequirement {
            selector: self.input.to_owned(),
            position: pos + 1,
            error: Box::new(error),
        };
        validate_key(key).map_err(|e| invalid(key_pos, e))?;
        let next = self.lookahead().kind;
        let (operator, values) = if negated {
            // `!key` followed by anything but `,` or the end fails in `parse`.
            (Operator::DoesNotExist, Vec::new())
        } else if matches!(next, TokenKind::End | TokenKind::Comma) {
            (Operator::Exists, Vec::new())
        } else {
            let token = self.consume();
            let operator = match (token.kind, token.text) {
                (TokenKind::Op(operator), _) => operator,
                (TokenKind::Identifier, "in") => Operator::In,
                (TokenKind::Identifier, "notin") => Operator::NotIn,
                _ => {
                    let expected = r#"an operator ("=", "==", "!=", "in", "notin", ">" or "<")"#;
                    return Err(self.syntax_error(token, expected));
                }
            };
            let values = match operator {
                Operator::In | Operator::NotIn => self.parse_values()?,
                _ => vec![self.parse_exact_value()?],
            };
            (operator, values)
        };
        let (strings, positions): (Vec<String>, Vec<usize>) =
            values.into_iter().map(|(v, pos)| (v.to_owned(), pos)).unzip();
        Requirement::build(key, operator, strings).map_err(|(site, error)| {
            let pos = site.and_then(|i| positions.get(i).copied());
            invalid(pos.unwrap_or(key_pos), error)
        })
    }

    /// Parses `( values )`; the values come back sorted and deduplicated.
    fn parse_values(&mut self) -> Result<Vec<Positioned<'a>>, SelectorParseError> {
        let open = self.consume();
        if open.kind != TokenKind::OpenParen {
            return Err(self.syntax_error(open, r#""(""#));
        }
        let next = self.lookahead();
        let mut values = match next.kind {
            TokenKind::Identifier | TokenKind::Comma => self.parse_value_list()?,
            TokenKind::CloseParen => vec![("", next.pos)],
            _ => return Err(self.syntax_error(next, r#"a value, "," or ")""#)),
        };
        let close = self.consume();
        if close.kind != TokenKind::CloseParen {
            return Err(self.syntax_error(close, r#"")""#));
        }
        values.sort_by(|a, b| a.0.cmp(b.0));
        Ok(values)
    }

    /// Parses comma-separated, possibly empty values up to (not including)
    /// `)`, with client-go's treatment of empty values: `(,a)`, `(a,)` and
    /// `(a,,b)` contain `""`, but `(a,,)` is an error.
    fn parse_value_list(&mut self) -> Result<Vec<Positioned<'a>>, SelectorParseError> {
        fn insert<'v>(values: &mut Vec<Positioned<'v>>, value: &'v str, pos: usize) {
            if values.iter().all(|(v, _)| *v != value) {
                values.push((value, pos));
            }
        }
        let mut values = Vec::new();
        loop {
            let token = self.consume();
            let next = self.lookahead();
            match token.kind {
                TokenKind::Identifier => {
                    insert(&mut values, token.text, token.pos);
                    match next.kind {
                        TokenKind::Comma => {}
                        TokenKind::CloseParen => return Ok(values),
                        TokenKind::End => return Err(self.syntax_error(next, r#"")""#)),
                        _ => return Err(self.syntax_error(next, r#""," or ")""#)),
                    }
                }
                TokenKind::Comma => {
                    if values.is_empty() {
                        insert(&mut values, "", token.pos);
                    }
                    if next.kind == TokenKind::CloseParen {
                        insert(&mut values, "", next.pos);
                        return Ok(values);
                    }
                    if next.kind == TokenKind::Comma {
                        self.consume();
                        insert(&mut values, "", next.pos);
                    }
                }
                _ => return Err(self.syntax_error(token, r#"a value or ",""#)),
            }
        }
    }

    /// Parses the single, possibly empty, value after `=`, `==`, `!=`, `>`, `<`.
    fn parse_exact_value(&mut self) -> Result<Positioned<'a>, SelectorParseError> {
        let next = self.lookahead();
        if matches!(next.kind, TokenKind::End | TokenKind::Comma) {
            return Ok(("", next.pos));
        }
        let token = self.consume();
        if token.kind == TokenKind::Identifier {
            Ok((token.text, token.pos))
        } else {
            Err(self.syntax_error(token, "a value"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metav1::LabelSelectorRequirement;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement::new(key, op, values.iter().copied()).unwrap()
    }

    fn sel(requirements: Vec<Requirement>) -> LabelSelector {
        LabelSelector::from_requirements(requirements)
    }

    fn parse(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn kinds(s: &str) -> Vec<TokenKind> {
        lex(s).iter().map(|t| t.kind).collect()
    }

    // Ports TestSelectorParse.
    #[test]
    fn selector_parse() {
        let good = [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ];
        for s in good {
            assert_eq!(parse(s).to_string(), s.replace(' ', ""), "{s:?}");
        }
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(LabelSelector::parse(s).is_err(), "{s:?} should not parse");
        }
    }

    // Ports TestDeterministicParse.
    #[test]
    fn deterministic_parse() {
        assert_eq!(parse("x=a,a=x"), parse("a=x,x=a"));
        assert_eq!(parse("x=a,a=x").to_string(), "a=x,x=a");
    }

    // Ports TestEverything, TestSetIsEmpty and TestNilMapIsValid.
    #[test]
    fn everything() {
        let everything = LabelSelector::everything();
        assert!(everything.matches(&set(&[("x", "y")])));
        assert!(everything.matches_opt(None));
        assert!(everything.is_everything());
        assert!(everything.requirements().is_empty());
        assert_eq!(everything, LabelSelector::default());
        assert_eq!(everything, parse(""));
        assert_eq!(everything, parse(" \t\r\n"));
        assert_eq!(everything.to_string(), "");
        assert!(!parse("x").is_everything());
    }

    // Ports TestSelectorMatches.
    #[test]
    fn selector_matches() {
        type Labels<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(&str, Labels<'_>, bool)] = &[
            ("", &[("x", "y")], true),
            ("x=y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true), // in and notin in exact match
            ("x", &[("x", "z")], true),
            ("!x", &[("y", "z")], true),
            ("x>1", &[("x", "2")], true),
            ("x<1", &[("x", "0")], true),
            ("x=z", &[], false),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("x", &[("y", "z")], false),
            ("!x", &[("x", "z")], false),
            ("x>1", &[("x", "0")], false),
            ("x<1", &[("x", "2")], false),
        ];
        for (selector, labels, want) in cases {
            assert_eq!(parse(selector).matches(&set(labels)), *want, "{selector:?}");
        }
        let labels = set(&[("foo", "bar"), ("baz", "blah")]);
        for s in ["foo=bar", "baz=blah", "foo=bar,baz=blah"] {
            assert!(parse(s).matches(&labels), "{s:?}");
        }
        for s in ["foo=blah", "baz=bar", "foo=bar,foobar=bar,baz=blah"] {
            assert!(!parse(s).matches(&labels), "{s:?}");
        }
    }

    // Ports TestLexer. Unlike client-go's lexer, ours leaves `in`/`notin`
    // identifiers and lets the parser treat them as keywords in operator
    // position, which is what client-go's parser contexts amount to.
    #[test]
    fn lexer() {
        use TokenKind::{Bang, CloseParen, Comma, End, Identifier, Op, OpenParen};
        let cases = [
            ("", End),
            (",", Comma),
            ("notin", Identifier),
            ("in", Identifier),
            ("=", Op(Operator::Equals)),
            ("==", Op(Operator::DoubleEquals)),
            (">", Op(Operator::GreaterThan)),
            ("<", Op(Operator::LessThan)),
            // The longest valid token wins.
            ("!", Bang),
            ("!=", Op(Operator::NotEquals)),
            ("(", OpenParen),
            (")", CloseParen),
            // Non-special characters are part of an identifier.
            ("~", Identifier),
            ("||", Identifier),
        ];
        for (input, kind) in cases {
            let tokens = lex(input);
            assert_eq!(tokens[0].kind, kind, "{input:?}");
            assert_eq!(tokens[0].text, input);
            assert_eq!(tokens.last().map(|t| t.kind), Some(End));
        }
    }

    // Ports TestLexerSequence and TestParserLookahead.
    #[test]
    fn lexer_sequence() {
        use TokenKind::{
            Bang, CloseParen as Cp, Comma, End, Identifier as Id, Op, OpenParen as Opn,
        };
        let cases: &[(&str, &[TokenKind])] = &[
            ("key in ( value )", &[Id, Id, Opn, Id, Cp]),
            ("key notin ( value )", &[Id, Id, Opn, Id, Cp]),
            ("key in ( value1, value2 )", &[Id, Id, Opn, Id, Comma, Id, Cp]),
            ("key", &[Id]),
            ("!key", &[Bang, Id]),
            ("()", &[Opn, Cp]),
            ("x in (),y", &[Id, Id, Opn, Cp, Comma, Id]),
            (
                "== != (), = notin",
                &[
                    Op(Operator::DoubleEquals),
                    Op(Operator::NotEquals),
                    Opn,
                    Cp,
                    Comma,
                    Op(Operator::Equals),
                    Id,
                ],
            ),
            ("key>2", &[Id, Op(Operator::GreaterThan), Id]),
            ("key<1", &[Id, Op(Operator::LessThan), Id]),
            ("a!==b", &[Id, Op(Operator::NotEquals), Op(Operator::Equals), Id]),
            ("a===b", &[Id, Op(Operator::DoubleEquals), Op(Operator::Equals), Id]),
        ];
        for (input, want) in cases {
            let mut want = want.to_vec();
            want.push(End);
            assert_eq!(kinds(input), want, "{input:?}");
        }
        let tokens = lex("ab  in\t(é,c)");
        let texts: Vec<(&str, usize)> = tokens.iter().map(|t| (t.text, t.pos)).collect();
        let want =
            [("ab", 0), ("in", 4), ("(", 7), ("é", 8), (",", 10), ("c", 11), (")", 12), ("", 13)];
        assert_eq!(texts, want);
    }

    // Ports TestRequirementConstructor.
    #[test]
    fn requirement_constructor() {
        use Operator::{DoesNotExist, Equals, Exists, GreaterThan, In, LessThan, NotIn};
        let long_key = "a".repeat(254);
        let long_value = "a".repeat(254);
        let cases: &[(&str, Operator, &[&str], bool)] = &[
            ("x", In, &[], false),
            ("x", NotIn, &[], false),
            ("x", In, &["foo"], true),
            ("x", NotIn, &["foo"], true),
            ("x", Equals, &["foo", "bar"], false),
            ("x", Exists, &[], true),
            ("x", DoesNotExist, &[], true),
            ("x", Exists, &["foo"], false),
            ("1foo", In, &["bar"], true),
            ("1234", In, &["bar"], true),
            ("y", GreaterThan, &["1"], true),
            ("z", LessThan, &["6"], true),
            ("x", GreaterThan, &[], false),
            ("foo", GreaterThan, &["bar"], false),
            ("barz", LessThan, &["blah"], false),
            (&long_key, Exists, &[], false),
            ("x", Equals, &[&long_value], false),
            ("x", Equals, &["a b"], false),
        ];
        for (key, op, values, ok) in cases {
            let result = Requirement::new(key, *op, values.iter().copied());
            assert_eq!(result.is_ok(), *ok, "{key:?} {op:?} {values:?}: {result:?}");
        }

        let err = |key: &str, op, values: &[&str]| {
            Requirement::new(key, op, values.iter().copied()).unwrap_err()
        };
        assert_eq!(
            err("x", In, &[]),
            SelectorParseError::InvalidValueCount { key: "x".into(), operator: In, count: 0 }
        );
        assert_eq!(
            err("x", Equals, &["a", "a"]),
            SelectorParseError::InvalidValueCount { key: "x".into(), operator: Equals, count: 2 }
        );
        assert_eq!(
            err("x", GreaterThan, &["bar"]),
            SelectorParseError::InvalidValue {
                key: "x".into(),
                value: "bar".into(),
                reason: "the value of a '>' or '<' requirement must be an integer",
            }
        );
        // An integer must still be a valid label value, as in client-go.
        assert!(matches!(err("x", GreaterThan, &["-1"]), SelectorParseError::InvalidValue { .. }));
        assert_eq!(
            err("x", Equals, &["a b"]).to_string(),
            "invalid label value \"a b\" for key \"x\": must be empty or consist of \
             alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
        );
        assert_eq!(
            err("x", Exists, &["a"]).to_string(),
            "invalid values for label key \"x\": 'exists' and '!' take no values (got 1)"
        );
    }

    // Ports the key and value cases of TestIsQualifiedName and
    // TestIsValidLabelValue (k8s.io/apimachinery/pkg/util/validation).
    #[test]
    fn key_and_value_validation() {
        let long_prefix = format!("{}.com/a", "a".repeat(250));
        let good_keys = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/b", "a".repeat(253)),
        ];
        for key in good_keys {
            assert_eq!(validate_key(key), Ok(()), "{key:?}");
        }
        let bad_keys = [
            "",
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
            &long_prefix,
            "ünicode",
        ];
        for key in bad_keys {
            assert!(validate_key(key).is_err(), "{key:?}");
        }
        for value in
            ["", "simple", "now-with-dashes", "1-starts", "end.1", "A_b.C-9", &"a".repeat(63)]
        {
            assert_eq!(validate_value("k", value, false), Ok(()), "{value:?}");
        }
        for value in ["nospecialchars%^=@", "-start", "end-", "_x", "x.", "a b", &"a".repeat(64)] {
            assert!(validate_value("k", value, false).is_err(), "{value:?}");
        }
    }

    // Ports TestToString.
    #[test]
    fn to_string() {
        use Operator::{
            DoesNotExist, DoubleEquals, Equals, Exists, GreaterThan, In, LessThan, NotEquals, NotIn,
        };
        let cases = [
            (
                vec![
                    req("x", In, &["abc", "def"]),
                    req("y", NotIn, &["jkl"]),
                    req("z", Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", NotIn, &["abc", "def"]),
                    req("y", NotEquals, &["jkl"]),
                    req("z", DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", NotIn, &["abc"]),
                    req("y", In, &["jkl", "mno"]),
                    req("z", NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Equals, &["abc"]),
                    req("y", DoubleEquals, &["jkl"]),
                    req("z", NotEquals, &["a"]),
                    req("z", Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("x", GreaterThan, &["2"]),
                    req("y", LessThan, &["8"]),
                    req("z", Exists, &[]),
                ],
                "x>2,y<8,z",
            ),
            // Values are sorted and deduplicated, requirements sorted by key.
            (
                vec![
                    req("c", In, &["y", "x", "y"]),
                    req("a", Equals, &["b"]),
                    req("d", DoesNotExist, &[]),
                ],
                "a=b,c in (x,y),!d",
            ),
        ];
        for (requirements, want) in cases {
            let selector = sel(requirements);
            assert_eq!(selector.to_string(), want);
            assert_eq!(parse(want), selector, "{want:?} round-trips");
        }
    }

    // Ports TestRequirementSelectorMatching.
    #[test]
    fn requirement_selector_matching() {
        use Operator::{DoesNotExist, Exists, GreaterThan, In, NotIn};
        let cases = [
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![req("x", In, &["foo"]), req("y", NotIn, &["alpha"])],
                true,
            ),
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![req("x", In, &["foo"]), req("y", In, &["alpha"])],
                false,
            ),
            (set(&[("y", "")]), vec![req("x", NotIn, &[""]), req("y", Exists, &[])], true),
            (set(&[("y", "")]), vec![req("x", DoesNotExist, &[]), req("y", Exists, &[])], true),
            (set(&[("y", "")]), vec![req("x", NotIn, &[""]), req("y", DoesNotExist, &[])], false),
            (set(&[("y", "baz")]), vec![req("x", In, &[""])], false),
            (set(&[("z", "2")]), vec![req("z", GreaterThan, &["1"])], true),
            (set(&[("z", "v2")]), vec![req("z", GreaterThan, &["1"])], false),
        ];
        for (labels, requirements, want) in cases {
            let selector = sel(requirements);
            assert_eq!(selector.matches(&labels), want, "{selector} on {labels:?}");
        }
    }

    // Ports TestSetSelectorParser.
    #[test]
    fn set_selector_parser() {
        use Operator::{Equals, Exists, GreaterThan, In, LessThan, NotEquals, NotIn};
        let cases = [
            ("", vec![]),
            ("\rx", vec![req("x", Exists, &[])]),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                vec![req("this-is-a-dns.domain.com/key-with-dash", Exists, &[])],
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                vec![req("this-is-another-dns.domain.com/key-with-dash", In, &["so", "what"])],
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                vec![req("0.1.2.domain/99", NotIn, &["10.10.100.1", "tick.tack.clock"])],
            ),
            ("foo  in\t (abc)", vec![req("foo", In, &["abc"])]),
            ("x notin\n (abc)", vec![req("x", NotIn, &["abc"])]),
            ("x  notin\t\t\t(abc,def)", vec![req("x", NotIn, &["abc", "def"])]),
            ("x in (abc,def)", vec![req("x", In, &["abc", "def"])]),
            ("x in (abc,)", vec![req("x", In, &["abc", ""])]),
            ("x in ()", vec![req("x", In, &[""])]),
            (
                "x notin (abc,,def),bar,z in (),w",
                vec![
                    req("bar", Exists, &[]),
                    req("w", Exists, &[]),
                    req("x", NotIn, &["abc", "", "def"]),
                    req("z", In, &[""]),
                ],
            ),
            ("x,y in (a)", vec![req("x", Exists, &[]), req("y", In, &["a"])]),
            ("x=a", vec![req("x", Equals, &["a"])]),
            ("x>1", vec![req("x", GreaterThan, &["1"])]),
            ("x<7", vec![req("x", LessThan, &["7"])]),
            ("x=a,y!=b", vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"])]),
            (
                "x=a,y!=b,z in (h,i,j)",
                vec![
                    req("x", Equals, &["a"]),
                    req("y", NotEquals, &["b"]),
                    req("z", In, &["h", "i", "j"]),
                ],
            ),
            ("x notin ( )", vec![req("x", NotIn, &[""])]),
            ("x notin (, a)", vec![req("x", NotIn, &["", "a"])]),
            ("a ", vec![req("a", Exists, &[])]),
            ("a in (x,y,notin, z,in)", vec![req("a", In, &["in", "notin", "x", "y", "z"])]),
            (
                "in in (in),notin notin (notin)",
                vec![req("in", In, &["in"]), req("notin", NotIn, &["notin"])],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input), sel(want), "{input:?}");
        }
        let bad = [
            "x=a||y=b",
            "x,,y",
            ",x,y",
            "x nott in (y)",
            "a in (xyz),",
            "a in (xyz)b notin ()",
            "a in (xyz abc)",
            "a notin(",
            "a (",
            "(",
        ];
        for input in bad {
            assert!(LabelSelector::parse(input).is_err(), "{input:?} should not parse");
        }
    }

    // Ports client-go's handling of empty values in `( )` lists
    // (parseIdentifiersList): commas pair up, so `(a,,)` is an error.
    #[test]
    fn empty_values_in_lists() {
        let cases: &[(&str, Option<&[&str]>)] = &[
            ("x in (,)", Some(&[""])),
            ("x in (,a)", Some(&["", "a"])),
            ("x in (,,a)", Some(&["", "a"])),
            ("x in (a,,b)", Some(&["", "a", "b"])),
            ("x in (,,,)", Some(&[""])),
            ("x in (a,,,)", Some(&["", "a"])),
            ("x in (a,,)", None),
            ("x in (,,)", None),
            ("x in (a,=)", None),
        ];
        for (input, want) in cases {
            let got = LabelSelector::parse(input).ok();
            let values = got.as_ref().map(|s| s.requirements()[0].values().collect::<Vec<_>>());
            assert_eq!(values.as_deref(), *want, "{input:?}");
        }
    }

    // Ports TestLabelSelectorAsSelector (metav1 helpers_test.go).
    #[test]
    fn label_selector_as_selector() {
        let expr = |key: &str, operator: &str, values: Option<&[&str]>| LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
        };
        let labels = Some(set(&[("foo", "bar")]));
        let exprs = Some(vec![expr("baz", "In", Some(&["qux", "norf"]))]);
        let convert = |match_labels, match_expressions| {
            LabelSelector::from_label_selector(&metav1::LabelSelector {
                match_labels,
                match_expressions,
            })
        };
        assert_eq!(convert(None, None), Ok(LabelSelector::everything()));
        assert_eq!(convert(Some(BTreeMap::new()), Some(vec![])), Ok(LabelSelector::everything()));
        assert_eq!(convert(labels.clone(), None), Ok(parse("foo=bar")));
        assert_eq!(convert(None, exprs.clone()), Ok(parse("baz in (norf,qux)")));
        let both = convert(labels, exprs).unwrap();
        assert_eq!(both, parse("baz in (norf,qux),foo=bar"));
        assert_eq!(both.to_string(), "baz in (norf,qux),foo=bar");

        let all_ops = convert(
            None,
            Some(vec![
                expr("d", "DoesNotExist", None),
                expr("a", "NotIn", Some(&["x"])),
                expr("c", "Exists", Some(&[])),
                expr("b", "In", Some(&["y", "y"])),
            ]),
        );
        assert_eq!(all_ops.unwrap().to_string(), "a notin (x),b in (y),c,!d");

        let err = |e| convert(None, Some(vec![e])).unwrap_err();
        assert!(matches!(
            err(expr("baz", "Exists", Some(&["qux", "norf"]))),
            SelectorParseError::InvalidValueCount { count: 2, .. }
        ));
        assert!(matches!(
            err(expr("baz", "In", None)),
            SelectorParseError::InvalidValueCount { count: 0, .. }
        ));
        assert_eq!(
            err(expr("baz", "Gt", Some(&["1"]))).to_string(),
            "invalid operator \"Gt\" for label key \"baz\": expected In, NotIn, Exists or DoesNotExist"
        );
        let bad_label = convert(Some(set(&[("a/b/c", "x")])), None).unwrap_err();
        assert!(matches!(bad_label, SelectorParseError::InvalidKey { .. }));
        let bad_value = convert(Some(set(&[("a", "x y")])), None).unwrap_err();
        assert!(matches!(bad_value, SelectorParseError::InvalidValue { .. }));
    }

    #[test]
    fn syntax_error_messages() {
        let cases = [
            ("a in (x", r#"invalid label selector "a in (x": expected ")" at position 8"#),
            (
                "x==a==b",
                r#"invalid label selector "x==a==b": expected "," or end of string at position 5, found "==""#,
            ),
            (
                "x,,y",
                r#"invalid label selector "x,,y": expected a label key or "!" after "," at position 3, found ",""#,
            ),
            (
                ",x",
                r#"invalid label selector ",x": expected a label key, "!" or end of string at position 1, found ",""#,
            ),
            (
                "x nott in (y)",
                r#"invalid label selector "x nott in (y)": expected an operator ("=", "==", "!=", "in", "notin", ">" or "<") at position 3, found "nott""#,
            ),
            (
                "a notin(",
                r#"invalid label selector "a notin(": expected a value, "," or ")" at position 9"#,
            ),
            (
                "a in (xyz abc)",
                r#"invalid label selector "a in (xyz abc)": expected "," or ")" at position 11, found "abc""#,
            ),
            ("a in x", r#"invalid label selector "a in x": expected "(" at position 6, found "x""#),
            ("!", r#"invalid label selector "!": expected a label key at position 2"#),
            ("a=(", r#"invalid label selector "a=(": expected a value at position 3, found "(""#),
            (
                "x in (a,,)",
                r#"invalid label selector "x in (a,,)": expected a value or "," at position 10, found ")""#,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(LabelSelector::parse(input).unwrap_err().to_string(), want);
        }
        assert_eq!(
            LabelSelector::parse("a in (x"),
            Err(SelectorParseError::Syntax {
                selector: "a in (x".into(),
                position: 8,
                expected: r#"")""#,
                found: None,
            })
        );
    }

    #[test]
    fn validation_errors_in_selectors() {
        let err = LabelSelector::parse("a=b, c$=d").unwrap_err();
        assert_eq!(
            err,
            SelectorParseError::InvalidRequirement {
                selector: "a=b, c$=d".into(),
                position: 6,
                error: Box::new(SelectorParseError::InvalidKey {
                    key: "c$".into(),
                    reason: "name part must consist of alphanumerics, '-', '_' or '.', \
                             starting and ending with an alphanumeric",
                }),
            }
        );
        assert!(err.to_string().starts_with(
            r#"invalid label selector "a=b, c$=d" at position 6: invalid label key "c$": name part"#
        ));
        assert_eq!(
            LabelSelector::parse("x<a").unwrap_err().to_string(),
            r#"invalid label selector "x<a" at position 3: invalid label value "a" for key "x": the value of a '>' or '<' requirement must be an integer"#
        );
        assert_eq!(
            LabelSelector::parse("x>").unwrap_err().to_string(),
            r#"invalid label selector "x>" at position 3: invalid label value "" for key "x": the value of a '>' or '<' requirement must be an integer"#
        );
        let err = LabelSelector::parse("k in (ok, -bad, fine)").unwrap_err();
        assert!(matches!(
            err,
            SelectorParseError::InvalidRequirement { position: 11, ref error, .. }
                if matches!(**error, SelectorParseError::InvalidValue { ref value, .. } if value == "-bad")
        ));
        // The key is checked before the rest of the requirement, as in client-go.
        assert!(matches!(
            LabelSelector::parse("a/b/c in (x"),
            Err(SelectorParseError::InvalidRequirement { position: 1, .. })
        ));
        assert!(matches!(
            LabelSelector::parse("a=b, ä=x"),
            Err(SelectorParseError::InvalidRequirement { position: 6, .. })
        ));
    }

    #[test]
    fn semantics() {
        let empty = set(&[]);
        // `!=` and `notin` match when the key is absent; `=` and `in` do not.
        assert!(parse("a!=x").matches(&empty));
        assert!(parse("a notin (x)").matches(&empty));
        assert!(!parse("a=x").matches(&empty));
        assert!(!parse("a in (x)").matches(&empty));
        assert!(parse("a==x").matches(&set(&[("a", "x")])));
        assert!(parse("a in (x,y)").matches(&set(&[("a", "y")])));
        assert!(!parse("a notin (x,y)").matches(&set(&[("a", "y")])));
        assert!(parse("a=").matches(&set(&[("a", "")])));
        assert!(!parse("a=").matches(&empty));
        // `>` and `<` need the label, as an integer.
        assert!(!parse("a>1").matches(&empty));
        assert!(!parse("a<1").matches(&empty));
        assert!(!parse("a<1").matches(&set(&[("a", "x")])));
        assert!(parse("a<1").matches(&set(&[("a", "-5")])));
        assert!(parse("a>1").matches(&set(&[("a", "+5")])));
        assert!(!parse("a>1").matches(&set(&[("a", "1")])));
        assert!(parse("a>9223372036854775806").matches(&set(&[("a", "9223372036854775807")])));
        assert!(!parse("a<1").matches(&set(&[("a", "-99999999999999999999")])));
        assert!(LabelSelector::parse("a>99999999999999999999").is_err());
        // Duplicate keys are allowed and must all hold.
        let both = parse("a,a!=x");
        assert_eq!(both.requirements().len(), 2);
        assert!(both.matches(&set(&[("a", "y")])));
        assert!(!both.matches(&set(&[("a", "x")])));
        assert!(!both.matches(&empty));
        assert!(parse("a>1,a<5").matches(&set(&[("a", "3")])));
        assert!(!parse("a>1,a<5").matches(&set(&[("a", "7")])));
        // `None` labels are no labels.
        assert!(parse("!a,b!=c").matches_opt(None));
        assert!(!parse("a").matches_opt(None));
        assert!(parse("a").matches_opt(Some(&set(&[("a", "")]))));
    }

    #[test]
    fn accessors_and_traits() {
        let selector: LabelSelector = "z=1, a in (y,x), !m".parse().unwrap();
        let keys: Vec<&str> = selector.requirements().iter().map(Requirement::key).collect();
        assert_eq!(keys, ["a", "m", "z"]);
        let a = &selector.requirements()[0];
        assert_eq!(a.operator(), Operator::In);
        assert_eq!(a.values().collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(a.to_string(), "a in (x,y)");
        assert!(a.matches(&set(&[("a", "x")])));
        assert_eq!(selector.requirements()[1].values().count(), 0);
        assert_eq!(selector.to_string(), "a in (x,y),!m,z=1");
        assert_eq!(selector.clone(), selector);
        let owned: Vec<String> = vec!["v".to_owned()];
        assert!(Requirement::new("k", Operator::Equals, owned).is_ok());
        assert!(Requirement::new("k", Operator::Exists, Vec::<String>::new()).is_ok());
    }

    #[test]
    fn display_round_trips() {
        let inputs = [
            "a=b,c in (x,y),!d",
            " x  notin ( b , a , ) , y == 3 ,z>0",
            "example.com/app in (,web),tier!=,v<10,k",
            "in=in,notin notin (in,notin)",
            "a,a,a=,a in ()",
        ];
        for input in inputs {
            let selector = parse(input);
            let text = selector.to_string();
            assert_eq!(parse(&text), selector, "{input:?} -> {text:?}");
            assert_eq!(parse(&text).to_string(), text);
        }
        assert_eq!(parse(" x  notin ( b , a , ) , y == 3").to_string(), "x notin (,a,b),y==3");
    }
}
