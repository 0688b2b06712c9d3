//! The cache as a team uses it, with real `kiln-run` and
//! `kiln-cache-inspect` processes: a cache that cannot be used (permission
//! denied, a full disk, a read-only file system, a directory that is not a
//! cache) never fails a run; a read-only cache is looked up and never
//! written; a group-shared cache serves a second Unix user all hits.
//!
//! The scenarios that need root (tmpfs mounts, other users) print why they
//! are skipped when the tests do not run as root.

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");
const INSPECT: &str = env!("CARGO_BIN_EXE_kiln-cache-inspect");

fn testdata(name: &str) -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)).unwrap()
}

fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A copy of the tool `bin` in `dir/bin`, readable and runnable by every
/// user: the build's own binaries may sit below a directory only its
/// owner can enter (CI clones into a private temporary directory). A
/// `kiln-run` gets the `kiln-compile` it compiles in beside it.
fn public_copy(dir: &Path, bin: &str) -> String {
    let bins = dir.join("bin");
    fs::create_dir_all(&bins).unwrap();
    fs::set_permissions(&bins, fs::Permissions::from_mode(0o755)).unwrap();
    // A hard link where it can be: a copy is a file open for writing, and
    // a process another test thread forks meanwhile inherits that until it
    // execs, so running the copy could fail with "Text file busy".
    let copy = |bin: &Path| {
        let to = bins.join(bin.file_name().unwrap());
        if fs::hard_link(bin, &to).is_err() {
            fs::copy(bin, &to).unwrap();
        }
        fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
        to
    };
    if bin == RUN {
        copy(Path::new(concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile")));
    }
    copy(Path::new(bin)).to_str().unwrap().to_string()
}

/// A `kiln-run` of `kir` (on standard input) with `args`, optionally as
/// another user (a `setpriv` prefix ending with the program to run, a
/// [`public_copy`] of `kiln-run`), in a clean environment.
fn run_as(user: Option<&[&str]>, kir: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = match user {
        Some(prefix) => {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]);
            c
        }
        None => Command::new(RUN),
    };
    cmd.arg("-").args(["-O0", "--digest", "--stats=json"]).args(args);
    cmd.env_clear().env("PATH", "/usr/bin:/bin").env("XDG_CONFIG_HOME", "/nonexistent-kiln-config");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(kir.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn run(kir: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    run_as(None, kir, args, env)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The stats JSON (the last line of standard error).
fn stats(out: &Output) -> serde_json::Value {
    let err = text(&out.stderr);
    serde_json::from_str(err.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {err}"))
}

fn warnings(out: &Output) -> Vec<String> {
    text(&out.stderr).lines().filter(|l| l.contains("warning:")).map(str::to_string).collect()
}

/// The run succeeded with the digests of a run without a cache, and said
/// exactly one warning that contains `why`.
fn assert_correct_with_one_warning(out: &Output, kir: &str, why: &str) {
    let reference = run(kir, &["--no-cache"], &[]);
    assert!(reference.status.success(), "{}", text(&reference.stderr));
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&reference.stdout), "same result as without a cache");
    let w = warnings(out);
    assert_eq!(w.len(), 1, "one warning: {w:#?}");
    assert!(w[0].contains(why), "{w:#?}");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(ok.success(), "mount tmpfs on {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }

    fn remount_ro(&self) {
        let ok = Command::new("mount").args(["-o", "remount,ro"]).arg(&self.0).status().unwrap();
        assert!(ok.success());
    }

    /// Fills the file system up to the last byte.
    fn fill(&self) {
        let mut f = fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let one = [0u8; 1];
        while f.write_all(&one).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_directory_that_is_not_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("thesis.tex"), "precious").unwrap();
    let kir = testdata("saxpy.kir");
    let out = run(&kir, &["--cache-dir", dir.path().to_str().unwrap()], &[]);
    assert_correct_with_one_warning(&out, &kir, "not a Kiln cache");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "left alone");
}

#[test]
fn permission_denied() {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    // Root may write anything: then the run is another user's (nobody).
    let (run_bin, inspect_bin) = (public_copy(dir.path(), RUN), public_copy(dir.path(), INSPECT));
    let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
    let nobody_run = [&nobody[..], &[run_bin.as_str()]].concat();
    let user: Option<&[&str]> = if is_root() { Some(&nobody_run) } else { None };
    fs::create_dir(&cache).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
    }
    let mut init = match user {
        Some(_) => Command::new(nobody[0]),
        None => Command::new(INSPECT),
    };
    if user.is_some() {
        init.args(&nobody[1..]).arg(&inspect_bin);
    }
    let made = init.args(["init", cache_arg]).env_clear().output().unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    // The user's own cache, but no longer writable: no scope directory
    // can be made in it.
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o500)).unwrap();
    let kir = testdata("saxpy.kir");
    let out = run_as(user, &kir, &["--cache-dir", cache_arg], &[]);
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o700)).unwrap();
    assert_correct_with_one_warning(&out, &kir, "permission denied");
    assert_eq!(stats(&out)["whole_kernel_tasks"], 2);
}

/// `kiln-cache-inspect config` on `cache` as `user` (a `setpriv` prefix
/// ending with a [`public_copy`] of the inspector) or as this user.
fn inspect_config(user: Option<&[&str]>, cache: &str) -> Output {
    let mut cmd = match user {
        Some(prefix) => {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]);
            c
        }
        None => Command::new(INSPECT),
    };
    cmd.args(["--cache-dir", cache, "config"]);
    cmd.env_clear().env("PATH", "/usr/bin:/bin").env("XDG_CONFIG_HOME", "/nonexistent-kiln-config");
    cmd.output().unwrap()
}

/// A cache directory that cannot be reached: the run says so once (the
/// directory and the reason) and runs correctly without writing to it;
/// `kiln-cache-inspect config` reports the same problem with exit 1.
fn unreachable(user: Option<&[&str]>, inspect: Option<&[&str]>, cache: &Path, reason: &str) {
    let cache_arg = cache.to_str().unwrap();
    let kir = testdata("saxpy.kir");
    let out = run_as(user, &kir, &["--cache-dir", cache_arg], &[]);
    let said = format!("{cache_arg}: cannot reach the cache directory: {reason}; running without writing to the cache");
    assert_correct_with_one_warning(&out, &kir, &said);
    let shown = inspect_config(inspect, cache_arg);
    assert_eq!(shown.status.code(), Some(1), "{}", text(&shown.stderr));
    assert_eq!(text(&shown.stderr), format!("{cache_arg}: error: cannot reach the cache directory: {reason}\n"));
}

#[test]
fn a_cache_directory_that_cannot_be_reached() {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // A path through a regular file, and a loop of links.
    fs::write(dir.path().join("afile"), "").unwrap();
    std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
    unreachable(None, None, &dir.path().join("afile/cache"), "not a directory");
    unreachable(None, None, &dir.path().join("loop/cache"), "too many levels of symbolic links");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "nothing created");
    // A parent directory the user may not search: root may search any, so
    // the run is another user's (nobody).
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: a parent without search permission needs root and setpriv to run as nobody");
        return;
    }
    let (run_bin, inspect_bin) = (public_copy(dir.path(), RUN), public_copy(dir.path(), INSPECT));
    let private = dir.path().join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
    let (as_run, as_inspect) =
        ([&nobody[..], &[run_bin.as_str()]].concat(), [&nobody[..], &[inspect_bin.as_str()]].concat());
    unreachable(Some(&as_run), Some(&as_inspect), &private.join("cache"), "permission denied");
    assert_eq!(fs::read_dir(&private).unwrap().count(), 0, "nothing created");
}

#[test]
fn a_full_disk() {
    if !is_root() {
        println!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fs_ = Tmpfs::mount(&dir.path().join("mnt"), "256k");
    let cache = fs_.0.join("cache");
    let cache_arg = cache.to_str().unwrap();
    let kir = testdata("saxpy.kir");

    // No room for the tag, the marker or host.json while the cache is
    // first set up (issue 11, finding 4).
    fs_.fill();
    let out = run(&kir, &["--cache-dir", cache_arg], &[]);
    assert_correct_with_one_warning(&out, &kir, "running without a cache");

    // A half-made root (the tag and a temporary of the marker) is an empty
    // cache to kiln-cache-inspect, and the next run with room finishes it.
    fs::remove_file(fs_.0.join("filler")).unwrap();
    fs::create_dir_all(&cache).unwrap();
    fs::write(cache.join("CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55\n").unwrap();
    fs::write(cache.join(".kiln-cache.tmp-1-0123456789abcdef"), "kiln-ca").unwrap();
    let shown = Command::new(INSPECT).args(["--cache-dir", cache_arg, "stats", "--json"]).output().unwrap();
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let first = run(&kir, &["--cache-dir", cache_arg], &[]);
    assert!(first.status.success() && warnings(&first).is_empty(), "{}", text(&first.stderr));
    assert_eq!(stats(&first)["stored"], 2);
    assert_eq!(stats(&run(&kir, &["--cache-dir", cache_arg], &[]))["hits"], 2);

    // The disk fills up after set-up: the tasks that miss are compiled,
    // run and not stored, with one line for all of them.
    fs_.fill();
    let other = testdata("heat2d.kir");
    let out = run(&other, &["--cache-dir", cache_arg], &[]);
    assert_correct_with_one_warning(&out, &other, "not stored");
    // The compile locks of the records not written went all the same.
    assert_eq!(common::lock_files(&cache), 0);
}

/// The disk fills up before a remote-warm run copies the records the
/// remote returned: the run loads them, runs correctly and says once that
/// they were not stored (the copies are written in the background, after
/// the kernel is ready).
#[test]
fn a_full_disk_under_the_copies_of_fetched_records() {
    if !is_root() {
        println!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let server = common::redis_server::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let kir = testdata("heat2d.kir");
    let remote = ["--remote", &server.url()];
    let filler = dir.path().join("filler-cache");
    let filled = run(&kir, &[&remote[..], &["--cache-dir", filler.to_str().unwrap()]].concat(), &[]);
    assert!(filled.status.success() && stats(&filled)["remote_stored"].as_u64() > Some(0), "{}", text(&filled.stderr));
    let fs_ = Tmpfs::mount(&dir.path().join("mnt"), "256k");
    let cache = fs_.0.join("cache");
    let cache_arg = cache.to_str().unwrap();
    // Set up (root, scope, counters) with room, then full.
    assert!(run(&testdata("saxpy.kir"), &["--cache-dir", cache_arg], &[]).status.success());
    fs_.fill();
    let out = run(&kir, &[&remote[..], &["--cache-dir", cache_arg]].concat(), &[]);
    assert_correct_with_one_warning(&out, &kir, "not stored");
    let s = stats(&out);
    assert_eq!(
        (s["compiled"].as_u64(), s["remote_hits"].as_u64(), s["stored"].as_u64()),
        (Some(0), s["tasks"].as_u64(), Some(0))
    );
}

#[test]
fn a_read_only_file_system() {
    if !is_root() {
        println!("skipped: mounting and remounting a tmpfs read-only needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kir = testdata("saxpy.kir");
    // Never set up: nothing can be created.
    let empty = Tmpfs::mount(&dir.path().join("empty"), "1m");
    empty.remount_ro();
    let out = run(&kir, &["--cache-dir", empty.0.join("cache").to_str().unwrap()], &[]);
    assert_correct_with_one_warning(&out, &kir, "read-only file system");

    // A warm cache made read-only: hits as before, and a task that misses
    // is compiled and run with one line saying it was not stored.
    let warm = Tmpfs::mount(&dir.path().join("warm"), "4m");
    let cache = warm.0.join("cache");
    let cache_arg = cache.to_str().unwrap();
    assert!(run(&kir, &["--cache-dir", cache_arg], &[]).status.success());
    warm.remount_ro();
    let hit = run(&kir, &["--cache-dir", cache_arg], &[]);
    assert!(hit.status.success() && warnings(&hit).is_empty(), "{}", text(&hit.stderr));
    assert_eq!(stats(&hit)["hits"], 2);
    let other = testdata("heat2d.kir");
    let out = run(&other, &["--cache-dir", cache_arg], &[]);
    assert_correct_with_one_warning(&out, &other, "not stored");
    // The compile locks of the records not written went all the same.
    assert_eq!(common::lock_files(&cache), 0);
}

/// Every file below `dir` with its size and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, i64)> {
    let mut all: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .map(|e| {
            let m = e.metadata().unwrap();
            (e.path().to_path_buf(), m.len(), m.mtime_nsec() + m.mtime() * 1_000_000_000)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_read_only_cache_is_looked_up_and_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let kir = testdata("saxpy.kir");
    assert!(run(&kir, &["--cache-dir", cache_arg], &[]).status.success());
    let before = snapshot(&cache);
    let ro = [("KILN_CACHE_READ_ONLY", "1")];
    let hit = run(&kir, &["--cache-dir", cache_arg], &ro);
    assert!(hit.status.success() && warnings(&hit).is_empty(), "{}", text(&hit.stderr));
    assert_eq!(stats(&hit)["hits"], 2);
    let other = testdata("ten_tasks.kir");
    let out = run(&other, &["--cache-dir", cache_arg], &ro);
    assert_correct_with_one_warning(&out, &other, "read-only cache: 10 compiled task records not stored");
    assert_eq!(snapshot(&cache), before, "nothing written, touched or removed");
    // The same from the cache's own kiln.toml.
    let set =
        Command::new(INSPECT).args(["--cache-dir", cache_arg, "config", "set", "read_only", "true"]).output().unwrap();
    assert!(set.status.success(), "{}", text(&set.stderr));
    let before = snapshot(&cache);
    let out = run(&other, &["--cache-dir", cache_arg], &[]);
    assert_correct_with_one_warning(&out, &other, "read-only cache");
    assert_eq!(snapshot(&cache), before);
    // A missing read-only cache: one warning, nothing created.
    let missing = dir.path().join("missing");
    let out = run(&kir, &["--cache-dir", missing.to_str().unwrap()], &ro);
    assert_correct_with_one_warning(&out, &kir, "no cache directory here");
    assert!(!missing.exists());
}

/// Unix users and a group made for one test, removed when dropped.
struct Accounts {
    group: String,
    users: Vec<String>,
}

impl Accounts {
    fn create(tag: &str) -> Accounts {
        let group = format!("kg{tag}{}", std::process::id());
        assert!(Command::new("groupadd").arg(&group).status().unwrap().success(), "groupadd");
        let mut acc = Accounts { group: group.clone(), users: Vec::new() };
        for n in 1..=2 {
            let user = format!("ku{n}{tag}{}", std::process::id());
            let ok = Command::new("useradd")
                .args(["-M", "-N", "-s", "/usr/sbin/nologin", "-G", &group, &user])
                .status()
                .unwrap();
            assert!(ok.success(), "useradd {user}");
            acc.users.push(user);
        }
        acc
    }

    fn setpriv(&self, i: usize) -> Vec<String> {
        let user = &self.users[i];
        ["setpriv", &format!("--reuid={user}"), &format!("--regid={}", self.group), "--init-groups"]
            .map(String::from)
            .to_vec()
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for u in &self.users {
            let _ = Command::new("userdel").arg(u).status();
        }
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

#[test]
fn a_group_shared_cache_serves_a_second_user() {
    if !is_root() {
        println!("skipped: creating Unix users needs root");
        return;
    }
    let acc = Accounts::create("s");
    let dir = tempfile::tempdir().unwrap();
    // Like /tmp: anyone may create a directory here.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    let cache = dir.path().join("team");
    let cache_arg = cache.to_str().unwrap();
    let (run_bin, inspect_bin) = (public_copy(dir.path(), RUN), public_copy(dir.path(), INSPECT));
    // The first user creates the shared cache with a restrictive umask.
    let first = acc.setpriv(0);
    let init = Command::new(&first[0])
        .args(&first[1..])
        .args(["sh", "-c", &format!("umask 077 && exec {inspect_bin} init --shared {} {cache_arg}", acc.group)])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", text(&init.stderr));
    assert!(text(&init.stdout).contains(&format!("shared by group {}", acc.group)));
    let kir = testdata("ten_tasks.kir");
    let as_user = |i: usize| {
        let mut p = acc.setpriv(i);
        p.push(run_bin.clone());
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        run_as(Some(&p), &kir, &["--cache-dir", cache_arg], &[])
    };
    let one = as_user(0);
    assert!(one.status.success() && warnings(&one).is_empty(), "{}", text(&one.stderr));
    assert_eq!((stats(&one)["misses"].as_u64(), stats(&one)["stored"].as_u64()), (Some(10), Some(10)));
    let two = as_user(1);
    assert!(two.status.success() && warnings(&two).is_empty(), "{}", text(&two.stderr));
    assert_eq!((stats(&two)["hits"].as_u64(), stats(&two)["misses"].as_u64()), (Some(10), Some(0)), "all hits");
    assert_eq!(text(&two.stdout), text(&one.stdout));

    // Every directory is setgid to the group and group-writable, every
    // record group-writable, whatever the umask.
    let gid = fs::metadata(&cache).unwrap().gid();
    for e in walkdir::WalkDir::new(&cache) {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        assert_eq!(m.gid(), gid, "{}", e.path().display());
        let mode = m.mode() & 0o7777;
        if m.is_dir() {
            assert_eq!(mode, 0o2770, "{}", e.path().display());
        } else {
            assert_eq!(mode & 0o060, 0o060, "{}: {mode:o}", e.path().display());
            assert_eq!(mode & 0o002, 0, "{}", e.path().display());
        }
    }
    // The settings say so, and where that came from.
    let shown = Command::new(INSPECT).args(["--cache-dir", cache_arg, "config"]).output().unwrap();
    let shown = text(&shown.stdout);
    let line = format!("= {}  (cache file {}/kiln.toml)", acc.group, cache.display());
    assert!(shown.lines().any(|l| l.starts_with("shared_group ") && l.ends_with(&line)), "{shown}");
    // World-writable is refused even for the group: the run goes on
    // without the cache.
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o2777)).unwrap();
    let open = as_user(1);
    assert_correct_with_one_warning(&open, &kir, "world-writable");
}
