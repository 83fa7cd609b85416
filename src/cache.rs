//! The on-disk world cache, keyed by the world hash.
//!
//! A BZFlag server names its world by the MD5 of the complete `MsgGetWorld` blob (fact sheet §5.1 `MsgWantWHash`,
//! §7.1): 32 lowercase hex digits, prefixed by `'t'` (a generated, temporary world) or `'p'` (a permanent world
//! file). The official client keeps downloaded worlds in a cache under that name and skips the download when it
//! already has the blob; [`WorldCache`] does the same for bzhead.
//!
//! A cached world is the file `<dir>/<md5hex>.bwc` holding the blob exactly as downloaded. Every load checks that
//! the file's MD5 still equals its name; a file that does not (truncated, corrupted, tampered with) is removed and
//! reported as a miss, so the caller just downloads again. Stores write a temporary file in the same directory and
//! rename it into place, so a reader never sees half a file and a crash leaves at worst a stray `*.tmp`.
//!
//! The cache holds at most [`WorldCache::max_bytes`] of worlds ([`DEFAULT_MAX_BYTES`] unless changed, `--cache-max-mib`
//! on the command line): after each store the least recently used worlds (by modification time, which a load
//! refreshes) are removed until the rest fit. A world larger than the whole cap is not stored.
//!
//! Only regular files are read: a file is opened without following a symlink and without blocking
//! (`O_NONBLOCK | O_NOFOLLOW`, so a FIFO or device planted under a world's name cannot hang the open), then checked
//! with `fstat` on the open descriptor before a byte is read.
//!
//! This is the only file I/O outside the reactor, and it is called by the driver, never by the sans-IO engine;
//! the reactor calls it on its worker thread, so a slow disk or a 64 MiB file never stalls the event loop.
//! Hashes are checked to be exactly 32 lowercase hex digits before they become part of a path, so a hostile server
//! cannot make bzhead read or write outside the cache directory, and files larger than [`MAX_WORLD_FILE`] are
//! neither read nor written. (`unsafe` is forbidden here by the `mod` line in `lib.rs`, see `docs/unsafe.md`.)

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Default cap on the bytes of worlds the cache keeps: 256 MiB (real worlds are a few KiB to a few hundred KiB
/// compressed, so that is thousands of them).
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Most directory entries looked at when evicting (a directory that holds more than this is not the cache's own
/// doing; the entries beyond are left alone).
pub const MAX_EVICT_SCAN: usize = 100_000;

/// Largest world blob the cache reads or writes, in bytes (64 MiB).
pub const MAX_WORLD_FILE: u64 = 64 * 1024 * 1024;

/// Environment variable naming the cache directory; overrides the XDG default (used by tests).
pub const CACHE_DIR_ENV: &str = "BZHEAD_CACHE_DIR";

/// File name extension of a cached world.
pub const EXTENSION: &str = "bwc";

/// A directory of cached world blobs named by their MD5. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldCache {
    dir: PathBuf,
    max_bytes: u64,
}

impl WorldCache {
    /// A cache in `dir`, holding at most [`DEFAULT_MAX_BYTES`]. Nothing is touched until the first
    /// [`load`](Self::load) or [`store`](Self::store); the directory is created on the first store.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WorldCache { dir: dir.into(), max_bytes: DEFAULT_MAX_BYTES }
    }

    /// This cache with another cap on the bytes of worlds it keeps.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The cap on the bytes of worlds this cache keeps.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The default directory: `$BZHEAD_CACHE_DIR` if set, else `$XDG_CACHE_HOME/bzhead/worlds` (when that is an
    /// absolute path), else `$HOME/.cache/bzhead/worlds`; `None` when none of these is set.
    pub fn default_dir() -> Option<PathBuf> {
        default_dir_from(|name| std::env::var_os(name))
    }

    /// The directory this cache uses.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds the world with this hash, or `None` when `hash_hex` is not 32 lowercase hex digits.
    pub fn path_for(&self, hash_hex: &str) -> Option<PathBuf> {
        is_world_hash(hash_hex).then(|| self.dir.join(format!("{hash_hex}.{EXTENSION}")))
    }

    /// The cached blob whose MD5 is `hash_hex`, or `None` on a miss.
    ///
    /// A miss is: a malformed hash, no such file, an unreadable file, something that is not a regular file (a
    /// symlink, FIFO or device is neither followed nor opened in a way that blocks), a file larger than
    /// [`MAX_WORLD_FILE`], or a file whose MD5 differs from its name. Files in the last two cases are removed. A
    /// hit becomes the most recently used world.
    pub fn load(&self, hash_hex: &str) -> Option<Vec<u8>> {
        let path = self.path_for(hash_hex)?;
        let opened = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::debug!(path = %path.display(), error = %e, "world cache: cannot open");
                }
                return None;
            }
        };
        // fstat on the descriptor: what was opened, not what the name points to now.
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            tracing::debug!(path = %path.display(), "world cache: not a regular file");
            return None;
        }
        if meta.len() > MAX_WORLD_FILE {
            self.discard(&path, "larger than the limit");
            return None;
        }
        // Read at most one byte past the limit, whatever the metadata said (the file may grow meanwhile).
        let capacity = usize::try_from(meta.len()).unwrap_or(0);
        let mut blob = Vec::with_capacity(capacity);
        if let Err(e) = file.take(MAX_WORLD_FILE + 1).read_to_end(&mut blob) {
            tracing::debug!(path = %path.display(), error = %e, "world cache: read failed");
            return None;
        }
        if blob.len() as u64 > MAX_WORLD_FILE {
            self.discard(&path, "larger than the limit");
            return None;
        }
        if md5_hex(&blob) != hash_hex {
            self.discard(&path, "MD5 does not match its name");
            return None;
        }
        // Most recently used: the eviction goes by modification time (access times are often not kept).
        let touched = OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(&path);
        if let Err(e) = touched.and_then(|f| f.set_modified(SystemTime::now())) {
            tracing::debug!(path = %path.display(), error = %e, "world cache: cannot mark as used");
        }
        Some(blob)
    }

    /// Stores `blob` as the world with hash `hash_hex`, atomically (temporary file, then rename), creating the
    /// directory if needed. Returns the file's path.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] when `hash_hex` is not 32 lowercase hex digits or the blob is
    /// larger than [`MAX_WORLD_FILE`], and with [`io::ErrorKind::InvalidData`] when the blob's MD5 is not
    /// `hash_hex` (such a file would be thrown away by the next [`load`](Self::load) anyway).
    pub fn store(&self, hash_hex: &str, blob: &[u8]) -> io::Result<PathBuf> {
        let Some(path) = self.path_for(hash_hex) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "world hash is not 32 lowercase hex digits"));
        };
        if blob.len() as u64 > MAX_WORLD_FILE {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "world blob is larger than the cache limit"));
        }
        if blob.len() as u64 > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the world ({} bytes) is larger than the cache's cap of {} bytes", blob.len(), self.max_bytes),
            ));
        }
        if md5_hex(blob) != hash_hex {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "world blob does not match its hash"));
        }
        fs::create_dir_all(&self.dir)?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".{hash_hex}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = write_new(&tmp, blob).and_then(|()| fs::rename(&tmp, &path));
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        let path = result.map(|()| path)?;
        self.evict(&path);
        Ok(path)
    }

    /// Removes the least recently used worlds (oldest modification time first) until the cache's worlds fit in
    /// [`WorldCache::max_bytes`]; `keep` (the world just stored) is never removed. Only regular `*.bwc` files
    /// named by a hash count; at most [`MAX_EVICT_SCAN`] entries are looked at. Returns the bytes removed.
    pub fn evict(&self, keep: &Path) -> u64 {
        let Ok(entries) = fs::read_dir(&self.dir) else { return 0 };
        let mut worlds: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        let mut total = 0u64;
        for entry in entries.take(MAX_EVICT_SCAN).flatten() {
            let path = entry.path();
            let named = path.extension().is_some_and(|e| e == EXTENSION)
                && path.file_stem().and_then(|s| s.to_str()).is_some_and(is_world_hash);
            // symlink_metadata: a symlink is not followed (and not counted).
            let Ok(meta) = fs::symlink_metadata(&path) else { continue };
            if !named || !meta.is_file() {
                continue;
            }
            total = total.saturating_add(meta.len());
            if path != keep {
                worlds.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), path));
            }
        }
        worlds.sort();
        let mut removed = 0;
        for (_, len, path) in worlds {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                tracing::debug!(path = %path.display(), "world cache: evicted (least recently used)");
                total = total.saturating_sub(len);
                removed += len;
            }
        }
        removed
    }

    fn discard(&self, path: &Path, why: &str) {
        tracing::warn!(path = %path.display(), why, "world cache: removing bad file");
        let _ = fs::remove_file(path);
    }
}

/// Writes `bytes` to a file that must not exist yet, and flushes it to disk.
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// [`WorldCache::default_dir`] with the environment given as a lookup function.
fn default_dir_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty(CACHE_DIR_ENV) {
        return Some(dir);
    }
    // The XDG base directory spec says relative values are invalid and must be ignored.
    if let Some(xdg) = non_empty("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Some(xdg.join("bzhead").join("worlds"));
    }
    non_empty("HOME").map(|home| home.join(".cache").join("bzhead").join("worlds"))
}

/// The MD5 of `bytes` as 32 lowercase hex digits (the form of a world hash).
pub use crate::bzflag::session::md5_hex;

/// Whether `s` is a world hash as the cache names files: exactly 32 lowercase hex digits.
pub fn is_world_hash(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Splits the text of a `MsgWantWHash` reply (`'t'` or `'p'`, 32 hex digits, a NUL) into the kind and the hash.
///
/// Trailing NULs are ignored and upper-case hex digits are lowered; anything else (another kind letter, a wrong
/// length, a non-hex digit) gives `None`.
pub fn parse_world_hash(payload_text: &str) -> Option<(char, String)> {
    let text = payload_text.trim_end_matches('\0');
    let mut chars = text.chars();
    let kind = chars.next().filter(|c| matches!(c, 't' | 'p'))?;
    let hash = chars.as_str().to_ascii_lowercase();
    is_world_hash(&hash).then_some((kind, hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "bzhead-cache-test-{}-{}-{name}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const WORLD: &[u8] = b"a world blob, compressed or not";

    #[test]
    fn md5_known_answers() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6");
        assert!(is_world_hash(&md5_hex(WORLD)));
    }

    #[test]
    fn hash_validation() {
        assert!(is_world_hash("d41d8cd98f00b204e9800998ecf8427e"));
        for bad in [
            "",
            "d41d8cd98f00b204e9800998ecf8427",
            "d41d8cd98f00b204e9800998ecf8427e0",
            "D41D8CD98F00B204E9800998ECF8427E",
            "d41d8cd98f00b204e9800998ecf8427g",
            "../../../../../../../etc/passwd!",
            "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "d41d8cd98f00b204e9800998ecf842/e",
            "d41d8cd98f00b204e9800998ecf84\u{e9}",
        ] {
            assert!(!is_world_hash(bad), "{bad:?}");
            assert_eq!(WorldCache::new("/nonexistent").path_for(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parse_hash_reply() {
        let hash = "0123456789abcdef0123456789abcdef";
        assert_eq!(parse_world_hash(&format!("t{hash}\0")), Some(('t', hash.to_owned())));
        assert_eq!(parse_world_hash(&format!("p{hash}")), Some(('p', hash.to_owned())));
        assert_eq!(parse_world_hash(&format!("p{}\0\0", hash.to_uppercase())), Some(('p', hash.to_owned())));
        for bad in [
            String::new(),
            "\0".to_owned(),
            "t".to_owned(),
            format!("x{hash}\0"),
            format!("{hash}\0"),
            format!("t{hash}0\0"),
            format!("t{}\0", &hash[1..]),
            format!("t{hash}\0junk"),
            format!(" t{hash}"),
            "t0123456789abcdef0123456789abcde\u{e9}".to_owned(),
        ] {
            assert_eq!(parse_world_hash(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn store_then_load() {
        let tmp = TempDir::new("roundtrip");
        let cache = WorldCache::new(tmp.0.join("nested").join("worlds"));
        let hash = md5_hex(WORLD);
        assert_eq!(cache.load(&hash), None, "a miss before the directory exists");
        let path = cache.store(&hash, WORLD).unwrap();
        assert_eq!(path, cache.dir().join(format!("{hash}.bwc")));
        assert_eq!(cache.load(&hash).as_deref(), Some(WORLD));
        // Storing again replaces the file and leaves no temporary files behind.
        cache.store(&hash, WORLD).unwrap();
        let names: Vec<_> = fs::read_dir(cache.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [OsString::from(format!("{hash}.bwc"))]);
        // The empty world is a valid blob too.
        let empty = md5_hex(b"");
        cache.store(&empty, b"").unwrap();
        assert_eq!(cache.load(&empty), Some(Vec::new()));
    }

    #[test]
    fn store_refuses_bad_input() {
        let tmp = TempDir::new("refuse");
        let cache = WorldCache::new(&tmp.0);
        let err = cache.store("../evil", WORLD).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = cache.store(&md5_hex(WORLD).to_uppercase(), WORLD).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = cache.store(&md5_hex(b"other"), WORLD).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(!tmp.0.exists(), "nothing was created");
        assert_eq!(cache.load("../evil"), None);
    }

    #[test]
    fn corrupt_files_are_removed() {
        let tmp = TempDir::new("corrupt");
        let cache = WorldCache::new(&tmp.0);
        let hash = md5_hex(WORLD);
        let path = cache.store(&hash, WORLD).unwrap();
        fs::write(&path, &WORLD[..10]).unwrap();
        assert_eq!(cache.load(&hash), None);
        assert!(!path.exists(), "the truncated file is gone");
        // Then a fresh store works again.
        cache.store(&hash, WORLD).unwrap();
        assert_eq!(cache.load(&hash).as_deref(), Some(WORLD));
    }

    #[test]
    fn oversized_files_are_not_read() {
        let tmp = TempDir::new("oversized");
        let cache = WorldCache::new(&tmp.0);
        fs::create_dir_all(&tmp.0).unwrap();
        let hash = md5_hex(b"whatever");
        let path = cache.path_for(&hash).unwrap();
        // A sparse file just over the limit: no disk space used, and load must not read it.
        let file = fs::File::create(&path).unwrap();
        file.set_len(MAX_WORLD_FILE + 1).unwrap();
        drop(file);
        assert_eq!(cache.load(&hash), None);
        assert!(!path.exists());
    }

    #[test]
    fn directories_are_not_worlds() {
        let tmp = TempDir::new("dir");
        let cache = WorldCache::new(&tmp.0);
        let hash = md5_hex(WORLD);
        fs::create_dir_all(cache.path_for(&hash).unwrap()).unwrap();
        assert_eq!(cache.load(&hash), None);
        assert!(cache.store(&hash, WORLD).is_err(), "cannot rename a file over a directory");
        let leftovers = fs::read_dir(cache.dir()).unwrap().count();
        assert_eq!(leftovers, 1, "the temporary file was cleaned up");
    }

    #[test]
    fn default_dir_precedence() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        };
        static ALL: [(&str, &str); 3] =
            [(CACHE_DIR_ENV, "/override"), ("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/me")];
        assert_eq!(default_dir_from(env(&ALL[..])), Some(PathBuf::from("/override")));
        assert_eq!(default_dir_from(env(&ALL[1..])), Some(PathBuf::from("/xdg/bzhead/worlds")));
        assert_eq!(default_dir_from(env(&ALL[2..])), Some(PathBuf::from("/home/me/.cache/bzhead/worlds")));
        assert_eq!(
            default_dir_from(env(&[(CACHE_DIR_ENV, ""), ("XDG_CACHE_HOME", "relative"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/bzhead/worlds"))
        );
        assert_eq!(default_dir_from(env(&[])), None);
    }

    fn set_age(path: &Path, secs_ago: u64) {
        let f = OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - std::time::Duration::from_secs(secs_ago)).unwrap();
    }

    #[test]
    fn stores_evict_the_least_recently_used_worlds_beyond_the_byte_cap() {
        let dir = TempDir::new("lru");
        let worlds: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 1000]).collect();
        let hashes: Vec<String> = worlds.iter().map(|w| md5_hex(w)).collect();
        let cache = WorldCache::new(&dir.0).with_max_bytes(3000);
        for (i, (w, h)) in worlds.iter().zip(&hashes).take(3).enumerate() {
            let p = cache.store(h, w).unwrap();
            set_age(&p, 100 - i as u64 * 10); // 0 oldest, 2 newest
        }
        // Using world 0 makes it the most recent: world 1 is now the least recently used.
        assert!(cache.load(&hashes[0]).is_some());
        cache.store(&hashes[3], &worlds[3]).unwrap();
        let present: Vec<bool> = hashes.iter().map(|h| cache.path_for(h).unwrap().exists()).collect();
        assert_eq!(present, [true, false, true, true]);
        // Stray files, other names and directories are neither counted nor removed.
        fs::write(dir.0.join("notes.txt"), vec![0u8; 5000]).unwrap();
        assert_eq!(cache.evict(Path::new("")), 0);
        assert!(dir.0.join("notes.txt").exists());
        // A world larger than the whole cap is not stored.
        let big = vec![9u8; 3001];
        let e = cache.store(&md5_hex(&big), &big).unwrap_err();
        assert!(e.to_string().contains("larger than the cache's cap of 3000 bytes"), "{e}");
    }

    #[test]
    fn a_fifo_or_a_symlink_under_a_worlds_name_is_a_miss_at_once() {
        let dir = TempDir::new("fifo");
        fs::create_dir_all(&dir.0).unwrap();
        let cache = WorldCache::new(&dir.0);
        let h = md5_hex(WORLD);
        let path = cache.path_for(&h).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        // A blocking open of a FIFO waits for a writer forever; this one returns at once.
        let (tx, rx) = std::sync::mpsc::channel();
        let c = cache.clone();
        let h2 = h.clone();
        std::thread::spawn(move || {
            let _ = tx.send(c.load(&h2));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("load of a FIFO blocked");
        assert_eq!(got, None);
        fs::remove_file(&path).unwrap();
        // A symlink to a real world file elsewhere is not followed.
        let elsewhere = dir.0.join("elsewhere");
        fs::write(&elsewhere, WORLD).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert_eq!(cache.load(&h), None);
        // /dev/zero planted by name: not a regular file, not read.
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert_eq!(cache.load(&h), None);
    }
}
