use super::*;
use std::fs;

struct Env(Vec<(&'static str, String)>);

impl Env {
    fn get(&self, name: &str) -> Option<OsString> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }
}

/// A user config directory and a cache root, with the given files.
fn setup(user: Option<&str>, cache: Option<&str>) -> (tempfile::TempDir, Env) {
    let dir = tempfile::tempdir().unwrap();
    let (conf, root) = (dir.path().join("conf"), dir.path().join("cache"));
    fs::create_dir_all(conf.join("kiln")).unwrap();
    fs::create_dir_all(&root).unwrap();
    if let Some(text) = user {
        fs::write(conf.join("kiln").join(FILE_NAME), text).unwrap();
    }
    if let Some(text) = cache {
        fs::write(root.join(FILE_NAME), text).unwrap();
    }
    let env = Env(vec![
        ("XDG_CONFIG_HOME", conf.display().to_string()),
        ("KILN_CACHE_DIR", root.display().to_string()),
        ("HOME", "/nonexistent".into()),
    ]);
    (dir, env)
}

fn load(env: &Env, flags: &[Flag]) -> Result<Settings, SettingsError> {
    Settings::load_with(flags, &|n| env.get(n))
}

#[test]
fn table_is_consistent() {
    for (i, info) in TABLE.iter().enumerate() {
        assert!(info.env.starts_with("KILN_"), "{}", info.name);
        assert!(!info.doc.is_empty());
        assert!(TABLE[i + 1..].iter().all(|o| o.name != info.name && o.env != info.env), "{} twice", info.name);
    }
    let rows = Settings::defaults().rows();
    assert_eq!(rows.iter().map(|r| r.name).collect::<Vec<_>>(), TABLE.iter().map(|i| i.name).collect::<Vec<_>>());
    assert_eq!(Settings::defaults().max_size.value, Size(5 << 30));
    assert!(rows.iter().all(|r| r.source == Source::Default));
}

#[test]
fn precedence_default_user_cache_env_flag() {
    let (dir, mut env) = setup(
        Some("max_size = \"1G\"\nread_only = true\nshared_group = \"staff\"\n"),
        Some("# the team's cache\nmax_size = \"2G\"\nremote = \"redis://127.0.0.1:1\"\n"),
    );
    let s = load(&env, &[]).unwrap();
    let user = dir.path().join("conf/kiln/kiln.toml");
    let cache = dir.path().join("cache/kiln.toml");
    assert_eq!((s.max_size.value, &s.max_size.source), (Size(2 << 30), &Source::CacheFile(cache.clone())));
    assert_eq!((s.read_only.value, &s.read_only.source), (true, &Source::UserFile(user.clone())));
    assert_eq!(s.shared_group.value.as_deref(), Some("staff"));
    assert_eq!(s.remote.value.as_deref(), Some("redis://127.0.0.1:1"));
    assert_eq!(s.allow_insecure.source, Source::Default);
    assert_eq!(s.cache_dir.source, Source::Env("KILN_CACHE_DIR"));

    env.0.push(("KILN_CACHE_MAX_SIZE", "3G".into()));
    env.0.push(("KILN_CACHE_READ_ONLY", "0".into()));
    env.0.push(("KILN_ALLOW_INSECURE_CACHE", "".into()));
    let s = load(&env, &[]).unwrap();
    assert_eq!((s.max_size.value, &s.max_size.source), (Size(3 << 30), &Source::Env("KILN_CACHE_MAX_SIZE")));
    assert_eq!((s.read_only.value, &s.read_only.source), (false, &Source::Env("KILN_CACHE_READ_ONLY")));
    assert_eq!(s.allow_insecure.source, Source::Default, "an empty variable is unset");

    let flags = [
        Flag { name: "allow_insecure", flag: "--allow-insecure-cache", text: "true".into() },
        Flag { name: "max_size", flag: "--max-size", text: "4GiB".into() },
    ];
    let s = load(&env, &flags).unwrap();
    assert_eq!((s.max_size.value, &s.max_size.source), (Size(4 << 30), &Source::Flag("--max-size")));
    assert_eq!((s.allow_insecure.value, &s.allow_insecure.source), (true, &Source::Flag("--allow-insecure-cache")));
    let opts = s.store_options();
    assert_eq!((opts.allow_insecure, opts.read_only, opts.max_size), (true, false, 4 << 30));
    assert_eq!(opts.shared_group.as_deref(), Some("staff"));
}

#[test]
fn sizes_as_ccache_means_them() {
    let (_dir, env) = setup(None, Some("max_size = 0\n"));
    let s = load(&env, &[]).unwrap();
    assert_eq!(s.max_size.value, Size(0));
    assert_eq!(s.store_options().max_size, 0, "0 is no limit (StoreOptions::max_size)");
    assert_eq!(Settings::shown("max_size", "0").as_deref(), Some("0 (no limit)"));
    assert_eq!(Settings::shown("max_size", "5").as_deref(), Some("5.0 GiB (5368709120 bytes)"));
    assert_eq!(Settings::shown("max_size", "100KB").as_deref(), Some("97.7 KiB (100000 bytes)"));
    // Below 1 MiB without a unit: refused, saying why.
    let flag = Flag { name: "max_size", flag: "--max-size", text: "0.0001".into() };
    let err = load(&env, &[flag]).unwrap_err();
    assert!(err.message.contains("below 1 MiB must say its unit"), "{}", err.message);
    let (_dir, env) = setup(None, Some("max_size = 0.0001\n"));
    assert!(load(&env, &[]).is_err(), "a float in the file is no size either");
}

#[test]
fn the_cache_dir_flag_picks_the_cache_file() {
    let (dir, env) = setup(None, Some("max_size = \"2G\"\n"));
    let other = dir.path().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join(FILE_NAME), "max_size = 7\n").unwrap();
    let flag = Flag { name: "cache_dir", flag: "--cache-dir", text: other.display().to_string() };
    let s = load(&env, &[flag]).unwrap();
    // A bare number is GiB, as in ccache.
    assert_eq!((s.max_size.value, s.cache_root().unwrap()), (Size(7 << 30), other));
    // With no KILN_CACHE_DIR, the user file may name the cache.
    let (dir, mut env) = setup(None, None);
    env.0.retain(|(k, _)| *k != "KILN_CACHE_DIR");
    let user = dir.path().join("conf/kiln/kiln.toml");
    fs::write(&user, format!("cache_dir = \"{}\"\n", dir.path().join("cache").display())).unwrap();
    let s = load(&env, &[]).unwrap();
    assert_eq!((s.cache_root().unwrap(), &s.cache_dir.source), (dir.path().join("cache"), &Source::UserFile(user)));
    // Nothing at all: the XDG default.
    fs::remove_file(dir.path().join("conf/kiln/kiln.toml")).unwrap();
    env.0.push(("XDG_CACHE_HOME", "/xdg".into()));
    let s = load(&env, &[]).unwrap();
    assert_eq!((s.cache_root().unwrap(), &s.cache_dir.source), (PathBuf::from("/xdg/kiln"), &Source::Default));
}

#[test]
fn file_errors_have_file_line_and_column() {
    let cases = [
        ("read_only = true\nmax_sise = \"1G\"\n", ":2:1", "unknown setting 'max_sise'"),
        ("read_only = true\nmax_size = \"lots\"\n", ":2:12", "bad value for 'max_size'"),
        ("\n  read_only = \"yes\"\n", ":2:15", "expected a boolean"),
        ("read_only = \n", ":1:", ""),
        ("[remote]\nurl = 1\n", ":1:", "bad value for 'remote'"),
    ];
    for (text, at, message) in cases {
        let (dir, env) = setup(None, Some(text));
        let err = load(&env, &[]).unwrap_err();
        let file = dir.path().join("cache/kiln.toml").display().to_string();
        assert!(err.location.starts_with(&file) && err.location[file.len()..].starts_with(at), "{text:?}: {err}");
        assert!(err.message.contains(message), "{text:?}: {err}");
        assert!(!err.usage, "a file's error is bad input");
    }
    let (_dir, env) = setup(None, Some("cache_dir = \"/elsewhere\"\n"));
    let err = load(&env, &[]).unwrap_err();
    assert!(err.to_string().contains("kiln.toml:1:1: 'cache_dir' cannot be set in the cache's own kiln.toml"), "{err}");
    // A cache's own file cannot waive the trust check of the cache.
    let (_dir, env) = setup(None, Some("allow_insecure = true\n"));
    let err = load(&env, &[]).unwrap_err();
    assert!(err.to_string().contains("'allow_insecure' cannot be set in the cache's own kiln.toml"), "{err}");
    let (_dir, env) = setup(Some("readonly = true\n"), None);
    let err = load(&env, &[]).unwrap_err();
    assert!(err.to_string().contains("did you mean 'read_only'?"), "{err}");
    // A typo gets the nearest name, not the whole list (issue 46).
    let (_dir, env) = setup(Some("max_sise = \"1G\"\n"), None);
    let err = load(&env, &[]).unwrap_err();
    assert!(err.to_string().ends_with("unknown setting 'max_sise' (did you mean 'max_size'?)"), "{err}");
}

#[test]
fn env_and_flag_errors_are_usage_errors() {
    let (_dir, mut env) = setup(None, None);
    env.0.push(("KILN_CACHE_READ_ONLY", "maybe".into()));
    let err = load(&env, &[]).unwrap_err();
    assert_eq!((err.location.as_str(), err.usage), ("KILN_CACHE_READ_ONLY", true));
    env.0.pop();
    let flag = Flag { name: "max_size", flag: "--max-size", text: "-1".into() };
    let err = load(&env, &[flag]).unwrap_err();
    assert_eq!((err.location.as_str(), err.usage), ("--max-size", true));
}

#[test]
fn set_keeps_other_keys_and_comments() {
    let (dir, env) = setup(None, Some("# kept\nremote = \"redis://h\" # also kept\n"));
    let root = dir.path().join("cache");
    let path = set_in_cache_file(&root, "max_size", "5G").unwrap();
    set_in_cache_file(&root, "read_only", "yes").unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text, "# kept\nremote = \"redis://h\" # also kept\nmax_size = \"5G\"\nread_only = true\n");
    let s = load(&env, &[]).unwrap();
    assert_eq!((s.max_size.value, s.read_only.value), (Size(5 << 30), true));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
    // Refused, and the file unchanged: a bad value, an unknown key, a key
    // the cache's file may not hold.
    for (key, value) in [("max_size", "big"), ("maxsize", "1G"), ("cache_dir", "/x"), ("read_only", "2")] {
        let err = set_in_cache_file(&root, key, value).unwrap_err();
        assert!(err.usage, "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
    // No temporaries left behind.
    assert_eq!(fs::read_dir(&root).unwrap().count(), 1);
    // A new file in a cache without one.
    let fresh = dir.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    set_in_cache_file(&fresh, "shared_group", "staff").unwrap();
    assert_eq!(fs::read_to_string(fresh.join(FILE_NAME)).unwrap(), "shared_group = \"staff\"\n");
}

#[test]
fn a_cache_file_in_error_leaves_a_run_read_only_and_set_repairs_it() {
    let (dir, env) = setup(Some("max_size = \"1G\"\n"), Some("remote = \"redis://h\"\nmax_size = \n"));
    let run = |env: &Env| Settings::load_for_run_with(&[], &|n| env.get(n));
    // Strict readers fail; a run reads the rest, read-only, with the problem.
    assert_eq!(load(&env, &[]).unwrap_err().location, format!("{}:2:12", dir.path().join("cache/kiln.toml").display()));
    let (s, problem) = run(&env).unwrap();
    assert_eq!(problem.unwrap().location, format!("{}:2:12", dir.path().join("cache/kiln.toml").display()));
    assert_eq!((s.max_size.value, s.read_only.value, s.remote.value), (Size(1 << 30), true, None));
    // The user's own file in error stays an error for a run too.
    let (_bad_user, user_env) = setup(Some("max_size = \n"), None);
    assert!(run(&user_env).is_err());
    // Repaired by `config set`: not TOML text is replaced, a bad value
    // overwritten.
    let root = dir.path().join("cache");
    set_in_cache_file(&root, "max_size", "2G").unwrap();
    assert_eq!(fs::read_to_string(root.join(FILE_NAME)).unwrap(), "max_size = \"2G\"\n");
    let (s, problem) = run(&env).unwrap();
    assert!(problem.is_none());
    assert_eq!((s.max_size.value, s.read_only.value), (Size(2 << 30), false));
    fs::write(root.join(FILE_NAME), [b"read_only = true\n".as_slice(), b"\xff = 1\n"].concat()).unwrap();
    assert_eq!(run(&env).unwrap().1.unwrap().location, format!("{}:2", root.join(FILE_NAME).display()));
    fs::write(root.join(FILE_NAME), "read_only = 7\nmax_size = \"1G\"\n").unwrap();
    set_in_cache_file(&root, "read_only", "false").unwrap();
    assert_eq!(fs::read_to_string(root.join(FILE_NAME)).unwrap(), "read_only = false\nmax_size = \"1G\"\n");
}

#[test]
fn a_cache_directory_that_cannot_be_reached_is_the_cache_files_problem() {
    let (dir, mut env) = setup(Some("max_size = \"1G\"\n"), None);
    let run = |env: &Env| Settings::load_for_run_with(&[], &|n| env.get(n));
    fs::write(dir.path().join("afile"), "").unwrap();
    std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
    for (root, reason) in [("afile/cache", "not a directory"), ("loop/cache", "too many levels of symbolic links")] {
        let root = dir.path().join(root);
        env.0[1].1 = root.display().to_string();
        let err = load(&env, &[]).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: cannot reach the cache directory: {reason}", root.display()));
        assert!(!err.usage);
        let (s, problem) = run(&env).unwrap();
        assert_eq!(problem.unwrap(), err);
        assert_eq!((s.max_size.value, s.read_only.value), (Size(1 << 30), true));
    }
    // A root that does not exist yet, or that is a file, is the store's
    // to create or to report.
    for root in ["new/cache", "afile"] {
        env.0[1].1 = dir.path().join(root).display().to_string();
        assert_eq!(run(&env).unwrap().1, None);
    }
}

/// Makes `path` a FIFO (nobody ever writes to it).
fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
}

#[test]
fn a_user_file_that_is_not_a_regular_file_is_ignored_never_read() {
    // A FIFO would block a plain open forever; a link to /dev/zero would
    // be read without end; a directory cannot be read.
    type Make = fn(&Path);
    let make: [(&str, Make); 3] = [
        ("a FIFO", mkfifo),
        ("a device", |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
        ("a directory", |p| fs::create_dir(p).unwrap()),
    ];
    for (what, make) in make {
        let (dir, env) = setup(None, Some("max_size = \"2G\"\n"));
        let user = dir.path().join("conf/kiln").join(FILE_NAME);
        make(&user);
        let s = load(&env, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(s.ignored.len(), 1, "{what}");
        assert_eq!(s.ignored[0].location, user.display().to_string());
        assert_eq!(s.ignored[0].message, format!("not read: {what}, not a regular file"));
        assert_eq!(s.max_size.value, Size(2 << 30), "{what}: the cache's file still counts");
    }
}

#[test]
fn a_user_file_over_the_bound_is_ignored() {
    let big = format!("# {}\nmax_size = \"1G\"\n", "x".repeat(MAX_FILE_SIZE as usize));
    let (_dir, env) = setup(Some(&big), None);
    let s = load(&env, &[]).unwrap();
    assert_eq!(s.ignored.len(), 1);
    assert_eq!(s.ignored[0].message, format!("not read: larger than {MAX_FILE_SIZE} bytes"));
    assert_eq!(s.max_size.source, Source::Default);
    // At the bound it is read.
    let at = format!("max_size = \"1G\"\n#{}\n", "x".repeat(MAX_FILE_SIZE as usize - 18));
    assert_eq!(at.len() as u64, MAX_FILE_SIZE);
    let (_dir, env) = setup(Some(&at), None);
    let s = load(&env, &[]).unwrap();
    assert!(s.ignored.is_empty());
    assert_eq!(s.max_size.value, Size(1 << 30));
}

#[test]
fn a_cache_file_that_is_a_fifo_leaves_a_run_read_only_and_never_blocks() {
    let (dir, env) = setup(Some("max_size = \"1G\"\n"), None);
    let cache = dir.path().join("cache").join(FILE_NAME);
    mkfifo(&cache);
    let e = load(&env, &[]).expect_err("the cache's settings are unknown");
    assert_eq!(e.message, "not read: a FIFO, not a regular file");
    let (s, problem) = Settings::load_for_run_with(&[], &|n| env.get(n)).unwrap();
    assert!(s.read_only.value);
    assert_eq!(s.max_size.value, Size(1 << 30), "the user's file still counts");
    assert_eq!(problem.expect("one warning").location, cache.display().to_string());
    let e = set_in_cache_file(&dir.path().join("cache"), "max_size", "3G").expect_err("not replaced");
    assert_eq!(e.message, "not read: a FIFO, not a regular file");
}

/// A flag given back to a child process reads as the tool's own command
/// line spells it, and loads to the same setting.
#[test]
fn flags_as_arguments() {
    let flags = cache_flags(Some(Path::new("/c d")), true);
    let args: Vec<String> = flags.iter().map(Flag::to_arg).collect();
    assert_eq!(args, ["--cache-dir=/c d", "--allow-insecure-cache"]);
    let url = Flag::new("remote", "redis://127.0.0.1:1");
    assert_eq!(url.to_arg(), "--remote=redis://127.0.0.1:1");
}
