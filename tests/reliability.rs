//! Regression tests for the findings of the adversarial campaign of issue
//! 11 that the reliability work closed: deep call chains (one limit, every
//! tool), hostile `.npy` inputs, special files given as inputs. Each test
//! builds its hostile input itself and runs the real tools on it.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

const OPT: &str = env!("CARGO_BIN_EXE_kiln-opt");
const KEY: &str = env!("CARGO_BIN_EXE_kiln-key");
const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");

/// A command whose default cache lies inside `home`.
fn tool(bin: &str, home: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("HOME", home.join("home"))
        .env("KILN_CACHE_DIR", home.join("cache"))
        .env("XDG_CACHE_HOME", home.join("xdg"))
        .output()
        .expect("tool starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A kernel whose one range_for task calls `@f0`, which calls `@f1`, ...
/// `@f{n-1}`, which nests `ifs` blocks: `2 + n + ifs` levels of blocks and
/// calls (kernel body, task body, each function body, each `if`).
fn call_chain(n: usize, ifs: usize) -> String {
    let mut s = String::from("field @out : i32[4]\n");
    for i in 0..n - 1 {
        writeln!(s, "\nfunc @f{i}(%x: i32) -> i32 {{\n  %r = call @f{}(%x)\n  ret %r\n}}", i + 1).unwrap();
    }
    writeln!(s, "\nfunc @f{}(%x: i32) -> i32 {{\n  %one = const 1 : i32\n  %t = cmp ge %x, %one", n - 1).unwrap();
    for k in 0..ifs {
        writeln!(s, "{:w$}if %t {{", "", w = 2 * k + 2).unwrap();
    }
    writeln!(s, "{:w$}%y = add %x, %one\n{:w$}store @out[%x], %y", "", "", w = 2 * ifs + 2).unwrap();
    for k in (0..ifs).rev() {
        writeln!(s, "{:w$}}}", "", w = 2 * k + 2).unwrap();
    }
    s.push_str("  ret %x\n}\n\nkernel @main() {\n  task @t range_for %i in 0 .. 4 {\n");
    s.push_str("    %v = call @f0(%i)\n  }\n}\n");
    s
}

const LIMIT: usize = kiln::verifier::MAX_CALL_DEPTH;

/// Finding 1: at the limit every tool accepts the chain and both engines
/// compute the same fields; the deepest chain and block nesting together
/// are what the limit counts.
#[test]
fn call_chain_at_the_limit_runs_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chain.kir");
    let ifs = 100;
    std::fs::write(&file, call_chain(LIMIT - 2 - ifs, ifs)).unwrap();
    let f = file.to_str().unwrap();
    for (bin, args) in [(OPT, vec![f]), (KEY, vec![f]), (COMPILE, vec!["-O0", "-o", "-", "--emit", "llvm", f])] {
        let o = tool(bin, dir.path(), &args);
        assert!(o.status.success(), "{bin} {args:?}: {}", stderr(&o));
    }
    let mut digests = Vec::new();
    for engine in ["interp", "jit"] {
        let o = tool(RUN, dir.path(), &["--engine", engine, "-O0", "--print", "@out", f]);
        assert!(o.status.success(), "kiln-run --engine {engine}: {}", stderr(&o));
        digests.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    assert_eq!(digests[0], digests[1]);
    assert!(digests[0].contains('2') && digests[0].contains('4'), "{}", digests[0]);
}

/// Finding 1: one level deeper, every tool gives the verifier's error, the
/// same line, with exit code 1 (before: an abort on a stack overflow in
/// kiln-compile and the JIT, acceptance by kiln-opt and kiln-key).
#[test]
fn call_chain_beyond_the_limit_is_one_error_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    for (n, ifs) in [(LIMIT - 1, 0), (LIMIT - 102, 101), (20_000, 0)] {
        let file = dir.path().join(format!("chain-{n}.kir"));
        std::fs::write(&file, call_chain(n, ifs)).unwrap();
        let f = file.to_str().unwrap();
        let mut firsts = Vec::new();
        for (bin, args) in [
            (OPT, vec![f]),
            (KEY, vec![f]),
            (COMPILE, vec!["-o", "-", "--emit", "llvm", f]),
            (RUN, vec!["--engine", "interp", f]),
            (RUN, vec!["--engine", "jit", f]),
        ] {
            let o = tool(bin, dir.path(), &args);
            assert_eq!(o.status.code(), Some(1), "{bin} {args:?}: {}", stderr(&o));
            firsts.push(stderr(&o).lines().next().unwrap_or_default().to_string());
        }
        let depth = 2 + n + ifs;
        let want = format!(
            "kernel @main: blocks and calls nest {depth} levels deep, more than the limit of {LIMIT}: @main -> @f0 -> "
        );
        assert!(firsts[0].contains(&want), "{}", firsts[0]);
        assert!(firsts.iter().all(|l| *l == firsts[0]), "{firsts:#?}");
    }
}

fn saxpy() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/saxpy.kir").to_string_lossy().into_owned()
}

/// `kiln-run --engine interp --input @x=FILE saxpy.kir`: exit code and stderr.
fn run_input(dir: &Path, file: &Path) -> (Option<i32>, String) {
    let input = format!("@x={}", file.display());
    let o = tool(RUN, dir, &["--engine", "interp", "--input", &input, &saxpy()]);
    (o.status.code(), stderr(&o))
}

/// A version 1 `.npy` file: header text, then `data`.
fn npy(header: &str, data: &[u8]) -> Vec<u8> {
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend((header.len() as u16).to_le_bytes());
    v.extend(header.as_bytes());
    v.extend(data);
    v
}

/// Finding 2: headers that made npyz's Python-literal parser take
/// exponential time (an 80-byte file hung kiln-run) are refused at once by
/// the bounded check; the test would take hours, not milliseconds, if any
/// of them reached that parser.
#[test]
fn hostile_npy_headers_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.npy");
    for header in [
        "{".repeat(40),
        "[".repeat(40),
        "{'a':".repeat(30),
        "(".repeat(40),
        format!("{{'descr': {}", "[".repeat(40)),
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (4096,), }}{}", "{".repeat(40)),
    ] {
        std::fs::write(&file, npy(&header, &[])).unwrap();
        let (code, err) = run_input(dir.path(), &file);
        assert_eq!(code, Some(1), "{header}: {err}");
        assert!(err.contains("error: @x: not a valid .npy file: "), "{header}: {err}");
    }
}

/// Finding 3: devices and FIFOs are refused before a byte is read (before:
/// `--input @x=/dev/zero` grew to 4 GB), and a file is read only as far as
/// its header says: one that is longer or shorter is refused.
#[test]
fn npy_inputs_are_bounded_by_their_kind_and_header() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (file, kind) in [(Path::new("/dev/zero"), "a character device"), (&fifo, "a FIFO")] {
        let (code, err) = run_input(dir.path(), file);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(&format!("error: @x: it is {kind}, not a regular .npy file")), "{err}");
    }
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4096,), }";
    let file = dir.path().join("x.npy");
    for (len, ok) in [(4096 * 4, true), (4096 * 4 + 1, false), (4096 * 4 - 4, false), (1 << 24, false)] {
        std::fs::write(&file, npy(header, &vec![0u8; len])).unwrap();
        let (code, err) = run_input(dir.path(), &file);
        assert_eq!(code, Some(if ok { 0 } else { 1 }), "{len}: {err}");
        if !ok {
            let want = format!(
                "it is {} bytes long, its header describes {}",
                10 + header.len() + len,
                10 + header.len() + 4096 * 4
            );
            assert!(err.contains(&want), "{err}");
        }
    }
}

/// Finding 9: a record whose header does not agree with its file (here
/// 64 MiB under a header that declares a few hundred bytes) is found
/// damaged from its first 60 bytes; its body is never read. Before, the
/// whole file (up to 1 GiB) was read first.
#[test]
fn record_body_is_not_read_when_its_header_disagrees() {
    use kiln::cache::{record, HostScope, Key, Lookup, Store, StoreOptions};
    use kiln::config::{LaunchMeta, MetaBound, MetaKind};
    let dir = tempfile::tempdir().unwrap();
    let scope = HostScope::new("x86_64-unknown-linux-gnu", "test", ["+a"]);
    let store = Store::open(dir.path(), scope, StoreOptions::default()).unwrap();
    let meta = LaunchMeta {
        task: "t".into(),
        entry_symbol: "kiln_t".into(),
        kind: MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Const(64), block_dim: 64 },
        params: vec![],
        fields: vec![],
    };
    for (i, grow) in [(1u32, 64usize << 20), (2, 0)] {
        let key = Key::from(blake3::hash(&i.to_le_bytes()));
        store.put(&key, &meta, b"object bytes").unwrap();
        let path = store.record_path(&key);
        let mut bytes = std::fs::read(&path).unwrap();
        if grow > 0 {
            bytes.resize(grow, 0);
        } else {
            // The right length under another key: read no further either.
            bytes[record::HEADER_LEN - 1] ^= 1;
        }
        std::fs::write(&path, &bytes).unwrap();
        let before = store.stats().bytes_read;
        assert!(matches!(store.get(&key).unwrap(), Lookup::Corrupt(_)));
        assert_eq!(store.stats().bytes_read - before, record::HEADER_LEN as u64);
        assert!(!path.exists());
    }
}

/// Finding 5: kiln-key keys input of bare items a batch of kernels at a
/// time (`KeySet::of_text`); every repository file and a hundred random
/// kernels (several kernels each, sharing functions) get exactly the keys,
/// in the same order, that the whole stream gives, in batches and one
/// kernel at a time.
#[test]
fn keys_per_kernel_equal_keys_of_the_whole_stream() {
    use kiln::config::CompileConfig;
    use kiln::frontend::Batching;
    use kiln::key::KeySet;
    use kiln::passes::to_task_stream;
    let cfg = CompileConfig::default();
    let mut texts: Vec<(String, String)> = common::kir_files()
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    for seed in 0..100 {
        texts.push((format!("kernelgen seed {seed}"), common::kernelgen::generate(seed, &Default::default())));
    }
    // Kernels that outweigh the functions they share: several batches.
    let mut chain = String::from("field @out : i32[64]\nfunc @f1(%x: i32) -> i32 {\n  ret %x\n}\n");
    chain += "func @f0(%x: i32) -> i32 {\n  %r = call @f1(%x)\n  ret %r\n}\n";
    for k in 0..60 {
        chain += &format!("kernel @k{k}() {{\n  %j = const {k} : i32\n  %v = call @f0(%j)\n  store @out[%j], %v\n}}\n");
    }
    assert!(kiln::frontend::per_kernel(&chain, |_| ()).is_some_and(|b| b.len() > 5));
    texts.push(("a shared chain".into(), chain));
    let mut compared = 0;
    for (name, text) in texts {
        let Ok(stream) = kiln::parser::parse(&text) else { continue };
        if kiln::verifier::verify(&stream).is_err() {
            continue;
        }
        let Ok(split) = to_task_stream(stream) else { continue };
        let whole: Vec<_> =
            KeySet::of_stream(&split, &cfg).tasks.into_iter().map(|t| (t.task, t.kernel, t.key)).collect();
        let streamed = KeySet::of_text(&text, &cfg).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let streamed: Vec<_> = streamed.tasks.into_iter().map(|t| (t.task, t.kernel, t.key)).collect();
        assert_eq!(streamed, whole, "{name}");
        // The same with every kernel in a module of its own: batches of
        // small kernels are the whole stream in these inputs, so this is
        // what checks that kernels keyed apart are keyed alike.
        let one = kiln::frontend::in_batches(&text, Batching::One, |m| {
            let split = to_task_stream(kiln::ir::Stream { modules: vec![m] }).unwrap();
            KeySet::of_stream(&split, &cfg).tasks
        });
        let Some(one) = one else { continue };
        let one: Vec<_> = one.into_iter().flatten().map(|t| (t.task, t.kernel, t.key)).collect();
        assert_eq!(one, whole, "{name}: one kernel per module");
        compared += usize::from(!whole.is_empty());
    }
    assert!(compared >= 100, "only {compared} inputs with tasks keyed per kernel");
}
