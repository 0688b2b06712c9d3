//! The human text of `kiln-cache-inspect --remote`'s reports: each
//! report renders itself (`to_text`), so the tool only chooses between
//! this and its JSON.
//!
//! Owns: [`RemoteStats`] (the listing without its records) and the text
//! of it, [`RemoteListing`], [`RemoteVerify`] and [`RemotePrune`].
//!
//! Must never: print, or ask the server anything.

use super::inspect::{RemoteListing, RemotePrune, RemoteVerify};
use crate::cache::size::{format_duration, format_size};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// `kiln-cache-inspect --remote URL stats`: the listing without its
/// records.
#[derive(Serialize)]
pub struct RemoteStats<'a> {
    remote: &'a str,
    nodes: usize,
    scopes: Vec<RemoteScopeStats<'a>>,
    total: super::inspect::Count,
    other_keys: usize,
}

#[derive(Serialize)]
pub struct RemoteScopeStats<'a> {
    name: &'a str,
    this_host: bool,
    records: u64,
    bytes: u64,
    signed: u64,
    bad: u64,
}

impl<'a> RemoteStats<'a> {
    pub fn of(l: &'a RemoteListing) -> RemoteStats<'a> {
        let scopes = l
            .scopes
            .iter()
            .map(|s| RemoteScopeStats {
                name: &s.name,
                this_host: s.this_host,
                records: s.count.records,
                bytes: s.count.bytes,
                signed: s.records.iter().filter(|r| r.signed).count() as u64,
                bad: s.records.iter().filter(|r| r.problem.is_some()).count() as u64,
            })
            .collect();
        RemoteStats { remote: &l.remote, nodes: l.nodes, scopes, total: l.total, other_keys: l.other_keys.len() }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl RemoteStats<'_> {
    /// The statistics as `kiln-cache-inspect --remote URL stats` prints
    /// them.
    pub fn to_text(&self) -> String {
        let mut out = format!("remote {} ({} node{})\n", self.remote, self.nodes, plural(self.nodes as u64));
        for sc in &self.scopes {
            let _ = writeln!(out, "scope {}{}", sc.name, if sc.this_host { " (this host)" } else { "" });
            let _ = writeln!(out, "  records      {} ({} signed, {} bad)", sc.records, sc.signed, sc.bad);
            let _ = writeln!(out, "  size         {} ({} bytes)", format_size(sc.bytes), sc.bytes);
        }
        let _ = writeln!(out, "total ({} scope{})", self.scopes.len(), plural(self.scopes.len() as u64));
        let _ = writeln!(out, "  records      {}", self.total.records);
        let _ = writeln!(out, "  size         {} ({} bytes)", format_size(self.total.bytes), self.total.bytes);
        if self.other_keys > 0 {
            let _ = writeln!(out, "  other keys   {} (under kiln: but not record names; left alone)", self.other_keys);
        }
        out
    }
}

impl RemoteListing {
    /// The listing as `kiln-cache-inspect --remote URL list` prints it.
    pub fn to_text(&self, now: u64) -> String {
        let mut out = format!("remote {} ({} node{})\n", self.remote, self.nodes, plural(self.nodes as u64));
        if self.scopes.is_empty() {
            out.push_str("no records\n");
        }
        for s in &self.scopes {
            let _ = writeln!(
                out,
                "\nscope {}{}: {} record{}, {}",
                s.name,
                if s.this_host { " (this host)" } else { "" },
                s.count.records,
                plural(s.count.records),
                format_size(s.count.bytes)
            );
            let _ = writeln!(out, "  {:<16}  {:<24}  {:>7}  {:>9}  SIGNED", "KEY", "TASK", "SIZE", "AGE");
            for r in &s.records {
                let task = match (&r.task, &r.problem) {
                    (Some(t), _) => t.clone(),
                    (None, Some(p)) => format!("<bad: {p}>"),
                    (None, None) => "?".into(),
                };
                let age =
                    r.created_unix.map_or("?".into(), |c| format_duration(Duration::from_secs(now.saturating_sub(c))));
                let hex = r.key.to_hex();
                let _ = writeln!(
                    out,
                    "  {:<16}  {:<24}  {:>7}  {:>9}  {}",
                    &hex[..16],
                    task,
                    format_size(r.size),
                    age,
                    if r.signed { "yes" } else { "no" }
                );
            }
        }
        for k in &self.other_keys {
            let _ = writeln!(out, "other key {k} (not a record name; left alone)");
        }
        out
    }
}

impl RemoteVerify {
    /// The report as `kiln-cache-inspect --remote URL verify` prints it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for b in &self.bad {
            let _ = writeln!(out, "bad {}: {}{}", b.name, b.reason, if b.removed { " (removed)" } else { "" });
        }
        let removed = self.bad.iter().filter(|b| b.removed).count();
        let _ = writeln!(
            out,
            "checked {} record{} on {}: {} healthy, {} bad{}",
            self.checked,
            plural(self.checked),
            self.remote,
            self.healthy,
            self.bad.len(),
            if self.fixed { format!(", {removed} removed") } else { String::new() }
        );
        out
    }
}

impl RemotePrune {
    /// The report as `kiln-cache-inspect --remote URL prune` prints it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let verb = if self.dry_run { "would remove" } else { "removed" };
        for x in &self.removed {
            let _ = writeln!(out, "{verb} {} ({}, {})", x.name, format_size(x.size), x.reason);
        }
        let _ = writeln!(
            out,
            "{}{verb} {} record(s); records: {} ({}) -> {} ({})",
            if self.dry_run { "dry run: " } else { "" },
            self.removed.len(),
            self.before.records,
            format_size(self.before.bytes),
            self.after.records,
            format_size(self.after.bytes)
        );
        out
    }
}
