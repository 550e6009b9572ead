//! The protobuf wire format at its lowest level: varints, tags and length-delimited slices read
//! from a byte slice, every read bounds-checked so truncated or hostile input is an error, and
//! written into a growing buffer.

use std::fmt;

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireError(pub(crate) String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn error(message: impl Into<String>) -> WireError {
    WireError(message.into())
}

/// How a field's value is laid out after its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

/// One field as read off the wire, its payload not yet interpreted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Payload<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

impl Payload<'_> {
    pub(crate) fn wire_type(&self) -> WireType {
        match self {
            Payload::Varint(_) => WireType::Varint,
            Payload::Fixed64(_) => WireType::Fixed64,
            Payload::Len(_) => WireType::Len,
            Payload::Fixed32(_) => WireType::Fixed32,
        }
    }
}

/// A cursor over one message's bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(error("truncated varint"));
            };
            self.pos += 1;
            // The tenth byte may only carry the top bit of a 64-bit value.
            if shift == 63 && byte > 1 {
                return Err(error("varint overflows 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(error("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| error(format!("truncated field: {n} bytes announced")))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let bytes = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(array))
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, WireError> {
        let bytes = self.take(4)?;
        let mut array = [0u8; 4];
        array.copy_from_slice(bytes);
        Ok(u32::from_le_bytes(array))
    }

    /// The next field: its number and payload, or `None` at the end of the message.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, Payload<'a>)>, WireError> {
        if self.at_end() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|n| *n != 0)
            .ok_or_else(|| error(format!("invalid field number in tag {tag}")))?;
        let payload = match tag & 7 {
            0 => Payload::Varint(self.varint()?),
            1 => Payload::Fixed64(self.fixed64()?),
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| error("length does not fit in memory"))?;
                Payload::Len(self.take(len)?)
            }
            5 => Payload::Fixed32(self.fixed32()?),
            other => {
                return Err(error(format!(
                    "unsupported wire type {other} for field {number}"
                )));
            }
        };
        Ok(Some((number, payload)))
    }
}

/// A message being written. Fields go out in the order they are written; a nested message is
/// written in place and its length put in front of it afterwards, so nothing is measured twice.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// Bytes written before the first field (a magic number, a frame length).
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Where the next byte goes.
    pub(crate) fn position(&self) -> usize {
        self.buf.len()
    }

    /// Puts the fields written since `start` in number order: `segments` holds each field's
    /// number and where it starts, in the order written (each ends where the next starts). The
    /// sort is stable, so a repeated field's elements keep their order.
    pub(crate) fn order_fields(&mut self, start: usize, segments: &mut [(u32, usize)]) {
        if segments.windows(2).all(|w| w[0].0 <= w[1].0) {
            return;
        }
        let end = self.buf.len();
        let mut spans: Vec<(u32, usize, usize)> = segments
            .iter()
            .enumerate()
            .map(|(i, (number, from))| {
                let to = segments.get(i + 1).map_or(end, |next| next.1);
                (*number, *from, to)
            })
            .collect();
        spans.sort_by_key(|span| span.0);
        let mut ordered = Vec::with_capacity(end - start);
        for (_, from, to) in spans {
            ordered.extend_from_slice(&self.buf[from..to]);
        }
        self.buf.truncate(start);
        self.buf.extend_from_slice(&ordered);
    }

    fn tag(&mut self, number: u32, wire: WireType) {
        let wire = match wire {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::Fixed32 => 5,
        };
        put_varint(&mut self.buf, (u64::from(number) << 3) | wire);
    }

    /// A varint field: bools, and integers as Go writes them (an int32 is sign-extended, so a
    /// negative one takes ten bytes).
    pub(crate) fn varint(&mut self, number: u32, value: u64) {
        self.tag(number, WireType::Varint);
        put_varint(&mut self.buf, value);
    }

    pub(crate) fn double(&mut self, number: u32, value: f64) {
        self.tag(number, WireType::Fixed64);
        self.buf.extend_from_slice(&value.to_bits().to_le_bytes());
    }

    pub(crate) fn bytes(&mut self, number: u32, value: &[u8]) {
        self.tag(number, WireType::Len);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    pub(crate) fn string(&mut self, number: u32, value: &str) {
        self.bytes(number, value.as_bytes());
    }

    /// A nested message field, its fields written by `body`.
    pub(crate) fn message<E>(
        &mut self,
        number: u32,
        body: impl FnOnce(&mut Writer) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.buf.len();
        body(self)?;
        let len = self.buf.len() - start;
        let mut head = Vec::with_capacity(12);
        put_varint(&mut head, (u64::from(number) << 3) | 2);
        put_varint(&mut head, len as u64);
        self.buf.splice(start..start, head);
        Ok(())
    }
}

/// Appends `value` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let rows: &[(&[u8], Result<u64, ()>)] = &[
            (&[0], Ok(0)),
            (&[1], Ok(1)),
            (&[0xac, 0x02], Ok(300)),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                Ok(u64::MAX),
            ),
            (&[0x80], Err(())),
            (&[], Err(())),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                Err(()),
            ),
            (&[0xff; 11], Err(())),
        ];
        for (bytes, want) in rows {
            let got = Reader::new(bytes).varint().map_err(|_| ());
            assert_eq!(got, *want, "{bytes:x?}");
        }
    }

    #[test]
    fn fields() {
        // field 1 varint 150, field 2 "hi", field 3 fixed64 1, field 4 fixed32 2
        let bytes = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0,
            0,
        ];
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.field().unwrap(), Some((1, Payload::Varint(150))));
        assert_eq!(reader.field().unwrap(), Some((2, Payload::Len(b"hi"))));
        assert_eq!(reader.field().unwrap(), Some((3, Payload::Fixed64(1))));
        assert_eq!(reader.field().unwrap(), Some((4, Payload::Fixed32(2))));
        assert_eq!(reader.field().unwrap(), None);
    }

    #[test]
    fn written_fields_read_back() {
        let mut writer = Writer::default();
        writer.varint(1, 150);
        writer
            .message(2, |w| {
                w.string(1, "hi");
                w.varint(2, -1i64 as u64);
                Ok::<(), ()>(())
            })
            .unwrap();
        writer.double(3, 1.5);
        let bytes = writer.into_bytes();
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.field().unwrap(), Some((1, Payload::Varint(150))));
        let Some((2, Payload::Len(inner))) = reader.field().unwrap() else {
            panic!("no nested message in {bytes:x?}");
        };
        let mut inner = Reader::new(inner);
        assert_eq!(inner.field().unwrap(), Some((1, Payload::Len(b"hi"))));
        assert_eq!(inner.field().unwrap(), Some((2, Payload::Varint(u64::MAX))));
        assert_eq!(inner.field().unwrap(), None);
        assert_eq!(
            reader.field().unwrap(),
            Some((3, Payload::Fixed64(1.5f64.to_bits())))
        );
        assert_eq!(reader.field().unwrap(), None);
        // A nested message over 127 bytes takes a two-byte length.
        let mut writer = Writer::default();
        writer
            .message(1, |w| {
                w.bytes(1, &[7; 200]);
                Ok::<(), ()>(())
            })
            .unwrap();
        let bytes = writer.into_bytes();
        assert_eq!(&bytes[..3], &[0x0a, 0xcb, 0x01]);
        assert_eq!(bytes.len(), 3 + 3 + 200);
    }

    #[test]
    fn bad_fields() {
        let rows: &[&[u8]] = &[
            &[0x12, 0x05, b'a'], // length past the end
            &[0x12],             // length missing
            &[0x19, 1, 2],       // fixed64 cut short
            &[0x0b],             // group start: unsupported
            &[0x00, 0x01],       // field number 0
            &[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // huge length
        ];
        for bytes in rows {
            assert!(Reader::new(bytes).field().is_err(), "{bytes:x?}");
        }
    }
}
