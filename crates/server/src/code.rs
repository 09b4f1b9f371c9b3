//! [`ErrorCode`]: the one table of error codes, shared by [`crate::ApiError`] (error responses)
//! and [`crate::error::StreamError`] (the error event that ends a stream). Which codes are the
//! upstream's fault, and so which error `type` they carry, is decided here and nowhere else.

/// A stable snake_case error code, as the envelope's `code` and a stream error event's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorCode {
    InvalidApiKey,
    ForbiddenOrigin,
    RequestTimeout,
    UnsupportedMediaType,
    NotFound,
    UnknownRoute,
    MethodNotAllowed,
    BookNotFound,
    BookFileMissing,
    CfiNotFound,
    NoBookIndex,
    InvalidEpub,
    BodyTooLarge,
    InvalidRequest,
    TooManySources,
    TooManyStreams,
    TooManyRounds,
    TooManySessions,
    SourceTooLarge,
    SourceFieldTooLarge,
    InvalidSources,
    InvalidSetting,
    UpstreamUnreachable,
    UpstreamTimeout,
    /// The upstream answered with an error (a status, or an error event in its stream).
    UpstreamError,
    UpstreamMalformed,
    /// The upstream's stream ended before its final event.
    UpstreamCut,
    /// The upstream's stream went past a size budget.
    UpstreamTooLarge,
    /// The answer went past `max_stream_events`.
    StreamTooLong,
    StoreUnavailable,
    /// The server stopped while the stream was generated (found at the next start).
    StreamInterrupted,
    /// The server shuts down before the stream finished.
    ShuttingDown,
    InternalError,
}

impl ErrorCode {
    /// The code as the API writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidApiKey => "invalid_api_key",
            ErrorCode::ForbiddenOrigin => "forbidden_origin",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::NotFound => "not_found",
            ErrorCode::UnknownRoute => "unknown_route",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::BookNotFound => "book_not_found",
            ErrorCode::BookFileMissing => "book_file_missing",
            ErrorCode::CfiNotFound => "cfi_not_found",
            ErrorCode::NoBookIndex => "no_book_index",
            ErrorCode::InvalidEpub => "invalid_epub",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::TooManySources => "too_many_sources",
            ErrorCode::TooManyStreams => "too_many_streams",
            ErrorCode::TooManyRounds => "too_many_rounds",
            ErrorCode::TooManySessions => "too_many_sessions",
            ErrorCode::SourceTooLarge => "source_too_large",
            ErrorCode::SourceFieldTooLarge => "source_field_too_large",
            ErrorCode::InvalidSources => "invalid_sources",
            ErrorCode::InvalidSetting => "invalid_setting",
            ErrorCode::UpstreamUnreachable => "upstream_unreachable",
            ErrorCode::UpstreamTimeout => "upstream_timeout",
            ErrorCode::UpstreamError => "upstream_error",
            ErrorCode::UpstreamMalformed => "upstream_malformed",
            ErrorCode::UpstreamCut => "upstream_cut",
            ErrorCode::UpstreamTooLarge => "upstream_too_large",
            ErrorCode::StreamTooLong => "stream_too_long",
            ErrorCode::StoreUnavailable => "store_unavailable",
            ErrorCode::StreamInterrupted => "stream_interrupted",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::InternalError => "internal_error",
        }
    }

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
        let all = [
            InvalidApiKey,
            ForbiddenOrigin,
            RequestTimeout,
            UnsupportedMediaType,
            NotFound,
            UnknownRoute,
            MethodNotAllowed,
            BookNotFound,
            BookFileMissing,
            CfiNotFound,
            NoBookIndex,
            InvalidEpub,
            BodyTooLarge,
            InvalidRequest,
            TooManySources,
            TooManyStreams,
            TooManyRounds,
            TooManySessions,
            SourceTooLarge,
            SourceFieldTooLarge,
            InvalidSources,
            InvalidSetting,
            UpstreamUnreachable,
            UpstreamTimeout,
            UpstreamError,
            UpstreamMalformed,
            UpstreamCut,
            UpstreamTooLarge,
            StreamTooLong,
            StoreUnavailable,
            StreamInterrupted,
            ShuttingDown,
            InternalError,
        ];
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
        for c in all {
            assert_eq!(c.is_upstream(), c.as_str().starts_with("upstream"), "{c}");
        }
        assert_eq!(UpstreamCut.server_kind(), "upstream_error");
        assert_eq!(StoreUnavailable.server_kind(), "server_error");
        assert_eq!(UpstreamCut.anthropic_kind(), "api_error");
        assert_eq!(ShuttingDown.anthropic_kind(), "overloaded_error");
    }
}
