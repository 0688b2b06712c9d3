//! The cache's file-system layer, on `rustix` (no `unsafe` code; `nix`
//! for the byte-range lock rustix lacks): the system calls on records,
//! shards, counters, compile locks and the walk,
//! and the settings writer's. The root's own set-up, markers and trust
//! checks, the scope directory and its `host.json`, and this machine's
//! host file still use `std::fs` by path.
//!
//! Owns: the `*at` calls relative to a directory handle (every open adds
//! `O_CLOEXEC` and `O_NOFOLLOW`, every stat `AT_SYMLINK_NOFOLLOW`);
//! [`FileStat`], what a stat says of an entry, and [`Identity`], the one
//! notion of "still the same file" (device, inode, mtime); the one
//! remove-if-unchanged ([`remove_if_unchanged`]); the one atomic
//! small-file write ([`write_atomic`]: temporary named by
//! `layout::temp_name`, synced unless its bytes can be made again,
//! renamed); and the one fd-relative
//! directory listing ([`list`]) that the scan is built on; and the
//! open-file-description byte-range lock ([`lock_range`]) of the size
//! counters' slots.
//!
//! Must never: follow a symbolic link, block on a FIFO (reads open with
//! `O_NONBLOCK`), remove a directory or a file that is no longer the one
//! its caller saw, leave a partly written file under a final name, or
//! panic on anything found on disk.

use super::layout::temp_name;
use rustix::fs::{self as rfs, AtFlags, Gid, Mode, Timespec, Timestamps};
pub use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` or `fstat` says of an
/// entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub kind: FileType,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Last modification: a record's last use.
    pub mtime: SystemTime,
    pub uid: u32,
    pub gid: u32,
    /// The permission bits and the set-id and sticky bits (`& 0o7777`).
    pub mode: u32,
}

impl FileStat {
    fn of(st: &rfs::Stat) -> FileStat {
        // The field types differ between platforms.
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        FileStat {
            kind: FileType::from_raw_mode(st.st_mode as _),
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime: system_time(st.st_mtime as i64, st.st_mtime_nsec as i64),
            uid: st.st_uid as u32,
            gid: st.st_gid as u32,
            mode: st.st_mode as u32 & 0o7777,
        }
    }

    pub fn is_file(&self) -> bool {
        self.kind == FileType::RegularFile
    }

    pub fn is_dir(&self) -> bool {
        self.kind == FileType::Directory
    }

    pub fn is_symlink(&self) -> bool {
        self.kind == FileType::Symlink
    }

    /// What the file must still be for a removal to go ahead.
    pub fn identity(&self) -> Identity {
        Identity { dev: self.dev, ino: self.ino, mtime: self.mtime }
    }
}

/// A file as someone saw it: a removal skips a file that was replaced
/// (another device or inode: a writer renamed a new record over it) or
/// used (another mtime: a reader's hit refreshed it) since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub mtime: SystemTime,
}

/// Seconds and nanoseconds since the epoch (either side of it) as a time.
fn system_time(secs: i64, nanos: i64) -> SystemTime {
    let nanos = nanos.clamp(0, 999_999_999) as u32;
    match u64::try_from(secs) {
        Ok(s) => UNIX_EPOCH + Duration::new(s, nanos),
        Err(_) => UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::new(0, nanos),
    }
}

/// Whether an open failed because the entry is a symbolic link
/// (`O_NOFOLLOW`'s `ELOOP`).
pub fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// Whether opening a directory failed because the entry is something
/// else (`ENOTDIR`).
pub fn is_not_dir_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error())
}

/// `openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW, mode)`, retried
/// when interrupted.
pub fn open_at(dir: impl AsFd, name: &str, flags: OFlags, mode: u32) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    loop {
        match rfs::openat(&dir, name, flags, Mode::from_raw_mode(mode)) {
            Err(Errno::INTR) => continue,
            r => return r.map_err(io::Error::from),
        }
    }
}

/// Opens the directory `name` below `dir`, refusing a link and anything
/// but a directory.
pub fn open_dir(dir: impl AsFd, name: &str) -> io::Result<OwnedFd> {
    open_at(dir, name, OFlags::RDONLY | OFlags::DIRECTORY, 0)
}

/// Opens a directory by path (a root: the caller resolved the links it
/// chose), refusing a final link.
pub fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rfs::open(path, flags, Mode::empty())?)
}

/// Opens a file by path for reading (a counter file that a reader locks),
/// refusing a final link, never blocking on a FIFO.
pub fn open_read_path(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(rfs::open(path, flags, Mode::empty())?.into())
}

/// Opens `name` below `dir` for reading, never blocking on a FIFO.
pub fn open_read(dir: impl AsFd, name: &str) -> io::Result<File> {
    open_at(dir, name, OFlags::RDONLY | OFlags::NONBLOCK, 0).map(File::from)
}

/// Creates `name` below `dir` for writing; fails if anything has that
/// name. The mode is what the umask leaves of `mode` (see [`set_mode`]).
pub fn create_new(dir: impl AsFd, name: &str, mode: u32) -> io::Result<File> {
    open_at(dir, name, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, mode).map(File::from)
}

/// `mkdirat`: whether the directory was created (`false`: something of
/// that name was there already).
pub fn mkdir_at(dir: impl AsFd, name: &str, mode: u32) -> io::Result<bool> {
    match rfs::mkdirat(dir, name, Mode::from_raw_mode(mode)) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `renameat` within one directory.
pub fn rename_at(dir: impl AsFd, from: &str, to: &str) -> io::Result<()> {
    Ok(rfs::renameat(&dir, from, &dir, to)?)
}

/// `linkat` within one directory, never following a link: another name
/// for the file `from` (no new inode). An existing `to` is an error of
/// kind `AlreadyExists`.
pub fn link_at(dir: impl AsFd, from: &str, to: &str) -> io::Result<()> {
    Ok(rfs::linkat(&dir, from, &dir, to, AtFlags::empty())?)
}

/// `unlinkat` of a file or a link (a link itself, never its target).
pub fn unlink_at(dir: impl AsFd, name: &str) -> io::Result<()> {
    Ok(rfs::unlinkat(dir, name, AtFlags::empty())?)
}

/// Removes the directory `name` below `dir` if it is empty; whether it
/// did (`false`: gone already). One that is not empty is an error of kind
/// `DirectoryNotEmpty`.
pub fn remove_empty_dir(dir: impl AsFd, name: &str) -> io::Result<bool> {
    match rfs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: impl AsFd, name: &str) -> io::Result<FileStat> {
    Ok(FileStat::of(&rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?))
}

/// `fstat` of an open file or directory.
pub fn stat_fd(fd: impl AsFd) -> io::Result<FileStat> {
    Ok(FileStat::of(&rfs::fstat(fd)?))
}

/// Sets the modification time of an open file to now, leaving the access
/// time alone.
pub fn touch(fd: impl AsFd) -> io::Result<()> {
    let omit = Timespec { tv_sec: 0, tv_nsec: rfs::UTIME_OMIT };
    let now = Timespec { tv_sec: 0, tv_nsec: rfs::UTIME_NOW };
    Ok(rfs::futimens(fd, &Timestamps { last_access: omit, last_modification: now })?)
}

/// `fchmod`: the mode whatever the umask took.
pub fn set_mode(fd: impl AsFd, mode: u32) -> io::Result<()> {
    Ok(rfs::fchmod(fd, Mode::from_raw_mode(mode))?)
}

/// `fchown` of the group alone.
pub fn set_group(fd: impl AsFd, gid: u32) -> io::Result<()> {
    Ok(rfs::fchown(fd, None, Some(Gid::from_raw(gid)))?)
}

/// The lock [`lock_range`] takes of a range (released when the open file
/// is closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeLock {
    /// `F_RDLCK`: readers share it.
    Shared,
    /// `F_WRLCK`: one holder (the file must be open for writing).
    Exclusive,
}

/// Locks `len` bytes from `start` of an open file with an open file
/// description lock (`fcntl(F_OFD_SETLKW)`, or `F_OFD_SETLK` when not
/// `wait`: then a conflict is `io::ErrorKind::WouldBlock`). Unlike a
/// classic POSIX lock it belongs to the open file, not the process, so two
/// opens of one file in one process exclude each other as `flock` does,
/// and closing another descriptor of the file releases nothing; closing
/// the last descriptor of the open file releases it, so a dead holder
/// blocks no one. Retried when interrupted.
pub fn lock_range(file: impl AsFd, start: u64, len: u64, how: RangeLock, wait: bool) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg};
    use nix::libc;
    let l_type = match how {
        RangeLock::Shared => libc::F_RDLCK,
        RangeLock::Exclusive => libc::F_WRLCK,
    };
    let too_far = || io::Error::new(io::ErrorKind::InvalidInput, "a lock range past the largest offset");
    let lock = libc::flock {
        l_type: l_type as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: libc::off_t::try_from(start).map_err(|_| too_far())?,
        l_len: libc::off_t::try_from(len).map_err(|_| too_far())?,
        // Must be 0 for an open file description lock.
        l_pid: 0,
    };
    loop {
        let arg = if wait { FcntlArg::F_OFD_SETLKW(&lock) } else { FcntlArg::F_OFD_SETLK(&lock) };
        match fcntl(&file, arg) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io::Error::from(e)),
            Ok(_) => return Ok(()),
        }
    }
}

/// The effective user id of this process.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Removes `name` below `dir` if it is still what its caller saw: never a
/// directory (`EISDIR`, as `unlink` says), and, given `expect`, only the
/// same file with the same mtime. Returns the stat of what it removed;
/// `None` when the entry is gone or changed (neither is an error: another
/// process got there first).
pub fn remove_if_unchanged(dir: impl AsFd, name: &str, expect: Option<Identity>) -> io::Result<Option<FileStat>> {
    let st = match stat_at(&dir, name) {
        Ok(st) => st,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if expect.is_some_and(|id| id != st.identity()) {
        return Ok(None);
    }
    if st.is_dir() {
        return Err(Errno::ISDIR.into());
    }
    match unlink_at(&dir, name) {
        Ok(()) => Ok(Some(st)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The mode of a new file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// What the umask leaves of these bits.
    UnderUmask(u32),
    /// Exactly these bits, whatever the umask (a shared cache's files, the
    /// cache's `kiln.toml` that every user of the cache reads).
    Exact(u32),
}

/// Creates a new temporary file for `final_name` below `dir` (named by
/// `layout::temp_name`, another name if that one is taken) with `mode`;
/// its name and the file, open for writing.
pub fn create_temp(dir: impl AsFd, final_name: &str, mode: FileMode) -> io::Result<(String, File)> {
    let (FileMode::UnderUmask(bits) | FileMode::Exact(bits)) = mode;
    loop {
        let tmp = temp_name(final_name);
        match create_new(&dir, &tmp, bits) {
            Ok(file) => {
                if let FileMode::Exact(bits) = mode {
                    // Whatever the umask took; a failure leaves no file.
                    set_mode(&file, bits).inspect_err(|_| {
                        let _ = unlink_at(&dir, &tmp);
                    })?;
                }
                return Ok((tmp, file));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `name` below `dir` whole: a temporary file of Kiln's pattern
/// (`layout::temp_name`, so `prune --temp` knows a stale one) created with
/// `mode`, written, synced, and renamed over `name`. A reader sees the
/// old file or the new one, never part of one; on failure the temporary
/// is removed.
pub fn write_atomic(dir: impl AsFd, name: &str, bytes: &[u8], mode: FileMode) -> io::Result<()> {
    write_atomic_with(dir, name, bytes, mode, true)
}

/// [`write_atomic`], synced before the rename only when `sync`: a file
/// whose bytes can be made again needs no `fsync` for a running process
/// to see it whole (a power cut may leave it torn: its reader must tell).
pub fn write_atomic_with(dir: impl AsFd, name: &str, bytes: &[u8], mode: FileMode, sync: bool) -> io::Result<()> {
    let (tmp, mut file) = create_temp(&dir, name, mode)?;
    let mut write = || -> io::Result<()> {
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        rename_at(&dir, &tmp, name)
    };
    write().inspect_err(|_| {
        let _ = unlink_at(&dir, &tmp);
    })
}

/// Reads at most `limit` bytes from the start of `name` below `dir`.
pub fn read_prefix(dir: impl AsFd, name: &str, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_read(dir, name)?;
    let mut buf = Vec::with_capacity(limit.min(1 << 20) as usize);
    file.take(limit).read_to_end(&mut buf)?;
    Ok(buf)
}

/// One entry of a directory listing: its name and what `fstatat` says.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub stat: FileStat,
}

/// Lists an open directory without following links: the `fstatat` of
/// each entry whose name is UTF-8 and passes `keep`, sorted by name (so a
/// walk is reproducible). An entry that vanished meanwhile is left out.
/// Errors name the entry at fault (`None`: the directory itself).
pub fn list(dir: impl AsFd, keep: impl Fn(&str) -> bool) -> Result<Vec<Entry>, (Option<String>, io::Error)> {
    let mut listing = rfs::Dir::read_from(&dir).map_err(|e| (None, e.into()))?;
    let mut out = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry.map_err(|e| (None, e.into()))?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name == "." || name == ".." || !keep(name) {
            continue;
        }
        match stat_at(&dir, name) {
            Ok(stat) => out.push(Entry { name: name.to_string(), stat }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err((Some(name.to_string()), e)),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::layout::is_temp_name;
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn dir() -> (tempfile::TempDir, OwnedFd) {
        let t = tempfile::tempdir().unwrap();
        let fd = open_dir_path(t.path()).unwrap();
        (t, fd)
    }

    #[test]
    fn remove_if_unchanged_refuses_a_replaced_or_used_file() {
        let (t, fd) = dir();
        let p = t.path().join("r");
        fs::write(&p, "old").unwrap();
        let seen = stat_at(&fd, "r").unwrap().identity();
        // Replaced: a writer renamed another file over it.
        fs::write(t.path().join("new"), "new").unwrap();
        fs::rename(t.path().join("new"), &p).unwrap();
        assert_eq!(remove_if_unchanged(&fd, "r", Some(seen)).unwrap(), None);
        assert_eq!(fs::read(&p).unwrap(), b"new");
        // Used: a reader's hit moved its mtime on.
        let seen = stat_at(&fd, "r").unwrap().identity();
        File::options().write(true).open(&p).unwrap().set_modified(seen.mtime + Duration::from_secs(5)).unwrap();
        assert_eq!(remove_if_unchanged(&fd, "r", Some(seen)).unwrap(), None);
        assert!(p.exists());
        // Unchanged: removed, and its stat returned; then gone.
        let seen = stat_at(&fd, "r").unwrap();
        assert_eq!(remove_if_unchanged(&fd, "r", Some(seen.identity())).unwrap(), Some(seen));
        assert!(!p.exists());
        assert_eq!(remove_if_unchanged(&fd, "r", None).unwrap(), None);
    }

    #[test]
    fn remove_if_unchanged_removes_a_link_never_its_target_and_never_a_directory() {
        let (t, fd) = dir();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        fs::write(&target, "keep").unwrap();
        symlink(&target, t.path().join("l")).unwrap();
        assert!(remove_if_unchanged(&fd, "l", None).unwrap().is_some_and(|st| st.is_symlink()));
        assert_eq!(fs::read(&target).unwrap(), b"keep");
        fs::create_dir(t.path().join("d")).unwrap();
        let err = remove_if_unchanged(&fd, "d", None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(Errno::ISDIR.raw_os_error()));
        assert!(t.path().join("d").is_dir());
    }

    #[test]
    fn the_listing_never_follows_a_link() {
        let (t, fd) = dir();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("inside-the-target"), "x").unwrap();
        symlink(outside.path(), t.path().join("ab")).unwrap();
        symlink("/nonexistent", t.path().join("dangling")).unwrap();
        fs::create_dir(t.path().join("cd")).unwrap();
        fs::write(t.path().join("f"), "12345").unwrap();
        let got: Vec<(String, FileType, u64)> =
            list(&fd, |_| true).unwrap().into_iter().map(|e| (e.name, e.stat.kind, e.stat.size)).collect();
        let kinds: Vec<(&str, FileType)> = got.iter().map(|(n, k, _)| (n.as_str(), *k)).collect();
        assert_eq!(
            kinds,
            [
                ("ab", FileType::Symlink),
                ("cd", FileType::Directory),
                ("dangling", FileType::Symlink),
                ("f", FileType::RegularFile)
            ]
        );
        assert_eq!(got[3].2, 5);
        // Opening the link as a directory is refused (Linux says ENOTDIR
        // when O_DIRECTORY and O_NOFOLLOW meet a link; ELOOP elsewhere).
        let err = open_dir(&fd, "ab").unwrap_err();
        assert!(is_link_error(&err) || is_not_dir_error(&err), "{err}");
        assert!(is_not_dir_error(&open_dir(&fd, "f").unwrap_err()));
        assert!(is_link_error(&open_read(&fd, "dangling").unwrap_err()));
        // `keep` filters by name before anything is stat'ed.
        let names: Vec<String> = list(&fd, |n| n.len() == 2).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["ab", "cd"]);
    }

    #[test]
    fn atomic_write_replaces_whole_and_leaves_no_temporary() {
        let (t, fd) = dir();
        write_atomic(&fd, "kiln.toml", b"first\n", FileMode::UnderUmask(0o600)).unwrap();
        let under_umask = fs::metadata(t.path().join("kiln.toml")).unwrap().permissions().mode() & 0o7777;
        assert_eq!(under_umask & !0o600, 0, "{under_umask:o}");
        write_atomic(&fd, "kiln.toml", b"second\n", FileMode::Exact(0o644)).unwrap();
        assert_eq!(fs::read(t.path().join("kiln.toml")).unwrap(), b"second\n");
        assert_eq!(fs::metadata(t.path().join("kiln.toml")).unwrap().permissions().mode() & 0o7777, 0o644);
        let names: Vec<String> = list(&fd, |_| true).unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["kiln.toml"]);
        // A failed write (the final name is a directory: the rename fails)
        // leaves neither a partial file nor its temporary.
        fs::create_dir(t.path().join("d")).unwrap();
        fs::write(t.path().join("d").join("x"), "x").unwrap();
        assert!(write_atomic(&fd, "d", b"bytes", FileMode::Exact(0o644)).is_err());
        let left: Vec<String> =
            list(&fd, |n| is_temp_name(n) || n.starts_with("d.")).unwrap().into_iter().map(|e| e.name).collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(t.path().join("d").is_dir());
    }

    #[test]
    fn times_before_the_epoch_are_kept() {
        assert_eq!(system_time(-2, 500), UNIX_EPOCH - Duration::from_secs(2) + Duration::from_nanos(500));
        assert_eq!(system_time(3, 7), UNIX_EPOCH + Duration::new(3, 7));
    }
}
