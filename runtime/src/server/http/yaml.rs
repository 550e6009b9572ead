//! YAML request bodies: a check of their nesting in one linear pass before any parser sees
//! them.
//!
//! The YAML parser re-examines every open flow collection (`[`, `{`) at each token, so its time
//! grows with the square of the nesting: a 100,000-deep `[[[[…` took 18 s of CPU before its
//! 400. Upstream's YAML library refuses documents nested deeper than 10,000 for the same
//! reason (CVE-2019-11254). Our decoders stop at 128 levels anyway (serde's recursion limit,
//! for JSON and YAML alike), so this pass refuses anything deeper than that before parsing,
//! in time linear in the body, and no real object comes near it.

/// The deepest nesting a body may have: that of the decoders themselves.
pub(crate) const MAX_DEPTH: usize = 128;

/// Refuses a YAML body nested deeper than [`MAX_DEPTH`] flow collections, without parsing it.
///
/// Counts `[` and `{` that open a flow collection: anywhere inside another flow collection
/// (where plain scalars cannot hold them), and in block context only where a node starts (at
/// the start of a line, after `- `, `? ` or `: `). Brackets inside quoted scalars, comments,
/// block plain scalars (`pattern: ^[a-z]+$`) and literal or folded block scalars (`|`, `>`)
/// do not count. Block nesting needs one more
/// column of indentation per level, so the body size limit already bounds it.
pub(crate) fn check_depth(body: &[u8]) -> Result<(), String> {
    let mut depth = 0usize;
    // Where a block-context node may start: at the beginning of a line (after indentation) or
    // after an indicator followed by a space.
    let mut node_start = true;
    // The indentation of the current line, which a block scalar's lines exceed.
    let mut line_indent = 0;
    let mut at_indent = true;
    let mut i = 0;
    while i < body.len() {
        let byte = body[i];
        if at_indent {
            if byte == b' ' {
                line_indent += 1;
                i += 1;
                continue;
            }
            at_indent = false;
        }
        match byte {
            b'|' | b'>' if depth == 0 && node_start => {
                i = skip_block_scalar(body, i, line_indent);
                line_indent = 0;
                at_indent = true;
                continue;
            }
            b'\'' | b'"' if depth > 0 || node_start => {
                i = skip_quoted(body, i);
                node_start = false;
                continue;
            }
            b'#' if i == 0 || body[i - 1].is_ascii_whitespace() => {
                while i < body.len() && body[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' | b'{' if depth > 0 || node_start => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!("the document nests deeper than {MAX_DEPTH} levels"));
                }
                node_start = false;
            }
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                node_start = false;
            }
            b'\n' => {
                node_start = depth == 0;
                line_indent = 0;
                at_indent = true;
            }
            b' ' | b'\t' | b'\r' => {}
            b'-' | b'?' | b':'
                if depth == 0 && body.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) =>
            {
                node_start = true;
            }
            _ => {
                if depth == 0 {
                    node_start = false;
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// The start of the first line after the block scalar whose indicator is at `start`: the
/// scalar's lines are the following ones indented deeper than `parent_indent` (or blank).
fn skip_block_scalar(body: &[u8], start: usize, parent_indent: usize) -> usize {
    let mut line = match body[start..].iter().position(|b| *b == b'\n') {
        Some(newline) => start + newline + 1,
        None => return body.len(),
    };
    while line < body.len() {
        let indent = body[line..].iter().take_while(|b| **b == b' ').count();
        let rest = &body[line + indent..];
        let blank = rest.first().is_none_or(|b| *b == b'\n' || *b == b'\r');
        if !blank && indent <= parent_indent {
            return line;
        }
        line = match rest.iter().position(|b| *b == b'\n') {
            Some(newline) => line + indent + newline + 1,
            None => body.len(),
        };
    }
    body.len()
}

/// The index just past the quoted scalar starting at `start` (or the end of the body).
fn skip_quoted(body: &[u8], start: usize) -> usize {
    let quote = body[start];
    let mut i = start + 1;
    while i < body.len() {
        match body[i] {
            // `\"` escapes in double quotes; `''` is a quote in single quotes.
            b'\\' if quote == b'"' => i += 2,
            b if b == quote => {
                if quote == b'\'' && body.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_collections_are_refused() {
        // How fast is a benchmark matter (BENCHMARKS.md, "Bounded inputs").
        let deep = "[".repeat(100_000);
        let error = check_depth(deep.as_bytes()).unwrap_err();
        assert!(error.contains("deeper than 128"), "{error}");
        let mapping = format!("spec: {}", "{a: ".repeat(200));
        assert!(check_depth(mapping.as_bytes()).is_err());
        let listed = format!("items:\n  - {}", "[".repeat(129));
        assert!(check_depth(listed.as_bytes()).is_err());
        // After a block scalar, counting resumes.
        let after = format!("text: |\n  {}\ndeep: {}", "[".repeat(500), "[".repeat(129));
        assert!(check_depth(after.as_bytes()).is_err());
    }

    #[test]
    fn brackets_that_open_nothing_do_not_count() {
        let many = "[".repeat(500);
        let fine = [
            format!("pattern: ^a{many}$\n"),
            format!("quoted: \"{many}\"\n"),
            format!("single: '{many}''{many}'\n"),
            format!("# {many}\nkey: 1\n"),
            format!("flow: [\"{many}\", '{many}']\n"),
            format!("text: |\n  just text {many}\n"),
            format!("data:\n  deep.json: |\n    {many}\n\n    {many}\n  next: 1\n"),
            format!("folded: >-\n {many}\nafter: [1]\n"),
            format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH)),
            "metadata: {name: a, labels: {app: [x, {y: z}]}}\n".to_owned(),
        ];
        for body in fine {
            assert_eq!(check_depth(body.as_bytes()), Ok(()), "{body:.60}");
        }
    }
}
