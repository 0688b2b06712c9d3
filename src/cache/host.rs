//! Host scopes: which hosts may run the objects of one scope directory.
//!
//! Owns: [`HostScope`] (target triple, CPU name, CPU feature list) and the
//! one function, [`scope_name`], that turns it into a directory name, so
//! codegen (which detects the host through LLVM) and the LLVM-free tools
//! always agree; the `host.json` description in each scope directory; and
//! the per-machine record of which scope is this machine's own, with what
//! was detected for the later processes of the same build in the same boot
//! ([`NativeFile::recall`]).
//!
//! Must never: detect the host authoritatively. That is codegen's job
//! (LLVM's host CPU name and `LLVMGetHostCPUFeatures`, the features the
//! machine really has). [`HostScope::from_env_or_basic`] is only an
//! approximation for tools without LLVM, and `kiln-cache-inspect` never
//! takes it for this host's scope (see [`native_scope`]).

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The host an object was compiled for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostScope {
    /// The target triple, e.g. `x86_64-unknown-linux-gnu`.
    pub triple: String,
    /// The CPU name, e.g. `znver3`.
    pub cpu: String,
    /// The CPU features, e.g. `+avx2`, sorted and without duplicates.
    pub features: Vec<String>,
}

/// Hex digits of the feature digest in a scope name.
pub const FEATURE_DIGEST_LEN: usize = 12;

impl HostScope {
    /// A scope from explicit values (codegen passes the detected ones).
    /// The features are trimmed, sorted and deduplicated; empty ones are
    /// dropped.
    pub fn new(triple: &str, cpu: &str, features: impl IntoIterator<Item = impl AsRef<str>>) -> HostScope {
        let mut features: Vec<String> =
            features.into_iter().map(|f| f.as_ref().trim().to_string()).filter(|f| !f.is_empty()).collect();
        features.sort();
        features.dedup();
        HostScope { triple: triple.to_string(), cpu: cpu.to_string(), features }
    }

    /// A scope from LLVM's comma-separated feature string (`+sse2,-avx512f`).
    pub fn from_feature_string(triple: &str, cpu: &str, features: &str) -> HostScope {
        HostScope::new(triple, cpu, features.split(','))
    }

    /// An approximation of this host for tools built without LLVM: the
    /// architecture and OS Rust was built for, CPU `generic`, and on x86-64
    /// the features `std` can detect. Never the authoritative scope: the
    /// name differs from what codegen computes.
    pub fn from_env_or_basic() -> HostScope {
        let triple = format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS);
        HostScope::new(&triple, "generic", detected_features())
    }

    /// This scope's directory name (see [`scope_name`]).
    pub fn name(&self) -> String {
        scope_name(&self.triple, &self.cpu, &self.features)
    }
}

#[cfg(target_arch = "x86_64")]
fn detected_features() -> Vec<String> {
    let mut out = Vec::new();
    macro_rules! probe {
        ($($f:tt),*) => {$(
            if std::arch::is_x86_feature_detected!($f) { out.push(concat!("+", $f).to_string()); }
        )*};
    }
    probe!(
        "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "bmi1", "bmi2", "lzcnt", "f16c",
        "avx512f"
    );
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn detected_features() -> Vec<String> {
    Vec::new()
}

/// Keeps a name component to `[A-Za-z0-9._]`; in the CPU name `-` becomes
/// `_` too, so the CPU is always the second-to-last `-`-separated part of
/// a scope name and two different (triple, CPU) pairs cannot meet.
fn sanitize(s: &str, keep_dash: bool) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' || (keep_dash && c == '-') { c } else { '_' })
        .collect();
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// The scope directory name `<triple>-<cpu>-<digest>`: the digest is the
/// first [`FEATURE_DIGEST_LEN`] hex digits of the blake3 of the sorted,
/// deduplicated features joined by `,`. The one place that computes it.
pub fn scope_name(triple: &str, cpu: &str, features: &[impl AsRef<str>]) -> String {
    let mut fs: Vec<&str> = features.iter().map(|f| f.as_ref().trim()).filter(|f| !f.is_empty()).collect();
    fs.sort_unstable();
    fs.dedup();
    let digest = blake3::hash(fs.join(",").as_bytes()).to_hex();
    format!("{}-{}-{}", sanitize(triple, true), sanitize(cpu, false), &digest[..FEATURE_DIGEST_LEN])
}

/// Whether `name` has the shape of a scope directory name.
pub fn is_scope_name(name: &str) -> bool {
    let b = name.as_bytes();
    let n = b.len();
    n > FEATURE_DIGEST_LEN + 4
        && b[n - FEATURE_DIGEST_LEN - 1] == b'-'
        && b[n - FEATURE_DIGEST_LEN..].iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        && b[..n - FEATURE_DIGEST_LEN - 1].contains(&b'-')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// The file in each scope directory describing its host.
pub const HOST_FILE: &str = "host.json";
/// The directory at the root recording each machine's own scope.
pub const HOSTS_DIR: &str = "hosts";

/// The contents of a scope's `host.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFile {
    /// The scope directory name ([`scope_name`] of the rest).
    pub scope: String,
    pub triple: String,
    pub cpu: String,
    pub features: Vec<String>,
}

impl HostFile {
    /// The description of `scope`.
    pub fn of(scope: &HostScope) -> HostFile {
        HostFile {
            scope: scope.name(),
            triple: scope.triple.clone(),
            cpu: scope.cpu.clone(),
            features: scope.features.clone(),
        }
    }

    /// The scope it describes.
    pub fn host(&self) -> HostScope {
        HostScope::new(&self.triple, &self.cpu, &self.features)
    }
}

/// This machine as LLVM detects it, spelled as LLVM spells it: a
/// `kiln_llvm::HostTarget`'s three strings (the features in LLVM's order,
/// unsorted), which compile requests and `--version` show as they are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DetectedHost {
    pub triple: String,
    pub cpu: String,
    pub features: String,
}

impl DetectedHost {
    /// Its scope (see [`scope_name`]).
    pub fn scope(&self) -> HostScope {
        HostScope::from_feature_string(&self.triple, &self.cpu, &self.features)
    }
}

/// What one process detected, kept for the later processes of the same
/// build in the same boot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detected {
    /// The boot it was detected in ([`boot_id`]).
    pub boot: String,
    /// The build that detected it ([`crate::config::BUILD_ID`]): another
    /// build may link another LLVM, which may detect otherwise.
    pub build: String,
    #[serde(flatten)]
    pub host: DetectedHost,
}

/// What `hosts/<machine>.json` says: the scope a Kiln process with LLVM
/// detected as this machine's own, and what it detected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeFile {
    pub scope: String,
    /// The machine's host name, for people reading the file.
    pub hostname: String,
    /// What was detected, in which boot, by which build; absent where the
    /// boot cannot be told (no `boot_id`) and in files of earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected: Option<Detected>,
}

impl NativeFile {
    /// The entry of a process that detected `host`, this machine.
    pub fn of(host: &DetectedHost) -> NativeFile {
        let detected =
            boot_id().map(|boot| Detected { boot, build: crate::config::BUILD_ID.to_string(), host: host.clone() });
        NativeFile { scope: host.scope().name(), hostname: hostname().unwrap_or_default(), detected }
    }

    /// The entry of a scope that is this machine's own by a caller's word,
    /// with nothing to recall.
    pub fn told(scope: &str) -> NativeFile {
        NativeFile { scope: scope.to_string(), hostname: hostname().unwrap_or_default(), detected: None }
    }

    /// The host this entry recalls: what a process of this build detected
    /// in this boot, which is what detecting again would give, since a
    /// boot keeps its CPU (Linux fixes the CPU's features at boot, and a
    /// hypervisor keeps a guest's across a migration). `None` for an entry
    /// of another boot or build. (Whether its `scope` is its host's is the
    /// store's to check when it opens that scope, which names it anyway:
    /// an entry that disagrees is written again.)
    pub fn recall(&self) -> Option<DetectedHost> {
        let d = self.detected.as_ref()?;
        let current = d.build == crate::config::BUILD_ID && Some(&d.boot) == boot_id().as_ref();
        current.then(|| d.host.clone())
    }
}

/// This boot's identity: Linux's `boot_id`, a random UUID the kernel makes
/// at every boot; `None` where there is none to read. Read once a process.
pub fn boot_id() -> Option<String> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = text.trim();
        (id.len() == 36 && id.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')).then(|| id.to_string())
    })
    .clone()
}

/// A stable, non-identifying name for this machine: 16 hex digits of the
/// blake3 of `/etc/machine-id` (or D-Bus's copy, or the host name).
/// Read once a process.
pub fn machine_tag() -> Option<String> {
    static TAG: OnceLock<Option<String>> = OnceLock::new();
    TAG.get_or_init(|| {
        let id = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
            .or_else(|| hostname().filter(|h| !h.is_empty()))?;
        Some(blake3::hash(id.as_bytes()).to_hex()[..16].to_string())
    })
    .clone()
}

/// The machine's host name, if it has one (`uname`'s node name).
pub fn hostname() -> Option<String> {
    let uts = rustix::system::uname();
    Some(uts.nodename().to_string_lossy().into_owned())
}

/// This machine's own scope under `root`, as recorded by a Kiln process
/// that detected it (`store::Native::Detected`); `None` when no such process
/// has used this cache on this machine.
pub fn native_scope(root: &std::path::Path) -> Option<String> {
    let tag = machine_tag()?;
    let text = std::fs::read(root.join(HOSTS_DIR).join(format!("{tag}.json"))).ok()?;
    let file: NativeFile = serde_json::from_slice(&text).ok()?;
    is_scope_name(&file.scope).then_some(file.scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_ignores_feature_order_and_duplicates() {
        let a = HostScope::new("x86_64-unknown-linux-gnu", "znver3", ["+avx2", "+sse2", "-avx512f"]);
        let b = HostScope::from_feature_string("x86_64-unknown-linux-gnu", "znver3", "-avx512f,+sse2,+avx2,+sse2,");
        assert_eq!(a, b);
        assert_eq!(a.name(), b.name());
        assert!(a.name().starts_with("x86_64-unknown-linux-gnu-znver3-"));
        assert!(is_scope_name(&a.name()));
        let c = HostScope::new("x86_64-unknown-linux-gnu", "znver3", ["+avx2", "+sse2"]);
        assert_ne!(a.name(), c.name());
    }

    #[test]
    fn digest_is_blake3_of_sorted_joined_features() {
        let name = scope_name("t-u", "c", &["+b", "+a"]);
        let digest = blake3::hash(b"+a,+b").to_hex();
        assert_eq!(name, format!("t-u-c-{}", &digest[..12]));
    }

    #[test]
    fn names_are_safe_and_unambiguous() {
        let n = scope_name("../../etc", "x86-64/v3", &["+a"]);
        assert!(!n.contains('/'));
        assert!(is_scope_name(&n));
        assert_ne!(scope_name("a-b", "c", &["+f"]), scope_name("a", "b-c", &["+f"]));
        for bad in ["hosts", "ab", "x86_64-linux-generic-12345678901", "a-b-ABCDEF012345", "a/b-c-0123456789ab"] {
            assert!(!is_scope_name(bad), "{bad}");
        }
    }

    fn detected() -> DetectedHost {
        DetectedHost { triple: "x86_64-pc-linux-gnu".into(), cpu: "znver4".into(), features: "+avx2,-avx512f".into() }
    }

    #[test]
    fn an_entry_recalls_its_host_only_in_its_boot_and_build() {
        let Some(boot) = boot_id() else { return };
        let entry = NativeFile::of(&detected());
        assert_eq!(entry.scope, detected().scope().name());
        assert_eq!(
            entry.detected.as_ref().map(|d| (d.boot.as_str(), d.build.as_str())),
            Some((boot.as_str(), crate::config::BUILD_ID))
        );
        assert_eq!(entry.recall(), Some(detected()));
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(serde_json::from_str::<NativeFile>(&text).unwrap().recall(), Some(detected()));
        let changed = |f: fn(&mut NativeFile)| {
            let mut e = entry.clone();
            f(&mut e);
            e.recall()
        };
        assert_eq!(
            changed(|e| e.detected.as_mut().unwrap().boot = "00000000-0000-4000-8000-000000000000".into()),
            None
        );
        assert_eq!(changed(|e| e.detected.as_mut().unwrap().build = "another build".into()), None);
        assert_eq!(changed(|e| e.detected = None), None);
        // An earlier build's entry (no `detected`) still names the scope.
        let old: NativeFile = serde_json::from_str(r#"{"scope": "x86_64-a-b-0123456789ab", "hostname": "h"}"#).unwrap();
        assert_eq!((old.scope.as_str(), old.recall()), ("x86_64-a-b-0123456789ab", None));
    }

    #[test]
    fn the_boot_id_is_linuxs() {
        if let Ok(text) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
            assert_eq!(boot_id().as_deref(), Some(text.trim()));
        }
    }

    #[test]
    fn approximation_is_well_formed() {
        let h = HostScope::from_env_or_basic();
        assert_eq!(h.cpu, "generic");
        assert!(is_scope_name(&h.name()));
    }
}
