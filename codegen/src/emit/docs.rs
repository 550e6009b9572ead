//! Upstream descriptions as rustdoc text that builds without warnings and runs no doctests.
//!
//! Descriptions are Markdown-ish prose written for `kubectl explain`, not for rustdoc: they hold
//! code blocks (which rustdoc would compile and run as doctests), bare URLs
//! (`rustdoc::bare_urls`), `[text]` (`rustdoc::broken_intra_doc_links`) and `<group>`
//! (`rustdoc::invalid_html_tags`), and list items continued without indentation
//! (`clippy::doc_lazy_continuation`). A generated crate cannot silence these for its users: code
//! pulled in with `include!` from a build script gets no crate-level `allow`. So the text is
//! escaped instead: every code block (fenced or indented) becomes a ```` ```text ```` block, URLs
//! are wrapped in `<...>`, brackets and angle brackets are backslash-escaped, and a line that
//! would lazily continue a list item is indented under it.

/// `text` as rustdoc Markdown, one output line per input line (plus fence lines).
pub(crate) fn rustdoc(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    // Inside a fence: the fence's marker (its backticks or tildes), to find its end.
    let mut fence: Option<String> = None;
    // Inside an indented code block that was turned into a fence.
    let mut indented = false;
    // The column where the text of the list item the previous line belongs to starts.
    let mut item: Option<usize> = None;
    let mut prev_blank = true;
    for raw in text.lines() {
        // `clippy::tabs_in_doc_comments`.
        let untabbed = raw.replace('\t', "    ");
        let line = untabbed.trim_end();
        let trimmed = line.trim_start();
        if let Some(marker) = fence.take() {
            let closes = trimmed.starts_with(marker.as_str())
                && trimmed.trim_start_matches(['`', '~']).is_empty();
            if closes {
                out.push(marker);
            } else {
                out.push(line.to_owned());
                fence = Some(marker);
            }
            continue;
        }
        let blank = trimmed.is_empty();
        let indent = line.len() - trimmed.len();
        if indented {
            if blank || indent >= 4 {
                out.push(line.to_owned());
                prev_blank = blank;
                continue;
            }
            close_indented(&mut out);
            indented = false;
        }
        if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker.clone());
            out.push(format!("{marker}text"));
            item = None;
            prev_blank = false;
            continue;
        }
        if blank {
            out.push(String::new());
            prev_blank = true;
            item = None;
            continue;
        }
        // Four spaces after a blank line start an indented code block, unless they continue a
        // list item.
        if prev_blank && indent >= 4 {
            out.push("```text".to_owned());
            out.push(line.to_owned());
            indented = true;
            prev_blank = false;
            continue;
        }
        let escaped = escape_inline(trimmed);
        // Lines of a list item start exactly where its text does: less is a lazy continuation
        // (`clippy::doc_lazy_continuation`), more is `clippy::doc_overindented_list_items`.
        let at = if let Some(width) = list_marker(trimmed) {
            let at = match item {
                // Indented at least to the enclosing item's text: a nested item.
                Some(text) if indent >= text => text,
                _ => indent.min(3),
            };
            item = Some(at + width);
            at
        } else {
            item.unwrap_or(0)
        };
        out.push(format!("{}{escaped}", " ".repeat(at)));
        prev_blank = false;
    }
    if indented {
        close_indented(&mut out);
    }
    if let Some(marker) = fence {
        out.push(marker);
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

/// Ends an indented block turned fence, before the blank lines that ended it.
fn close_indented(out: &mut Vec<String>) {
    let blanks = out.iter().rev().take_while(|l| l.is_empty()).count();
    out.truncate(out.len() - blanks);
    out.push("```".to_owned());
    out.extend(std::iter::repeat_n(String::new(), blanks));
}

/// The opening marker of a code fence (three or more backticks or tildes).
fn fence_marker(line: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = line.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some(c.to_string().repeat(n));
        }
    }
    None
}

/// The width of a list item's marker with its space (`- `, `* `, `+ `, `1. `, `1) `).
fn list_marker(line: &str) -> Option<usize> {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return rest.starts_with(' ').then_some(2);
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = &line[digits..];
    (digits > 0 && digits < 10 && (rest.starts_with(". ") || rest.starts_with(") ")))
        .then_some(digits + 2)
}

/// Escapes one line outside code blocks; code spans (`` `...` ``) are kept verbatim.
fn escape_inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while !rest.is_empty() {
        if rest.starts_with('`') {
            let ticks = rest.chars().take_while(|&c| c == '`').count();
            let marker = &rest[..ticks];
            if let Some(end) = rest[ticks..].find(marker) {
                let span = ticks + end + ticks;
                out.push_str(&rest[..span]);
                rest = &rest[span..];
                continue;
            }
            out.push_str(&"\\`".repeat(ticks));
            rest = &rest[ticks..];
            continue;
        }
        if let Some(len) = url_len(rest) {
            out.push('<');
            out.push_str(&rest[..len]);
            out.push('>');
            rest = &rest[len..];
            continue;
        }
        let Some(c) = rest.chars().next() else {
            break;
        };
        if matches!(c, '[' | ']' | '<' | '>' | '\\') {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of a URL at the start of `s`, without trailing punctuation (a closing
/// parenthesis or bracket the URL opened stays: `https://en.wikipedia.org/wiki/X_(y)`).
fn url_len(s: &str) -> Option<usize> {
    if !(s.starts_with("http://") || s.starts_with("https://")) {
        return None;
    }
    let mut len = s
        .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '`' | '"'))
        .unwrap_or(s.len());
    loop {
        let url = &s[..len];
        let opened =
            |open: char, close: char| url.matches(open).count() > url.matches(close).count();
        let keep = match url.chars().last() {
            Some(')') => opened('(', ')') || url.matches('(').count() == url.matches(')').count(),
            Some(']') => opened('[', ']') || url.matches('[').count() == url.matches(']').count(),
            Some('.' | ',' | ';' | ':' | '\'' | '!' | '?' | '*') => false,
            _ => true,
        };
        if keep {
            return Some(len);
        }
        len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::rustdoc;

    #[test]
    fn code_blocks_become_text_blocks() {
        let text = "An example:\n```yaml\na: 1\n```\nIndented:\n\n    let x = 1;\n    x\n\nAfter.";
        assert_eq!(
            rustdoc(text),
            "An example:\n```text\na: 1\n```\nIndented:\n\n```text\n    let x = 1;\n    x\n```\n\nAfter."
        );
        // An unclosed fence is closed.
        assert_eq!(rustdoc("```\ncode"), "```text\ncode\n```");
    }

    #[test]
    fn urls_brackets_and_tags_are_escaped() {
        let cases = [
            (
                "See https://example.com/a. Or (http://x.io/b).",
                "See <https://example.com/a>. Or (<http://x.io/b>).",
            ),
            (
                "a [link] and <group>/<version>",
                "a \\[link\\] and \\<group\\>/\\<version\\>",
            ),
            ("code `a[0] <b>` stays", "code `a[0] <b>` stays"),
            ("path C:\\dir", "path C:\\\\dir"),
            (
                "https://en.wikipedia.org/wiki/X_(y) ok",
                "<https://en.wikipedia.org/wiki/X_(y)> ok",
            ),
            (
                "(see http://e.com/o?c=[d]).",
                "(see <http://e.com/o?c=[d]>).",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(rustdoc(input), want, "{input}");
        }
    }

    #[test]
    fn lazy_list_continuations_are_indented() {
        let text = "Values:\n- a: first\nmore of a\n- b\n      over-indented\n  - nested\n     deep\n\nAfter.";
        assert_eq!(
            rustdoc(text),
            "Values:\n- a: first\n  more of a\n- b\n  over-indented\n  - nested\n    deep\n\nAfter."
        );
        assert_eq!(rustdoc("a\tb"), "a    b");
    }
}
