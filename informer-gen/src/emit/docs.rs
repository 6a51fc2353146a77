//! Schema descriptions as doc comments that rustdoc renders as intended and never runs.
//!
//! Descriptions are Markdown-ish text written for Go. Left as they are, an indented line
//! becomes a Rust code block and a fenced block a doctest, both compiled by `cargo test` in
//! the consumer's crate; so leading indentation is removed and fences are marked `text`. Links,
//! HTML-looking text and bare URLs are left alone: the generated modules allow the rustdoc
//! lints that would flag them.

use proc_macro2::TokenStream;
use quote::quote;

/// `#[doc = "…"]` attributes for `lines`, or nothing when docs are off.
pub(crate) fn attrs(lines: &[String], enabled: bool) -> TokenStream {
    if !enabled {
        return TokenStream::new();
    }
    let mut in_fence = false;
    let mut out = TokenStream::new();
    for line in lines {
        let trimmed = line.trim();
        let text = if trimmed.starts_with("```") {
            in_fence = !in_fence;
            if in_fence { " ```text".to_owned() } else { " ```".to_owned() }
        } else if trimmed.is_empty() {
            String::new()
        } else {
            format!(" {trimmed}")
        };
        out.extend(quote! { #[doc = #text] });
    }
    if in_fence {
        let close = " ```";
        out.extend(quote! { #[doc = #close] });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_never_becomes_a_doctest() {
        let lines: Vec<String> =
            ["Example:", "    let x = 1;", "```yaml", "a: b", "```", "```", "open"]
                .map(String::from)
                .to_vec();
        let text = attrs(&lines, true).to_string();
        assert!(text.contains(r#"" let x = 1;""#), "{text}");
        assert!(!text.contains("yaml"), "{text}");
        assert_eq!(text.matches("```").count(), 4, "{text}");
        assert!(attrs(&lines, false).is_empty());
    }
}
