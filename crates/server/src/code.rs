//! [`ErrorCode`]: the one table of error codes, shared by [`crate::ApiError`] (error responses)
//! and [`crate::error::StreamError`] (the error event that ends a stream). Which codes are the
//! upstream's fault, and so which error `type` they carry, is decided here and nowhere else.

/// Declares [`ErrorCode`] from one list of `Variant => "name"`: the enum, its names
/// ([`ErrorCode::as_str`]) and every code in order ([`ErrorCode::ALL`]).
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)+) => {
        /// A stable snake_case error code, as the envelope's `code` and a stream error event's.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum ErrorCode {
            $($(#[$doc])* $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the table's order (for the tests).
            #[cfg(test)]
            pub(crate) const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code as the API writes it.
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)+
                }
            }
        }
    };
}

error_codes! {
    InvalidApiKey => "invalid_api_key",
    ForbiddenOrigin => "forbidden_origin",
    RequestTimeout => "request_timeout",
    UnsupportedMediaType => "unsupported_media_type",
    NotFound => "not_found",
    UnknownRoute => "unknown_route",
    MethodNotAllowed => "method_not_allowed",
    BookNotFound => "book_not_found",
    BookFileMissing => "book_file_missing",
    CfiNotFound => "cfi_not_found",
    NoBookIndex => "no_book_index",
    InvalidEpub => "invalid_epub",
    BodyTooLarge => "body_too_large",
    InvalidRequest => "invalid_request",
    TooManySources => "too_many_sources",
    TooManyStreams => "too_many_streams",
    TooManyRounds => "too_many_rounds",
    TooManySessions => "too_many_sessions",
    SourceTooLarge => "source_too_large",
    SourceFieldTooLarge => "source_field_too_large",
    InvalidSources => "invalid_sources",
    InvalidSetting => "invalid_setting",
    UpstreamUnreachable => "upstream_unreachable",
    UpstreamTimeout => "upstream_timeout",
    /// The upstream answered with an error (a status, or an error event in its stream).
    UpstreamError => "upstream_error",
    UpstreamMalformed => "upstream_malformed",
    /// The upstream's stream ended before its final event.
    UpstreamCut => "upstream_cut",
    /// The upstream's stream went past a size budget.
    UpstreamTooLarge => "upstream_too_large",
    /// The answer went past `max_stream_events`.
    StreamTooLong => "stream_too_long",
    StoreUnavailable => "store_unavailable",
    /// The request bodies being read hold the whole memory budget (`body_budget_bytes`).
    Overloaded => "overloaded",
    /// The server stopped while the stream was generated (found at the next start).
    StreamInterrupted => "stream_interrupted",
    /// The server shuts down before the stream finished.
    ShuttingDown => "shutting_down",
    InternalError => "internal_error",
}

impl ErrorCode {
    /// Whether the upstream model server is at fault: it counts in the upstream error
    /// metric, and its errors carry the type `upstream_error` (`api_error` in Anthropic's
    /// events).
    pub(crate) fn is_upstream(self) -> bool {
        matches!(
            self,
            ErrorCode::UpstreamUnreachable
                | ErrorCode::UpstreamTimeout
                | ErrorCode::UpstreamError
                | ErrorCode::UpstreamMalformed
                | ErrorCode::UpstreamCut
                | ErrorCode::UpstreamTooLarge
        )
    }

    /// The OpenAI error `type` of a failure that is not the client's (5xx, or a stream's
    /// error event): `upstream_error` or `server_error`.
    pub(crate) fn server_kind(self) -> &'static str {
        if self.is_upstream() {
            "upstream_error"
        } else {
            "server_error"
        }
    }

    /// The Anthropic error `type` of a stream's error event: `api_error` for the upstream's
    /// failures, else `overloaded_error`.
    pub(crate) fn anthropic_kind(self) -> &'static str {
        if self.is_upstream() {
            "api_error"
        } else {
            "overloaded_error"
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A code compares equal to its name (`ErrorCode::UpstreamCut == "upstream_cut"`).
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn upstream_codes_are_the_ones_named_upstream() {
        use ErrorCode::*;
        let all = ErrorCode::ALL;
        let upstream: Vec<&str> = all
            .iter()
            .filter(|c| c.is_upstream())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            upstream,
            [
                "upstream_unreachable",
                "upstream_timeout",
                "upstream_error",
                "upstream_malformed",
                "upstream_cut",
                "upstream_too_large"
            ]
        );
        // The rule the code table replaces: a code is the upstream's when its name says so.
        for &c in all {
            assert_eq!(c.is_upstream(), c.as_str().starts_with("upstream"), "{c}");
        }
        assert_eq!(UpstreamCut.server_kind(), "upstream_error");
        assert_eq!(StoreUnavailable.server_kind(), "server_error");
        assert_eq!(UpstreamCut.anthropic_kind(), "api_error");
        assert_eq!(ShuttingDown.anthropic_kind(), "overloaded_error");
    }
}
