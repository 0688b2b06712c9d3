//! The target a tool compiles for, checked against LLVM's own tables, and
//! what `--version` reports about this host.
//!
//! Owns: [`TargetTables`] (the CPUs and features LLVM's `MCSubtargetInfo`
//! knows for a triple, read through `crates/kiln-llvm/src/target_tables.cpp`, a C++
//! file, since LLVM's C API lacks them); [`resolve`], the one check of
//! `--target-cpu` / `--target-features` (and their environment variables)
//! every tool makes before compiling or writing anything: an unknown CPU or
//! feature is a [`TargetError::Unknown`] naming the nearest valid names,
//! `help` asks for [`TargetTables::help`] (as `llc -mcpu=help`); and
//! [`host_facts`], `--version`'s view of this host.
//!
//! Must never: decide what an object contains (that is `codegen`, whose
//! sources are in the build identity; this module only checks names), or
//! print.

use crate::{CodegenError, HostTarget};
use kiln::tool::ToolError;
use std::ffi::{c_char, CStr, CString};

extern "C" {
    fn kiln_subtarget_tables(triple: *const c_char, error: *mut *mut c_char) -> *mut c_char;
}

/// Registers the X86 target's description and machine-code layer (what
/// LLVM's CPU and feature tables and the code generator read) — not the
/// assembly parser or the disassembler, which Kiln never uses.
#[cfg(target_arch = "x86_64")]
pub fn init_x86_mc() -> Result<(), CodegenError> {
    // SAFETY: each only registers the target's factories (idempotent).
    unsafe {
        llvm_sys::target::LLVMInitializeX86TargetInfo();
        llvm_sys::target::LLVMInitializeX86TargetMC();
    }
    Ok(())
}

#[cfg(not(target_arch = "x86_64"))]
pub fn init_x86_mc() -> Result<(), CodegenError> {
    Err(CodegenError::new("Kiln's code generator and JIT are built for x86-64 hosts only"))
}

/// The CPUs and features LLVM knows for one triple, in LLVM's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetTables {
    pub triple: String,
    pub cpus: Vec<String>,
    /// Name and description.
    pub features: Vec<(String, String)>,
}

/// Takes a malloc'd C string from a shim (`src/shim_string.h`).
pub(crate) fn take(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the shim returns a NUL-terminated string from malloc, which
    // is read once and freed here.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: `p` is the shim's malloc'd string, freed once, after the copy.
    unsafe { libc::free(p.cast()) };
    Some(s)
}

impl TargetTables {
    /// LLVM's tables for `triple` (LLVM and its X86 machine-code layer
    /// initialised first).
    pub fn of(triple: &str) -> Result<TargetTables, CodegenError> {
        crate::init_llvm()?;
        init_x86_mc()?;
        let c = CString::new(triple).map_err(|_| CodegenError::new("a triple cannot contain NUL"))?;
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `c` is a valid C string; `err` receives null or a
        // malloc'd message.
        let out = unsafe { kiln_subtarget_tables(c.as_ptr(), &mut err) };
        let err = take(err);
        let text =
            take(out).ok_or_else(|| CodegenError::new(err.unwrap_or_else(|| "LLVM gave no target tables".into())))?;
        Ok(TargetTables::parse(triple, &text))
    }

    /// The shim's lines: `c\tCPU` and `f\tFEATURE\tDESCRIPTION`.
    fn parse(triple: &str, text: &str) -> TargetTables {
        let mut t = TargetTables { triple: triple.to_string(), cpus: Vec::new(), features: Vec::new() };
        for line in text.lines() {
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("c"), Some(cpu), _) => t.cpus.push(cpu.to_string()),
                (Some("f"), Some(name), desc) => t.features.push((name.to_string(), desc.unwrap_or("").to_string())),
                _ => {}
            }
        }
        t
    }

    /// The list `llc -mcpu=help` prints, in its layout.
    pub fn help(&self) -> String {
        let width = self.cpus.iter().map(String::len).chain(self.features.iter().map(|f| f.0.len())).max().unwrap_or(0);
        let mut out = format!("Available CPUs for {}:\n\n", self.triple);
        for cpu in &self.cpus {
            out.push_str(&format!("  {cpu:<width$} - Select the {cpu} processor.\n"));
        }
        out.push_str(&format!("\nAvailable features for {}:\n\n", self.triple));
        for (name, desc) in &self.features {
            out.push_str(&format!("  {name:<width$} - {desc}\n"));
        }
        out.push_str("\nUse +feature to enable a feature, or -feature to disable it.\n");
        out.push_str("For example, --target-cpu=znver3 --target-features=-avx512f,+fma\n");
        out
    }

    /// `Ok` for a CPU LLVM knows, else the error naming the nearest.
    pub fn check_cpu(&self, cpu: &str, source: &str) -> Result<(), TargetError> {
        if self.cpus.iter().any(|c| c == cpu) {
            return Ok(());
        }
        Err(TargetError::Unknown(format!(
            "{source}: unknown CPU '{cpu}' for {}{}",
            self.triple,
            suggest(cpu, self.cpus.iter().map(String::as_str), source)
        )))
    }

    /// `Ok` for a list of `+feature` / `-feature` LLVM knows (empty
    /// entries allowed), else the error for the first bad one.
    pub fn check_features(&self, features: &str, source: &str) -> Result<(), TargetError> {
        for item in features.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(name) = item.strip_prefix('+').or_else(|| item.strip_prefix('-')) else {
                return Err(TargetError::Unknown(format!(
                    "{source}: '{item}' needs a sign: +{item} to enable it, -{item} to disable it"
                )));
            };
            if !self.features.iter().any(|(f, _)| f == name) {
                return Err(TargetError::Unknown(format!(
                    "{source}: unknown feature '{name}' for {}{}",
                    self.triple,
                    suggest(name, self.features.iter().map(|f| f.0.as_str()), source)
                )));
            }
        }
        Ok(())
    }
}

/// `; did you mean a, b or c? (SOURCE=help lists them)`, naming up to three
/// of the nearest valid names (by edit distance, as clap suggests flags).
fn suggest<'a>(name: &str, valid: impl Iterator<Item = &'a str>, source: &str) -> String {
    let mut scored: Vec<(f64, &str)> =
        valid.map(|v| (strsim::normalized_damerau_levenshtein(name, v), v)).filter(|(s, _)| *s >= 0.5).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let near: Vec<&str> = scored.iter().take(3).map(|(_, v)| *v).collect();
    let flag = source.split('=').next().unwrap_or(source);
    // A flag or a variable is shown set to `help`; a file's setting
    // (`target_cpu in user file F`) by its name.
    let list = match flag.split_once(" in ") {
        Some((setting, _)) => format!("{setting} = \"help\" lists them"),
        None => format!("{flag}=help lists them"),
    };
    match near.as_slice() {
        [] => format!(" ({list})"),
        [one] => format!("; did you mean {one}? ({list})"),
        [init @ .., last] => format!("; did you mean {} or {last}? ({list})", init.join(", ")),
    }
}

/// Why the requested target cannot be used.
#[derive(Debug)]
pub enum TargetError {
    /// `help` was asked for: the text to print (then stop, successfully).
    Help(String),
    /// An unknown CPU or feature (a usage error).
    Unknown(String),
    /// LLVM could not be set up or asked.
    Llvm(CodegenError),
}

/// A CPU or feature override and where it came from, for messages
/// (`--target-cpu`, `KILN_TARGET_CPU`).
pub struct Override<'a> {
    pub value: Option<&'a str>,
    pub source: &'a str,
}

/// The target to compile for: this host, with the CPU and/or features
/// replaced, each checked against LLVM's tables first. Without overrides
/// nothing but the host detection runs (the tables are not read).
pub fn resolve(cpu: Override, features: Override) -> Result<HostTarget, TargetError> {
    let host = HostTarget::detect().map_err(TargetError::Llvm)?;
    if cpu.value.is_none() && features.value.is_none() {
        return Ok(host);
    }
    let tables = TargetTables::of(&host.triple).map_err(TargetError::Llvm)?;
    if cpu.value == Some("help") || features.value == Some("help") {
        return Err(TargetError::Help(tables.help()));
    }
    if let Some(c) = cpu.value {
        tables.check_cpu(c, cpu.source)?;
    }
    if let Some(f) = features.value {
        tables.check_features(f, features.source)?;
    }
    HostTarget::detect_with(cpu.value, features.value).map_err(TargetError::Llvm)
}

/// What `--version` says about this host: the loaded LLVM's version,
/// the default triple, the host CPU and the cache scope of its objects.
pub fn host_facts() -> Result<kiln::version::HostFacts, String> {
    let host = HostTarget::detect().map_err(|e| e.to_string())?;
    let (a, b, c) = crate::llvm_library_version();
    Ok(kiln::version::HostFacts {
        llvm_version: format!("{a}.{b}.{c}"),
        scope: crate::session::host_scope(&host).name(),
        triple: host.triple,
        cpu: host.cpu,
    })
}

/// A target that cannot be used ([`resolve`]), as a tool's error: `help`
/// prints LLVM's lists on standard output and succeeds; an unknown name
/// is a usage error; LLVM failing is an error.
pub fn tool_error<T>(e: TargetError) -> Result<T, ToolError> {
    match e {
        TargetError::Help(text) => kiln::tool::write_output(None, text.as_bytes()).and(Err(ToolError::Done)),
        TargetError::Unknown(m) => Err(ToolError::Usage(m)),
        TargetError::Llvm(e) => Err(ToolError::msg(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> TargetTables {
        TargetTables::parse(
            "x86_64-t",
            "c\tznver3\nc\tznver4\nc\tskylake\nf\tavx2\tAVX2\nf\tavx512f\tAVX-512\nf\tfma\tFMA\n",
        )
    }

    #[test]
    fn unknown_names_get_the_nearest() {
        let t = tables();
        assert!(t.check_cpu("znver3", "--target-cpu").is_ok());
        let TargetError::Unknown(m) = t.check_cpu("znver9", "--target-cpu").unwrap_err() else { panic!() };
        assert_eq!(m, "--target-cpu: unknown CPU 'znver9' for x86_64-t; did you mean znver3 or znver4? (--target-cpu=help lists them)");
        let TargetError::Unknown(m) = t.check_cpu("qqqqqqqqqq", "KILN_TARGET_CPU").unwrap_err() else { panic!() };
        assert_eq!(m, "KILN_TARGET_CPU: unknown CPU 'qqqqqqqqqq' for x86_64-t (KILN_TARGET_CPU=help lists them)");
        let TargetError::Unknown(m) = t.check_cpu("qqqqqqqqqq", "target_cpu in user file /c/kiln.toml").unwrap_err()
        else {
            panic!()
        };
        assert!(m.ends_with("(target_cpu = \"help\" lists them)"), "{m}");
        assert!(t.check_features("+avx2,-avx512f,,", "--target-features").is_ok());
        let TargetError::Unknown(m) = t.check_features("+avx2,-avx512", "--target-features").unwrap_err() else {
            panic!()
        };
        assert!(m.starts_with("--target-features: unknown feature 'avx512' for x86_64-t; did you mean avx512f"), "{m}");
        let TargetError::Unknown(m) = t.check_features("fma", "--target-features").unwrap_err() else { panic!() };
        assert!(m.contains("'fma' needs a sign"), "{m}");
    }

    #[test]
    fn llvm_knows_this_hosts_cpu() {
        let host = HostTarget::detect().unwrap();
        let t = TargetTables::of(&host.triple).unwrap();
        assert!(t.cpus.len() > 10 && t.features.len() > 10);
        assert!(t.cpus.iter().any(|c| c == "x86-64"), "{:?}", t.cpus);
        assert!(t.check_cpu(&host.cpu, "--target-cpu").is_ok(), "{}", host.cpu);
        assert!(t.help().contains("  x86-64 "));
    }
}
