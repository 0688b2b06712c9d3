//! Tests of packs in the store and every tool over it: the records a
//! process fetched, written as one pack linked under each record's name.
//!
//! Owns: the guarantees of the packed path (one inode for a batch, each
//! record found whole, damage to a pack or a record in it detected and
//! replaced, a killed writer's leftovers, eviction, prune, `verify --fix`,
//! inspection, read-only and shared caches, the size counters exact).
//!
//! Must never: write outside its temporary directories.

use super::inspect::tests::{key, opts, scope};
use super::inspect::{Cache, InspectOptions};
use super::layout::{PACKED_DIR, PACK_TEMP_BASE};
use super::prune::PrunePlan;
use super::record::Corrupt;
use super::store::tests::meta;
use super::store::Fetched;
use super::{Key, Lookup, Store, StoreOptions};
use crate::config::LaunchMeta;
use std::fs::{self, File};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// `n` records of `size` object bytes (keys `key(base + i)`), as a fetch
/// hands them to the store.
struct Batch {
    keys: Vec<Key>,
    metas: Vec<LaunchMeta>,
    objects: Vec<Vec<u8>>,
}

impl Batch {
    fn new(base: u32, n: u32, size: usize) -> Batch {
        Batch {
            keys: (0..n).map(|i| key(base + i)).collect(),
            metas: (0..n).map(|i| meta(&format!("t{i}"))).collect(),
            objects: (0..n).map(|i| vec![i as u8 + 1; size]).collect(),
        }
    }

    fn fetched(&self) -> Vec<Fetched<'_>> {
        (0..self.keys.len())
            .map(|i| (&self.keys[i], &self.metas[i], self.objects[i].as_slice(), Duration::ZERO))
            .collect()
    }
}

fn open(root: &Path, options: StoreOptions) -> Store {
    Store::open(root, scope("a"), StoreOptions { fsync: false, ..options }).unwrap()
}

fn hit(store: &Store, k: &Key) -> Vec<u8> {
    match store.get(k).unwrap() {
        Lookup::Hit(r) => r.object,
        other => panic!("{other:?}"),
    }
}

fn packed_dir(root: &Path) -> std::path::PathBuf {
    root.join(scope("a").name()).join(PACKED_DIR)
}

/// No counter is off and no record damaged, by `verify`.
fn assert_verified(root: &Path) {
    let report = Cache::open(root, &opts("a")).unwrap().verify(false).unwrap();
    assert!(report.bad.is_empty() && report.counter_drift.is_empty(), "{report:?}");
}

#[test]
fn a_batch_is_one_inode_and_every_record_is_found_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let batch = Batch::new(100, 5, 300);
    assert_eq!(store.put_fetched_all(batch.fetched()).unwrap(), 5);
    for (k, object) in batch.keys.iter().zip(&batch.objects) {
        assert_eq!(&hit(&store, k), object);
    }
    let inodes: Vec<(u64, u64)> =
        batch.keys.iter().map(|k| fs::metadata(store.packed_path(k)).map(|m| (m.ino(), m.nlink())).unwrap()).collect();
    assert!(inodes.iter().all(|&i| i == (inodes[0].0, 5)), "{inodes:?}");
    // No shard directory, and no temporary left.
    let names: Vec<String> = fs::read_dir(dir.path().join(scope("a").name()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.len() != 2), "{names:?}");
    assert_eq!(fs::read_dir(packed_dir(dir.path())).unwrap().count(), 5);
    // Each record counts its own length, not the pack's.
    let stats = Cache::open(dir.path(), &opts("a")).unwrap().stats().unwrap();
    let pack_len = fs::metadata(store.packed_path(&batch.keys[0])).unwrap().len();
    assert_eq!(stats.total.records, 5);
    assert!(stats.total.bytes < pack_len && stats.total.bytes > 5 * 300, "{} of {pack_len}", stats.total.bytes);
    assert_verified(dir.path());
    // A record already there (another process's copy) is kept.
    assert_eq!(store.put_fetched_all(batch.fetched()[..2].to_vec()).unwrap(), 0);
    assert_eq!(fs::read_dir(packed_dir(dir.path())).unwrap().count(), 5);
    assert_eq!(store.stats().puts, 5);
}

#[test]
fn a_damaged_record_in_a_pack_is_replaced_and_the_others_stay() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let batch = Batch::new(200, 4, 300);
    store.put_fetched_all(batch.fetched()).unwrap();
    // A byte of the last record's object flipped (through any link: the
    // pack is one file).
    let link = store.packed_path(&batch.keys[0]);
    let mut bytes = fs::read(&link).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 1;
    File::options().write(true).open(&link).unwrap().set_len(0).unwrap();
    fs::write(&link, &bytes).unwrap();
    assert!(matches!(store.get(&batch.keys[3]).unwrap(), Lookup::Corrupt(Corrupt::Checksum)));
    assert!(!store.packed_path(&batch.keys[3]).exists(), "its link removed");
    for k in &batch.keys[..3] {
        hit(&store, k);
    }
    assert_eq!(store.stats().corrupt, 1);
    assert_verified(dir.path());
    // Replaced: fetched again, in a pack of its own.
    assert_eq!(store.put_fetched_all(batch.fetched()).unwrap(), 1);
    assert_eq!(hit(&store, &batch.keys[3]), batch.objects[3]);
    assert_verified(dir.path());
}

#[test]
fn a_damaged_or_torn_pack_index_is_detected_for_every_link() {
    for damage in ["index", "torn", "not a pack"] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), StoreOptions::default());
        let batch = Batch::new(300, 3, 200);
        store.put_fetched_all(batch.fetched()).unwrap();
        let link = store.packed_path(&batch.keys[0]);
        let mut bytes = fs::read(&link).unwrap();
        match damage {
            "index" => bytes[30] ^= 0x10,
            // A power cut: the pack was never synced, its end never reached
            // the disk.
            "torn" => bytes.truncate(60),
            _ => bytes = b"a file of someone else's, linked where Kiln looks".to_vec(),
        }
        File::options().write(true).truncate(true).open(&link).unwrap();
        fs::write(&link, &bytes).unwrap();
        for k in &batch.keys {
            assert!(matches!(store.get(k).unwrap(), Lookup::Corrupt(_)), "{damage}");
            assert!(!store.packed_path(k).exists(), "{damage}");
        }
        // A damaged index no longer says what each link counted: the
        // counters drift, as after any change behind the stores' backs,
        // and `verify --fix` repairs them.
        Cache::open(dir.path(), &opts("a")).unwrap().verify(true).unwrap();
        assert_verified(dir.path());
        assert_eq!(store.put_fetched_all(batch.fetched()).unwrap(), 3);
        for (k, object) in batch.keys.iter().zip(&batch.objects) {
            assert_eq!(&hit(&store, k), object, "{damage}");
        }
    }
}

#[test]
fn a_writer_killed_mid_pack_leaves_only_a_temporary_that_prune_removes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let batch = Batch::new(400, 3, 200);
    store.put_fetched_all(batch.fetched()[..1].to_vec()).unwrap();
    // Killed while writing: half a pack under its temporary name, no link.
    let full = fs::read(store.packed_path(&batch.keys[0])).unwrap();
    let tmp = packed_dir(dir.path()).join(format!("{PACK_TEMP_BASE}.tmp-4242-00000000deadbeef"));
    fs::write(&tmp, &full[..full.len() / 2]).unwrap();
    // Killed between its links: a whole pack, one link made, its
    // temporary name left.
    let other = Batch::new(500, 2, 200);
    store.put_fetched_all(other.fetched()).unwrap();
    let tmp2 = packed_dir(dir.path()).join(format!("{PACK_TEMP_BASE}.tmp-4243-00000000cafef00d"));
    fs::hard_link(store.packed_path(&other.keys[0]), &tmp2).unwrap();
    fs::remove_file(store.packed_path(&other.keys[1])).unwrap();
    for k in &batch.keys[1..] {
        assert!(matches!(store.get(k).unwrap(), Lookup::Miss));
    }
    assert!(matches!(store.get(&other.keys[1]).unwrap(), Lookup::Miss));
    hit(&store, &other.keys[0]);
    let cache = Cache::open(dir.path(), &opts("a")).unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!((stats.total.records, stats.total.temp_files), (2, 2), "{stats:?}");
    let report = cache.verify(false).unwrap();
    assert_eq!((report.checked, report.bad.len()), (2, 0), "{report:?}");
    // A writer's temporary is young: kept; once stale, removed.
    let plan = PrunePlan { temp_older_than: Some(Duration::from_secs(3600)), ..Default::default() };
    assert!(cache.prune(&plan).unwrap().removed.is_empty());
    for t in [&tmp, &tmp2] {
        File::options()
            .write(true)
            .open(t)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
    }
    assert_eq!(cache.prune(&plan).unwrap().removed.len(), 2);
    assert!(!tmp.exists() && !tmp2.exists());
    // The link outlives the temporary name.
    hit(&store, &other.keys[0]);
    hit(&store, &batch.keys[0]);
}

#[test]
fn eviction_removes_packed_records_and_the_counters_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    // Each group's share: 16 KiB, about five records of 3 KiB.
    let store = open(dir.path(), StoreOptions { max_size: 256 << 10, ..Default::default() });
    for round in 0..4 {
        let batch = Batch::new(1000 + round * 100, 40, 3 << 10);
        assert_eq!(store.put_fetched_all(batch.fetched()).unwrap(), 40);
    }
    assert!(store.stats().evicted > 0, "{:?}", store.stats());
    assert_verified(dir.path());
    let cache = Cache::open(dir.path(), &opts("a")).unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!(stats.total.records + store.stats().evicted, 160);
    assert!(stats.total.bytes <= 256 << 10, "{stats:?}");
}

#[test]
fn prune_and_verify_fix_treat_links_into_packs_as_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let (old, new) = (Batch::new(600, 3, 500), Batch::new(700, 3, 500));
    store.put_fetched_all(old.fetched()).unwrap();
    store.put_fetched_all(new.fetched()).unwrap();
    // A pack's records share one inode, so one use: the old pack unused
    // for two hours.
    let two_hours = SystemTime::now() - Duration::from_secs(7200);
    File::options().write(true).open(store.packed_path(&old.keys[0])).unwrap().set_modified(two_hours).unwrap();
    let cache = Cache::open(dir.path(), &opts("a")).unwrap();
    let r = cache.prune(&PrunePlan { older_than: Some(Duration::from_secs(3600)), ..Default::default() }).unwrap();
    assert_eq!(r.removed.len(), 3, "{r:?}");
    assert!(old.keys.iter().all(|k| !store.packed_path(k).exists()));
    assert_eq!(r.after.records, 3);
    // By size: the least recently used go first, each record counted at
    // its own length.
    hit(&store, &new.keys[1]);
    let one = cache.stats().unwrap().total.bytes / 3;
    let r = cache.prune(&PrunePlan { max_size: Some(one * 3), ..Default::default() }).unwrap();
    assert!(r.removed.is_empty(), "{r:?}");
    // verify --fix: a damaged record in a pack is removed, its sibling
    // links stay, and the counters are right afterwards.
    let link = store.packed_path(&new.keys[2]);
    let mut bytes = fs::read(&link).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 2;
    File::options().write(true).truncate(true).open(&link).unwrap();
    fs::write(&link, &bytes).unwrap();
    let report = cache.verify(true).unwrap();
    assert_eq!(report.bad.len(), 1, "{report:?}");
    assert!(report.bad[0].removed && report.bad[0].key == new.keys[2]);
    assert!(!link.exists() && store.packed_path(&new.keys[0]).exists());
    assert_verified(dir.path());
    // Another host's scope goes whole, its pack directory too.
    let foreign = Store::open(dir.path(), scope("bb"), StoreOptions { fsync: false, ..Default::default() }).unwrap();
    foreign.put_fetched_all(Batch::new(800, 2, 100).fetched()).unwrap();
    let r = cache.prune(&PrunePlan { foreign_scopes: true, ..Default::default() }).unwrap();
    assert!(r.kept_dirs.is_empty(), "{r:?}");
    assert!(!dir.path().join(scope("bb").name()).exists());
}

#[test]
fn inspection_lists_and_shows_packed_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let batch = Batch::new(900, 2, 400);
    store.put_fetched_all(batch.fetched()).unwrap();
    let cache = Cache::open(dir.path(), &opts("a")).unwrap();
    let listing = cache.list().unwrap();
    let tasks: Vec<&str> = listing.scopes[0].records.iter().map(|r| r.task.as_deref().unwrap_or("?")).collect();
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks.contains(&"t0") && tasks.contains(&"t1"), "{tasks:?}");
    let shown = cache.show(&batch.keys[1].to_hex()[..12]).unwrap();
    assert_eq!(shown.path, store.packed_path(&batch.keys[1]));
    assert!(shown.size < fs::metadata(&shown.path).unwrap().len());
    assert_eq!(cache.extract(&batch.keys[1].to_hex()).unwrap().object, batch.objects[1]);
    let any = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
    assert_eq!(any.verify(false).unwrap().healthy, 2);
}

#[test]
fn a_read_only_store_reads_packs_and_writes_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default());
    let batch = Batch::new(1100, 2, 100);
    store.put_fetched_all(batch.fetched()).unwrap();
    let ro = open(dir.path(), StoreOptions { read_only: true, ..Default::default() });
    hit(&ro, &batch.keys[0]);
    assert!(matches!(ro.put_fetched_all(Batch::new(1200, 1, 10).fetched()), Err(super::CacheError::ReadOnly)));
    fs::write(store.packed_path(&batch.keys[1]), b"damaged").unwrap();
    assert!(matches!(ro.get(&batch.keys[1]).unwrap(), Lookup::Corrupt(_)));
    assert!(store.packed_path(&batch.keys[1]).exists(), "damage left in place");
}

#[test]
fn a_shared_cache_gives_packs_its_group_and_modes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    let gid = rustix::process::getegid().as_raw();
    let shared = StoreOptions { shared_group: Some(gid.to_string()), ..Default::default() };
    let old_umask = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let store = open(&root, shared);
    let batch = Batch::new(1300, 2, 100);
    store.put_fetched_all(batch.fetched()).unwrap();
    rustix::process::umask(old_umask);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&packed_dir(&root)), 0o2770);
    assert_eq!(fs::metadata(packed_dir(&root)).unwrap().gid(), gid);
    assert_eq!(mode(&store.packed_path(&batch.keys[0])), 0o664);
    let sizes = root.join(super::layout::SIZES_FILE);
    assert_eq!((mode(&sizes), fs::metadata(&sizes).unwrap().gid()), (0o664, gid), "the counters' file");
    // Others may not write the pack: refused, as any record would be.
    fs::set_permissions(store.packed_path(&batch.keys[0]), fs::Permissions::from_mode(0o666)).unwrap();
    assert!(matches!(store.get(&batch.keys[1]), Err(super::CacheError::Untrusted { .. })));
}
