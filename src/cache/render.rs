//! The human text of `kiln-cache-inspect`'s reports on a local cache:
//! each report renders itself (`to_text`), so the tool only chooses between
//! this and its JSON.
//!
//! Owns: the text of [`Listing`], [`Stats`], [`Shown`], [`VerifyReport`]
//! and [`PruneReport`].
//!
//! Must never: print, or read anything but the report (the time `now`,
//! and the root paths are shown relative to, are given).

use super::counters::CacheStats;
use super::inspect::{Listing, Shown, Stats, Totals};
use super::repair::{PruneReport, VerifyReport};
use super::size::{format_duration, format_size};
use crate::config::{MetaBound, MetaKind, MetaParam};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

fn ago(now: u64, then: u64) -> String {
    format!("{} ago", format_duration(Duration::from_secs(now.saturating_sub(then))))
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

impl Listing {
    /// The listing as `kiln-cache-inspect list` prints it.
    pub fn to_text(&self, now: u64) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "cache {}", self.root.display());
        if self.this_host.is_none() {
            let _ = writeln!(out, "this host's scope: unknown (no Kiln process with LLVM has recorded it)");
        }
        if self.scopes.is_empty() {
            let _ = writeln!(out, "no scopes");
        }
        for s in &self.scopes {
            let bytes: u64 = s.records.iter().map(|r| r.size).sum();
            let _ = writeln!(
                out,
                "\nscope {}{}: {} record{}, {}{}",
                s.name,
                if s.this_host { " (this host)" } else { "" },
                s.records.len(),
                if s.records.len() == 1 { "" } else { "s" },
                format_size(bytes),
                if s.temp_files > 0 { format!(", {} temporary file(s)", s.temp_files) } else { String::new() }
            );
            if s.records.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "  {:<16}  {:<24}  {:<10}  {:>10}  {:>9}  LAST USE",
                "KEY", "TASK", "KIND", "SIZE", "AGE"
            );
            for r in &s.records {
                let hex = r.key.to_hex();
                let task = match (&r.task, &r.problem) {
                    (Some(t), _) => t.clone(),
                    (None, Some(p)) => format!("<damaged: {p}>"),
                    (None, None) => "?".into(),
                };
                let _ = writeln!(
                    out,
                    "  {:<16}  {:<24}  {:<10}  {:>10}  {:>9}  {}",
                    &hex[..16],
                    task,
                    r.kind.unwrap_or("?"),
                    format_size(r.size),
                    r.created_unix.map_or("?".into(), |c| format_duration(Duration::from_secs(now.saturating_sub(c)))),
                    ago(now, r.last_use_unix)
                );
            }
        }
        out
    }
}

fn totals_text(out: &mut String, t: &Totals, now: u64) {
    let _ = writeln!(out, "  records      {}", t.records);
    let _ = writeln!(out, "  size         {} ({} bytes)", format_size(t.bytes), t.bytes);
    if let (Some(o), Some(n)) = (t.oldest_unix, t.newest_unix) {
        let _ = writeln!(out, "  oldest use   {}", ago(now, o));
        let _ = writeln!(out, "  newest use   {}", ago(now, n));
    }
    let _ = writeln!(out, "  temporaries  {} ({})", t.temp_files, format_size(t.temp_bytes));
}

fn lasting_text(out: &mut String, s: &CacheStats, hit_rate: Option<f64>) {
    let rate = hit_rate.map_or("-".to_string(), |r| format!("{:.1} %", r * 100.0));
    let rows: [(&str, String); 9] = [
        ("hit rate", rate),
        ("hits", s.hits.to_string()),
        ("misses", s.misses.to_string()),
        ("corrupt", s.corrupt.to_string()),
        ("stored", s.puts.to_string()),
        ("evicted", s.evicted.to_string()),
        ("read", format!("{} ({} bytes)", format_size(s.bytes_read), s.bytes_read)),
        ("written", format!("{} ({} bytes)", format_size(s.bytes_written), s.bytes_written)),
        ("time saved", format!("{} ms of compiling", s.compile_ms_saved)),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "  {k:<12} {v}");
    }
}

impl Stats {
    /// The statistics as `kiln-cache-inspect stats` prints them.
    pub fn to_text(&self, now: u64) -> String {
        let mut out = String::new();
        let _ =
            writeln!(out, "cache {}{}", self.root.display(), if self.exists { "" } else { " (does not exist yet)" });
        // One scope is its own total: one block, said to be the only one.
        let only = self.scopes.len() == 1;
        for sc in &self.scopes {
            let tags: Vec<&str> = [(sc.this_host, "this host"), (only, "the only scope")]
                .into_iter()
                .filter_map(|(on, tag)| on.then_some(tag))
                .collect();
            let tags = if tags.is_empty() { String::new() } else { format!(" ({})", tags.join("; ")) };
            let _ = writeln!(out, "scope {}{tags}", sc.name);
            totals_text(&mut out, &sc.totals, now);
            lasting_text(&mut out, &sc.lasting, sc.hit_rate);
        }
        if !only {
            let _ =
                writeln!(out, "total ({} scope{})", self.scopes.len(), if self.scopes.len() == 1 { "" } else { "s" });
            totals_text(&mut out, &self.total, now);
            lasting_text(&mut out, &self.lasting, self.hit_rate);
        }
        out
    }
}

fn bound(b: &MetaBound, params: &[MetaParam]) -> String {
    match b {
        MetaBound::Const(c) => c.to_string(),
        MetaBound::Param(i) => params.get(*i as usize).map_or(format!("param #{i}"), |p| p.name.clone()),
        MetaBound::Field(f) => format!("{f}[]"),
    }
}

impl Shown {
    /// The record as `kiln-cache-inspect show` prints it.
    pub fn to_text(&self, now: u64) -> String {
        let mut out = String::new();
        let m = &self.meta;
        let created = std::time::UNIX_EPOCH + Duration::from_secs(self.producer.created_unix);
        let last_use = std::time::UNIX_EPOCH + Duration::from_secs(self.last_use_unix);
        let kind = match &m.kind {
            MetaKind::Serial => "serial".to_string(),
            MetaKind::RangeFor { lo, hi, block_dim } => {
                format!("range_for {} .. {} block_dim {block_dim}", bound(lo, &m.params), bound(hi, &m.params))
            }
            MetaKind::StructFor { field, rank, block_dim } => {
                format!("struct_for over {field} (rank {rank}) block_dim {block_dim}")
            }
            MetaKind::Function => format!("function record (symbol {})", m.entry_symbol),
        };
        let params: Vec<String> = m.params.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect();
        let fields: Vec<String> = m
            .fields
            .iter()
            .map(|f| {
                let dims: Vec<String> = f.shape.iter().map(u64::to_string).collect();
                format!("{}: {}[{}]", f.name, f.elem, dims.join(", "))
            })
            .collect();
        let rows: [(&str, String); 14] = [
            ("key", self.key.to_hex()),
            ("scope", self.scope.clone()),
            ("path", self.path.display().to_string()),
            ("status", "verified (magic, version, lengths, checksum, metadata)".into()),
            ("size", format!("{} ({} bytes)", format_size(self.size), self.size)),
            (
                "created",
                format!("{} ({})", humantime::format_rfc3339_seconds(created), ago(now, self.producer.created_unix)),
            ),
            ("last use", format!("{} ({})", humantime::format_rfc3339_seconds(last_use), ago(now, self.last_use_unix))),
            ("producer", format!("kiln {}, llvm {}", self.producer.kiln_version, self.producer.llvm_version)),
            ("task", m.task.clone()),
            ("entry", m.entry_symbol.clone()),
            ("kind", kind),
            ("params", if params.is_empty() { "(none)".into() } else { params.join(", ") }),
            ("fields", if fields.is_empty() { "(none)".into() } else { fields.join(", ") }),
            ("object", format!("{} bytes, blake3 {}", self.object_size, self.object_blake3)),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "{k:<9} {v}");
        }
        out
    }
}

impl VerifyReport {
    /// The report as `kiln-cache-inspect verify` prints it, paths relative
    /// to `root`.
    pub fn to_text(&self, root: &Path) -> String {
        let mut out = String::new();
        let removed = |yes: bool| if yes { " (removed)" } else { "" };
        for b in &self.bad {
            let _ = writeln!(out, "bad {}: {}{}", rel(root, &b.path), b.reason, removed(b.removed));
        }
        for b in &self.bad_entries {
            let _ = writeln!(out, "bad {}: {}{}", rel(root, &b.path), b.problem, removed(b.removed));
        }
        let gone = self.bad.iter().filter(|b| b.removed).count();
        let _ = writeln!(
            out,
            "checked {} record{}: {} healthy, {} damaged{}",
            self.checked,
            if self.checked == 1 { "" } else { "s" },
            self.healthy,
            self.bad.len(),
            if self.fixed { format!(", {gone} removed") } else { String::new() }
        );
        for d in &self.counter_drift {
            let counted =
                d.counted.map_or("damaged".to_string(), |c| format!("{} records, {} bytes", c.records, c.bytes));
            let _ = writeln!(
                out,
                "size counter of group {}: {counted}; the records add up to {} records, {} bytes{}",
                d.group,
                d.actual.records,
                d.actual.bytes,
                if d.fixed { " (recounted)" } else { "" }
            );
        }
        if let Some(o) = &self.old_counters {
            let _ = writeln!(
                out,
                "note {}: an older Kiln's size counters, unused by this build{}",
                rel(root, &o.path),
                if o.removed { " (removed)" } else { "; `verify --fix` removes them" }
            );
        }
        out
    }
}

impl PruneReport {
    /// The report as `kiln-cache-inspect prune` prints it, paths relative
    /// to `root`.
    pub fn to_text(&self, root: &Path, now: u64) -> String {
        let mut out = String::new();
        let verb = if self.dry_run { "would remove" } else { "removed" };
        for x in &self.removed {
            let used = x.last_use_unix.map_or(String::new(), |t| format!(", last used {}", ago(now, t)));
            let size = if x.kind == "directory" { String::new() } else { format!("{}, ", format_size(x.size)) };
            let _ = writeln!(out, "{verb} {} {} ({size}{}{used})", x.kind, rel(root, &x.path), x.reason.as_str());
        }
        for d in &self.kept_dirs {
            let _ = writeln!(out, "kept directory {}: it holds files that are not Kiln's", rel(root, d));
        }
        let records = self.removed.iter().filter(|x| x.kind == "record").count();
        let others = self.removed.iter().filter(|x| x.kind != "record" && x.kind != "directory").count();
        let freed: u64 = self.removed.iter().map(|x| x.size).sum();
        let _ = writeln!(
            out,
            "{}{verb} {records} record(s) and {others} other file(s), {}; records: {} ({}) -> {} ({})",
            if self.dry_run { "dry run: " } else { "" },
            format_size(freed),
            self.before.records,
            format_size(self.before.bytes),
            self.after.records,
            format_size(self.after.bytes)
        );
        out
    }
}
