//! The byte layout of the embedded engine's table values, and its checksums.
//!
//! Integers are little-endian fixed width so decoding is a bounds-checked slice read. Every
//! value carries a CRC-32 (crc32fast, hardware-accelerated) over its key, its header and its
//! payload, checked on every decode: a value that does not parse or whose checksum does not
//! match is reported as corruption, naming the key and the table, and its bytes go nowhere.
//! The key (and, in `history`, the revision) is part of the sum, so a value found under the
//! wrong key is corruption too.
//!
//! Layout, the same in formats 2 and 3 (the `format` entry of the `meta` table; format 3 changed
//! which versions `history` holds, not the values, see `init`):
//! - `current`: `crc:4 | create_revision:8 | mod_revision:8 | value`; the sum covers
//!   `key | bytes 4..`.
//! - `history`: `tag:1 | crc:4 | create_revision:8 | value`, tag 2 a put, tag 3 a tombstone
//!   (create revision 0, no value); the sum covers `key | revision:8 | tag | bytes 5..`.
//!
//! Format 1, written by kapi before checksums, had no sums: `current` was
//! `create_revision:8 | mod_revision:8 | value` and `history` `tag:1 | create_revision:8 |
//! value` with tags 0 (put) and 1 (tombstone). A database in format 1 is rewritten in this layout
//! in one transaction when it is opened ([`migrate_current`], [`migrate_history`]), so readers
//! only ever decode this layout. The sums then vouch for the bytes as they were at the upgrade:
//! damage done before it cannot be told from data.
//!
//! Since format 2 the two tables' values have a redb type of their own, [`Checked`], where format
//! 1 had `&[u8]`. kapi from before checksums opens the tables as `&[u8]`, so on a database in
//! format 2 or later redb reports a type mismatch and that kapi refuses to start, rather than misread
//! the values or write values without sums among them.

use bytes::Bytes;

use super::super::KeyValue;

/// Length of the `current` table's header: checksum, create revision, mod revision.
const CURRENT_HEADER: usize = 20;
/// Length of the `history` table's header: tag, checksum, create revision.
const HISTORY_HEADER: usize = 13;
const TAG_PUT: u8 = 2;
const TAG_TOMBSTONE: u8 = 3;
/// Format 1's tags and header lengths, read only by the migration.
const V1_TAG_PUT: u8 = 0;
const V1_TAG_TOMBSTONE: u8 = 1;
const V1_CURRENT_HEADER: usize = 16;
const V1_HISTORY_HEADER: usize = 9;

/// The redb value type of the `current` and `history` tables since format 2: bytes, stored as
/// `&[u8]` stores them, under a type name of its own (see the module docs).
#[derive(Debug)]
pub struct Checked;

impl redb::Value for Checked {
    type SelfType<'a>
        = &'a [u8]
    where
        Self: 'a;
    type AsBytes<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn fixed_width() -> Option<usize> {
        None
    }

    fn from_bytes<'a>(data: &'a [u8]) -> &'a [u8]
    where
        Self: 'a,
    {
        data
    }

    fn as_bytes<'a, 'b: 'a>(value: &'a &'b [u8]) -> &'a [u8]
    where
        Self: 'b,
    {
        value
    }

    fn type_name() -> redb::TypeName {
        redb::TypeName::new("kapi::Checked")
    }
}

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

fn current_sum(key: &str, rest: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(key.as_bytes());
    hasher.update(rest);
    hasher.finalize()
}

fn history_sum(key: &str, revision: u64, tag: u8, rest: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(key.as_bytes());
    hasher.update(&revision.to_le_bytes());
    hasher.update(&[tag]);
    hasher.update(rest);
    hasher.finalize()
}

/// Encodes a `current` table value of `key`.
pub(super) fn encode_current(
    key: &str,
    create_revision: u64,
    mod_revision: u64,
    value: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(CURRENT_HEADER + value.len());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&create_revision.to_le_bytes());
    out.extend_from_slice(&mod_revision.to_le_bytes());
    out.extend_from_slice(value);
    let sum = current_sum(key, &out[4..]);
    out[..4].copy_from_slice(&sum.to_le_bytes());
    out
}

/// Decodes a `current` table value into the key-value it stores, checking its sum.
pub(super) fn decode_current(key: &str, raw: &[u8]) -> Result<KeyValue, String> {
    let table = "current";
    if raw.len() < CURRENT_HEADER {
        return Err(corrupt(key, table, "truncated header"));
    }
    if read_u32(raw, 0) != current_sum(key, &raw[4..]) {
        return Err(corrupt(key, table, "checksum mismatch"));
    }
    Ok(KeyValue {
        key: key.to_owned(),
        value: Bytes::copy_from_slice(&raw[CURRENT_HEADER..]),
        create_revision: read_u64(raw, 4),
        mod_revision: read_u64(raw, 12),
    })
}

/// The mod revision the `current` table value of `key` records, its sum checked, without
/// copying the value; `None` when it is damaged.
pub(super) fn mod_revision_of_current(key: &str, raw: &[u8]) -> Option<u64> {
    (raw.len() >= CURRENT_HEADER && read_u32(raw, 0) == current_sum(key, &raw[4..]))
        .then(|| read_u64(raw, 12))
}

/// Encodes the `history` table value of `key` at `revision`.
pub(super) fn encode_history(key: &str, revision: u64, version: &Version) -> Vec<u8> {
    let (tag, create_revision, value): (u8, u64, &[u8]) = match version {
        Version::Put {
            create_revision,
            value,
        } => (TAG_PUT, *create_revision, value),
        Version::Tombstone => (TAG_TOMBSTONE, 0, &[]),
    };
    let mut out = Vec::with_capacity(HISTORY_HEADER + value.len());
    out.push(tag);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&create_revision.to_le_bytes());
    out.extend_from_slice(value);
    let sum = history_sum(key, revision, tag, &out[5..]);
    out[1..5].copy_from_slice(&sum.to_le_bytes());
    out
}

/// Whether a raw `history` value is a tombstone, from its tag alone: without copying or
/// checking the value, for callers that only need existence (compaction, and list items past
/// the page, where a damaged tag can only misstate how many items remain).
pub(super) fn is_tombstone(raw: &[u8]) -> bool {
    raw.first() == Some(&TAG_TOMBSTONE)
}

/// Decodes the `history` table value of `key` at `revision`, checking its sum.
pub(super) fn decode_history(key: &str, revision: u64, raw: &[u8]) -> Result<Version, String> {
    let table = "history";
    if raw.len() < HISTORY_HEADER {
        return Err(corrupt(key, table, "truncated header"));
    }
    let tag = raw[0];
    if read_u32(raw, 1) != history_sum(key, revision, tag, &raw[5..]) {
        return Err(corrupt(key, table, "checksum mismatch"));
    }
    match tag {
        TAG_PUT => Ok(Version::Put {
            create_revision: read_u64(raw, 5),
            value: Bytes::copy_from_slice(&raw[HISTORY_HEADER..]),
        }),
        TAG_TOMBSTONE => Ok(Version::Tombstone),
        _ => Err(corrupt(key, table, "unknown tag")),
    }
}

/// A format 1 `current` value of `key` in format 2; an error if it does not parse.
pub(super) fn migrate_current(key: &str, raw: &[u8]) -> Result<Vec<u8>, String> {
    if raw.len() < V1_CURRENT_HEADER {
        return Err(corrupt(key, "current", "truncated format 1 header"));
    }
    Ok(encode_current(
        key,
        read_u64(raw, 0),
        read_u64(raw, 8),
        &raw[V1_CURRENT_HEADER..],
    ))
}

/// A format 1 `history` value of `key` at `revision` in format 2; an error if it does not
/// parse.
pub(super) fn migrate_history(key: &str, revision: u64, raw: &[u8]) -> Result<Vec<u8>, String> {
    let version = match raw.first() {
        Some(&V1_TAG_PUT) if raw.len() >= V1_HISTORY_HEADER => Version::Put {
            create_revision: read_u64(raw, 1),
            value: Bytes::copy_from_slice(&raw[V1_HISTORY_HEADER..]),
        },
        Some(&V1_TAG_TOMBSTONE) => Version::Tombstone,
        _ => return Err(corrupt(key, "history", "unparsable format 1 record")),
    };
    Ok(encode_history(key, revision, &version))
}

/// The integer at `at`; callers check the length first.
fn read_u64(raw: &[u8], at: usize) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&raw[at..at + 8]);
    u64::from_le_bytes(bytes)
}

fn read_u32(raw: &[u8], at: usize) -> u32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&raw[at..at + 4]);
    u32::from_le_bytes(bytes)
}

fn corrupt(key: &str, table: &str, what: &str) -> String {
    format!("corrupt {table} record for key {key:?}: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_round_trips() {
        let raw = encode_current("/k", 3, 9, b"{\"a\":1}");
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
            let raw = encode_history("/k", 8, &version);
            assert_eq!(is_tombstone(&raw), version == Version::Tombstone);
            assert_eq!(decode_history("/k", 8, &raw).unwrap(), version);
        }
    }

    #[test]
    fn truncated_records_are_errors_not_panics() {
        for raw in [&b""[..], &b"\x02\x01"[..], &b"\x07"[..], &[0u8; 12][..]] {
            assert!(decode_history("/k", 1, raw).is_err(), "history {raw:?}");
        }
        for raw in [&b""[..], &b"\x00\x01"[..], &[0u8; 19][..]] {
            assert!(decode_current("/k", raw).is_err(), "current {raw:?}");
        }
        assert!(migrate_current("/k", &[0u8; 15]).is_err());
        for raw in [&b""[..], &b"\x00\x01"[..], &b"\x07"[..]] {
            assert!(migrate_history("/k", 1, raw).is_err(), "history {raw:?}");
        }
    }

    /// Every single flipped bit, in the header or the value, is caught, and so is a value
    /// read under another key or revision.
    #[test]
    fn any_flipped_bit_is_corruption() {
        let current = encode_current("/k", 3, 9, b"{\"data\":\"ZZZZ\"}");
        let put = Version::Put {
            create_revision: 7,
            value: Bytes::from_static(b"{\"data\":\"ZZZZ\"}"),
        };
        let history = encode_history("/k", 9, &put);
        let tombstone = encode_history("/k", 9, &Version::Tombstone);
        for bit in 0..current.len() * 8 {
            let mut raw = current.clone();
            raw[bit / 8] ^= 1 << (bit % 8);
            let error = decode_current("/k", &raw).unwrap_err();
            assert!(
                error.contains("current") && error.contains("\"/k\""),
                "{error}"
            );
        }
        for record in [&history, &tombstone] {
            for bit in 0..record.len() * 8 {
                let mut raw = record.clone();
                raw[bit / 8] ^= 1 << (bit % 8);
                let error = decode_history("/k", 9, &raw).unwrap_err();
                assert!(
                    error.contains("history") && error.contains("\"/k\""),
                    "{error}"
                );
            }
        }
        assert!(decode_current("/j", &current).is_err());
        assert!(decode_history("/j", 9, &history).is_err());
        assert!(decode_history("/k", 10, &history).is_err());
    }

    #[test]
    fn format_1_records_migrate_to_the_same_versions() {
        let mut v1_current = Vec::new();
        v1_current.extend_from_slice(&3u64.to_le_bytes());
        v1_current.extend_from_slice(&9u64.to_le_bytes());
        v1_current.extend_from_slice(b"{\"a\":1}");
        let kv = decode_current("/k", &migrate_current("/k", &v1_current).unwrap()).unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision), (3, 9));
        assert_eq!(&kv.value[..], b"{\"a\":1}");

        let mut v1_put = vec![V1_TAG_PUT];
        v1_put.extend_from_slice(&7u64.to_le_bytes());
        v1_put.extend_from_slice(b"v");
        let mut v1_tombstone = vec![V1_TAG_TOMBSTONE];
        v1_tombstone.extend_from_slice(&0u64.to_le_bytes());
        let put = Version::Put {
            create_revision: 7,
            value: Bytes::from_static(b"v"),
        };
        for (v1, version) in [(v1_put, put), (v1_tombstone, Version::Tombstone)] {
            let migrated = migrate_history("/k", 4, &v1).unwrap();
            assert_eq!(is_tombstone(&migrated), version == Version::Tombstone);
            assert_eq!(decode_history("/k", 4, &migrated).unwrap(), version);
        }
    }
}
