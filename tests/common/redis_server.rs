//! Real Redis servers for the remote tier's tests: Debian's
//! `redis-server`, started on 127.0.0.1 on free ports, without
//! persistence, each in a directory of its own; stopped by the pid this
//! helper started (never by name) when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on now (and, for a cluster node, whose bus port
/// `port + 10000` is free too).
fn free_port(with_bus: bool) -> u16 {
    for _ in 0..200 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = l.local_addr().unwrap().port();
        if !with_bus {
            return port;
        }
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair on 127.0.0.1");
}

/// Writes a certificate authority (`ca`), and a certificate for
/// 127.0.0.1 it signed with its key (`cert`, `key`), as PEM files
/// (rcgen: no `openssl` command needed).
fn write_certificates(ca: &Path, cert: &Path, key: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let authority =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key")).expect("CA certificate");
    let server_key = KeyPair::generate().expect("server key");
    let server_cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("server parameters")
        .signed_by(&server_key, &authority)
        .expect("server certificate");
    std::fs::write(ca, authority.pem()).expect("write the CA");
    std::fs::write(cert, server_cert.pem()).expect("write the certificate");
    std::fs::write(key, server_key.serialize_pem()).expect("write the key");
}

/// One `redis-server` process.
pub struct RedisServer {
    child: Child,
    /// The plain port (the helper's `redis-cli` talks to it).
    pub port: u16,
    /// The TLS port and the certificate authority that signed the
    /// server's certificate, for a server started by
    /// [`RedisServer::start_tls`].
    tls: Option<(u16, PathBuf)>,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// A standalone server.
    pub fn start() -> RedisServer {
        RedisServer::spawn(&[], false)
    }

    /// A standalone server that also listens with TLS on a port of its
    /// own, with a certificate for 127.0.0.1 that a certificate authority
    /// made here signed ([`RedisServer::ca_file`]); clients need not
    /// present one.
    pub fn start_tls() -> RedisServer {
        let dir = tempfile::tempdir().expect("server dir");
        let (ca, cert, key) = (dir.path().join("ca.pem"), dir.path().join("server.pem"), dir.path().join("server.key"));
        write_certificates(&ca, &cert, &key);
        let tls_port = free_port(false);
        let mut args = vec!["--tls-port".to_string(), tls_port.to_string(), "--tls-auth-clients".into(), "no".into()];
        for (flag, path) in [("--tls-cert-file", &cert), ("--tls-key-file", &key), ("--tls-ca-cert-file", &ca)] {
            args.extend([flag.to_string(), path.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = RedisServer::spawn_in(dir, &args, false);
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", tls_port)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(10), "redis-server's TLS port {tls_port} did not open");
            std::thread::sleep(Duration::from_millis(20));
        }
        server.tls = Some((tls_port, ca));
        server
    }

    /// `rediss://127.0.0.1:TLS_PORT` (a server from [`RedisServer::start_tls`]).
    pub fn tls_url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.tls.as_ref().expect("a TLS server").0)
    }

    /// The PEM file of the certificate authority that signed the TLS
    /// server's certificate.
    pub fn ca_file(&self) -> &Path {
        &self.tls.as_ref().expect("a TLS server").1
    }

    fn spawn(extra: &[&str], cluster: bool) -> RedisServer {
        RedisServer::spawn_in(tempfile::tempdir().expect("server dir"), extra, cluster)
    }

    fn spawn_in(dir: tempfile::TempDir, extra: &[&str], cluster: bool) -> RedisServer {
        let port = free_port(cluster);
        let mut c = Command::new("redis-server");
        c.args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = c.spawn().expect("start redis-server (make deps installs it)");
        let server = RedisServer { child, port, tls: None, _dir: dir };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && self.try_cli(&["PING"]).is_some_and(|r| r == "PONG")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not start", self.port);
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The pid of the server (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn try_cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// Runs `redis-cli` against this server; its standard output.
    pub fn cli(&self, args: &[&str]) -> String {
        self.try_cli(args).unwrap_or_else(|| panic!("redis-cli {args:?} on port {} failed", self.port))
    }

    /// Sets `key` to the bytes of `file` (`redis-cli -x`).
    pub fn set_from_file(&self, key: &str, file: &Path) {
        let status = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-x", "SET", key])
            .stdin(std::fs::File::open(file).expect("value file"))
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli");
        assert!(status.success());
    }

    /// The number of keys.
    pub fn dbsize(&self) -> u64 {
        self.cli(&["DBSIZE"]).parse().expect("DBSIZE")
    }

    /// Sends `signal` to the server process.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: a plain kill(2) to the pid of the child this helper
        // started and has not reaped.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.child.id());
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A stopped server must be continued for SIGKILL to reap promptly.
        // SAFETY: signals to our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A three-master Redis Cluster (no replicas) made with
/// `redis-cli --cluster create`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let conf =
            ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"];
        let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::spawn(&conf, true)).collect();
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli --cluster create");
        assert!(out.status.success(), "cluster create: {}", String::from_utf8_lossy(&out.stdout));
        let cluster = RedisCluster { nodes };
        let t0 = Instant::now();
        while !cluster.nodes.iter().all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok")) {
            assert!(t0.elapsed() < Duration::from_secs(20), "cluster did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...`.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// Keys on each node.
    pub fn dbsizes(&self) -> Vec<u64> {
        self.nodes.iter().map(RedisServer::dbsize).collect()
    }
}

/// The remote settings of a test's own tier on `url`: writable, unsigned,
/// 5 s timeouts (a loaded machine's), a 10 s lease.
pub fn test_settings(url: &str) -> kiln::remote::RemoteSettings {
    use kiln::remote::{envelope, settings::Endpoint, RemoteSettings};
    RemoteSettings {
        endpoint: Endpoint::parse(url).unwrap(),
        display: url.to_string(),
        read_only: false,
        connect_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
        ttl: None,
        mac_key: None,
        max_value_len: envelope::MAX_VALUE_LEN,
        lease_ttl: Duration::from_secs(10),
    }
}
