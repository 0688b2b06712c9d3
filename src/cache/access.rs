//! Who may use a cache: private (one user, directories 0700) or shared by
//! one declared Unix group (directories setgid to it and group-writable,
//! records group-writable), and the trust check that follows from it.
//!
//! Owns: [`Access`] (resolving the `shared_group` setting to a gid), the
//! modes directories and files are created with, and the owner and mode
//! check of every directory and record the store loads code from: owned by
//! the user and writable by no one else; or, in a shared cache, of the
//! declared group and writable by no one outside it. World-writable is
//! refused always.
//!
//! Must never: trust a group that was not declared, trust a world-writable
//! entry, or leave a shared cache's new entry with the modes the umask
//! happened to give.

use super::fs::FileMode;
use super::CacheError;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// A Unix group sharing a cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub gid: u32,
}

/// How a cache is shared, and whether its trust checks are waived.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// `--allow-insecure-cache`: accept any owner and mode.
    pub allow_insecure: bool,
    /// The declared group of a shared cache.
    pub group: Option<Group>,
}

/// The gid of a group given by name (the group database, through nix's
/// safe `getgrnam_r`) or by number.
pub fn resolve_group(name: &str) -> Result<Group, CacheError> {
    if let Ok(Some(g)) = nix::unistd::Group::from_name(name) {
        return Ok(Group { name: name.to_string(), gid: g.gid.as_raw() });
    }
    match name.parse::<u32>() {
        Ok(gid) => Ok(Group { name: name.to_string(), gid }),
        Err(_) => Err(CacheError::BadSetting(format!("shared_group: no group named '{name}' on this system"))),
    }
}

impl Access {
    /// The access of the given settings: the group resolved.
    pub fn new(allow_insecure: bool, shared_group: Option<&str>) -> Result<Access, CacheError> {
        Ok(Access { allow_insecure, group: shared_group.map(resolve_group).transpose()? })
    }

    /// The mode of new directories: 0700, or setgid and group-writable.
    pub fn dir_mode(&self) -> u32 {
        if self.group.is_some() {
            0o2770
        } else {
            0o700
        }
    }

    /// The mode of new files: 0644, or group-writable.
    pub fn file_mode(&self) -> u32 {
        if self.group.is_some() {
            0o664
        } else {
            0o644
        }
    }

    /// How new files are made: [`Access::file_mode`] under the umask in a
    /// private cache, exactly in a shared one (the group must write them).
    pub fn new_file_mode(&self) -> FileMode {
        match self.group {
            Some(_) => FileMode::Exact(self.file_mode()),
            None => FileMode::UnderUmask(self.file_mode()),
        }
    }

    /// Creates a directory if missing (a concurrent creator is fine). In a
    /// shared cache the new directory gets the group and the mode whatever
    /// the umask; an existing one is left as it is, for the trust check.
    /// Whether this call created it.
    pub fn make_dir(&self, path: &Path) -> Result<bool, CacheError> {
        match fs::DirBuilder::new().mode(self.dir_mode()).create(path) {
            Ok(()) => self.share(path).map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(CacheError::io(path, "create directory", e)),
        }
    }

    /// Gives a path this user owns the group and mode of a shared cache
    /// (nothing for a private one, or for someone else's entry).
    pub fn share(&self, path: &Path) -> Result<(), CacheError> {
        let Some(group) = &self.group else { return Ok(()) };
        let meta = fs::symlink_metadata(path).map_err(|e| CacheError::io(path, "inspect", e))?;
        if meta.uid() != super::fs::euid() || meta.file_type().is_symlink() {
            return Ok(());
        }
        if meta.gid() != group.gid {
            std::os::unix::fs::lchown(path, None, Some(group.gid))
                .map_err(|e| CacheError::io(path, "change the group of", e))?;
        }
        let mode = if meta.is_dir() { self.dir_mode() } else { self.file_mode() };
        if meta.mode() & 0o7777 != mode {
            fs::set_permissions(path, fs::Permissions::from_mode(mode))
                .map_err(|e| CacheError::io(path, "change the mode of", e))?;
        }
        Ok(())
    }

    /// Refuses a directory or record the store would load code from unless
    /// it is trusted (see the module doc).
    pub fn check(&self, path: &Path, meta: &fs::Metadata) -> Result<(), CacheError> {
        if meta.file_type().is_symlink() {
            return Err(untrusted(path, "is a symbolic link".into()));
        }
        self.check_ids(path, meta.uid(), meta.gid(), meta.mode())
    }

    /// [`Access::check`] over the owner, group and mode of an entry
    /// already known not to be a link.
    pub fn check_ids(&self, path: &Path, uid: u32, gid: u32, mode: u32) -> Result<(), CacheError> {
        if self.allow_insecure {
            return Ok(());
        }
        let mode = mode & 0o7777;
        if mode & 0o002 != 0 {
            let chmod = if self.group.is_some() { "o-w" } else { "go-w" };
            return Err(untrusted(path, format!("is world-writable (mode {mode:04o}; `chmod {chmod}` it)")));
        }
        if self.group.as_ref().is_some_and(|g| g.gid == gid) {
            return Ok(());
        }
        let me = super::fs::euid();
        if uid != me {
            return Err(untrusted(path, format!("is owned by uid {uid}, not by you (uid {me})")));
        }
        if mode & 0o020 != 0 {
            let hint = match &self.group {
                Some(g) => format!("its group is gid {gid}, not the shared group {} (gid {})", g.name, g.gid),
                None => "`chmod g-w` it, or declare the group with shared_group".into(),
            };
            return Err(untrusted(path, format!("is group-writable (mode {mode:04o}; {hint})")));
        }
        Ok(())
    }
}

fn untrusted(path: &Path, reason: String) -> CacheError {
    CacheError::Untrusted { path: path.into(), reason }
}
