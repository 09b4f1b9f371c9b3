//! The records a store keeps.

use citeflow_core::Sources;
use serde::{Deserialize, Serialize};

/// A session: the sources registered in rounds, owned by one API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Random, unguessable id.
    pub id: String,
    /// The owner (a hash of the API key; empty without keys).
    pub owner: String,
    /// The sources, by round.
    pub sources: Sources,
    /// Creation time, milliseconds since the Unix epoch (given by the caller).
    pub created_ms: u64,
    /// Last use, milliseconds since the Unix epoch; idle sessions expire from it.
    pub last_used_ms: u64,
}

/// Where a stream is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamStatus {
    /// The upstream generation is running; more events may come.
    Running,
    /// Ended normally.
    Completed,
    /// Ended with an error event.
    Failed,
    /// The server stopped while it ran; its log ends with an error event.
    Interrupted,
}

impl StreamStatus {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamStatus::Running => "running",
            StreamStatus::Completed => "completed",
            StreamStatus::Failed => "failed",
            StreamStatus::Interrupted => "interrupted",
        }
    }

    /// Parses [`StreamStatus::as_str`].
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "running" => StreamStatus::Running,
            "completed" => StreamStatus::Completed,
            "failed" => StreamStatus::Failed,
            "interrupted" => StreamStatus::Interrupted,
            _ => return None,
        })
    }

    /// Whether no more events will come.
    pub fn is_finished(self) -> bool {
        self != StreamStatus::Running
    }
}

/// One streamed answer and its event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Random, unguessable id.
    pub id: String,
    /// The owner (as [`SessionRecord::owner`]).
    pub owner: String,
    /// The session it belongs to, if any.
    pub session_id: Option<String>,
    /// Its status.
    pub status: StreamStatus,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: u64,
}

/// One persisted SSE event: its id and its `data:` payload, replayed byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The SSE `id:`: 1 for the first event, then one more each.
    pub id: u64,
    /// The `data:` payload (JSON, or `[DONE]`).
    pub data: String,
}

/// Which numbering table an allocation uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NumberScope {
    /// The session's table, shared by all its answers (agent mode).
    Session(String),
    /// A fresh table for one answer (chat mode).
    Stream(String),
}

impl NumberScope {
    /// The namespace string, `session:<id>` or `stream:<id>`.
    pub fn namespace(&self) -> String {
        match self {
            NumberScope::Session(id) => format!("session:{id}"),
            NumberScope::Stream(id) => format!("stream:{id}"),
        }
    }
}

/// The answer of an atomic allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// The key's number.
    pub number: u32,
    /// Whether this call handed it out (false: the key had it already).
    pub is_new: bool,
}
