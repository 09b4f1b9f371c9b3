//! `running_streams` with several servers: only streams no live server is generating.

use std::time::Duration;

use citeflow_store::{Store, StreamRecord, StreamStatus};
use citeflow_store_redis::{RedisSettings, RedisStore};

use crate::support::{fresh_prefix, redis_url};

fn stream(id: &str) -> StreamRecord {
    StreamRecord {
        id: id.to_owned(),
        owner: "k".to_owned(),
        session_id: Some("sess".to_owned()),
        status: StreamStatus::Running,
        created_ms: 1,
    }
}

fn server(url: &str, prefix: &str, name: Option<&str>) -> RedisStore {
    let mut s = RedisSettings::from_url(url)
        .expect("url")
        .with_key_prefix(prefix)
        .with_lease_ms(1_000);
    if let Some(n) = name {
        s = s.with_instance(n);
    }
    RedisStore::new(s).expect("store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn running_streams_leave_out_streams_of_live_servers() {
    let Some(url) = redis_url("running_streams_leave_out_streams_of_live_servers") else {
        return;
    };
    let prefix = fresh_prefix("leases");
    let a = server(&url, &prefix, None);
    let b = server(&url, &prefix, None);
    a.create_stream(stream("on-a")).await.expect("create");
    b.ping().await.expect("ping");
    assert_eq!(
        a.running_streams().await.expect("a"),
        ["on-a"],
        "a lists its own"
    );
    assert!(
        b.running_streams().await.expect("b").is_empty(),
        "a is alive"
    );
    // A stops (its heartbeat with it): once its lease expired, B reports the stream.
    drop(a);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(b.running_streams().await.expect("b"), ["on-a"]);
    b.finish_stream("on-a", StreamStatus::Interrupted)
        .await
        .expect("finish");
    assert!(b.running_streams().await.expect("b").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn a_server_restarted_under_its_name_finds_its_streams_at_once() {
    let Some(url) = redis_url("a_server_restarted_under_its_name_finds_its_streams_at_once") else {
        return;
    };
    let prefix = fresh_prefix("restart");
    let a = server(&url, &prefix, Some("web-1"));
    let other = server(&url, &prefix, Some("web-2"));
    a.create_stream(stream("s1")).await.expect("create");
    other.ping().await.expect("ping");
    assert!(other.running_streams().await.expect("other").is_empty());
    drop(a);
    let a2 = server(&url, &prefix, Some("web-1"));
    assert_eq!(a2.running_streams().await.expect("restarted"), ["s1"]);
    assert_eq!(other.running_streams().await.expect("other"), ["s1"]);
}
