//! Integration tests of citeflow-store-redis. They need a Redis: `CITEFLOW_TEST_REDIS_URL`
//! (scripts/test-redis.sh starts one); without it each test prints a notice and passes.

mod batch;
mod conformance;
mod failover;
mod fault;
mod leases;
mod servers;
mod stress;
mod support;
