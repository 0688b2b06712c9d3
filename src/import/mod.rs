//! `kiln-import`'s library: a captured Quadrants 1.3.3 log (`print_ir=True,
//! print_ir_dbg_info=True`, standard output and standard error in one
//! file) and its field table in, verified task-form KIR out.
//!
//! The pipeline: `log` cuts the log into pass headers and dumps and checks
//! its version and shape; the dumps of the chosen stage (by default
//! `Start offload_to_executable`, one dump per offloaded task) are grouped
//! by kernel compilation; `chi` parses each (a logos lexer, `lexer`, under
//! a recursive-descent parser) into tasks whose statements keep their
//! Python `file:line:col`; `table` reads the field table; `lower` builds
//! the KIR through `ir::Builder`, and the verifier checks it, so what the
//! caller gets is a verified [`Stream`] (printed by the one printer).
//!
//! Owns: the import as a whole, the stage's selection, the grouping of
//! dumps into kernels, the choice of each real function's dump
//! (`qd.real_func`: its `Initial IR` whose next stage is `Access lowered`)
//! and the kernels' KIR names.
//!
//! Must never: print, exit or panic on any input; touch LLVM (the importer
//! is on the LLVM-free side of the wall); change the KIR language to fit
//! Quadrants (what KIR cannot say is refused by name).

pub mod chi;
pub mod lexer;
pub mod log;
pub mod lower;
pub mod table;

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Stream;
use std::collections::{HashMap, HashSet};

/// The stage imported when none is named: the dump the printer labels
/// `Start offload_to_executable`, the first in task form and the last
/// before Quadrants lowers SNode accesses for its code generator.
pub const DEFAULT_STAGE: &str = "offload_to_executable";

/// Why an import failed.
#[derive(Debug)]
pub enum ImportError {
    /// Bad log, or a statement refused: located in the log.
    Log(Diagnostic),
    /// Bad field table: located in the table's text when serde says where.
    Table(Diagnostic),
    /// The KIR built does not verify: a bug of the importer, with its
    /// text and the diagnostics located in it.
    Invalid { text: String, diags: Diagnostics },
}

/// A successful import: the verified KIR, and the kernels of the log left
/// out because the field table does not name them (Quadrants' own, such as
/// the `tensor_to_ext_arr` that `to_numpy()` runs), by Quadrants' name.
#[derive(Debug)]
pub struct Imported {
    pub stream: Stream,
    pub left_out: Vec<String>,
}

/// One kernel's compilations so far, by Quadrants' name.
struct Instance {
    quadrants_name: String,
    dumps: Vec<usize>,
}

/// The Python function's name of a Quadrants kernel name: `saxpy_c60_0`
/// without its `_c<N>_<M>` suffix (before `_reverse_grad` or
/// `_forward_grad` in the name of a kernel's derivative).
pub fn python_name(quadrants_name: &str) -> &str {
    let base = ["_reverse_grad", "_forward_grad"].iter().find_map(|s| quadrants_name.strip_suffix(s));
    match base {
        Some(b) if python_name_of(b).len() < b.len() => python_name_of(b),
        _ => python_name_of(quadrants_name),
    }
}

/// A Quadrants kernel name without its instance number: `saxpy_c60` of
/// `saxpy_c60_0`. The compilations of one Python function share it, and
/// two functions of one name do not (the field table keys a second
/// function of a name by it).
pub fn function_name(quadrants_name: &str) -> &str {
    let n = python_name_of(quadrants_name).len();
    if n == quadrants_name.len() {
        return quadrants_name;
    }
    quadrants_name.rsplit_once('_').map_or(quadrants_name, |(f, _)| f)
}

fn python_name_of(quadrants_name: &str) -> &str {
    let strip = |s: &str| -> Option<usize> {
        let (rest, m) = s.rsplit_once('_')?;
        let (rest2, c) = rest.rsplit_once('_')?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        (digits(m) && c.strip_prefix('c').is_some_and(digits) && !rest2.is_empty()).then_some(rest2.len())
    };
    match strip(quadrants_name) {
        Some(n) => &quadrants_name[..n],
        None => quadrants_name,
    }
}

/// An error when dump `this` repeats dump `last` of the same compilation:
/// in a log that prints the kernel's later stages, when none came between
/// them (`later`); in a log of that stage alone, when the two are the same
/// text, Python locations included (only an edit or a join makes that).
fn repeated_dump(
    scanned: &log::Log,
    last: usize,
    this: usize,
    staged: bool,
    later: Option<&bool>,
) -> Result<(), Diagnostic> {
    let body = |d: &log::Dump| d.body.map(|(a, b)| scanned.lines[a..=b].iter().map(|l| l.text));
    let (a, b) = (&scanned.dumps[last], &scanned.dumps[this]);
    let repeated = if staged {
        later != Some(&true)
    } else {
        match (body(a), body(b)) {
            (Some(x), Some(y)) => x.eq(y),
            _ => false,
        }
    };
    if !repeated {
        return Ok(());
    }
    let why = if staged { "with none of its later pass stages between them" } else { "word for word" };
    Err(Diagnostic::error(
        format!(
            "the dump of kernel '{}' ({}) repeats the one at line {} {why}: a real log prints each task once (is the log edited or joined?)",
            b.kernel,
            b.label,
            scanned.lines[a.header].number
        ),
        scanned.lines[b.header].span(),
    ))
}

/// Imports the kernels of `log` at `stage` with the field table `table`.
///
/// When the table names kernels, only those are imported (a log of one
/// call holds one of them; a log with none of them is an error); a table
/// without kernels imports every kernel of the log.
pub fn import(log_text: &str, table_text: &str, stage: &str) -> Result<Imported, ImportError> {
    let table = table::parse(table_text).map_err(ImportError::Table)?;
    if table.quadrants != log::QUADRANTS_VERSION {
        return Err(ImportError::Table(Diagnostic::error_nospan(format!(
            "the field table is from Quadrants {}; kiln-import reads Quadrants {}",
            table.quadrants,
            log::QUADRANTS_VERSION
        ))));
    }
    let scanned = log::scan(log_text).map_err(ImportError::Log)?;
    let wanted = |label: &str| label == stage || label.strip_prefix("Start ") == Some(stage);

    // Compilations in order of first appearance: a new `Initial IR` of a
    // kernel starts a new one (the same kernel compiled again).
    let mut instances: Vec<Instance> = Vec::new();
    let mut current: HashMap<&str, usize> = HashMap::new();
    let mut previous: Option<&str> = None;
    // Whether the log prints a kernel's later stages (a full log, or a
    // capture's, which keeps their headers), and whether one came since
    // the kernel's last dump of the stage: each task's dump is followed
    // by its own later stages, so two with none between them is a dump
    // repeated, which would run the task twice.
    let staged: HashSet<&str> = scanned.dumps.iter().filter(|d| !wanted(&d.label)).map(|d| d.kernel.as_str()).collect();
    let mut later_stage: HashMap<&str, bool> = HashMap::new();
    for (i, d) in scanned.dumps.iter().enumerate() {
        if d.label == "Initial IR" {
            current.remove(d.kernel.as_str());
        }
        if !wanted(&d.label) {
            later_stage.insert(d.kernel.as_str(), true);
            continue;
        }
        if let Some(&k) = current.get(d.kernel.as_str()).filter(|_| previous == Some(d.kernel.as_str())) {
            let last = *instances[k].dumps.last().expect("an instance has a dump");
            repeated_dump(&scanned, last, i, staged.contains(d.kernel.as_str()), later_stage.get(d.kernel.as_str()))
                .map_err(ImportError::Log)?;
        }
        later_stage.insert(d.kernel.as_str(), false);
        // A kernel's tasks compile one after the other: its dumps after
        // another kernel's are another compilation.
        if previous.is_some_and(|p| p != d.kernel) {
            current.remove(d.kernel.as_str());
        }
        previous = Some(d.kernel.as_str());
        let Some(_) = d.body else {
            let h = scanned.lines[d.header];
            return Err(ImportError::Log(Diagnostic::error(
                format!("truncated log: the header of kernel '{}' is not followed by its dump", d.kernel),
                h.span(),
            )));
        };
        let k = *current.entry(d.kernel.as_str()).or_insert_with(|| {
            instances.push(Instance { quadrants_name: d.kernel.clone(), dumps: Vec::new() });
            instances.len() - 1
        });
        // Tasks are in launch order only when they compiled one after the
        // other (num_compile_threads=1, which the capture forces); the
        // printing thread is no evidence either way, so it is not checked.
        instances[k].dumps.push(i);
    }
    // Quadrants names each compilation once (`_c<N>_<K>`): the same name
    // compiled twice is the same log (or part of it) joined twice.
    for (n, inst) in instances.iter().enumerate() {
        if let Some(first) = instances[..n].iter().find(|o| o.quadrants_name == inst.quadrants_name) {
            let line = |i: &Instance| scanned.lines[scanned.dumps[i.dumps[0]].header];
            return Err(ImportError::Log(Diagnostic::error(
                format!(
                    "kernel '{}' is compiled twice in the log (first at line {}): is the same log joined twice?",
                    inst.quadrants_name,
                    line(first).number
                ),
                line(inst).span(),
            )));
        }
    }
    if instances.is_empty() {
        let mut labels: Vec<&str> = Vec::new();
        for d in &scanned.dumps {
            if !labels.contains(&d.label.as_str()) {
                labels.push(&d.label);
            }
        }
        let have = if labels.is_empty() {
            "the log has no IR dumps (was it captured with print_ir=True?)".to_string()
        } else {
            format!("the log's stages are: {}", labels.join(", "))
        };
        return Err(ImportError::Log(Diagnostic::error_nospan(format!("no dump of stage '{stage}'; {have}"))));
    }

    let mut left_out = Vec::new();
    if !table.kernels.is_empty() {
        let (keep, out): (Vec<Instance>, Vec<Instance>) =
            instances.into_iter().partition(|i| table.kernel_args(&i.quadrants_name).is_some());
        left_out = out.into_iter().map(|i| i.quadrants_name).collect();
        instances = keep;
        // A per-call log holds one kernel of a table that names them all.
        if instances.is_empty() {
            return Err(ImportError::Log(Diagnostic::error_nospan(format!(
                "no kernel the field table names has a dump of stage '{stage}' in the log (loaded from Quadrants' offline cache? capture with offline_cache=False); the log compiles only {}",
                left_out.join(", ")
            ))));
        }
    }
    let mut count: HashMap<&str, usize> = HashMap::new();
    for inst in &instances {
        *count.entry(python_name(&inst.quadrants_name)).or_default() += 1;
    }
    let mut kernels = Vec::new();
    for inst in &instances {
        let py = python_name(&inst.quadrants_name);
        let mut tasks = Vec::new();
        for &di in &inst.dumps {
            let (first, last) = scanned.dumps[di].body.expect("checked above");
            let t = chi::parse_dump(&scanned.lines[first + 1..last]).map_err(|e| ImportError::Log(e.diagnostic()))?;
            tasks.extend(t);
        }
        let kir = if count[py] == 1 { py } else { inst.quadrants_name.as_str() };
        kernels.push(lower::KernelIn {
            quadrants_name: inst.quadrants_name.clone(),
            python_name: py.to_string(),
            kir_name: lower::sanitize(kir),
            tasks,
        });
    }
    let funcs = real_functions(&scanned).map_err(|e| ImportError::Log(e.diagnostic()))?;
    let stream = lower::lower(&table, &kernels, &funcs).map_err(|e| ImportError::Log(e.diagnostic()))?;
    if crate::verifier::verify(&stream).is_err() {
        return Err(invalid(&stream));
    }
    Ok(Imported { stream, left_out })
}

/// The real functions (`qd.real_func`) of a log, by Quadrants' name, each
/// parsed from its dump in statement form with field accesses not yet
/// lowered: the function's `Initial IR` dump whose next dump is its
/// `Access lowered` (its first `Initial IR` is in Quadrants' frontend
/// syntax). A kernel's `Initial IR` is followed by its tasks' offloading
/// instead, so is never taken for a function's.
fn real_functions(scanned: &log::Log) -> Result<HashMap<String, lower::FuncIn>, chi::Error> {
    let mut funcs = HashMap::new();
    for (i, d) in scanned.dumps.iter().enumerate() {
        let Some((first, last)) = d.body.filter(|_| d.label == "Initial IR") else { continue };
        let next = scanned.dumps[i + 1..].iter().find(|n| n.kernel == d.kernel);
        if next.is_some_and(|n| n.label == "Access lowered") {
            let body = chi::parse_function(&scanned.lines[first + 1..last])?;
            funcs.insert(d.kernel.clone(), lower::FuncIn { quadrants_name: d.kernel.clone(), body });
        }
    }
    Ok(funcs)
}

/// The error of a stream built that does not verify: its text, and the
/// diagnostics of that text read back (so each is located in it).
fn invalid(stream: &Stream) -> ImportError {
    let text = stream.to_string();
    let diags = match crate::parser::parse(&text) {
        Ok(read) => crate::verifier::verify(&read).err().unwrap_or_else(|| {
            // What does not verify must print as what does not either;
            // say so rather than nothing.
            Diagnostics(vec![Diagnostic::error_nospan("the IR built does not verify, but its text does".to_string())])
        }),
        Err(diags) => diags,
    };
    ImportError::Invalid { text, diags }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = r#"{"quadrants": "1.3.3",
      "fields": [{"name": "x", "dtype": "f32", "shape": [16], "place": 2, "ancestors": [1, 0]},
                 {"name": "y", "dtype": "f32", "shape": [16], "place": 4, "ancestors": [3, 0]},
                 {"name": "g", "dtype": "i32", "shape": [4, 8], "place": 6, "ancestors": [5, 0]}],
      "kernels": {"saxpy": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"},
                                     {"name": "n", "kind": "scalar", "dtype": "i32"}]}}}"#;

    fn header(kernel: &str) -> String {
        format!(
            "[I 12/01/26 23:28:20.309 6361] [ir_printer.cpp:operator()@912] [{kernel}] Start offload_to_executable:\n"
        )
    }

    fn run(log: &str) -> Result<String, ImportError> {
        // The tests' logs compile `saxpy` or `k`; the table names the one there.
        let table = if log.contains("[saxpy_") { TABLE.to_string() } else { TABLE.replace("\"saxpy\"", "\"k\"") };
        import(log, &table, DEFAULT_STAGE).map(|s| {
            // What the builder made prints as text the parser reads back
            // as the same IR.
            let text = s.stream.to_string();
            let read = crate::parser::parse(&text).expect("the text printed parses");
            assert!(read.same_as(&s.stream), "the text printed reads back as other IR:\n{text}");
            text
        })
    }

    #[test]
    fn function_names() {
        assert_eq!(function_name("saxpy_c60_0"), "saxpy_c60");
        assert_eq!(function_name("my_kernel_c7_12"), "my_kernel_c7");
        assert_eq!(function_name("plain"), "plain");
        assert_eq!(function_name("loss_c3_0_reverse_grad"), "loss_c3_0_reverse_grad");
    }

    #[test]
    fn python_names() {
        assert_eq!(python_name("saxpy_c60_0"), "saxpy");
        assert_eq!(python_name("my_kernel_c7_12"), "my_kernel");
        assert_eq!(python_name("plain"), "plain");
        assert_eq!(python_name("_c1_2"), "_c1_2");
        assert_eq!(python_name("k_c61_0_reverse_grad"), "k");
        assert_eq!(python_name("k_reverse_grad"), "k_reverse_grad");
    }

    #[test]
    fn saxpy_in_two_tasks() {
        let log = format!(
            "[Quadrants] version 1.3.3, llvm 22.1.0\n{h}kernel {{\n  $0 = offloaded  \n  body {{\n    <i32> $1 = argload[1]\n    <*i32> $2 = global tmp var (offset = 0 B)\n    $3 : global store [$2 <- $1]\n  }}\n}}\n{h}kernel {{\n  $0 = offloaded range_for(0, tmp(offset=0B)) grid_dim=0 block_dim=32 \n  body {{\n    <i32> $1 = loop $0 index 0\n    <f32> $2 = argload[0]\n    <*f32> $3 = global ptr [S2place<f32>], index [$1] activate=false\n    <f32> $4 = global load $3\n    <f32> $5 = mul $2 $4\n    <*f32> $6 = global ptr [S4place<f32>], index [$1] activate=true\n    $7 : global store [$6 <- $5]\n  }}\n}}\n",
            h = header("saxpy_c60_0")
        );
        let kir = run(&log).expect("imports");
        assert!(kir.contains("kernel @saxpy(%a: f32, %n: i32) {"), "{kir}");
        assert!(kir.contains("task @saxpy.1 range_for %i.0 in 0 .. @saxpy.tmp0[] block_dim 32 {"), "{kir}");
        assert!(kir.contains("field @saxpy.tmp0 : i32"), "{kir}");
    }

    #[test]
    fn floordiv_and_atomics_on_locals_verify() {
        let log = format!(
            "{h}kernel {{\n  $0 = offloaded  \n  body {{\n    <i32> $1 = const -7\n    <i32> $2 = const 2\n    <i32> $3 = floordiv $1 $2\n    <*i32> $4 = alloca\n    <i32> $5 = atomic add($4, $3)\n    <f32> $6 = const 1e+20\n    <f32> $7 = cast_value<f32> $3\n    <f32> $8 = floordiv $7 $6\n    <f32> $9 = sgn $8\n    <u1> $10 = logic_not $3\n    <i32> $11 = select($10, $1, $2)\n    <i32> $12 = const 0\n    <*f32> $13 = global ptr [S6place<i32>], index [$11, $12] activate=false\n  }}\n}}\n",
            h = header("k_c1_0")
        );
        let e = run(&log).expect_err("a type mismatch is reported");
        let ImportError::Log(d) = e else { panic!("{e:?}") };
        assert!(d.message.contains("is i32 in the field table but accessed as f32"), "{}", d.message);
        let log = log.replace("<*f32> $13", "<*i32> $13");
        run(&log).expect("imports and verifies");
    }

    /// Every prefix of a log, and the log with any one line cut short, is
    /// imported or refused, never a panic.
    #[test]
    fn no_panic_on_truncated_or_damaged_logs() {
        let log = format!(
            "[Quadrants] version 1.3.3, llvm 22.1.0\n{h}kernel {{\n  $0 = offloaded range_for(0, tmp(offset=0B)) grid_dim=0 block_dim=32 \n  body {{\n    <i32> $1 = loop $0 index 0\n    File \"/t/k.py\", line 3, in k:\n        y[i] = 1\n        ^^^^\n    <*f32> $2 = global ptr [S4place<f32>], index [$1] activate=true\n    <f32> $3 = const 1.5\n    $4 : while true {{\n      $5 : if $1 {{\n        $6 : while control nullptr, $1\n      }} else {{\n        $7 continue (scope=$4)\n      }}\n      <f32> $8 = atomic add($2, $3)\n    }}\n  }}\n}}\n",
            h = header("k_c1_0")
        );
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        for k in 0..=lines.len() {
            let _ = run(&lines[..k].concat());
            for cut in 0..lines.get(k).map_or(0, |l| l.len()) {
                let mut damaged = lines.clone();
                let l = lines[k];
                let cut = (0..=cut).rev().find(|&c| l.is_char_boundary(c)).unwrap_or(0);
                damaged[k] = &l[..cut];
                let _ = run(&damaged.concat());
            }
        }
        let deep = format!(
            "{}kernel {{\n  $0 = offloaded  \n  body {{\n{}{}  }}\n}}\n",
            header("k_c1_0"),
            "    $1 : while true {\n".repeat(100_000),
            "    }\n".repeat(100_000)
        );
        // As deep as the limit allows imports (and verifies) on a test
        // thread's small stack.
        let d = chi::MAX_DEPTH - 1;
        let ok = format!(
            "{}kernel {{\n  $0 = offloaded  \n  body {{\n{}{}  }}\n}}\n",
            header("k_c1_0"),
            (1..=d).map(|k| format!("    ${k} : while true {{\n")).collect::<String>(),
            "    }\n".repeat(d)
        );
        run(&ok).expect("imports");
        match run(&deep) {
            Err(ImportError::Log(d)) => assert!(d.message.contains("nested more than"), "{}", d.message),
            other => panic!("{other:?}"),
        }
    }

    /// Damaged logs that would make invalid KIR are errors at their line.
    #[test]
    fn damage_is_an_error_not_invalid_kir() {
        let task =
            |body: &str| format!("{}kernel {{\n  $0 = offloaded  \n  body {{\n{body}  }}\n}}\n", header("k_c1_0"));
        for (body, want) in [
            ("    <i32> $1 = const 1\n    <i32> $1 = const 2\n", "$1 is numbered twice"),
            ("    <f32> $1 = const 1\n    <i32> $2 = sqrt $1\n", "$2 is typed <i32> but computes f32"),
            ("    <u1> $1 = const true\n    $2 : if $1 {\n      <i32> $3 = const 1\n    }\n    <i32> $4 = add $3 $3\n", "$3 is used before it is defined"),
            ("    <i32> $1 = const 1\n    <f32> $2 = const 1\n    <i32> $3 = select($1, $1, $2)\n", "select of i32 and f32"),
        ] {
            match run(&task(body)) {
                Err(ImportError::Log(d)) => assert!(d.message.contains(want), "{body}: {}", d.message),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_same_compilation_twice() {
        let one = format!("{}kernel {{\n  $0 = offloaded  \n  body {{\n  }}\n}}\n", header("k_c1_0"));
        let other = one.replace("k_c1_0", "j_c2_0");
        let table = TABLE.replace("\"saxpy\"", "\"k\"").replace("}}}", "}, \"j\": {\"args\": []}}}");
        // Two tasks of one compilation, then another kernel: fine.
        let second = one.replace("body {\n  }", "body {\n    <i32> $1 = const 1\n  }");
        import(&format!("{one}{second}{other}"), &table, DEFAULT_STAGE).expect("imports");
        // The same compilation after another kernel's: joined twice.
        match import(&format!("{one}{other}{one}"), &table, DEFAULT_STAGE) {
            Err(ImportError::Log(d)) => {
                assert!(d.message.contains("compiled twice in the log (first at line 1)"), "{}", d.message)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_repeated_dump_is_an_error_not_a_task_run_twice() {
        let h = header("k_c1_0");
        let table = TABLE.replace("\"saxpy\"", "\"k\"");
        let dump = format!("{h}kernel {{\n  $0 = offloaded  \n  body {{\n    <i32> $1 = const 1\n  }}\n}}\n");
        let later = h.replace("Start offload_to_executable", "Detect read-only accesses");
        // A log of the stage alone: the same text twice is a repeat.
        let e = import(&format!("{dump}{dump}"), &table, DEFAULT_STAGE).expect_err("repeated");
        let ImportError::Log(d) = e else { panic!("{e:?}") };
        assert!(d.message.contains("repeats the one at line 1 word for word"), "{}", d.message);
        // A log with later stages: two tasks alike, each with its own.
        import(&format!("{dump}{later}{dump}{later}"), &table, DEFAULT_STAGE).expect("two tasks alike");
        // ... and a dump with no later stage after it, repeated.
        let e = import(&format!("{dump}{later}{dump}{dump}{later}"), &table, DEFAULT_STAGE).expect_err("repeated");
        let ImportError::Log(d) = e else { panic!("{e:?}") };
        assert!(d.message.contains("repeats the one at line 9 with none of its later pass stages"), "{}", d.message);
    }

    #[test]
    fn a_stage_that_is_not_there() {
        let e = import("", TABLE, "Simplified IV").expect_err("no such stage");
        let ImportError::Log(d) = e else { panic!("{e:?}") };
        assert!(d.message.contains("no IR dumps"), "{}", d.message);
    }

    #[test]
    fn only_the_kernels_the_table_names() {
        let log = format!("{}kernel {{\n  $0 = offloaded  \n  body {{\n  }}\n}}\n", header("tensor_to_ext_arr_c9_0"));
        let both = format!("{log}{}", log.replace("tensor_to_ext_arr_c9_0", "k_c1_0"));
        let imported = import(&both, &TABLE.replace("\"saxpy\"", "\"k\""), DEFAULT_STAGE).expect("imports");
        assert_eq!(imported.left_out, ["tensor_to_ext_arr_c9_0"]);
        assert!(imported.stream.to_string().contains("task @k.0 serial {"));
        let e = import(&log, TABLE, DEFAULT_STAGE).expect_err("saxpy is not there");
        assert!(matches!(e, ImportError::Log(d) if d.message.contains("no kernel the field table names")));
    }

    #[test]
    fn a_table_of_another_version() {
        let e = import("", &TABLE.replace("1.3.3", "1.4.0"), DEFAULT_STAGE).expect_err("refused");
        assert!(matches!(e, ImportError::Table(d) if d.message.contains("Quadrants 1.4.0")));
    }
}
