//! Talking to the server: one connection (to a server or a cluster),
//! opened when first needed, through the `redis` crate.
//!
//! Owns: [`Conn`] (the few commands Kiln sends, the same for a server and
//! a cluster: batched GETs, SET with an optional expiry, DEL, SCAN over
//! every master, and the compile leases: SET NX PX to take, a
//! compare-and-act script to renew or delete, and a waiter's look, one
//! script that returns the record or takes the lease) and [`connect`] with the configured timeouts. On one
//! server the connect is the TCP handshake alone (no `CLIENT SETINFO`
//! round trip), and the server's first reply is waited for within the
//! connect timeout: a server that accepts and never answers (paused) costs
//! that once, and a kernel's lookup is its first round trip.
//!
//! Must never: send a command without a timeout, send anything a caller
//! did not ask for, or hide an error (the callers decide: the run's tier
//! gives up on the remote, `kiln-cache-inspect` reports it).

use super::settings::{Endpoint, RemoteSettings};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{IntoConnectionInfo, RedisResult, Value};
use std::time::Duration;

/// An open connection to a server or to a cluster.
pub enum Conn {
    Single(Single),
    Cluster(Box<ClusterConnection>),
}

/// A connection to one server.
pub struct Single {
    con: redis::Connection,
    /// Whether the server has answered yet (until it has, replies are
    /// waited for within the connect timeout).
    answered: bool,
    /// The operation timeout, for every reply after the first.
    timeout: Duration,
}

impl Single {
    /// Runs `query` on the connection; after the first success, replies
    /// wait the operation timeout.
    fn query<T>(&mut self, query: impl FnOnce(&mut redis::Connection) -> RedisResult<T>) -> RedisResult<T> {
        let out = query(&mut self.con)?;
        if !self.answered {
            self.con.set_read_timeout(Some(self.timeout))?;
            self.con.set_write_timeout(Some(self.timeout))?;
            self.answered = true;
        }
        Ok(out)
    }
}

/// Connects to the endpoint, waiting at most the connect timeout per
/// node (on one server, for its first reply too); every later reply waits
/// at most the operation timeout.
pub fn connect(settings: &RemoteSettings) -> RedisResult<Conn> {
    match &settings.endpoint {
        Endpoint::Single(url) => {
            let info = url.as_str().into_connection_info()?;
            let redis = info.redis_settings().clone().set_skip_set_lib_name();
            let con = redis::Client::open(info.set_redis_settings(redis))?
                .get_connection_with_timeout(settings.connect_timeout)?;
            con.set_read_timeout(Some(settings.connect_timeout))?;
            con.set_write_timeout(Some(settings.connect_timeout))?;
            Ok(Conn::Single(Single { con, answered: false, timeout: settings.timeout }))
        }
        Endpoint::Cluster(nodes) => {
            let client = ClusterClient::builder(nodes.clone())
                .connection_timeout(settings.connect_timeout)
                .response_timeout(settings.timeout)
                // A failing cluster is given up on, not retried with back-off.
                .retries(0)
                .build()?;
            Ok(Conn::Cluster(Box::new(client.get_connection()?)))
        }
    }
}

impl Conn {
    /// The values under `names`, in order (`None`: no such key, or not a
    /// string). One round trip: MGET on a server; on a cluster a pipeline
    /// of GETs, which the crate sends to each node as one batch (all
    /// nodes written before any is read). The crate's own cluster MGET
    /// would split by slot and wait for each slot in turn.
    pub fn get_values(&mut self, names: &[String]) -> RedisResult<Vec<Option<Vec<u8>>>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Conn::Single(c) => c.query(|c| redis::cmd("MGET").arg(names).query(c)),
            Conn::Cluster(c) => per_key(c, "GET", names),
        }
    }

    /// Sets `name` to `value`, expiring after `ttl` seconds if given.
    pub fn set(&mut self, name: &str, value: &[u8], ttl: Option<u64>) -> RedisResult<()> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(name).arg(value);
        if let Some(s) = ttl {
            cmd.arg("EX").arg(s);
        }
        match self {
            Conn::Single(c) => c.query(|c| cmd.query(c)),
            Conn::Cluster(c) => cmd.query(&mut **c),
        }
    }

    /// Takes the lease `name` for `owner` where no one holds one
    /// (`SET name owner NX PX ttl_ms`), for each of `names` in one round
    /// trip; which were taken.
    pub fn lease(&mut self, names: &[String], owner: &str, ttl_ms: u64) -> RedisResult<Vec<bool>> {
        let cmd = |n: &String| {
            let mut c = redis::cmd("SET");
            c.arg(n).arg(owner).arg("NX").arg("PX").arg(ttl_ms);
            c
        };
        let replies: Vec<Option<String>> = self.pipeline(names, cmd)?;
        Ok(replies.into_iter().map(|r| r.is_some()).collect())
    }

    /// Extends (`ttl_ms` from now) or, with `ttl_ms` 0, deletes the leases
    /// `names` that `owner` still holds, in one round trip: a lease that
    /// expired and was taken by another is left alone (compare and act in
    /// one Lua script, the usual Redis lock release).
    pub fn keep_leases(&mut self, names: &[String], owner: &str, ttl_ms: u64) -> RedisResult<()> {
        let cmd = |n: &String| {
            let mut c = redis::cmd("EVAL");
            c.arg(LEASE_SCRIPT).arg(1).arg(n).arg(owner).arg(ttl_ms);
            c
        };
        self.pipeline::<_, Vec<redis::Value>>(names, cmd).map(drop)
    }

    /// A waiter's look at a record another machine is compiling, in one
    /// round trip: the record `name`'s value, or else its lease `lease`
    /// taken for `owner` when no one holds it (one script, so a lease is
    /// never taken beside a record that is there); and the values of
    /// `others` (the records the waiter awaits next).
    pub fn look(&mut self, name: &str, lease: &str, owner: &str, ttl_ms: u64, others: &[String]) -> RedisResult<Look> {
        let mut first = redis::cmd("EVAL");
        first.arg(AWAIT_SCRIPT).arg(2).arg(name).arg(lease).arg(owner).arg(ttl_ms);
        let mut cmds = vec![first];
        cmds.extend(others.iter().map(|n| {
            let mut c = redis::cmd("GET");
            c.arg(n);
            c
        }));
        let replies: Vec<Value> = self.pipeline(&cmds, redis::Cmd::clone)?;
        let mut replies = replies.into_iter();
        let found = match replies.next() {
            Some(Value::BulkString(bytes)) => Found::Value(bytes),
            Some(Value::Int(1)) => Found::Taken,
            Some(Value::Int(0)) => Found::Held,
            _ => return Err((redis::ErrorKind::UnexpectedReturnType, "the lease script's reply").into()),
        };
        let others = replies.map(redis::from_redis_value).collect::<Result<_, _>>()?;
        Ok(Look { found, others })
    }

    /// One command per name (`cmd`), sent as one pipeline: on a cluster
    /// each command goes to its key's node.
    fn pipeline<N, T: redis::FromRedisValue>(&mut self, names: &[N], cmd: impl Fn(&N) -> redis::Cmd) -> RedisResult<T> {
        match self {
            Conn::Single(c) => {
                let mut p = redis::pipe();
                for n in names {
                    p.add_command(cmd(n));
                }
                c.query(|c| p.query(c))
            }
            Conn::Cluster(c) => {
                let mut p = redis::cluster::cluster_pipe();
                for n in names {
                    p.add_command(cmd(n));
                }
                p.query(c)
            }
        }
    }

    /// Deletes `names`; how many existed.
    pub fn del(&mut self, names: &[Vec<u8>]) -> RedisResult<u64> {
        if names.is_empty() {
            return Ok(0);
        }
        match self {
            Conn::Single(c) => c.query(|c| redis::cmd("DEL").arg(names).query(c)),
            Conn::Cluster(c) => Ok(per_key::<Vec<u64>>(c, "DEL", names)?.iter().sum()),
        }
    }

    /// Every key matching `pattern`, by SCAN (never KEYS): on a cluster,
    /// on each master in turn.
    pub fn scan(&mut self, pattern: &str) -> RedisResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        match self {
            Conn::Single(c) => scan_with(pattern, &mut out, |cmd| c.query(|c| cmd.query(c)))?,
            Conn::Cluster(c) => {
                for (host, port) in masters(c)? {
                    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                    scan_with(pattern, &mut out, |cmd| {
                        redis::from_redis_value(c.route_command(cmd, route.clone())?).map_err(Into::into)
                    })?;
                }
            }
        }
        Ok(out)
    }

    /// The setting that bounds the next reply, and its value: on one
    /// server the connect timeout until it has answered once, after that
    /// (and on a cluster) the operation timeout.
    pub fn reply_bound(&self, s: &RemoteSettings) -> (&'static str, Duration) {
        match self {
            Conn::Single(c) if !c.answered => ("remote_connect_timeout", s.connect_timeout),
            _ => ("remote_timeout", s.timeout),
        }
    }

    /// How many nodes serve the keys (1 for a single server).
    pub fn nodes(&mut self) -> RedisResult<usize> {
        match self {
            Conn::Single(_) => Ok(1),
            Conn::Cluster(c) => Ok(masters(c)?.len()),
        }
    }
}

/// What [`Conn::look`] found of the awaited record.
pub enum Found {
    /// Its value (to be checked as any other).
    Value(Vec<u8>),
    /// No record and no lease: the lease is the caller's now.
    Taken,
    /// No record, and another holds the lease.
    Held,
}

/// A waiter's look: the awaited record, and the values of the others.
pub struct Look {
    pub found: Found,
    pub others: Vec<Option<Vec<u8>>>,
}

/// The record KEYS[1] if it is there; else the lease KEYS[2] taken for
/// ARGV[1] for ARGV[2] milliseconds if no one holds it (1), or 0.
const AWAIT_SCRIPT: &str = "local v = redis.call('GET', KEYS[1]) if v then return v end \
    if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";

/// Renews (ARGV[2] milliseconds) or, with 0, deletes the lease KEYS[1]
/// only while it holds ARGV[1], the caller's owner value.
const LEASE_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    if ARGV[2] == '0' then return redis.call('DEL', KEYS[1]) end \
    return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

/// `command NAME` for each of `names` in one cluster pipeline: the crate
/// sends each node its commands as one batch, every node before reading.
fn per_key<T: redis::FromRedisValue>(
    c: &mut ClusterConnection,
    command: &str,
    names: &[impl redis::ToRedisArgs],
) -> RedisResult<T> {
    let mut p = redis::cluster::cluster_pipe();
    for n in names {
        p.cmd(command).arg(n);
    }
    p.query(c)
}

/// SCAN to the end, each page through `query`.
fn scan_with(
    pattern: &str,
    out: &mut Vec<Vec<u8>>,
    mut query: impl FnMut(&redis::Cmd) -> RedisResult<(u64, Vec<Vec<u8>>)>,
) -> RedisResult<()> {
    let mut cursor = 0u64;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(1000);
        let (next, page) = query(&cmd)?;
        out.extend(page);
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The masters of a cluster, from `CLUSTER SLOTS` (each range's first
/// node is its master), without repeats.
fn masters(c: &mut ClusterConnection) -> RedisResult<Vec<(String, u16)>> {
    let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query(c)?;
    let mut out: Vec<(String, u16)> = Vec::new();
    for range in ranges {
        let Some(node) = range.into_iter().nth(2) else { continue };
        let node: Vec<Value> = redis::from_redis_value(node)?;
        let mut it = node.into_iter();
        if let (Some(h), Some(p)) = (it.next(), it.next()) {
            let m = (redis::from_redis_value::<String>(h)?, redis::from_redis_value::<u16>(p)?);
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok(out)
}
