//! The memory [`EmbeddedStorage::in_memory`](super::EmbeddedStorage::in_memory) keeps its
//! database in: redb's "file" as a list of fixed-size chunks.
//!
//! redb's own `InMemoryBackend` holds the file in one `Vec`, which redb grows a little at a
//! time as the database fills: every growth past the vector's capacity moves the whole
//! database, and a test server taking thousands of writes a second spent more time there than
//! in the rest of its store. Chunks never move: growing adds zeroed chunks (which the allocator
//! takes fresh from the system, already zero), shrinking drops them.

use std::io;
use std::ops::Range;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use redb::StorageBackend;

/// Bytes per chunk: large enough that reads and writes, a page of a few KiB at a time, rarely
/// straddle two, small enough that an idle test server holds little.
const CHUNK: usize = 1 << 20;

/// A growable byte array in [`CHUNK`]-sized pieces, as redb's storage.
#[derive(Debug, Default)]
pub(super) struct ChunkedMemory(RwLock<Chunks>);

#[derive(Debug, Default)]
struct Chunks {
    /// The file's length; the chunks cover it, the last one possibly in part.
    len: usize,
    chunks: Vec<Box<[u8]>>,
}

/// The pieces of `len` bytes from `offset` in a file of `file_len` bytes: per chunk touched, its
/// index, the range within it, and where that range starts in the caller's buffer.
fn spans(
    offset: usize,
    len: usize,
    file_len: usize,
) -> io::Result<impl Iterator<Item = (usize, Range<usize>, usize)>> {
    let end = offset
        .checked_add(len)
        .filter(|end| *end <= file_len)
        .ok_or_else(out_of_range)?;
    let first = offset / CHUNK;
    let last = end.div_ceil(CHUNK);
    Ok((first..last).map(move |chunk| {
        let start = (chunk * CHUNK).max(offset);
        let stop = ((chunk + 1) * CHUNK).min(end);
        (
            chunk,
            start % CHUNK..start % CHUNK + (stop - start),
            start - offset,
        )
    }))
}

fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "offset out of range")
}

fn poisoned() -> io::Error {
    io::Error::other("the in-memory store's lock was poisoned")
}

impl ChunkedMemory {
    fn read_guard(&self) -> io::Result<RwLockReadGuard<'_, Chunks>> {
        self.0.read().map_err(|_| poisoned())
    }

    fn write_guard(&self) -> io::Result<RwLockWriteGuard<'_, Chunks>> {
        self.0.write().map_err(|_| poisoned())
    }
}

fn to_usize(n: u64) -> io::Result<usize> {
    usize::try_from(n).map_err(|_| out_of_range())
}

impl StorageBackend for ChunkedMemory {
    fn len(&self) -> io::Result<u64> {
        Ok(self.read_guard()?.len as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let guard = self.read_guard()?;
        for (chunk, within, from) in spans(to_usize(offset)?, out.len(), guard.len)? {
            out[from..from + within.len()].copy_from_slice(&guard.chunks[chunk][within]);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = to_usize(len)?;
        let mut guard = self.write_guard()?;
        let chunks = len.div_ceil(CHUNK);
        if len < guard.len {
            // As a file truncated and extended again, the bytes cut off read back as zeros.
            guard.chunks.truncate(chunks);
            if let Some(last) = guard.chunks.last_mut() {
                let kept = len - (chunks - 1) * CHUNK;
                last[kept..].fill(0);
            }
        } else {
            guard
                .chunks
                .resize_with(chunks, || vec![0; CHUNK].into_boxed_slice());
        }
        guard.len = len;
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut guard = self.write_guard()?;
        for (chunk, within, from) in spans(to_usize(offset)?, data.len(), guard.len)? {
            let n = within.len();
            guard.chunks[chunk][within].copy_from_slice(&data[from..from + n]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_across_chunks() {
        let memory = ChunkedMemory::default();
        memory.set_len(3 * CHUNK as u64).unwrap();
        let data: Vec<u8> = (0..CHUNK + 10).map(|i| (i % 251) as u8).collect();
        memory.write(CHUNK as u64 - 5, &data).unwrap();
        let mut back = vec![0; data.len()];
        memory.read(CHUNK as u64 - 5, &mut back).unwrap();
        assert_eq!(back, data);
        let mut edge = [9; 3];
        memory.read(CHUNK as u64 - 8, &mut edge).unwrap();
        assert_eq!(edge, [0, 0, 0]);
    }

    #[test]
    fn bytes_cut_off_read_back_as_zeros() {
        let memory = ChunkedMemory::default();
        memory.set_len(CHUNK as u64 + 100).unwrap();
        memory.write(CHUNK as u64 - 2, &[7; 50]).unwrap();
        memory.set_len(CHUNK as u64).unwrap();
        memory.set_len(CHUNK as u64 + 100).unwrap();
        let mut back = [1; 50];
        memory.read(CHUNK as u64 - 2, &mut back).unwrap();
        assert_eq!(&back[..2], &[7, 7]);
        assert!(back[2..].iter().all(|b| *b == 0));
        assert_eq!(memory.len().unwrap(), CHUNK as u64 + 100);
    }

    #[test]
    fn access_past_the_end_is_an_error() {
        let memory = ChunkedMemory::default();
        memory.set_len(10).unwrap();
        assert!(memory.write(8, &[1, 2, 3]).is_err());
        assert!(memory.read(u64::MAX, &mut [0]).is_err());
        assert!(memory.read(0, &mut [0; 10]).is_ok());
    }
}
