//! Run statistics: the counters `kiln-run --stats` and `kiln-compile
//! --stats` report, each declared once in a table.
//!
//! Owns: the `counters!` table macro (one row per counter: its field, its
//! kind, its JSON name and its text label), which derives a table's plain
//! snapshot struct, its atomic twin for counters shared between threads,
//! and its rows; the run's table ([`RunStats`]), the remote tier's
//! ([`RemoteStats`], which `remote` bumps); and the report a tool prints
//! ([`RunReport`]: as aligned text, or as one JSON object, in the tables'
//! row order).
//!
//! Must never: print or exit; name a counter anywhere but in its table's
//! row (a new counter is one row: its field, JSON key and text label
//! follow); decide anything that reaches an object's bytes (so no file of
//! the build identity imports it).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// What a counter counts: a number of things, or time spent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Count(u64),
    Time(Duration),
}

impl Value {
    /// Milliseconds to three decimals (microseconds: enough for a
    /// per-task load), as the JSON and the text give times.
    fn ms(d: Duration) -> f64 {
        (d.as_secs_f64() * 1e6).round() / 1e3
    }

    fn serialize_into<M: SerializeMap>(&self, map: &mut M, key: &str) -> Result<(), M::Error> {
        match *self {
            Value::Count(n) => map.serialize_entry(key, &n),
            Value::Time(d) => map.serialize_entry(key, &Value::ms(d)),
        }
    }

    fn text(&self) -> String {
        match *self {
            Value::Count(n) => n.to_string(),
            Value::Time(d) => format!("{:.3} ms", Value::ms(d)),
        }
    }
}

/// One counter's row: its JSON key, its text label and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub json: &'static str,
    pub label: &'static str,
    pub value: Value,
}

/// The Rust type of a counter of kind `Count` or `Time`.
#[doc(hidden)]
#[macro_export]
macro_rules! counter_type {
    (Count) => {
        u64
    };
    (Time) => {
        ::std::time::Duration
    };
}

/// Declares a table of counters: `pub struct Snap / atomic Atomic { field:
/// Kind = ("json_key", "text label"), ... }`, with `Kind` `Count` or
/// `Time`. Derives the plain snapshot `Snap` (with [`Row`]s in table
/// order and a field-wise `add`) and `Atomic`, its twin of `AtomicU64`s
/// (times in nanoseconds) with `snapshot()`.
#[macro_export]
macro_rules! counters {
    ($(#[$meta:meta])* pub struct $snap:ident / atomic $atomic:ident {
        $( $(#[$fmeta:meta])* $field:ident : $kind:ident = ($json:literal, $label:literal), )+
    }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $snap {
            $( $(#[$fmeta])* pub $field: $crate::counter_type!($kind), )+
        }

        impl $snap {
            /// The counters in table order.
            pub fn rows(&self) -> Vec<$crate::stats::Row> {
                vec![ $( $crate::stats::Row {
                    json: $json,
                    label: $label,
                    value: $crate::stats::Value::$kind(self.$field),
                }, )+ ]
            }

            /// Adds `other`'s counts and times to these.
            pub fn add(&mut self, other: &$snap) {
                $( self.$field += other.$field; )+
            }
        }

        impl ::serde::Serialize for $snap {
            /// One entry per row, by its JSON name, times in milliseconds.
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $crate::stats::serialize_rows(&self.rows(), serializer)
            }
        }

        #[doc = concat!("[`", stringify!($snap), "`] shared between threads (bumped with `stats::bump` and `stats::bump_time`).")]
        #[derive(Debug, Default)]
        pub struct $atomic {
            $( pub $field: ::std::sync::atomic::AtomicU64, )+
        }

        impl $atomic {
            /// The counters so far.
            pub fn snapshot(&self) -> $snap {
                $snap { $( $field: $crate::stats::load::<$crate::counter_type!($kind)>(&self.$field), )+ }
            }
        }
    };
}

/// `rows` as one JSON object, in order.
#[doc(hidden)]
pub fn serialize_rows<S: Serializer>(rows: &[Row], serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(rows.len()))?;
    write_rows(&mut map, rows)?;
    map.end()
}

/// Writes `rows` into an open JSON object, in order.
fn write_rows<M: SerializeMap>(map: &mut M, rows: &[Row]) -> Result<(), M::Error> {
    rows.iter().try_for_each(|row| row.value.serialize_into(map, row.json))
}

/// Adds `n` to a shared count.
pub fn bump(counter: &std::sync::atomic::AtomicU64, n: u64) {
    counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
}

/// Adds `d` to a shared time (kept in nanoseconds).
pub fn bump_time(counter: &std::sync::atomic::AtomicU64, d: Duration) {
    bump(counter, u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
}

/// Reads a shared counter as its kind's type.
#[doc(hidden)]
pub fn load<T: FromAtomic>(counter: &std::sync::atomic::AtomicU64) -> T {
    T::from_raw(counter.load(std::sync::atomic::Ordering::Relaxed))
}

/// A counter kind's type, from its atomic's raw value.
#[doc(hidden)]
pub trait FromAtomic {
    fn from_raw(raw: u64) -> Self;
}

impl FromAtomic for u64 {
    fn from_raw(raw: u64) -> u64 {
        raw
    }
}

impl FromAtomic for Duration {
    fn from_raw(raw: u64) -> Duration {
        Duration::from_nanos(raw)
    }
}

counters! {
    /// Where a run's tasks came from and where its time went.
    pub struct RunStats / atomic RunAtomics {
        /// Tasks loaded from a cache record.
        hits: Count = ("hits", "hits"),
        /// Tasks compiled because no record was there.
        misses: Count = ("misses", "misses"),
        /// Damaged or unloadable records erased, compiled afresh and stored.
        corrupt_replaced: Count = ("corrupt_replaced", "corrupt replaced"),
        /// Task modules compiled (per-task path).
        compiled: Count = ("compiled", "compiled"),
        /// Records written.
        stored: Count = ("stored", "stored"),
        /// Tasks that took the whole-kernel path (no cache).
        whole_kernel_tasks: Count = ("whole_kernel_tasks", "whole-kernel tasks"),
        bytes_read: Count = ("bytes_read", "bytes read"),
        bytes_written: Count = ("bytes_written", "bytes written"),
        /// Computing task keys (canonical text and hash).
        key_time: Time = ("key_ms", "keying"),
        compile_time: Time = ("compile_ms", "compiling"),
        /// Reading and verifying records, adding objects, linking and
        /// looking entries up.
        load_time: Time = ("load_ms", "loading"),
        run_time: Time = ("run_ms", "running"),
        /// Tasks another process or machine was compiling, waited for and
        /// loaded (see `crate::flight`).
        waited: Count = ("waited", "waited for"),
        /// Time spent waiting for them.
        wait_time: Time = ("wait_ms", "waiting for others"),
        /// Function records (`crate::key::functions`) loaded from a cache
        /// record.
        function_hits: Count = ("function_hits", "function hits"),
        /// Function records compiled: each once per process, and with a
        /// cache once across processes.
        functions_compiled: Count = ("functions_compiled", "functions compiled"),
        /// Task launches of objects of the quick tier (`--tier`).
        quick_launches: Count = ("quick_launches", "quick launches"),
        /// Task launches of objects of the optimised tier.
        opt_launches: Count = ("opt_launches", "opt launches"),
        /// Task launches run by the interpreter: a kernel too small to be
        /// worth compiling, while its optimised tier compiles (`--tier`).
        interp_launches: Count = ("interp_launches", "interp launches"),
        /// Tasks that started on their quick tier and were replaced by
        /// their optimised tier in this process.
        upgraded: Count = ("upgraded", "upgraded"),
        /// Tasks whose optimised tier was still compiling in the
        /// background when the run ended: that compile stores it for the
        /// next process.
        opt_pending: Count = ("opt_pending", "opt pending"),
    }
}

counters! {
    /// What the remote tier has done in this process (`--stats`).
    pub struct RemoteStats / atomic RemoteAtomics {
        /// Records fetched: verified and handed to the run.
        hits: Count = ("remote_hits", "remote hits"),
        misses: Count = ("remote_misses", "remote misses"),
        stored: Count = ("remote_stored", "remote stored"),
        /// Records this process made but did not send: the client is
        /// read-only, or the tier was off after an error.
        skipped: Count = ("remote_skipped", "remote skipped"),
        rejected: Count = ("remote_rejected", "remote rejected"),
        /// Every error (the first turns the tier off), then by kind.
        errors: Count = ("remote_errors", "remote errors"),
        /// The connection could not be made (refused, unresolvable,
        /// refused login).
        connect_errors: Count = ("remote_connect_errors", "  connecting"),
        /// A reply did not come within its bound.
        timeouts: Count = ("remote_timeouts", "  timed out"),
        /// Anything else: an error reply, a broken connection, a protocol
        /// error.
        other_errors: Count = ("remote_other_errors", "  other"),
        /// Requests sent: each lookup of a kernel's keys, each write (the
        /// connect is not one). None after the first error.
        requests: Count = ("remote_requests", "remote requests"),
        bytes_read: Count = ("remote_bytes_read", "remote bytes in"),
        bytes_written: Count = ("remote_bytes_written", "remote bytes out"),
        /// Time spent waiting for the server (connect, lookups, writes).
        waiting: Time = ("remote_ms", "remote waiting"),
    }
}

/// The report of one run: `--stats` as text or JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// The cache root and the scope directory of the target, or `None`
    /// when no cache was used.
    pub cache: Option<(String, String)>,
    /// Tasks made ready (loaded, or compiled and stored by kiln-compile).
    pub tasks: u64,
    pub run: RunStats,
    /// The remote tier's URL (password redacted) and counters, when one is
    /// configured.
    pub remote: Option<(String, RemoteStats)>,
}

impl RunReport {
    /// The report as one JSON object on one line.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        // Plain data into memory: serialising cannot fail.
        self.serialize(&mut serde_json::Serializer::new(&mut out)).expect("counters serialise");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// The report as aligned text, one counter per line, headed by `tool`.
    pub fn to_text(&self, tool: &str) -> String {
        let mut out = format!("{tool}: stats\n");
        let mut line = |name: &str, value: &str| {
            let _ = writeln!(out, "  {name:<18} {value}");
        };
        match &self.cache {
            Some((dir, scope)) => {
                line("cache", dir);
                line("scope", scope);
            }
            None => line("cache", "off"),
        }
        line("tasks", &self.tasks.to_string());
        for row in self.run.rows() {
            line(row.label, &row.value.text());
        }
        if let Some((url, remote)) = &self.remote {
            line("remote", url);
            for row in remote.rows() {
                line(row.label, &row.value.text());
            }
        }
        out
    }
}

impl Serialize for RunReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("cache_dir", &self.cache.as_ref().map(|c| &c.0))?;
        map.serialize_entry("scope", &self.cache.as_ref().map(|c| &c.1))?;
        map.serialize_entry("tasks", &self.tasks)?;
        write_rows(&mut map, &self.run.rows())?;
        if let Some((url, remote)) = &self.remote {
            map.serialize_entry("remote", url)?;
            write_rows(&mut map, &remote.rows())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> RunReport {
        let run = RunStats { hits: 3, misses: 1, compile_time: Duration::from_micros(1500), ..RunStats::default() };
        let remote = RemoteStats { hits: 2, waiting: Duration::from_nanos(2_500_400), ..RemoteStats::default() };
        RunReport {
            cache: Some(("/c".into(), "x86_64".into())),
            tasks: 4,
            run,
            remote: Some(("redis://h".into(), remote)),
        }
    }

    #[test]
    fn json_keeps_table_order_and_names() {
        let json = report().to_json();
        assert!(json.starts_with(r#"{"cache_dir":"/c","scope":"x86_64","tasks":4,"hits":3,"misses":1,"#), "{json}");
        assert!(json.contains(r#""compile_ms":1.5,"#), "{json}");
        assert!(json.contains(r#""remote":"redis://h","remote_hits":2,"#), "{json}");
        assert!(json.ends_with(r#""remote_ms":2.5}"#), "{json}");
    }

    #[test]
    fn text_rows_follow_the_table() {
        let text = report().to_text("kiln-run");
        assert!(text.starts_with("kiln-run: stats\n  cache              /c\n  scope              x86_64\n"), "{text}");
        assert!(text.contains("\n  corrupt replaced   0\n"), "{text}");
        assert!(text.contains("\n  compiling          1.500 ms\n"), "{text}");
        assert!(text.contains("\n  remote hits        2\n"), "{text}");
        let off = RunReport::default().to_text("kiln-compile");
        assert!(off.contains("  cache              off\n") && !off.contains("remote"), "{off}");
    }

    #[test]
    fn atomics_snapshot_and_add() {
        let shared = RemoteAtomics::default();
        bump(&shared.hits, 2);
        bump_time(&shared.waiting, Duration::from_millis(3));
        let mut s = shared.snapshot();
        assert_eq!((s.hits, s.waiting), (2, Duration::from_millis(3)));
        s.add(&RemoteStats { hits: 1, ..RemoteStats::default() });
        assert_eq!(s.hits, 3);
    }
}
