//! Integration tests of citeflow-core: scenarios, chunk invariance, the naive oracle, golden
//! vectors, snapshots and external numbering.

mod support;

mod external;
mod props;
mod scenarios;
mod snapshot;
mod vectors;
