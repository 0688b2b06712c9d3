//! Looking inside a remote: the logic of `kiln-cache-inspect --remote`'s
//! `stats`, `list`, `verify` and `prune`, as plain data the tool formats.
//!
//! Owns: the walk of a server's (or every cluster master's) Kiln keys by
//! SCAN, and the remote prune policy (records older than an age by their
//! producer's time, and other hosts' scopes).
//!
//! Must never: use KEYS, delete a key whose name is not a Kiln record
//! name ([`super::envelope::parse_key_name`]), or delete anything on a
//! dry run or a plain `verify`.

use super::client::Conn;
use super::envelope::{self, Expect, Rejected, NAME_PREFIX};
use crate::cache::record::Key;
use redis::RedisResult;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Values fetched per round trip while walking.
const BATCH: usize = 256;

/// One Kiln key found on the server.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteRecord {
    pub name: String,
    pub scope: String,
    pub key: Key,
    pub size: u64,
    /// Whether the value carries a signature (checked only with a secret).
    pub signed: bool,
    pub task: Option<String>,
    pub created_unix: Option<u64>,
    /// Why it would not be loaded, if it would not.
    pub problem: Option<Rejected>,
}

/// Records and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub records: u64,
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, size: u64) {
        self.records += 1;
        self.bytes += size;
    }
}

/// One scope's records.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteScope {
    pub name: String,
    pub this_host: bool,
    #[serde(flatten)]
    pub count: Count,
    pub records: Vec<RemoteRecord>,
}

/// Everything under Kiln's prefix, by scope.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteListing {
    pub remote: String,
    pub nodes: usize,
    pub scopes: Vec<RemoteScope>,
    pub total: Count,
    /// Keys under Kiln's prefix that are not record names (left alone).
    pub other_keys: Vec<String>,
}

/// A record `verify` found bad.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteBad {
    pub name: String,
    pub reason: Rejected,
    pub removed: bool,
}

/// `verify`: every record checked as a run would check it.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteVerify {
    pub remote: String,
    pub checked: u64,
    pub healthy: u64,
    pub bad: Vec<RemoteBad>,
    pub fixed: bool,
}

/// What `prune` removes (criteria add up).
#[derive(Clone, Debug, Default)]
pub struct RemotePrunePlan {
    /// Records created longer ago than this.
    pub older_than: Option<Duration>,
    /// Records of scopes other than this host's.
    pub foreign_scopes: bool,
    pub dry_run: bool,
}

/// One record `prune` removed (or would remove).
#[derive(Clone, Debug, Serialize)]
pub struct RemoteRemoval {
    pub name: String,
    pub size: u64,
    /// `foreign-scope` or `older-than`.
    pub reason: &'static str,
}

/// What `prune` did.
#[derive(Clone, Debug, Serialize)]
pub struct RemotePrune {
    pub remote: String,
    pub dry_run: bool,
    pub removed: Vec<RemoteRemoval>,
    pub before: Count,
    pub after: Count,
}

/// A remote open for inspection.
pub struct Inspector<'a> {
    pub conn: Conn,
    pub remote: String,
    pub expect: Expect<'a>,
    /// This host's scope, when known.
    pub this_host: Option<String>,
}

impl Inspector<'_> {
    /// Every Kiln key and what it holds.
    pub fn list(&mut self) -> RedisResult<RemoteListing> {
        let names = self.conn.scan(&format!("{NAME_PREFIX}*"))?;
        let nodes = self.conn.nodes()?;
        let mut scopes: BTreeMap<String, RemoteScope> = BTreeMap::new();
        let mut other_keys = Vec::new();
        let mut total = Count::default();
        for chunk in names.chunks(BATCH) {
            let text: Vec<String> = chunk.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect();
            let values = self.conn.get_values(&text)?;
            for (name, value) in text.into_iter().zip(values) {
                let (Some((scope, key)), Some(value)) = (envelope::parse_key_name(name.as_bytes()), value) else {
                    other_keys.push(name);
                    continue;
                };
                let record = self.describe(name, &scope, key, &value);
                total.add(record.size);
                let this_host = self.this_host.as_deref() == Some(scope.as_str());
                let entry = scopes.entry(scope.clone()).or_insert_with(|| RemoteScope {
                    name: scope,
                    this_host,
                    count: Count::default(),
                    records: Vec::new(),
                });
                entry.count.add(record.size);
                entry.records.push(record);
            }
        }
        for s in scopes.values_mut() {
            s.records.sort_by_key(|r| r.key);
        }
        other_keys.sort();
        Ok(RemoteListing {
            remote: self.remote.clone(),
            nodes,
            scopes: scopes.into_values().collect(),
            total,
            other_keys,
        })
    }

    fn describe(&self, name: String, scope: &str, key: Key, value: &[u8]) -> RemoteRecord {
        let signed = value.get(8).is_some_and(|f| f & 1 == 1);
        let (task, created_unix, problem) = match envelope::open(scope, &key, value, self.expect) {
            Ok(r) => (Some(r.meta.task), Some(r.producer.created_unix), None),
            Err(why) => (None, None, Some(why)),
        };
        RemoteRecord {
            name,
            scope: scope.to_string(),
            key,
            size: value.len() as u64,
            signed,
            task,
            created_unix,
            problem,
        }
    }

    /// Checks every record; with `fix`, deletes the bad ones.
    pub fn verify(&mut self, fix: bool) -> RedisResult<RemoteVerify> {
        let listing = self.list()?;
        let mut report = RemoteVerify { remote: listing.remote, checked: 0, healthy: 0, bad: Vec::new(), fixed: fix };
        for r in listing.scopes.into_iter().flat_map(|s| s.records) {
            report.checked += 1;
            match r.problem {
                None => report.healthy += 1,
                Some(reason) => {
                    let removed = fix && self.conn.del(&[r.name.clone().into_bytes()])? > 0;
                    report.bad.push(RemoteBad { name: r.name, reason, removed });
                }
            }
        }
        Ok(report)
    }

    /// Removes the records `plan` selects.
    pub fn prune(&mut self, plan: &RemotePrunePlan, now_unix: u64) -> RedisResult<RemotePrune> {
        let listing = self.list()?;
        let mut removed = Vec::new();
        let mut after = listing.total;
        for s in &listing.scopes {
            for r in &s.records {
                let old = plan
                    .older_than
                    .is_some_and(|age| r.created_unix.is_some_and(|c| now_unix.saturating_sub(c) > age.as_secs()));
                let reason = match (plan.foreign_scopes && !s.this_host, old) {
                    (true, _) => "foreign-scope",
                    (false, true) => "older-than",
                    (false, false) => continue,
                };
                removed.push(RemoteRemoval { name: r.name.clone(), size: r.size, reason });
                after.records -= 1;
                after.bytes -= r.size;
            }
        }
        if !plan.dry_run {
            let names: Vec<Vec<u8>> = removed.iter().map(|r| r.name.clone().into_bytes()).collect();
            for chunk in names.chunks(BATCH) {
                self.conn.del(chunk)?;
            }
        }
        Ok(RemotePrune { remote: listing.remote, dry_run: plan.dry_run, removed, before: listing.total, after })
    }
}
