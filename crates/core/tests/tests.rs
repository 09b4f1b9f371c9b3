//! Integration tests of citeflow-core: scenarios, chunk invariance, the naive oracle, golden
//! vectors, snapshots, external numbering and the local model's recorded streams.

mod support;

mod anchors;
mod external;
mod props;
mod provider;
mod recorded;
mod scenarios;
mod snapshot;
mod timing;
mod vectors;
