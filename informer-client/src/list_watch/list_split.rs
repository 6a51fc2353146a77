//! A list response body, cut into its parts while it is still arriving.
//!
//! A list of 20,000 pods is a few hundred MiB of JSON. Held whole and decoded at the end, it costs
//! that much memory on top of the decoded objects, and decoding waits for the last byte. The
//! [`ListSplitter`] instead takes the body chunk by chunk and hands out each part as soon as its
//! last byte is in: every member of the top-level object (`kind`, `metadata`, …) with its raw
//! value, and each element of `items` on its own. What it holds is at most one incomplete part.
//!
//! It finds boundaries only: strings (with their escapes) and bracket depth. Whether a part is
//! valid JSON is for the decoder of that part to say, with `serde_json`'s own errors. Structure
//! between parts (the colons, commas and braces of the list object and of `items`) is checked
//! here, so a body the splitter accepts is one whose parts, once valid, make a valid list.
//!
//! No part may be larger than the splitter's maximum part size (the client's maximum object
//! size): a part that grows past it is an error as soon as it does, so a hostile or broken body
//! cannot make the splitter hold more than that, whatever its length.

use std::fmt;

/// The key of the member whose array is split into elements.
const ITEMS: &str = "items";

/// One complete part of the body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// A member of the list object, other than an `items` array: its key and its raw value.
    Member { key: &'a str, value: &'a [u8], offset: u64 },
    /// One element of `items`, raw.
    Item { value: &'a [u8], offset: u64 },
}

/// Where the body stops being a list, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitError {
    /// The byte offset of the fault in the whole body.
    pub(crate) offset: u64,
    /// What was expected there.
    pub(crate) message: String,
    /// Set when a part is larger than the maximum part size: which part it is.
    pub(crate) too_large: Option<Part>,
    /// The maximum part size.
    pub(crate) limit: usize,
}

/// Which part of a list body an error is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// An element of `items`.
    Item,
    /// A member of the list object, with its key (empty while the key itself is read).
    Member(String),
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (byte {})", self.message, self.offset)
    }
}

/// Where in the list object the next byte that is not whitespace belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the list object's `{`.
    Start,
    /// Right after `{`: a key or `}`.
    FirstKey,
    /// After `,`: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After `:`: the member's value.
    Value,
    /// After a member's value: `,` or `}`.
    AfterMember,
    /// Right after `items`' `[`: an element or `]`.
    FirstItem,
    /// After `,` in `items`: an element.
    Item,
    /// After an element: `,` or `]`.
    AfterItem,
    /// After the list object's `}`: only whitespace.
    End,
}

/// A token being read: a key, a member's value or an element.
#[derive(Debug, Clone, Copy)]
struct Token {
    /// Where it starts in the buffer.
    start: usize,
    kind: TokenKind,
    /// Open brackets (containers only).
    depth: u32,
    /// Inside a string (containers: a string within).
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    String,
    Container,
    Scalar,
}

/// Cuts a list body into [`Piece`]s; see the [module documentation](self).
#[derive(Debug)]
pub(crate) struct ListSplitter {
    /// Bytes not yet handed out (and the part being read).
    buf: Vec<u8>,
    /// The body offset of `buf[0]`.
    base: u64,
    /// The next byte of `buf` to look at.
    pos: usize,
    state: State,
    /// The token being read, if one has started.
    token: Option<Token>,
    /// The key of the member being read.
    key: String,
    /// Whether an `items` array has begun.
    saw_items_array: bool,
    /// The largest part handed out, in bytes.
    max_part: usize,
}

impl ListSplitter {
    /// A splitter whose parts may be at most `max_part` bytes long.
    pub(crate) fn new(max_part: usize) -> Self {
        Self {
            buf: Vec::new(),
            base: 0,
            pos: 0,
            state: State::Start,
            token: None,
            key: String::new(),
            saw_items_array: false,
            max_part,
        }
    }

    /// Whether the body had an `items` array (its elements come out as [`Piece::Item`]s, so an
    /// empty one would otherwise leave no trace).
    pub(crate) fn saw_items_array(&self) -> bool {
        self.saw_items_array
    }

    /// Appends the next chunk of the body. Parts already handed out are dropped first.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let keep_from = self.token.map_or(self.pos, |t| t.start);
        if keep_from > 0 {
            self.buf.drain(..keep_from);
            self.base += keep_from as u64;
            self.pos -= keep_from;
            if let Some(token) = &mut self.token {
                token.start = 0;
            }
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete part, or `None` until more of the body has been pushed.
    pub(crate) fn next_piece(&mut self) -> Result<Option<Piece<'_>>, SplitError> {
        loop {
            if let Some(token) = self.token {
                let end = self.scan(token);
                // Checked whether the part is complete or not, so that the limit does not
                // depend on how the body was chunked.
                let len = end.unwrap_or(self.buf.len()) - token.start;
                if len > self.max_part {
                    return Err(self.too_large(token.start));
                }
                let Some(end) = end else { return Ok(None) };
                self.token = None;
                match self.state {
                    State::Key | State::FirstKey => {
                        let raw = &self.buf[token.start..end];
                        self.key = serde_json::from_slice(raw)
                            .map_err(|e| self.error_at(token.start, &format!("a key: {e}")))?;
                        self.state = State::Colon;
                    }
                    State::Value => {
                        self.state = State::AfterMember;
                        let offset = self.base + token.start as u64;
                        let value = &self.buf[token.start..end];
                        return Ok(Some(Piece::Member { key: &self.key, value, offset }));
                    }
                    _ => {
                        self.state = State::AfterItem;
                        let offset = self.base + token.start as u64;
                        let value = &self.buf[token.start..end];
                        return Ok(Some(Piece::Item { value, offset }));
                    }
                }
                continue;
            }
            let Some(at) = self.buf[self.pos..].iter().position(|b| !is_whitespace(*b)) else {
                self.pos = self.buf.len();
                return Ok(None);
            };
            let at = self.pos + at;
            let byte = self.buf[at];
            self.pos = at + 1;
            match (self.state, byte) {
                (State::Start, b'{') => self.state = State::FirstKey,
                (State::FirstKey | State::AfterMember, b'}') => self.state = State::End,
                (State::FirstKey | State::Key, b'"') => self.start_token(at, TokenKind::String),
                (State::Colon, b':') => self.state = State::Value,
                (State::Value, b'[') if self.key == ITEMS => {
                    self.state = State::FirstItem;
                    self.saw_items_array = true;
                }
                (State::Value | State::FirstItem | State::Item, _)
                    if !matches!(byte, b',' | b':' | b'}' | b']') =>
                {
                    let kind = match byte {
                        b'{' | b'[' => TokenKind::Container,
                        b'"' => TokenKind::String,
                        _ => TokenKind::Scalar,
                    };
                    // A scalar's first byte is part of it: scan it again.
                    if kind == TokenKind::Scalar {
                        self.pos = at;
                    }
                    self.start_token(at, kind);
                }
                (State::AfterMember, b',') => self.state = State::Key,
                (State::AfterItem, b',') => self.state = State::Item,
                (State::FirstItem | State::AfterItem, b']') => self.state = State::AfterMember,
                (state, _) => {
                    return Err(self
                        .error_at(at, &format!("{}, found {:?}", expected(state), byte as char)));
                }
            }
        }
    }

    /// Checks that the body ended where the list did.
    pub(crate) fn finish(&mut self) -> Result<(), SplitError> {
        let done = self.next_piece()?.is_none() && self.state == State::End;
        if done {
            return Ok(());
        }
        // A piece left here means the caller stopped taking them: the list did not end either.
        let at = self.token.map_or(self.buf.len(), |t| t.start);
        Err(self.error_at(at, &format!("the body ended early: {}", expected(self.state))))
    }

    fn start_token(&mut self, start: usize, kind: TokenKind) {
        let in_string = kind == TokenKind::String;
        self.token = Some(Token { start, kind, depth: 1, in_string, escaped: false });
    }

    /// Reads on in `token` from `pos`; its end (exclusive) once complete.
    fn scan(&mut self, mut token: Token) -> Option<usize> {
        let buf = &self.buf;
        let mut pos = self.pos;
        let end = loop {
            if token.in_string {
                if token.escaped {
                    if pos >= buf.len() {
                        break None;
                    }
                    pos += 1;
                    token.escaped = false;
                }
                match memchr::memchr2(b'"', b'\\', &buf[pos..]) {
                    None => {
                        pos = buf.len();
                        break None;
                    }
                    Some(i) if buf[pos + i] == b'\\' => {
                        pos += i + 1;
                        token.escaped = true;
                    }
                    Some(i) => {
                        pos += i + 1;
                        token.in_string = false;
                        if token.kind == TokenKind::String {
                            break Some(pos);
                        }
                    }
                }
                continue;
            }
            let Some(&byte) = buf.get(pos) else { break None };
            if token.kind == TokenKind::Scalar {
                if is_whitespace(byte) || matches!(byte, b',' | b'}' | b']') {
                    break Some(pos);
                }
                pos += 1;
                continue;
            }
            pos += 1;
            match byte {
                b'"' => token.in_string = true,
                b'{' | b'[' => token.depth += 1,
                b'}' | b']' => {
                    token.depth -= 1;
                    if token.depth == 0 {
                        break Some(pos);
                    }
                }
                _ => {}
            }
        };
        self.pos = pos;
        if end.is_none() {
            self.token = Some(token);
        }
        end
    }

    fn error_at(&self, at: usize, message: &str) -> SplitError {
        SplitError {
            offset: self.base + at as u64,
            message: message.to_owned(),
            too_large: None,
            limit: self.max_part,
        }
    }

    /// The error for the part starting at `at`, which has grown past the maximum part size.
    fn too_large(&self, at: usize) -> SplitError {
        let part = match self.state {
            State::Key | State::FirstKey => Part::Member(String::new()),
            State::Value => Part::Member(self.key.clone()),
            _ => Part::Item,
        };
        let what = match &part {
            Part::Item => "an item".to_owned(),
            Part::Member(key) if key.is_empty() => "a key".to_owned(),
            Part::Member(key) => format!("the `{key}` member"),
        };
        SplitError {
            offset: self.base + at as u64,
            message: format!("{what} is larger than {} bytes", self.max_part),
            too_large: Some(part),
            limit: self.max_part,
        }
    }
}

/// What may come next in `state`, for error messages.
fn expected(state: State) -> &'static str {
    match state {
        State::Start => "expected the list object's `{`",
        State::FirstKey => "expected a key or `}`",
        State::Key => "expected a key",
        State::Colon => "expected `:`",
        State::Value => "expected a value",
        State::AfterMember => "expected `,` or `}`",
        State::FirstItem => "expected an item or `]`",
        State::Item => "expected an item",
        State::AfterItem => "expected `,` or `]` after an item",
        State::End => "expected nothing after the list",
    }
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything the splitter hands out for `body` pushed in chunks of `size`, as owned
    /// `(key or "", value, offset)` triples.
    fn split(body: &[u8], size: usize) -> Result<Vec<(String, String, u64)>, SplitError> {
        let mut splitter = ListSplitter::new(usize::MAX);
        let mut out = Vec::new();
        for chunk in body.chunks(size.max(1)) {
            splitter.push(chunk);
            while let Some(piece) = splitter.next_piece()? {
                out.push(match piece {
                    Piece::Member { key, value, offset } => {
                        (key.to_owned(), String::from_utf8_lossy(value).into_owned(), offset)
                    }
                    Piece::Item { value, offset } => {
                        (String::new(), String::from_utf8_lossy(value).into_owned(), offset)
                    }
                });
            }
        }
        splitter.finish()?;
        Ok(out)
    }

    #[test]
    fn members_and_items_come_out_whole_at_every_chunk_size() {
        let body = br#" {"kind":"PodList", "apiVersion" : "v1","metadata":{"resourceVersion":"7","continue":"a\"}]b"},
            "items":[ {"metadata":{"name":"a\\","labels":{"x":"[{"}}} ,{"n":[1,2,{"k":null}]},"s\"x",12.5e3,true,null],
            "extra":[1,{"a":"b"}],"n":-1}
        "#;
        let whole = split(body, body.len()).unwrap();
        let shapes: Vec<(&str, &str)> =
            whole.iter().map(|(k, v, _)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            shapes,
            [
                ("kind", r#""PodList""#),
                ("apiVersion", r#""v1""#),
                ("metadata", r#"{"resourceVersion":"7","continue":"a\"}]b"}"#),
                ("", r#"{"metadata":{"name":"a\\","labels":{"x":"[{"}}}"#),
                ("", r#"{"n":[1,2,{"k":null}]}"#),
                ("", r#""s\"x""#),
                ("", "12.5e3"),
                ("", "true"),
                ("", "null"),
                ("extra", r#"[1,{"a":"b"}]"#),
                ("n", "-1"),
            ]
        );
        for (_, value, offset) in &whole {
            let at = usize::try_from(*offset).unwrap();
            assert_eq!(&body[at..at + value.len()], value.as_bytes());
        }
        for size in 1..=40 {
            assert_eq!(split(body, size).unwrap(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn items_that_are_not_an_array_are_a_member() {
        let got = split(br#"{"items":null,"metadata":{}}"#, 3).unwrap();
        assert_eq!(got[0], ("items".to_owned(), "null".to_owned(), 9));
        assert_eq!(split(br#"{"items":[]}"#, 1).unwrap(), []);
        assert_eq!(split(b"{}", 1).unwrap(), []);
    }

    #[test]
    fn escaped_keys_are_read_as_keys() {
        let got = split(br#"{"\u0069tems":[1]}"#, 2).unwrap();
        assert_eq!(got, [(String::new(), "1".to_owned(), 15)]);
    }

    #[test]
    fn structure_errors_name_the_byte() {
        let cases: [(&[u8], &str, u64); 6] = [
            (b"[1]", "expected the list object's `{`", 0),
            (br#"{"items":[1 2]}"#, "expected `,` or `]` after an item", 12),
            (br#"{"a" 1}"#, "expected `:`", 5),
            (br#"{"a":1,}"#, "expected a key", 7),
            (br#"{"items":[1,]}"#, "expected an item", 12),
            (br#"{"a":1} x"#, "expected nothing after the list", 8),
        ];
        for (body, message, offset) in cases {
            for size in [1, 4, body.len()] {
                let error = split(body, size).unwrap_err();
                assert!(error.message.starts_with(message), "{error} for {body:?}");
                assert_eq!(error.offset, offset, "{error} for {body:?}");
            }
        }
    }

    #[test]
    fn truncated_bodies_fail_at_finish() {
        for body in [&b""[..], br#"{"items":[{"a":1}"#, br#"{"items":[{"a":"#, br#"{"a":1"#] {
            let error = split(body, 2).unwrap_err();
            assert!(error.message.starts_with("the body ended early"), "{error}");
        }
    }

    #[test]
    fn holds_at_most_one_incomplete_part() {
        let item = br#"{"metadata":{"name":"x"},"spec":{"a":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}}"#;
        let mut body = br#"{"metadata":{},"items":["#.to_vec();
        for i in 0..1000 {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item);
        }
        body.extend_from_slice(b"]}");
        let mut splitter = ListSplitter::new(usize::MAX);
        let mut items = 0;
        for chunk in body.chunks(100) {
            splitter.push(chunk);
            assert!(splitter.buf.len() <= item.len() + 100);
            while let Some(piece) = splitter.next_piece().unwrap() {
                items += usize::from(matches!(piece, Piece::Item { .. }));
            }
        }
        splitter.finish().unwrap();
        assert_eq!(items, 1000);
    }

    #[test]
    fn a_part_over_the_limit_is_an_error_at_every_chunk_size() {
        let item = format!(r#"{{"metadata":{{"name":"{}"}}}}"#, "x".repeat(100));
        let body = format!(r#"{{"metadata":{{}},"items":[{{"a":1}},{item},{{"b":2}}]}}"#);
        let at = body.find(&item).unwrap() as u64;
        for size in [1, 7, 64, body.len()] {
            let mut splitter = ListSplitter::new(item.len() - 1);
            let mut seen = 0;
            let error = 'split: {
                for chunk in body.as_bytes().chunks(size) {
                    splitter.push(chunk);
                    loop {
                        match splitter.next_piece() {
                            Ok(Some(_)) => seen += 1,
                            Ok(None) => break,
                            Err(error) => break 'split error,
                        }
                    }
                }
                panic!("chunks of {size}: no error");
            };
            assert_eq!(error.too_large, Some(Part::Item), "chunks of {size}");
            assert_eq!(error.offset, at, "chunks of {size}");
            assert_eq!(error.message, format!("an item is larger than {} bytes", item.len() - 1));
            // The metadata and the first item came out; nothing of the big one was kept past
            // the limit plus one chunk.
            assert_eq!(seen, 2, "chunks of {size}");
            assert!(splitter.buf.len() <= item.len() + size, "chunks of {size}");
        }
        // Exactly at the limit is fine; members and keys are bounded too.
        assert!(split_limited(&body, item.len()).is_ok());
        let long_member = format!(r#"{{"metadata":{{"x":"{}"}},"items":[]}}"#, "y".repeat(50));
        let error = split_limited(&long_member, 20).unwrap_err();
        assert_eq!(error.too_large, Some(Part::Member("metadata".to_owned())));
        let long_key = format!(r#"{{"{}":1}}"#, "k".repeat(50));
        let error = split_limited(&long_key, 20).unwrap_err();
        assert_eq!(error.too_large, Some(Part::Member(String::new())));
    }

    fn split_limited(body: &str, max_part: usize) -> Result<(), SplitError> {
        let mut splitter = ListSplitter::new(max_part);
        for chunk in body.as_bytes().chunks(3) {
            splitter.push(chunk);
            while splitter.next_piece()?.is_some() {}
        }
        splitter.finish()
    }
}
