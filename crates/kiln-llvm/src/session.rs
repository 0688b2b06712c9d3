//! The cache session both sides of the LLVM wall store objects through:
//! `kiln-run`'s cached provider (`kiln_jit::cached`) and `kiln-compile
//! --cache-dir`'s fill (`kiln_codegen::fill`).
//!
//! Owns: [`host_scope`] (the one mapping from the target objects are
//! compiled for to the cache scope read and written), [`open_root`],
//! [`open_store`],
//! [`Session`] (store, remote tier and single-flight options, assembled
//! once from the settings) and [`same_launch`] (whether a stored record
//! launches as expected).
//!
//! Must never: read or write a record itself (that is the store's), or
//! compute a key (that is [`kiln::plan::key_and_meta`]).

use crate::HostTarget;
use kiln::cache::host::DetectedHost;
use kiln::cache::{CacheError, CacheRoot, HostScope, Native, Store, StoreOptions};
use kiln::config::{LaunchMeta, LLVM_VERSION};
use kiln::flight::FlightOptions;
use kiln::remote::{RemoteSettings, RemoteTier};
use kiln::settings::Settings;
use std::path::Path;

/// The cache scope of objects compiled for `target`: its triple, CPU name
/// and feature list, named by [`kiln::cache::host::scope_name`]. The only
/// place a [`HostTarget`] becomes a [`HostScope`].
pub fn host_scope(target: &HostTarget) -> HostScope {
    HostScope::from_feature_string(&target.triple, &target.cpu, &target.features)
}

/// Opens the store of `root` for objects compiled for `target`, with the
/// options the settings decide (see [`kiln::settings::Settings::store_options`]).
/// The scope is recorded as this machine's own only when `target` is the
/// detected host (not one simulated with `--target-cpu` /
/// `--target-features`).
pub fn open_store(root: &Path, target: &HostTarget, options: StoreOptions) -> Result<Store, CacheError> {
    store_of(open_root(root, options)?, target)
}

/// Opens the cache root at `root` with the options the settings decide
/// (see [`kiln::settings::Settings::store_options`]): where this host can
/// be recalled from ([`HostTarget::recall`]) before its store is opened
/// ([`Session::on_root`]).
pub fn open_root(root: &Path, options: StoreOptions) -> Result<CacheRoot, CacheError> {
    CacheRoot::open(root, StoreOptions { llvm_version: LLVM_VERSION.to_string(), fsync: true, ..options })
}

/// The store of `root` for objects compiled for `target`, which is
/// recorded as this machine's own only when it is the host (detected or
/// recalled), not one simulated with `--target-cpu` / `--target-features`.
fn store_of(root: CacheRoot, target: &HostTarget) -> Result<Store, CacheError> {
    let native = HostTarget::detect().is_ok_and(|h| h == *target);
    let detected = DetectedHost::from(target);
    root.scope(host_scope(target), if native { Native::Detected(&detected) } else { Native::No })
}

/// A cache session: what a tool that reads and writes the cache works
/// with, assembled once from the settings for `kiln-run` (its provider,
/// [`CachedTasks::of_session`]) and `kiln-compile --cache-dir`
/// (`kiln_codegen::fill`): the store of the target's scope under the root, the
/// remote tier when one is set, and the single-flight options.
pub struct Session {
    pub store: Store,
    pub remote: Option<RemoteTier>,
    pub flight: FlightOptions,
}

impl Session {
    /// The session of the cache at `root` for objects compiled for
    /// `target`, as `settings` say, with the remote tier `remote` sets up
    /// (a tool reads those settings first: one it cannot use is its usage
    /// error).
    pub fn open(
        root: &Path,
        target: &HostTarget,
        settings: &Settings,
        remote: Option<RemoteSettings>,
    ) -> Result<Session, CacheError> {
        Session::on_root(open_root(root, settings.store_options())?, target, settings, remote)
    }

    /// The session of the cache root `root` (opened by [`open_root`] with
    /// `settings`' store options), as [`Session::open`].
    pub fn on_root(
        root: CacheRoot,
        target: &HostTarget,
        settings: &Settings,
        remote: Option<RemoteSettings>,
    ) -> Result<Session, CacheError> {
        let store = store_of(root, target)?;
        let remote = remote.map(|r| RemoteTier::new(r, store.scope_name()));
        Ok(Session { store, remote, flight: FlightOptions::from_settings(settings) })
    }
}

/// Whether a record's metadata launches the same way as `expected`. Names
/// of the task and of the kernel parameters may differ (they are not in
/// the key: identical tasks of two kernels share a record); the launch
/// uses `expected`'s names.
pub fn same_launch(stored: &LaunchMeta, expected: &LaunchMeta) -> bool {
    stored.entry_symbol == expected.entry_symbol
        && stored.kind == expected.kind
        && stored.fields == expected.fields
        && stored.params.len() == expected.params.len()
        && stored.params.iter().zip(&expected.params).all(|(a, b)| a.ty == b.ty)
}
