//! Byte-level mutations of any input: flipped bits, odd bytes, inserted tokens, deleted,
//! duplicated or spliced ranges, truncation, deep nesting and invalid UTF-8.
//!
//! Positions and lengths come from a [`fastrand::Rng`] that the property seeds from its
//! `Unstructured` bytes, so an input is reproduced from its arbtest seed, and a large seed
//! file does not use up the bytes that choose what to do with it.

use fastrand::Rng;

/// Bytes that change how a JSON or YAML parser reads what follows.
pub const INTERESTING: &[u8] =
    b"\"\\{}[],:\n\r\t \x00\x7f\x80\xbf\xc0\xc3\xed\xf4\xff-+.eE0123456789'&*!#|>?%@`";

/// Byte sequences that are not UTF-8: a lone continuation byte, a truncated sequence, an
/// overlong encoding, an encoded UTF-16 surrogate, a code point past U+10FFFF.
pub const INVALID_UTF8: &[&[u8]] = &[
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xff\xfe",
];

/// Tokens of JSON that parsers treat specially: escapes (surrogates among them), extreme and
/// signed numbers, literals, and structure.
pub const JSON_TOKENS: &[&[u8]] = &[
    br"\ud800",
    br"\udc00",
    br"\ud83d\ude00",
    br"\u0000",
    br#"\""#,
    br"\\",
    br"\/",
    b"-0",
    b"-0.0",
    b"1e999",
    b"-1e999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"9007199254740993",
    b"0.1e-400",
    b"null",
    b"true",
    b"false",
    b"\"\"",
    b"{}",
    b"[]",
    br#"{"a":"#,
    br#""kind":"#,
    br#""apiVersion":"#,
    br#""metadata":{"#,
    br#""items":["#,
    br#""resourceVersion":"1","#,
    br#""continue":"x","#,
    br#""type":"ADDED","#,
    br#""object":"#,
    br#""managedFields":[{"manager":"m"}],"#,
    b",",
    b":",
    b"\n",
    b"\r\n",
];

/// Applies `ops` mutations to `data`, splicing from `others` and inserting from `dictionary`.
pub fn mutate(
    rng: &mut Rng,
    data: &mut Vec<u8>,
    others: &[&[u8]],
    dictionary: &[&[u8]],
    ops: usize,
) {
    for _ in 0..ops {
        mutate_once(rng, data, others, dictionary);
    }
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, others: &[&[u8]], dictionary: &[&[u8]]) {
    let len = data.len();
    let at = rng.usize(0..=len);
    match rng.u8(0..12) {
        0 if len > 0 => {
            let i = rng.usize(0..len);
            data[i] ^= 1 << rng.u8(0..8);
        }
        1 if len > 0 => {
            let i = rng.usize(0..len);
            data[i] = INTERESTING[rng.usize(0..INTERESTING.len())];
        }
        2 => {
            let count = rng.usize(1..=16);
            let random: Vec<u8> = std::iter::repeat_with(|| rng.u8(..)).take(count).collect();
            data.splice(at..at, random);
        }
        3 if !dictionary.is_empty() => {
            let token = dictionary[rng.usize(0..dictionary.len())];
            data.splice(at..at, token.iter().copied());
        }
        4 if len > 0 => {
            let (start, end) = range(rng, len);
            data.drain(start..end);
        }
        5 if len > 0 => {
            let (start, end) = range(rng, len);
            let copy = data[start..end].to_vec();
            // Right after itself (a repeated member or element) or anywhere.
            let to = if rng.bool() { end } else { rng.usize(0..=len) };
            data.splice(to..to, copy);
        }
        6 if !others.is_empty() => {
            let other = others[rng.usize(0..others.len())];
            if !other.is_empty() {
                let (start, end) = range(rng, other.len());
                let (cut_start, cut_end) =
                    if len > 0 && rng.bool() { range(rng, len) } else { (at, at) };
                data.splice(cut_start..cut_end, other[start..end].iter().copied());
            }
        }
        7 => data.truncate(at),
        8 => deepen(rng, data, at),
        9 => {
            let sequence = INVALID_UTF8[rng.usize(0..INVALID_UTF8.len())];
            data.splice(at..at, sequence.iter().copied());
        }
        10 if len > 0 => {
            let i = rng.usize(0..len);
            data[i] = rng.u8(..);
        }
        _ => {
            // Swap two ranges' contents by moving one: reordered members and lines.
            if len > 1 {
                let (start, end) = range(rng, len);
                let moved: Vec<u8> = data.drain(start..end).collect();
                let to = rng.usize(0..=data.len());
                data.splice(to..to, moved);
            }
        }
    }
}

/// A range within `len` bytes: mostly short, sometimes up to all of it.
fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let start = rng.usize(0..len);
    let longest = if rng.u8(0..4) == 0 { len - start } else { (len - start).min(64) };
    let end = start + rng.usize(1..=longest.max(1)).min(len - start);
    (start, end)
}

/// How deep to nest: around the limits parsers set (128 in `serde_json` and this client's
/// simd-json guard) most often, and sometimes far beyond, where only a non-recursive parser
/// survives.
#[must_use]
pub fn depth(rng: &mut Rng) -> usize {
    match rng.u8(0..4) {
        0 => rng.usize(1..=16),
        1 => rng.usize(120..=136),
        2 => rng.usize(250..=260),
        _ => rng.usize(500..=5000),
    }
}

/// Opens `depth` arrays or objects at `at` and closes them all at a later point (or never).
fn deepen(rng: &mut Rng, data: &mut Vec<u8>, at: usize) {
    let depth = depth(rng);
    let (open, close): (&[u8], &[u8]) = match rng.u8(0..3) {
        0 => (b"[", b"]"),
        1 => (br#"{"a":"#, b"}"),
        _ => (b"[{\"k\":", b"}]"),
    };
    let to = rng.usize(at..=data.len());
    if rng.u8(0..4) != 0 {
        data.splice(to..to, close.repeat(depth));
    }
    data.splice(at..at, open.repeat(depth));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_reproducible_from_the_rng_seed() {
        let seed = br#"{"kind":"PodList","items":[{"a":1},{"b":[2,3]}]}"#;
        for s in 0..500 {
            let run = || {
                let mut data = seed.to_vec();
                mutate(&mut Rng::with_seed(s), &mut data, &[b"other"], JSON_TOKENS, 4);
                data
            };
            assert_eq!(run(), run());
        }
    }
}
