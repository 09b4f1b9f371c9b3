//! The progress display of the book commands (`ingest`, `ask`, `serve`'s start-up) and of
//! fetching the local model.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress display on stderr, drawn only when stderr is a terminal.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
    }

    /// A display that draws nothing: its lines go straight to stderr.
    pub(crate) fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Shows which of several books is being read (`[2/7]`).
    pub(crate) fn book(&self, number: usize, of: usize) {
        if of > 1 {
            self.bar.set_prefix(format!("[{number}/{of}] "));
        }
    }

    /// A spinner with a message.
    pub(crate) fn phase(&self, message: String) {
        self.bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}{msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        self.bar.set_length(0);
        self.bar.set_message(message);
    }

    /// A bar of `len` steps with a message.
    pub(crate) fn count(&self, len: u64, message: String) {
        self.bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}{msg} [{bar:30}] {pos}/{len}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        self.bar.set_position(0);
        self.bar.set_length(len);
        self.bar.set_message(message);
    }

    pub(crate) fn inc(&self) {
        self.bar.inc(1);
    }

    /// Moves a bar to step `pos`.
    #[cfg(feature = "local-model")]
    pub(crate) fn set(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    /// Whether nothing is drawn (stderr is not a terminal).
    #[cfg(feature = "local-model")]
    pub(crate) fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// Prints a line on stderr above the bar.
    pub(crate) fn println(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
