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
