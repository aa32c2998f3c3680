//! Writing a large file without filling the page cache with it (`O_DIRECT`): the bytes go from a
//! small aligned buffer to the disk. A buffered write of a 10M-row export (460 MB) copies every
//! byte into freshly allocated cache pages, a second of CPU taken from the load that runs beside
//! it; a direct write costs the buffer's copy and leaves the disk's controller the rest. The pages
//! are read back into the cache on demand, and only those read (a query reads a few columns).
//!
//! Where direct writes are not supported (tmpfs, some network file systems) or a write is refused
//! for its alignment, the file is written through the cache as usual: the bytes are the same.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The alignment of the buffer, of every direct write's offset and of its length: a page, which
/// covers every logical block size Linux direct I/O asks for.
const ALIGN: usize = 4096;

/// The buffer's size: large writes, few system calls.
const BUFFER: usize = 4 << 20;

/// A file written by [`DirectFile::write`] and finished by [`DirectFile::finish`]: through the
/// disk when it can be, through the page cache otherwise.
pub struct DirectFile {
    file: File,
    buffer: Aligned,
    filled: usize,
    written: u64,
    direct: bool,
}

impl DirectFile {
    /// Creates (or truncates) `path` for writing.
    pub fn create(path: &Path) -> io::Result<DirectFile> {
        let (file, direct) = open(path)?;
        Ok(DirectFile { file, buffer: Aligned::new(BUFFER)?, filled: 0, written: 0, direct })
    }

    /// Writes what the buffer holds, up to its last whole block (`all`: every byte, the tail
    /// through the page cache).
    fn drain(&mut self, all: bool) -> io::Result<()> {
        let whole = if self.direct { self.filled / ALIGN * ALIGN } else { self.filled };
        let mut done = 0;
        while done < whole {
            match write_at(&self.file, &self.buffer.as_slice()[done..whole], self.written) {
                Ok(n) => {
                    done += n;
                    self.written += n as u64;
                }
                // A partial direct write leaves the offset unaligned: the rest goes through the cache.
                Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => self.buffered()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if self.direct && done % ALIGN != 0 {
                self.buffered()?;
            }
        }
        self.buffer.as_mut_slice().copy_within(done..self.filled, 0);
        self.filled -= done;
        if all && self.filled > 0 {
            self.buffered()?;
            self.drain(false)?;
        }
        Ok(())
    }

    /// From here on, through the page cache.
    fn buffered(&mut self) -> io::Result<()> {
        if self.direct {
            without_direct(&self.file)?;
            self.direct = false;
        }
        Ok(())
    }

    /// Writes what is left.
    pub fn finish(mut self) -> io::Result<()> {
        self.drain(true)
    }
}

impl Write for DirectFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.filled == self.buffer.len() {
            self.drain(false)?;
        }
        let n = bytes.len().min(self.buffer.len() - self.filled);
        self.buffer.as_mut_slice()[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
        self.filled += n;
        Ok(n)
    }

    /// Writes the whole blocks held; the tail stays for [`DirectFile::finish`] (a direct write
    /// is made of whole blocks).
    fn flush(&mut self) -> io::Result<()> {
        self.drain(false)
    }
}

fn open(path: &Path) -> io::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if let Ok(file) = options.clone().custom_flags(libc::O_DIRECT).open(path) {
        return Ok((file, true));
    }
    Ok((options.open(path)?, false))
}

fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.write_at(bytes, offset)
}

/// Turns `O_DIRECT` off on an open file.
fn without_direct(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on an open file descriptor borrowed for the call, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A zeroed buffer aligned to [`ALIGN`].
struct Aligned {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is owned memory, reached only through `&self`/`&mut self`.
unsafe impl Send for Aligned {}

impl Aligned {
    fn new(len: usize) -> io::Result<Aligned> {
        let layout = std::alloc::Layout::from_size_align(len, ALIGN).map_err(io::Error::other)?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        Ok(Aligned { ptr, len })
    }

    fn len(&self) -> usize {
        self.len
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes (zeroed at allocation) owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe {
            std::alloc::dealloc(self.ptr.as_ptr(), std::alloc::Layout::from_size_align_unchecked(self.len, ALIGN))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    /// Files of every awkward length (empty, under a block, a block and one byte, past the
    /// buffer and not a whole number of blocks), written in pieces of awkward sizes, read back
    /// byte for byte; an existing longer file is truncated.
    #[test]
    fn files_are_written_byte_for_byte_whatever_their_length() {
        let dir = std::env::temp_dir().join(format!("eco-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.bin");
        std::fs::write(&path, pattern(BUFFER * 3)).unwrap();
        for len in [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, BUFFER - 7, BUFFER, BUFFER * 2 + ALIGN * 3 + 123] {
            let bytes = pattern(len);
            let mut out = DirectFile::create(&path).unwrap();
            for piece in bytes.chunks(ALIGN * 5 + 17) {
                out.write_all(piece).unwrap();
            }
            out.flush().unwrap();
            out.finish().unwrap();
            assert!(std::fs::read(&path).unwrap() == bytes, "a file of {len} bytes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Through the page cache from the start (a file system without direct writes), the same bytes.
    #[test]
    fn a_file_written_through_the_cache_is_the_same() {
        let path = std::env::temp_dir().join(format!("eco-direct-cached-{}.bin", std::process::id()));
        let bytes = pattern(BUFFER + ALIGN + 5);
        let mut out = DirectFile::create(&path).unwrap();
        out.buffered().unwrap();
        out.write_all(&bytes).unwrap();
        out.finish().unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes);
        std::fs::remove_file(&path).unwrap();
    }
}
