//! The byte layout of the embedded engine's table values.
//!
//! Integers are little-endian fixed width so decoding is a bounds-checked slice read; any
//! value that does not parse is reported as corruption rather than trusted.

use bytes::Bytes;

use super::super::KeyValue;

/// Length of the `current` table's header: create revision then mod revision.
const CURRENT_HEADER: usize = 16;
/// Length of the `history` table's header: a tag byte then the create revision.
const HISTORY_HEADER: usize = 9;
const TAG_PUT: u8 = 0;
const TAG_TOMBSTONE: u8 = 1;

/// A version of one key as recorded in the `history` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Version {
    /// The key held `value` from this revision on; it was created at `create_revision`.
    Put { create_revision: u64, value: Bytes },
    /// The key was deleted at this revision.
    Tombstone,
}

impl Version {
    /// The key-value this version represents, when it is a put at `mod_revision`.
    pub(super) fn into_kv(self, key: &str, mod_revision: u64) -> Option<KeyValue> {
        match self {
            Version::Put {
                create_revision,
                value,
            } => Some(KeyValue {
                key: key.to_owned(),
                value,
                create_revision,
                mod_revision,
            }),
            Version::Tombstone => None,
        }
    }
}

/// Encodes a `current` table value.
pub(super) fn encode_current(create_revision: u64, mod_revision: u64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CURRENT_HEADER + value.len());
    out.extend_from_slice(&create_revision.to_le_bytes());
    out.extend_from_slice(&mod_revision.to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// Decodes a `current` table value into the key-value it stores.
pub(super) fn decode_current(key: &str, raw: &[u8]) -> Result<KeyValue, String> {
    let create_revision = read_u64(raw, 0)?;
    let mod_revision = read_u64(raw, 8)?;
    let value = raw
        .get(CURRENT_HEADER..)
        .ok_or_else(|| corrupt(key, "current"))?;
    Ok(KeyValue {
        key: key.to_owned(),
        value: Bytes::copy_from_slice(value),
        create_revision,
        mod_revision,
    })
}

/// Encodes a `history` table value.
pub(super) fn encode_history(version: &Version) -> Vec<u8> {
    match version {
        Version::Put {
            create_revision,
            value,
        } => {
            let mut out = Vec::with_capacity(HISTORY_HEADER + value.len());
            out.push(TAG_PUT);
            out.extend_from_slice(&create_revision.to_le_bytes());
            out.extend_from_slice(value);
            out
        }
        Version::Tombstone => {
            let mut out = vec![TAG_TOMBSTONE];
            out.extend_from_slice(&0u64.to_le_bytes());
            out
        }
    }
}

/// Whether a raw `history` value is a tombstone, without copying the value.
pub(super) fn is_tombstone(raw: &[u8]) -> bool {
    raw.first() == Some(&TAG_TOMBSTONE)
}

/// Decodes a `history` table value.
pub(super) fn decode_history(key: &str, raw: &[u8]) -> Result<Version, String> {
    match raw.first() {
        Some(&TAG_PUT) => {
            let create_revision = read_u64(raw, 1)?;
            let value = raw
                .get(HISTORY_HEADER..)
                .ok_or_else(|| corrupt(key, "history"))?;
            Ok(Version::Put {
                create_revision,
                value: Bytes::copy_from_slice(value),
            })
        }
        Some(&TAG_TOMBSTONE) => Ok(Version::Tombstone),
        _ => Err(corrupt(key, "history")),
    }
}

fn read_u64(raw: &[u8], at: usize) -> Result<u64, String> {
    raw.get(at..at + 8)
        .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| "corrupt record: truncated header".to_owned())
}

fn corrupt(key: &str, table: &str) -> String {
    format!("corrupt {table} record for key {key:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_round_trips() {
        let raw = encode_current(3, 9, b"{\"a\":1}");
        let kv = decode_current("/k", &raw).unwrap();
        assert_eq!(kv.create_revision, 3);
        assert_eq!(kv.mod_revision, 9);
        assert_eq!(&kv.value[..], b"{\"a\":1}");
        assert_eq!(kv.key, "/k");
    }

    #[test]
    fn history_round_trips_and_tags() {
        let cases = [
            Version::Put {
                create_revision: 7,
                value: Bytes::from_static(b"v"),
            },
            Version::Put {
                create_revision: 1,
                value: Bytes::new(),
            },
            Version::Tombstone,
        ];
        for version in cases {
            let raw = encode_history(&version);
            assert_eq!(is_tombstone(&raw), version == Version::Tombstone);
            assert_eq!(decode_history("/k", &raw).unwrap(), version);
        }
    }

    #[test]
    fn truncated_records_are_errors_not_panics() {
        for raw in [&b""[..], &b"\x00\x01"[..], &b"\x07"[..], &[0u8; 8][..]] {
            assert!(decode_history("/k", raw).is_err(), "history {raw:?}");
        }
        for raw in [&b""[..], &b"\x00\x01"[..], &[0u8; 15][..]] {
            assert!(decode_current("/k", raw).is_err(), "current {raw:?}");
        }
    }
}
