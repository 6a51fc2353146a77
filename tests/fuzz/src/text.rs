//! Line-aware mutations of text formats (YAML kubeconfigs and CRDs, selectors): lines
//! repeated, dropped, moved or re-indented, YAML's special tokens inserted (anchors, aliases,
//! merge keys, tags, flow collections), and deep flow nesting. Byte-level mutations
//! ([`crate::bytes`]) apply on top.

use fastrand::Rng;

/// Tokens that change how YAML reads what follows.
pub const YAML_TOKENS: &[&[u8]] = &[
    b": ",
    b"- ",
    b"? ",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!binary ",
    b"!!str ",
    b"!!int ",
    b"!!float ",
    b"!!null ",
    b"!custom ",
    b"{",
    b"}",
    b"[",
    b"]",
    b"'",
    b"\"",
    b"# ",
    b"|\n",
    b">-\n",
    b"\n---\n",
    b"\n...\n",
    b"\t",
    b"~",
    b"null",
    b"yes",
    b"0x1F",
    b"1e999",
    b".inf",
    b"\"\\ud800\"",
    b"\"\\x00\"",
    b"%YAML 1.2\n",
];

/// Applies `ops` line-level mutations to `text`.
pub fn mutate_lines(rng: &mut Rng, text: &mut Vec<u8>, ops: usize) {
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    for _ in 0..ops {
        if lines.is_empty() {
            lines.push(Vec::new());
        }
        let i = rng.usize(0..lines.len());
        match rng.u8(0..7) {
            0 => {
                let copy = lines[i].clone();
                lines.insert(rng.usize(0..=lines.len()), copy);
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let line = lines.remove(i);
                lines.insert(rng.usize(0..=lines.len()), line);
            }
            3 => {
                let indent = b" ".repeat(rng.usize(1..=4));
                lines[i].splice(0..0, indent);
            }
            4 => {
                let strip =
                    lines[i].iter().take_while(|&&b| b == b' ').count().min(rng.usize(1..=4));
                lines[i].drain(..strip);
            }
            5 => {
                // Deep flow nesting on one line.
                let depth = crate::bytes::depth(rng);
                let (open, close): (&[u8], &[u8]) =
                    if rng.bool() { (b"[", b"]") } else { (b"{a: ", b"}") };
                let mut deep = open.repeat(depth);
                if rng.u8(0..4) != 0 {
                    deep.extend(close.repeat(depth));
                }
                lines.insert(i, [b"deep: ".as_slice(), &deep].concat());
            }
            _ => {
                // An alias bomb: each anchor refers to the previous one ten times.
                let levels = rng.usize(2..=9);
                let mut bomb = b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]".to_vec();
                for level in 1..levels {
                    let p = level - 1;
                    bomb.extend(
                        format!("\na{level}: &a{level} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]")
                            .bytes(),
                    );
                }
                lines.insert(i, bomb);
            }
        }
    }
    *text = lines.join(&b'\n');
}
