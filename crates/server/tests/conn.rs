//! Slow clients (issue 15): read time-outs for request headers and bodies and a limit on
//! connections, checked with real sockets against `launch` on 127.0.0.1.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use citeflow_server::{launch, ServerSettings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::limits;

/// Starts `launch` on a loopback port with these limits; the server stops when the sender
/// is dropped.
async fn start(
    f: impl FnOnce(&mut citeflow_server::Limits),
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let settings = ServerSettings::new("http://127.0.0.1:9/v1").with_limits(limits(f));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let stop = async move {
            let _ = rx.await;
        };
        launch(settings, listener, stop).await.expect("serves");
    });
    (addr, tx)
}

/// Reads until the server closes the connection (or 10 s pass: a failure).
async fn read_to_close(s: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut out = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    assert!(r.is_ok(), "the server kept a slow connection open for 10 s");
    (
        String::from_utf8_lossy(&out).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_slow_to_send_headers_is_dropped_and_frees_its_connection() {
    let (addr, _stop) = start(|l| {
        l.header_read_timeout_ms = 400;
        l.max_connections = 1;
    })
    .await;
    // A sends half a request line and stalls: it holds the only connection.
    let mut slow = TcpStream::connect(addr).await.expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    // B's request waits for A's connection to be closed by the header time-out.
    let started = Instant::now();
    let fast = tokio::spawn(async move {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        read_to_close(&mut s).await.0
    });
    let (_, slow_for) = read_to_close(&mut slow).await;
    assert!(
        slow_for < Duration::from_secs(3),
        "closed after {slow_for:?}"
    );
    let answer = tokio::time::timeout(Duration::from_secs(10), fast)
        .await
        .expect("B is answered")
        .expect("task");
    let waited = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"{"status":"ok"}"#), "{answer}");
    assert!(
        waited >= Duration::from_millis(300),
        "B was served after {waited:?}, before A's connection was freed: no limit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_slow_to_send_its_body_gets_408_request_timeout() {
    let (addr, _stop) = start(|l| l.body_read_timeout_ms = 400).await;
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(
        b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\nConnection: close\r\n\r\n{\"sources\":",
    )
    .await
    .expect("write");
    let started = Instant::now();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
        .await
        .expect("answered within 10 s")
        .expect("read");
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
}
