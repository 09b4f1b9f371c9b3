//! Test helpers: the Redis under test, fresh key prefixes.

use citeflow_store_redis::{RedisSettings, RedisStore};

/// The Redis URL under test, or `None` after printing a notice (the test then passes).
pub(crate) fn redis_url(test: &str) -> Option<String> {
    match std::env::var("CITEFLOW_TEST_REDIS_URL") {
        Ok(u) if !u.trim().is_empty() => Some(u),
        _ => {
            eprintln!(
                "notice: {test} skipped: CITEFLOW_TEST_REDIS_URL is unset (scripts/test-redis.sh starts a Redis and sets it)"
            );
            None
        }
    }
}

/// A key prefix no earlier run used.
pub(crate) fn fresh_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("cftest-{test}-{nanos:x}-{}", std::process::id())
}

/// A store on the Redis under test with a fresh prefix.
pub(crate) fn store(url: &str, prefix: &str) -> RedisStore {
    let settings = RedisSettings::from_url(url)
        .expect("url")
        .with_key_prefix(prefix);
    RedisStore::new(settings).expect("store")
}

/// A free loopback port (bound, then released).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A `redis-server` of the test's own (for killing it): AOF with fsync on every write, so
/// what Redis acknowledged survives `kill -9`.
pub(crate) struct OwnRedis {
    pub(crate) port: u16,
    dir: tempfile::TempDir,
    child: Option<std::process::Child>,
}

impl OwnRedis {
    pub(crate) fn start() -> OwnRedis {
        let mut r = OwnRedis {
            port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
            child: None,
        };
        r.restart();
        r
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts (again) on the same port and directory, and waits until it answers.
    pub(crate) fn restart(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server on PATH (scripts/test-redis.sh installs it)");
        self.child = Some(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::{Read, Write};
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok()
                    && s.read(&mut buf)
                        .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
                {
                    return;
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not start on port {}",
                self.port
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// `kill -9`.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether the Redis under test is a Cluster (`redis+cluster://…` or a comma list).
pub(crate) fn is_cluster_url(url: &str) -> bool {
    RedisSettings::from_url(url).is_ok_and(|s| s.is_cluster())
}

/// A Redis Cluster of the test's own (for killing a master): 3 masters and 3 replicas of
/// `redis-server` on free loopback ports, `cluster-node-timeout` 2000 ms, no persistence.
/// `start` returns once every replica has finished its first sync: a replica that never
/// synced refuses to take over ("disconnected from master for longer than allowed"), and
/// the default diskless sync waits 5 s for more replicas first, so the delay is 0 here.
pub(crate) struct OwnCluster {
    pub(crate) ports: Vec<u16>,
    _dir: tempfile::TempDir,
    children: Vec<Option<std::process::Child>>,
}

impl OwnCluster {
    /// Starts the cluster; a start that does not get ready (seen once, on 2026-11-27: a node
    /// without `cluster_state:ok` or a synced replica after 20 s, before any test step ran)
    /// is stopped and made again once on other ports, saying so.
    pub(crate) fn start() -> OwnCluster {
        match OwnCluster::try_start() {
            Ok(c) => c,
            Err(why) => {
                eprintln!(
                    "notice: a test Redis Cluster did not get ready ({why}); starting another"
                );
                OwnCluster::try_start().unwrap_or_else(|why| panic!("{why}"))
            }
        }
    }

    fn try_start() -> Result<OwnCluster, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let ports: Vec<u16> = (0..6).map(|_| free_cluster_port()).collect();
        let mut children = Vec::new();
        for port in &ports {
            let node_dir = dir.path().join(port.to_string());
            std::fs::create_dir_all(&node_dir).expect("node dir");
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--repl-diskless-sync-delay", "0"])
                .arg("--dir")
                .arg(&node_dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server on PATH (scripts/test-cluster.sh installs it)");
            children.push(Some(child));
        }
        let cluster = OwnCluster {
            ports,
            _dir: dir,
            children,
        };
        for port in &cluster.ports {
            wait_until(10, || {
                cli(*port, &["ping"]).is_some_and(|o| o.contains("PONG"))
            })?;
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli");
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        for port in &cluster.ports {
            wait_until(20, || {
                cli(*port, &["cluster", "info"]).is_some_and(|o| o.contains("cluster_state:ok"))
            })
            .map_err(|e| format!("node {port}: cluster_state: {e}"))?;
            wait_until(20, || {
                cli(*port, &["info", "replication"]).is_some_and(|o| {
                    o.contains("master_link_status:up")
                        || (o.contains("role:master") && o.contains("state=online"))
                })
            })
            .map_err(|e| format!("node {port}: replication: {e}"))?;
        }
        Ok(cluster)
    }

    /// The seed-node URL of the Cluster.
    pub(crate) fn url(&self) -> String {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The port of the master that serves `key`, as `live` (a node still running) sees it.
    pub(crate) fn master_of(&self, live: u16, key: &str) -> u16 {
        try_master_of(live, key).unwrap_or_else(|nodes| panic!("no master serves {key}:\n{nodes}"))
    }

    /// The port of a replica of the master on `master` (its `INFO replication`).
    pub(crate) fn replica_of(&self, master: u16) -> u16 {
        let info = cli(master, &["info", "replication"]).expect("info replication");
        info.lines()
            .filter(|l| l.starts_with("slave0:"))
            .flat_map(|l| l.split([':', ',']))
            .find_map(|f| f.strip_prefix("port=")?.parse().ok())
            .unwrap_or_else(|| panic!("no replica of {master}:\n{info}"))
    }

    /// Sends a signal (`STOP`, `CONT`) to the node on `port`.
    pub(crate) fn signal(&self, port: u16, signal: &str) {
        let i = self
            .ports
            .iter()
            .position(|p| *p == port)
            .expect("our node");
        let pid = self.children[i].as_ref().expect("running").id();
        let ok = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal} {pid}");
    }

    /// `kill -9` of the node on `port`.
    pub(crate) fn kill(&mut self, port: u16) {
        let i = self
            .ports
            .iter()
            .position(|p| *p == port)
            .expect("our node");
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        for c in self.children.iter_mut().filter_map(Option::take) {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A free loopback port below 55536 whose Cluster bus port (+10000) is free too (the
/// kernel's ephemeral ports may be too high for that).
pub(crate) fn free_cluster_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos()
        ^ std::process::id();
    for _ in 0..1000 {
        let n = NEXT.fetch_add(7919, Ordering::Relaxed).wrapping_add(seed);
        let port = 20_000 + (n % 25_000) as u16;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && free(port + 10_000) {
            return port;
        }
    }
    panic!("no free port pair for a cluster node");
}

/// `redis-cli -p PORT ARGS…`'s output, or `None` when it fails.
pub(crate) fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn wait_until(secs: u64, mut ok: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !ok() {
        if std::time::Instant::now() >= deadline {
            return Err(format!("redis did not get ready in {secs} s"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(())
}

/// The port of the live master that serves `key`, as node `live` sees it; else the node
/// list (no master serves it now: it failed and no replica took over yet).
pub(crate) fn try_master_of(live: u16, key: &str) -> Result<u16, String> {
    let slot: u16 = cli(live, &["cluster", "keyslot", key])
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("no keyslot from port {live}"))?;
    let nodes =
        cli(live, &["cluster", "nodes"]).ok_or_else(|| format!("no node list from port {live}"))?;
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
            continue;
        }
        let owns = f[8..].iter().any(|r| {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            matches!((a.parse::<u16>(), b.parse::<u16>()), (Ok(a), Ok(b)) if a <= slot && slot <= b)
        });
        if owns {
            let port = f[1].split('@').next().and_then(|a| a.rsplit(':').next());
            if let Some(p) = port.and_then(|p| p.parse().ok()) {
                return Ok(p);
            }
        }
    }
    Err(nodes)
}
