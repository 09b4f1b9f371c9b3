//! Integration tests of citeflow-store-redis. They need a Redis: `CITEFLOW_TEST_REDIS_URL`
//! (scripts/test-redis.sh starts one and runs them with `--include-ignored`); without it `cargo
//! test` lists them as ignored, "needs a Redis".

mod batch;
mod conformance;
mod failover;
mod fault;
mod leases;
mod servers;
mod stress;
mod support;
