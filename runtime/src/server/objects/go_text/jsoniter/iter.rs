//! json-iterator v1.1.10's `Iterator` over a byte slice (`iter*.go`): its readers, step for
//! step, with their positions, their reports and their quirks, because kube-apiserver 1.20's
//! answers quote the bytes around where a reader stopped and because a decoder goes on reading
//! after a misfit: the first error is kept (`ReportError` records only the first), every later
//! reader runs on from wherever the failed one left the position, and `unreadByte` does nothing
//! once an error is set, so what follows a misfit is read one byte off. The decoders in the
//! parent module call these readers as json-iterator's reflection decoders do.
//!
//! Go's arithmetic is kept where it shows: `readUint32` multiplies with wrapping and checks
//! overflow only as upstream does (a value that wraps without shrinking passes).

/// The iterator's `Error`: Go's `nil`, `io.EOF` (the end of the buffer was read past, which
/// later reports overwrite and `Unmarshal` does not return), or a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    Eof,
    /// The message: the report's bytes (which quote the body's bytes as they are, valid UTF-8
    /// or not), and what the decoders on the way out put before it, innermost first. Kept
    /// apart so that many wraps cost no more than their own length.
    Message(Vec<u8>, Vec<String>),
}

impl Failure {
    /// The message as upstream's `Error()` gives it.
    pub(super) fn text(&self) -> Option<Vec<u8>> {
        let Failure::Message(report, wraps) = self else {
            return None;
        };
        let mut text: Vec<u8> = wraps.iter().rev().flat_map(|w| w.bytes()).collect();
        text.extend_from_slice(report);
        Some(text)
    }
}

pub(super) struct Iter<'b> {
    buf: &'b [u8],
    pub(super) head: usize,
    pub(super) error: Option<Failure>,
    /// Set where this port stops following (values nested deeper than any body kapi takes):
    /// its answer is then no one's and is not used.
    pub(super) gave_up: bool,
}

/// `intDigits`/`floatDigits`: what a byte is to the number readers.
const INVALID: i8 = -1;
const END_OF_NUMBER: i8 = -2;
const DOT_IN_NUMBER: i8 = -3;

fn int_digit(c: u8) -> i8 {
    if c.is_ascii_digit() {
        (c - b'0') as i8
    } else {
        INVALID
    }
}

fn float_digit(c: u8) -> i8 {
    match c {
        b'0'..=b'9' => (c - b'0') as i8,
        b',' | b']' | b'}' | b' ' | b'\t' | b'\n' => END_OF_NUMBER,
        b'.' => DOT_IN_NUMBER,
        _ => INVALID,
    }
}

const UINT32_SAFE_TO_MULTIPLY_10: u32 = u32::MAX / 10 - 1;
const UINT64_SAFE_TO_MULTIPLY_10: u64 = u64::MAX / 10 - 1;

/// json-iterator's `pow10` table: the decimal places its float fast path handles.
const POW10: [u64; 7] = [1, 10, 100, 1000, 10000, 100000, 1000000];

/// One byte as Go's `string([]byte{c})` writes it.
fn byte_text(c: u8) -> Vec<u8> {
    vec![c]
}

impl<'b> Iter<'b> {
    pub(super) fn new(buf: &'b [u8]) -> Self {
        Iter {
            buf,
            head: 0,
            error: None,
            gave_up: false,
        }
    }

    /// `iter.Error != nil && iter.Error != io.EOF`.
    pub(super) fn failed(&self) -> bool {
        matches!(self.error, Some(Failure::Message(..)))
    }

    fn tail(&self) -> usize {
        self.buf.len()
    }

    /// `loadMore` of a byte-slice iterator: nothing more; the first time, `io.EOF`.
    fn load_more(&mut self) -> bool {
        if self.error.is_none() {
            self.head = self.tail();
            self.error = Some(Failure::Eof);
        }
        false
    }

    /// `ReportError`: the first error stands; the message quotes the bytes around `head`.
    pub(super) fn report(&mut self, operation: &str, message: &[u8]) {
        if self.failed() {
            return;
        }
        let head = self.head.min(self.tail());
        let peek_start = head.saturating_sub(10);
        let peek_end = (head + 10).min(self.tail());
        let context_start = head.saturating_sub(50);
        let context_end = (head + 50).min(self.tail());
        let mut text = Vec::with_capacity(200);
        text.extend_from_slice(operation.as_bytes());
        text.extend_from_slice(b": ");
        text.extend_from_slice(message);
        text.extend_from_slice(
            format!(", error found in #{} byte of ...|", head - peek_start).as_bytes(),
        );
        text.extend_from_slice(&self.buf[peek_start..peek_end]);
        text.extend_from_slice(b"|..., bigger context ...|");
        text.extend_from_slice(&self.buf[context_start..context_end]);
        text.extend_from_slice(b"|...");
        self.error = Some(Failure::Message(text, Vec::new()));
    }

    fn report_str(&mut self, operation: &str, message: &str) {
        self.report(operation, message.as_bytes());
    }

    /// `iter.Error = err`: an error set without the reader's context (`strconv`'s).
    fn set_error(&mut self, message: String) {
        self.error = Some(Failure::Message(message.into_bytes(), Vec::new()));
    }

    /// What a decoder does on its way out of a misfit: prefix the message.
    pub(super) fn wrap(&mut self, prefix: &str) {
        if let Some(Failure::Message(_, wraps)) = &mut self.error {
            wraps.push(prefix.to_owned());
        }
    }

    pub(super) fn next_token(&mut self) -> u8 {
        while let Some(&c) = self.buf.get(self.head) {
            self.head += 1;
            if !matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
                return c;
            }
        }
        self.load_more();
        0
    }

    pub(super) fn read_byte(&mut self) -> u8 {
        match self.buf.get(self.head) {
            Some(&c) => {
                self.head += 1;
                c
            }
            None => {
                self.load_more();
                0
            }
        }
    }

    /// `unreadByte`: a no-op once any error (even `io.EOF`) is set.
    pub(super) fn unread_byte(&mut self) {
        if self.error.is_none() {
            self.head = self.head.saturating_sub(1);
        }
    }

    pub(super) fn read_nil(&mut self) -> bool {
        if self.next_token() == b'n' {
            self.skip_three_bytes(b'u', b'l', b'l');
            return true;
        }
        self.unread_byte();
        false
    }

    pub(super) fn read_bool(&mut self) {
        match self.next_token() {
            b't' => self.skip_three_bytes(b'r', b'u', b'e'),
            b'f' => self.skip_four_bytes(b'a', b'l', b's', b'e'),
            c => {
                let mut message = b"expect t or f, but found ".to_vec();
                message.push(c);
                self.report("ReadBool", &message);
            }
        }
    }

    /// `WhatIsNext`'s peek: the next token's first byte, unread.
    pub(super) fn peek(&mut self) -> u8 {
        let c = self.next_token();
        self.unread_byte();
        c
    }

    /// `skipThreeBytes`: the rest of a word whose first byte the caller read (`expect ull`).
    pub(super) fn skip_three_bytes(&mut self, b1: u8, b2: u8, b3: u8) {
        self.skip_word(&[b1, b2, b3], "skipThreeBytes");
    }

    fn skip_four_bytes(&mut self, b1: u8, b2: u8, b3: u8, b4: u8) {
        self.skip_word(&[b1, b2, b3, b4], "skipFourBytes");
    }

    fn skip_word(&mut self, word: &[u8], operation: &str) {
        for &want in word {
            if self.read_byte() != want {
                let message = format!("expect {}", String::from_utf8_lossy(word));
                self.report_str(operation, &message);
                return;
            }
        }
    }

    /// `ReadString`: the string's bytes (escapes decoded), or empty after a misfit.
    pub(super) fn read_string(&mut self) -> Vec<u8> {
        match self.next_token() {
            b'"' => {
                let mut i = self.head;
                while let Some(&c) = self.buf.get(i) {
                    if c == b'"' {
                        let text = self.buf[self.head..i].to_vec();
                        self.head = i + 1;
                        return text;
                    } else if c == b'\\' {
                        break;
                    } else if c < b' ' {
                        let message = format!("invalid control character found: {c}");
                        self.report_str("ReadString", &message);
                        return Vec::new();
                    }
                    i += 1;
                }
                self.read_string_slow_path()
            }
            b'n' => {
                self.skip_three_bytes(b'u', b'l', b'l');
                Vec::new()
            }
            c => {
                let mut message = b"expects \" or n, but found ".to_vec();
                message.extend(byte_text(c));
                self.report("ReadString", &message);
                Vec::new()
            }
        }
    }

    /// `readStringSlowPath`: byte by byte while no error is set (so not at all after a
    /// misfit).
    fn read_string_slow_path(&mut self) -> Vec<u8> {
        let mut text = Vec::new();
        while self.error.is_none() {
            let c = self.read_byte();
            if c == b'"' {
                return text;
            }
            if c == b'\\' {
                let escaped = self.read_byte();
                match self.read_escaped_char(escaped, text) {
                    Some(more) => text = more,
                    None => text = Vec::new(),
                }
            } else {
                text.push(c);
            }
        }
        self.report_str("readStringSlowPath", "unexpected end of input");
        Vec::new()
    }

    fn read_escaped_char(&mut self, c: u8, mut text: Vec<u8>) -> Option<Vec<u8>> {
        match c {
            b'u' => {
                let r = self.read_u4();
                if (0xD800..=0xDFFF).contains(&r) {
                    let c = self.read_byte();
                    if self.error.is_some() {
                        return None;
                    }
                    if c != b'\\' {
                        self.unread_byte();
                        append_rune(&mut text, r);
                        return Some(text);
                    }
                    let c = self.read_byte();
                    if self.error.is_some() {
                        return None;
                    }
                    if c != b'u' {
                        append_rune(&mut text, r);
                        return self.read_escaped_char(c, text);
                    }
                    let r2 = self.read_u4();
                    if self.error.is_some() {
                        return None;
                    }
                    // `utf16.DecodeRune`: a high then a low surrogate, else U+FFFD.
                    if (0xD800..0xDC00).contains(&r) && (0xDC00..0xE000).contains(&r2) {
                        append_rune(&mut text, ((r - 0xD800) << 10 | (r2 - 0xDC00)) + 0x10000);
                    } else {
                        append_rune(&mut text, r);
                        append_rune(&mut text, r2);
                    }
                } else {
                    append_rune(&mut text, r);
                }
            }
            b'"' => text.push(b'"'),
            b'\\' => text.push(b'\\'),
            b'/' => text.push(b'/'),
            b'b' => text.push(0x08),
            b'f' => text.push(0x0c),
            b'n' => text.push(b'\n'),
            b'r' => text.push(b'\r'),
            b't' => text.push(b'\t'),
            _ => {
                self.report_str("readEscapedChar", "invalid escape char after \\");
                return None;
            }
        }
        Some(text)
    }

    fn read_u4(&mut self) -> u32 {
        let mut r = 0u32;
        for _ in 0..4 {
            let c = self.read_byte();
            if self.error.is_some() {
                return r;
            }
            let digit = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => {
                    let mut message = b"expects 0~9 or a~f, but found ".to_vec();
                    message.push(c);
                    self.report("readU4", &message);
                    return r;
                }
            };
            r = r * 16 + u32::from(digit);
        }
        r
    }

    /// `readFieldHash`, returning the name whose hash it computes (`None` for its 0, which
    /// no field has): a quoted name and its `:`.
    pub(super) fn read_field_name(&mut self) -> Option<Vec<u8>> {
        let c = self.next_token();
        if c != b'"' {
            let mut message = b"expect \", but found ".to_vec();
            message.push(c);
            self.report("readFieldHash", &message);
            return None;
        }
        let start = self.head;
        let mut i = self.head;
        while let Some(&b) = self.buf.get(i) {
            if b == b'\\' {
                self.head = i;
                let mut name = self.buf[start..i].to_vec();
                name.extend(self.read_string_slow_path());
                return self.field_colon(name);
            }
            if b == b'"' {
                self.head = i + 1;
                let name = self.buf[start..i].to_vec();
                return self.field_colon(name);
            }
            i += 1;
        }
        self.load_more();
        self.report_str("readFieldHash", "incomplete field name");
        None
    }

    fn field_colon(&mut self, name: Vec<u8>) -> Option<Vec<u8>> {
        let c = self.next_token();
        if c != b':' {
            let mut message = b"expect :, but found ".to_vec();
            message.push(c);
            self.report("readFieldHash", &message);
            return None;
        }
        Some(name)
    }

    /// `isObjectEnd`: `,` goes on, anything else ends (reported unless `}`).
    pub(super) fn is_object_end(&mut self) -> bool {
        match self.next_token() {
            b',' => false,
            b'}' => true,
            c => {
                let mut message = b"object ended prematurely, unexpected char ".to_vec();
                message.push(c);
                self.report("isObjectEnd", &message);
                true
            }
        }
    }

    /// `readObjectStart`: whether fields follow (`{` and not `}`).
    pub(super) fn read_object_start(&mut self) -> bool {
        match self.next_token() {
            b'{' => {
                if self.next_token() == b'}' {
                    return false;
                }
                self.unread_byte();
                true
            }
            b'n' => {
                self.skip_three_bytes(b'u', b'l', b'l');
                false
            }
            c => {
                let mut message = b"expect { or n, but found ".to_vec();
                message.push(c);
                self.report("readObjectStart", &message);
                false
            }
        }
    }

    /// `Skip`: one value, whatever it is.
    pub(super) fn skip(&mut self, depth: usize) {
        if depth > super::MAX_DEPTH {
            self.gave_up = true;
            return;
        }
        let c = self.next_token();
        match c {
            b'"' => self.skip_string(),
            b'n' => self.skip_three_bytes(b'u', b'l', b'l'),
            b't' => self.skip_three_bytes(b'r', b'u', b'e'),
            b'f' => self.skip_four_bytes(b'a', b'l', b's', b'e'),
            b'0' => {
                self.unread_byte();
                self.read_float32();
            }
            b'-' | b'1'..=b'9' => self.skip_number(),
            b'[' => self.skip_array(depth),
            b'{' => self.skip_object(depth),
            _ => {
                let message = format!("do not know how to skip: {c}");
                self.report_str("Skip", &message);
            }
        }
    }

    /// `SkipAndReturnBytes`: the bytes `Skip` passed over.
    pub(super) fn skip_and_return_bytes(&mut self) -> Vec<u8> {
        let start = self.head.min(self.tail());
        self.skip(0);
        let end = self.head.clamp(start, self.tail());
        self.buf[start..end].to_vec()
    }

    fn skip_number(&mut self) {
        if !self.try_skip_number() {
            self.unread_byte();
            if self.failed() {
                return;
            }
            self.read_float64();
            if self.failed() {
                self.error = None;
                self.read_big_float();
            }
        }
    }

    fn try_skip_number(&mut self) -> bool {
        let mut dot_found = false;
        let mut i = self.head;
        while let Some(&c) = self.buf.get(i) {
            match c {
                b'0'..=b'9' => {}
                b'.' => {
                    if dot_found {
                        self.report_str("validateNumber", "more than one dot found in number");
                        return true;
                    }
                    match self.buf.get(i + 1) {
                        None => return false,
                        Some(b'0'..=b'9') => {}
                        Some(_) => {
                            self.report_str("validateNumber", "missing digit after dot");
                            return true;
                        }
                    }
                    dot_found = true;
                }
                b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' => {
                    if self.head == i {
                        return false;
                    }
                    self.head = i;
                    return true;
                }
                _ => return false,
            }
            i += 1;
        }
        false
    }

    fn skip_string(&mut self) {
        if !self.try_skip_string() {
            self.unread_byte();
            self.read_string();
        }
    }

    fn try_skip_string(&mut self) -> bool {
        let mut i = self.head;
        while let Some(&c) = self.buf.get(i) {
            if c == b'"' {
                self.head = i + 1;
                return true;
            } else if c == b'\\' {
                return false;
            } else if c < b' ' {
                let message = format!("invalid control character found: {c}");
                self.report_str("trySkipString", &message);
                return true;
            }
            i += 1;
        }
        false
    }

    /// `skipObject`: `ReadObjectCB` with a callback that skips each value.
    fn skip_object(&mut self, depth: usize) {
        self.unread_byte();
        let c = self.next_token();
        if c == b'{' {
            let c = self.next_token();
            if c == b'"' {
                self.unread_byte();
                self.read_string();
                self.object_colon();
                self.skip(depth + 1);
                let mut c = self.next_token();
                while c == b',' {
                    self.read_string();
                    self.object_colon();
                    self.skip(depth + 1);
                    c = self.next_token();
                }
                if c != b'}' {
                    self.report_str("ReadObjectCB", "object not ended with }");
                }
                return;
            }
            if c == b'}' {
                return;
            }
            let mut message = b"expect \" after {, but found ".to_vec();
            message.push(c);
            self.report("ReadObjectCB", &message);
            return;
        }
        if c == b'n' {
            self.skip_three_bytes(b'u', b'l', b'l');
            return;
        }
        let mut message = b"expect { or n, but found ".to_vec();
        message.push(c);
        self.report("ReadObjectCB", &message);
    }

    fn object_colon(&mut self) {
        let c = self.next_token();
        if c != b':' {
            let mut message = b"expect : after object field, but found ".to_vec();
            message.push(c);
            self.report("ReadObject", &message);
        }
    }

    /// `skipArray`: `ReadArrayCB` with a callback that skips each element.
    fn skip_array(&mut self, depth: usize) {
        self.unread_byte();
        let c = self.next_token();
        if c == b'[' {
            let c = self.next_token();
            if c != b']' {
                self.unread_byte();
                self.skip(depth + 1);
                let mut c = self.next_token();
                while c == b',' {
                    self.skip(depth + 1);
                    c = self.next_token();
                }
                if c != b']' {
                    let mut message = b"expect ] in the end, but found ".to_vec();
                    message.push(c);
                    self.report("ReadArrayCB", &message);
                }
            }
            return;
        }
        if c == b'n' {
            self.skip_three_bytes(b'u', b'l', b'l');
            return;
        }
        let mut message = b"expect [ or n, but found ".to_vec();
        message.push(c);
        self.report("ReadArrayCB", &message);
    }

    /// `ReadInt32`.
    pub(super) fn read_int32(&mut self) {
        let c = self.next_token();
        if c == b'-' {
            let first = self.read_byte();
            let value = self.read_uint32(first);
            if value > i32::MAX as u32 + 1 {
                self.report_str("ReadInt32", &format!("overflow: {value}"));
            }
            return;
        }
        let value = self.read_uint32(c);
        if value > i32::MAX as u32 {
            self.report_str("ReadInt32", &format!("overflow: {value}"));
        }
    }

    /// `ReadInt64`.
    pub(super) fn read_int64(&mut self) {
        let c = self.next_token();
        if c == b'-' {
            let first = self.read_byte();
            let value = self.read_uint64(first);
            if value > i64::MAX as u64 + 1 {
                self.report_str("ReadInt64", &format!("overflow: {value}"));
            }
            return;
        }
        let value = self.read_uint64(c);
        if value > i64::MAX as u64 {
            self.report_str("ReadInt64", &format!("overflow: {value}"));
        }
    }

    /// `ReadUint8`, an element of a `[]byte` written as an array.
    pub(super) fn read_uint8(&mut self) {
        let c = self.next_token();
        let value = self.read_uint32(c);
        if value > u32::from(u8::MAX) {
            self.report_str("ReadUint8", &format!("overflow: {value}"));
        }
    }

    fn read_uint32(&mut self, c: u8) -> u32 {
        self.read_unsigned(c, "readUint32", u64::from(UINT32_SAFE_TO_MULTIPLY_10), 32) as u32
    }

    fn read_uint64(&mut self, c: u8) -> u64 {
        self.read_unsigned(c, "readUint64", UINT64_SAFE_TO_MULTIPLY_10, 64)
    }

    /// `readUint32` / `readUint64`, in `bits`-bit wrapping arithmetic: the first digit, a
    /// fast path over the next eight when more than ten bytes remain, then digit by digit
    /// with upstream's overflow check (a multiplication that wraps to a smaller value).
    fn read_unsigned(&mut self, c: u8, operation: &str, safe: u64, bits: u32) -> u64 {
        let mask = if bits == 32 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let times_ten_plus =
            |value: u64, digit: i8| value.wrapping_mul(10).wrapping_add(digit as u64) & mask;
        let ind = int_digit(c);
        if ind == 0 {
            self.assert_integer();
            return 0;
        }
        if ind == INVALID {
            // `string([]byte{byte(ind)})`: the byte 0xff.
            self.report(operation, b"unexpected character: \xff");
            return 0;
        }
        let mut value = ind as u64;
        if self.tail() - self.head.min(self.tail()) > 10 {
            let mut i = self.head;
            for _ in 0..7 {
                let digit = int_digit(self.buf[i]);
                if digit == INVALID {
                    self.head = i;
                    self.assert_integer();
                    return value;
                }
                value = times_ten_plus(value, digit);
                i += 1;
            }
            // The eighth digit is read, then the loop below reads on from it.
            self.head = i;
            if int_digit(self.buf[i]) == INVALID {
                self.assert_integer();
                return value;
            }
        }
        // Upstream moves `head` only when the digits end: an overflow is reported where
        // this loop began.
        let mut i = self.head;
        while let Some(&b) = self.buf.get(i) {
            let digit = int_digit(b);
            if digit == INVALID {
                self.head = i;
                self.assert_integer();
                return value;
            }
            let next = times_ten_plus(value, digit);
            if value > safe && next < value {
                self.report_str(operation, "overflow");
                return 0;
            }
            value = next;
            i += 1;
        }
        self.load_more();
        self.assert_integer();
        value
    }

    fn assert_integer(&mut self) {
        if self.buf.get(self.head) == Some(&b'.') {
            self.report_str("assertInteger", "can not decode float as int");
        }
    }

    /// `ReadFloat64`.
    pub(super) fn read_float64(&mut self) {
        self.read_float(64);
    }

    fn read_float32(&mut self) {
        self.read_float(32);
    }

    /// `ReadFloat32` / `ReadFloat64`: a sign, then `readPositiveFloat..`'s fast path for
    /// plain decimals, else the slow path through `strconv.ParseFloat`.
    fn read_float(&mut self, bits: u32) {
        let c = self.next_token();
        if c != b'-' {
            self.unread_byte();
        }
        let operation = if bits == 32 {
            "readFloat32"
        } else {
            "readFloat64"
        };
        let mut i = self.head;
        let Some(&c) = self.buf.get(i) else {
            return self.read_float_slow_path(bits);
        };
        i += 1;
        match float_digit(c) {
            INVALID => return self.read_float_slow_path(bits),
            END_OF_NUMBER => return self.report_str(operation, "empty number"),
            DOT_IN_NUMBER => return self.report_str(operation, "leading dot is invalid"),
            0 => match self.buf.get(i) {
                None => return self.read_float_slow_path(bits),
                Some(b'0'..=b'9') => {
                    return self.report_str(operation, "leading zero is invalid");
                }
                Some(_) => {}
            },
            _ => {}
        }
        let mut value = float_digit(c) as u64;
        let mut c = c;
        let mut dot = false;
        while let Some(&b) = self.buf.get(i) {
            c = b;
            match float_digit(b) {
                INVALID => return self.read_float_slow_path(bits),
                END_OF_NUMBER => {
                    self.head = i;
                    return;
                }
                DOT_IN_NUMBER => {
                    dot = true;
                    break;
                }
                digit => {
                    if value > UINT64_SAFE_TO_MULTIPLY_10 {
                        return self.read_float_slow_path(bits);
                    }
                    value = value * 10 + digit as u64;
                }
            }
            i += 1;
        }
        if dot && c == b'.' {
            i += 1;
            let mut places = 0usize;
            if i == self.tail() {
                return self.read_float_slow_path(bits);
            }
            while let Some(&b) = self.buf.get(i) {
                match float_digit(b) {
                    END_OF_NUMBER => {
                        if places > 0 && places < POW10.len() {
                            self.head = i;
                            return;
                        }
                        return self.read_float_slow_path(bits);
                    }
                    INVALID | DOT_IN_NUMBER => return self.read_float_slow_path(bits),
                    digit => {
                        places += 1;
                        if value > UINT64_SAFE_TO_MULTIPLY_10 {
                            return self.read_float_slow_path(bits);
                        }
                        value = value * 10 + digit as u64;
                    }
                }
                i += 1;
            }
        }
        self.read_float_slow_path(bits)
    }

    /// `readNumberAsString`: the bytes a number may hold, from `head`.
    fn read_number_as_string(&mut self) -> Vec<u8> {
        let start = self.head.min(self.tail());
        let mut i = start;
        while self
            .buf
            .get(i)
            .is_some_and(|b| matches!(b, b'+' | b'-' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            i += 1;
        }
        let text = self.buf[start..i].to_vec();
        if i == self.tail() {
            self.load_more();
        } else {
            self.head = i;
        }
        if self.failed() {
            return text;
        }
        if text.is_empty() {
            self.report_str("readNumberAsString", "invalid number");
        }
        text
    }

    fn read_float_slow_path(&mut self, bits: u32) {
        let text = self.read_number_as_string();
        if self.failed() {
            return;
        }
        let operation = if bits == 32 {
            "readFloat32SlowPath"
        } else {
            "readFloat64SlowPath"
        };
        if let Some(problem) = validate_float(&text) {
            self.report_str(operation, problem);
            return;
        }
        if let Err(problem) = parse_float(&text, bits) {
            self.set_error(problem);
        }
    }

    /// `ReadBigFloat`: `big.ParseFloat`, which takes any number `readNumberAsString` found.
    fn read_big_float(&mut self) {
        let text = self.read_number_as_string();
        if self.failed() {
            return;
        }
        let valid = std::str::from_utf8(&text)
            .ok()
            .is_some_and(|t| t.parse::<f64>().is_ok());
        if !valid {
            // `big.ParseFloat`'s own texts are not followed: `iter.Error = err`.
            self.set_error(format!(
                "strconv.ParseFloat: parsing {}: invalid syntax",
                go_quote_ascii(&text)
            ));
        }
    }
}

/// `validateFloat`: what `strconv.ParseFloat` would take but JSON does not.
fn validate_float(text: &[u8]) -> Option<&'static str> {
    if text.is_empty() {
        return Some("empty number");
    }
    if text[0] == b'-' {
        return Some("-- is not valid");
    }
    if let Some(dot) = text.iter().position(|&b| b == b'.') {
        match text.get(dot + 1) {
            None => return Some("dot can not be last character"),
            Some(b'0'..=b'9') => {}
            Some(_) => return Some("missing digit after dot"),
        }
    }
    None
}

/// `strconv.ParseFloat(text, bits)`'s error: invalid syntax, or out of range (a finite text
/// that rounds to infinity).
fn parse_float(text: &[u8], bits: u32) -> Result<(), String> {
    let quoted = go_quote_ascii(text);
    let Some(parsed) = std::str::from_utf8(text).ok().and_then(|t| {
        if bits == 32 {
            t.parse::<f32>().ok().map(f64::from)
        } else {
            t.parse::<f64>().ok()
        }
    }) else {
        return Err(format!(
            "strconv.ParseFloat: parsing {quoted}: invalid syntax"
        ));
    };
    if parsed.is_infinite() {
        return Err(format!(
            "strconv.ParseFloat: parsing {quoted}: value out of range"
        ));
    }
    Ok(())
}

/// `strconv.Quote` of the number characters `readNumberAsString` collects (all printable
/// ASCII, none needing an escape).
fn go_quote_ascii(text: &[u8]) -> String {
    format!("\"{}\"", String::from_utf8_lossy(text))
}

/// json-iterator's `appendRune`: UTF-8, surrogates and out-of-range runes as U+FFFD.
fn append_rune(text: &mut Vec<u8>, r: u32) {
    let c = char::from_u32(r).unwrap_or('\u{fffd}');
    let mut buf = [0u8; 4];
    text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}
