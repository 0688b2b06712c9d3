//! `--time-trace`: where a process's time went, as the Chrome Trace Event
//! JSON that clang's `-ftime-trace` writes (Perfetto and `chrome://tracing`
//! open it).
//!
//! Owns: the process's one recorder (off until [`start`]), the span guard
//! ([`span`]: a complete `"X"` event from its creation to its drop, on the
//! thread that made it, naming its task), and the JSON ([`to_json`]).
//! Call sites hold a guard for the phase they time; nothing else is
//! threaded through the code.
//!
//! Must never: print, exit, or cost more than an atomic load per span when
//! tracing is off; write a file (the tool writes the JSON it returns).

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static ON: AtomicBool = AtomicBool::new(false);
static EPOCH: OnceLock<Instant> = OnceLock::new();
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's track: 1 for the first thread that records, and so on.
    static TID: u64 = NEXT_TID.fetch_add(1, Ordering::Relaxed);
}

/// The task a span names when it is about the whole input.
pub const WHOLE_INPUT: &str = "(input)";

/// One complete event of the Trace Event format.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub name: String,
    pub cat: &'static str,
    pub ph: &'static str,
    /// Start and duration, in microseconds since [`start`].
    pub ts: u64,
    pub dur: u64,
    pub pid: u32,
    pub tid: u64,
    pub args: Args,
}

/// What every span says besides its name: its task.
#[derive(Clone, Debug, Serialize)]
pub struct Args {
    pub task: String,
}

/// Starts recording (the clock's zero is now). Spans made before do nothing.
pub fn start() {
    EPOCH.get_or_init(Instant::now);
    ON.store(true, Ordering::Relaxed);
}

/// Whether this process records spans.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A span being timed; recorded when dropped.
#[must_use = "a span is timed until it is dropped"]
pub struct Span {
    open: Option<(String, &'static str, String, Instant)>,
}

/// Times `name` (of category `cat`) for `task` until the guard is dropped.
pub fn span(cat: &'static str, name: &str, task: &str) -> Span {
    let open = on().then(|| (name.to_string(), cat, task.to_string(), Instant::now()));
    Span { open }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some((name, cat, task, t0)) = self.open.take() else { return };
        let Some(epoch) = EPOCH.get() else { return };
        // Both ends rounded down from the one epoch: a span inside another
        // stays inside it in microseconds too.
        let ts = t0.saturating_duration_since(*epoch).as_micros() as u64;
        let dur = (epoch.elapsed().as_micros() as u64).saturating_sub(ts);
        let tid = TID.with(|t| *t);
        let event = Event { name, cat, ph: "X", ts, dur, pid: std::process::id(), tid, args: Args { task } };
        if let Ok(mut events) = EVENTS.lock() {
            events.push(event);
        }
    }
}

/// Microseconds since [`start`] (0 before it).
pub fn now_us() -> u64 {
    EPOCH.get().map_or(0, |e| e.elapsed().as_micros() as u64)
}

/// Adds another process's trace (a `kiln-compile` child's JSON) to this
/// one: its events keep their own process id, so they show on a track of
/// their own, moved by `offset_us` (when this process started it) onto
/// this process's clock. Text that is not such a trace adds nothing.
pub fn merge(json: &str, offset_us: u64) {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(json) else { return };
    let Some(events) = doc["traceEvents"].as_array() else { return };
    let Ok(mut mine) = MERGED.lock() else { return };
    for e in events {
        let mut e = e.clone();
        if let Some(ts) = e["ts"].as_u64() {
            e["ts"] = serde_json::json!(ts + offset_us);
        }
        mine.push(e);
    }
}

/// Events of other processes, as [`merge`] adds them.
static MERGED: Mutex<Vec<serde_json::Value>> = Mutex::new(Vec::new());

/// The recorded events as Trace Event JSON (`{"traceEvents": [...]}`),
/// with each thread's track named, sorted by start (and longer first, so a
/// parent precedes the spans it holds).
pub fn to_json(process: &str) -> String {
    let mut events = EVENTS.lock().map(|e| e.clone()).unwrap_or_default();
    events.sort_by_key(|e| (e.ts, std::cmp::Reverse(e.dur)));
    let pid = std::process::id();
    let mut meta = vec![serde_json::json!({
        "name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": { "name": process }
    })];
    let mut tids: Vec<u64> = events.iter().map(|e| e.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    for tid in tids {
        let name = if tid == 1 { "main".to_string() } else { format!("worker {tid}") };
        meta.push(
            serde_json::json!({ "name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": { "name": name } }),
        );
    }
    let merged = MERGED.lock().map(|m| m.clone()).unwrap_or_default();
    let all: Vec<serde_json::Value> =
        meta.into_iter().chain(events.iter().filter_map(|e| serde_json::to_value(e).ok())).chain(merged).collect();
    let doc = serde_json::json!({ "traceEvents": all, "displayTimeUnit": "ms" });
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_nest_and_name_their_task() {
        start();
        {
            let _outer = span("phase", "outer", WHOLE_INPUT);
            let _inner = span("key", "key", "@k.0");
        }
        let json: serde_json::Value = serde_json::from_str(&to_json("test")).unwrap();
        let events = json["traceEvents"].as_array().unwrap();
        let x: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        let outer = x.iter().find(|e| e["name"] == "outer").unwrap();
        let inner = x.iter().find(|e| e["name"] == "key").unwrap();
        assert_eq!(inner["args"]["task"], "@k.0");
        let (o0, o1) = (outer["ts"].as_u64().unwrap(), outer["ts"].as_u64().unwrap() + outer["dur"].as_u64().unwrap());
        let (i0, i1) = (inner["ts"].as_u64().unwrap(), inner["ts"].as_u64().unwrap() + inner["dur"].as_u64().unwrap());
        assert!(o0 <= i0 && i1 <= o1, "{outer} does not hold {inner}");
        assert!(events.iter().any(|e| e["ph"] == "M" && e["name"] == "process_name"));
    }
}
