//! What every tool's `--version` says, in the style of `llc --version`.
//!
//! Owns: the text of `--version`: Kiln's version and build identity (the
//! digest in every key), the LLVM version this build is for, and, from a
//! tool that loads LLVM, what LLVM detects (the loaded library's version,
//! the default triple, the host CPU) and the cache scope this host uses.
//!
//! Must never: detect the host or load LLVM itself; the LLVM tools pass in
//! what codegen detected ([`HostFacts`]), the others say where to look.

use std::fmt::Write as _;

/// What a tool that loads LLVM knows about this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFacts {
    /// The loaded LLVM library's version (`22.1.8`).
    pub llvm_version: String,
    /// LLVM's default target triple.
    pub triple: String,
    /// The host CPU as LLVM names it.
    pub cpu: String,
    /// The cache scope directory this host's objects go to.
    pub scope: String,
}

/// `--version`'s text for `tool`: the first line names the version, the
/// build identity and the LLVM version this build is for, as every tool's
/// always has; then what a tool that loads LLVM detects (`host`), or, from
/// one that does not (`None`), where to look. `Some(Err(why))`: detection
/// failed.
pub fn text(tool: &str, host: Option<Result<HostFacts, String>>) -> String {
    let (build, llvm) = (crate::config::BUILD_ID, crate::config::LLVM_VERSION);
    let mut out = format!("{tool} {} (build {build}, llvm {llvm})\n", crate::VERSION);
    match host {
        Some(Ok(h)) => {
            let _ = writeln!(out, "  LLVM library: {}", h.llvm_version);
            let _ = writeln!(out, "  Default target: {}", h.triple);
            let _ = writeln!(out, "  Host CPU: {}", h.cpu);
            let _ = writeln!(out, "  Cache scope: {}", h.scope);
        }
        Some(Err(why)) => {
            let _ = writeln!(out, "  Host: not detected: {why}");
        }
        None => {
            let _ = writeln!(out, "  Built for: {}-{}", std::env::consts::ARCH, std::env::consts::OS);
            out.push_str("  This tool does not load LLVM: kiln-run --version shows the default target, host CPU and cache scope.\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_tools_say_what_llvm_detected() {
        let h = HostFacts {
            llvm_version: "22.1.0".into(),
            triple: "x86_64-t".into(),
            cpu: "znver3".into(),
            scope: "s".into(),
        };
        let t = text("kiln-run", Some(Ok(h)));
        let first = format!(
            "kiln-run {} (build {}, llvm {})\n",
            crate::VERSION,
            crate::config::BUILD_ID,
            crate::config::LLVM_VERSION
        );
        assert!(t.starts_with(&first), "{t}");
        assert!(
            t.ends_with("  LLVM library: 22.1.0\n  Default target: x86_64-t\n  Host CPU: znver3\n  Cache scope: s\n")
        );
        assert!(text("kiln-opt", None).contains("This tool does not load LLVM"));
        assert!(text("kiln-run", Some(Err("no".into()))).ends_with("\n  Host: not detected: no\n"));
    }
}
