//! The `labelSelector` syntax, parsed as upstream's lexer and recursive descent parser parse
//! it, with their error texts word for word
//! (`staging/src/k8s.io/apimachinery/pkg/labels/selector.go`: `Lexer`, `Parser`,
//! `NewRequirement`), which kube-apiserver answers as the message of a 400.
//!
//! The texts of a bad key or value follow the release: before 1.21 plain errors
//! (`invalid label key "-a": ...`, `invalid label value: "-b": at key: "a": ...`), from 1.21
//! field errors (`: Invalid value: "-a": ...` for a key, the parser having no field path;
//! `values[0][a]: Invalid value: "-b": ...` for a value), kubernetes/kubernetes#97538.

use crate::KubeVersion;
use crate::validation::Format;

/// The release whose selector errors are field errors.
const FIELD_ERRORS_SINCE: KubeVersion = KubeVersion::new(1, 21);

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    Exists,
    DoesNotExist,
    /// `=` or `==`.
    Equals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

/// One parsed requirement: key, operator and values (sorted and unique, as upstream's set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    pub(crate) key: String,
    pub(crate) operator: Operator,
    pub(crate) values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// The literal holds the lexer's message.
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Upstream's `string2token`.
fn keyword(text: &[u8]) -> Option<Token> {
    Some(match text {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Upstream's `Lexer`: bytes in, a NUL byte or the end of input ending the string.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        let b = self.s.get(self.pos).copied().unwrap_or(0);
        if self.pos < self.s.len() {
            self.pos += 1;
        }
        b
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) {
            self.special()
        } else {
            self.identifier()
        }
    }

    fn identifier(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let text = &self.s[start..end];
        let literal = String::from_utf8_lossy(text).into_owned();
        (keyword(text).unwrap_or(Token::Identifier), literal)
    }

    fn special(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut last: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            match keyword(&self.s[start..self.pos]) {
                Some(token) => last = Some((token, self.pos)),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match last {
            Some((token, end)) => (
                token,
                String::from_utf8_lossy(&self.s[start..end]).into_owned(),
            ),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&self.s[start..self.pos])
                ),
            ),
        }
    }
}

/// Upstream's parser contexts: `in` and `notin` are identifiers among values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
    release: KubeVersion,
}

impl Parser {
    fn at(&self, position: usize, context: Context) -> (Token, &str) {
        let (token, literal) = self
            .items
            .get(position)
            .map_or((Token::EndOfString, ""), |(t, l)| (*t, l.as_str()));
        let token = match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, token) => token,
        };
        (token, literal)
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self.at(self.position, context);
        (token, literal.to_owned())
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let found = self.lookahead(context);
        self.position += 1;
        found
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_inferred_operator()?;
        if let Some(operator) = operator {
            return Ok(Requirement {
                key,
                operator,
                values: Vec::new(),
            });
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, operator, values, self.release)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        check_key(&literal, self.release)?;
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                let (token, _) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        let insert = |values: &mut Vec<String>, value: String| {
            if !values.contains(&value) {
                values.push(value);
            }
        };
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    insert(&mut values, literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        insert(&mut values, String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        insert(&mut values, String::new());
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        insert(&mut values, String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// `validateLabelKey` as the parser calls it.
fn check_key(key: &str, release: KubeVersion) -> Result<(), String> {
    let problems = Format::QualifiedName.messages(key, release);
    if problems.is_empty() {
        return Ok(());
    }
    let problems = problems.join("; ");
    Err(if release >= FIELD_ERRORS_SINCE {
        format!(": Invalid value: {key:?}: {problems}")
    } else {
        format!("invalid label key {key:?}: {problems}")
    })
}

/// `NewRequirement`'s checks of the operator's values and of each value, with the values
/// sorted as upstream's set hands them over.
fn new_requirement(
    key: String,
    operator: Operator,
    mut values: Vec<String>,
    release: KubeVersion,
) -> Result<Requirement, String> {
    values.sort();
    let numeric = matches!(operator, Operator::GreaterThan | Operator::LessThan);
    let mut errors: Vec<String> = Vec::new();
    for (i, value) in values.iter().enumerate() {
        if numeric && value.parse::<i64>().is_err() {
            let detail = "for 'Gt', 'Lt' operators, the value must be an integer";
            if release < FIELD_ERRORS_SINCE {
                return Err(detail.to_owned());
            }
            errors.push(format!("values[{i}]: Invalid value: {value:?}: {detail}"));
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = Format::LabelValue.messages(value, release);
        if problems.is_empty() {
            continue;
        }
        let problems = problems.join("; ");
        if release < FIELD_ERRORS_SINCE {
            return Err(format!(
                "invalid label value: {value:?}: at key: {key:?}: {problems}"
            ));
        }
        errors.push(format!(
            "values[{i}][{key}]: Invalid value: {value:?}: {problems}"
        ));
    }
    errors.dedup();
    match errors.as_slice() {
        [] => Ok(Requirement {
            key,
            operator,
            values,
        }),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

/// Parses a `labelSelector` as kube-apiserver of `release` does; the error is its message.
pub(crate) fn parse(input: &str, release: KubeVersion) -> Result<Vec<Requirement>, String> {
    let mut lexer = Lexer {
        s: input.as_bytes(),
        pos: 0,
    };
    let mut items = Vec::new();
    loop {
        let (token, literal) = lexer.lex();
        items.push((token, literal));
        if token == Token::EndOfString {
            break;
        }
    }
    Parser {
        items,
        position: 0,
        release,
    }
    .parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: KubeVersion = KubeVersion::new(1, 34);
    const OLD: KubeVersion = KubeVersion::new(1, 20);

    #[test]
    fn selectors_parse_as_upstreams() {
        let parsed = parse("x in (foo,,baz),y,z notin (), !w, a=b, c!=d, e>1", NOW).unwrap();
        let ops: Vec<_> = parsed
            .iter()
            .map(|r| (r.key.as_str(), r.operator))
            .collect();
        assert_eq!(
            ops,
            [
                ("x", Operator::In),
                ("y", Operator::Exists),
                ("z", Operator::NotIn),
                ("w", Operator::DoesNotExist),
                ("a", Operator::Equals),
                ("c", Operator::NotEquals),
                ("e", Operator::GreaterThan),
            ]
        );
        assert_eq!(parsed[0].values, ["", "baz", "foo"]);
        assert_eq!(parsed[2].values, [""]);
        assert!(parse("", NOW).unwrap().is_empty());
        assert!(parse("  ", NOW).unwrap().is_empty());
        assert_eq!(parse("a=", NOW).unwrap()[0].values, [""]);
        // `in` is a value among values.
        assert_eq!(parse("a in (in)", NOW).unwrap()[0].values, ["in"]);
    }

    /// The texts of `selector.go`'s parser, as kube-apiserver answers them.
    #[test]
    fn errors_are_upstreams_word_for_word() {
        let rows = [
            (
                "a!!b",
                "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
            ),
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a in b",
                "unable to parse requirement: found 'b' expected: '('",
            ),
            ("a,", "found '', expected: identifier after ','"),
            (
                "=a",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            (
                "a=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "a in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a>b",
                "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "-a=b",
                "unable to parse requirement: : Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                "a=-b",
                "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
        ];
        for (input, message) in rows {
            assert_eq!(parse(input, NOW).unwrap_err(), message, "{input}");
        }
    }

    /// 1.20's `selector.go`, before kubernetes/kubernetes#97538.
    #[test]
    fn releases_before_field_errors_say_it_plainly() {
        assert_eq!(
            parse("-a", OLD).unwrap_err(),
            "unable to parse requirement: invalid label key \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            parse("a=-b", OLD).unwrap_err(),
            "unable to parse requirement: invalid label value: \"-b\": at key: \"a\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            parse("a<x", OLD).unwrap_err(),
            "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }
}
