//! The key layout. Every key of one session, or of one stream, carries the same hash tag, so
//! it lives in one Cluster slot and one Lua script may touch all of them.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:{s:ID}:session` | hash | `owner`, `sources` (JSON), `created_ms`, `last_used_ms`, `ver` |
//! | `P:{s:ID}:num` | hash | numbering of the session: canonical key → number |
//! | `P:{s:ID}:byn` | hash | number → `[key, source_id]` (JSON) |
//! | `P:{s:ID}:ctr` | string | the last number handed out (`INCR`) |
//! | `P:{t:ID}:stream` | hash | `owner`, `session_id`, `status`, `created_ms`, `last`, `server`, `epoch` |
//! | `P:{t:ID}:log` | stream | event `n` at entry id `n-0` (field `d`); the end mark at `last-1` |
//! | `P:{t:ID}:num`, `:byn`, `:ctr` | | numbering of the stream (chat mode) |
//! | `P:running` | sorted set | ids of streams marked running (a hint, checked on read) |
//! | `P:idle:sessions` | sorted set | session ids by last use (a hint for `purge_idle`) |
//! | `P:idle:streams` | sorted set | finished stream ids by creation (a hint for `purge_idle`) |
//! | `P:lease:NAME` | string | the epoch of the live server NAME, with a TTL |

use citeflow_store::NumberScope;

/// Escapes `%`, `{` and `}` so an id cannot end the hash tag early.
fn escape(id: &str) -> std::borrow::Cow<'_, str> {
    if !id.contains(['%', '{', '}']) {
        return id.into();
    }
    let mut out = String::with_capacity(id.len() + 6);
    for c in id.chars() {
        match c {
            '%' => out.push_str("%25"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out.into()
}

/// The keys of one numbering table.
#[derive(Debug, Clone)]
pub(crate) struct TableKeys {
    pub(crate) num: String,
    pub(crate) byn: String,
    pub(crate) ctr: String,
    /// The record whose TTL the table shares (session or stream hash).
    pub(crate) owner: String,
}

/// Builds keys under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    fn tagged(&self, kind: char, id: &str, suffix: &str) -> String {
        format!("{}:{{{kind}:{}}}:{suffix}", self.prefix, escape(id))
    }

    pub(crate) fn session(&self, id: &str) -> String {
        self.tagged('s', id, "session")
    }

    pub(crate) fn stream(&self, id: &str) -> String {
        self.tagged('t', id, "stream")
    }

    pub(crate) fn log(&self, id: &str) -> String {
        self.tagged('t', id, "log")
    }

    pub(crate) fn table(&self, scope: &NumberScope) -> TableKeys {
        let (kind, id, owner) = match scope {
            NumberScope::Session(id) => ('s', id.as_str(), self.session(id)),
            NumberScope::Stream(id) => ('t', id.as_str(), self.stream(id)),
            // `NumberScope` is non-exhaustive; a new scope gets its own tag.
            other => {
                let ns = other.namespace();
                return TableKeys {
                    num: self.tagged('x', &ns, "num"),
                    byn: self.tagged('x', &ns, "byn"),
                    ctr: self.tagged('x', &ns, "ctr"),
                    owner: self.tagged('x', &ns, "owner"),
                };
            }
        };
        TableKeys {
            num: self.tagged(kind, id, "num"),
            byn: self.tagged(kind, id, "byn"),
            ctr: self.tagged(kind, id, "ctr"),
            owner,
        }
    }

    /// The sessions of an owner: a sorted set of session ids by the Redis time (ms) they expire.
    pub(crate) fn owner_sessions(&self, owner: &str) -> String {
        self.tagged('o', owner, "sessions")
    }

    /// The key [`Store::probe_write`](citeflow_store::Store::probe_write) sets.
    pub(crate) fn probe(&self) -> String {
        format!("{}:probe", self.prefix)
    }

    pub(crate) fn running(&self) -> String {
        format!("{}:running", self.prefix)
    }

    pub(crate) fn idle_sessions(&self) -> String {
        format!("{}:idle:sessions", self.prefix)
    }

    pub(crate) fn idle_streams(&self) -> String {
        format!("{}:idle:streams", self.prefix)
    }

    pub(crate) fn lease(&self, instance: &str) -> String {
        format!("{}:lease:{instance}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_a_session_share_one_hash_tag() {
        let k = Keys::new("cf");
        let t = k.table(&NumberScope::Session("a}b".into()));
        assert_eq!(k.session("a}b"), "cf:{s:a%7Db}:session");
        assert_eq!(t.num, "cf:{s:a%7Db}:num");
        assert_eq!(t.owner, k.session("a}b"));
        assert_eq!(k.log("x"), "cf:{t:x}:log");
    }
}
