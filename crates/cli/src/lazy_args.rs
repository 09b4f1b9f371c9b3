//! Subcommand arguments built only when their subcommand is used: clap builds a command's
//! arguments when it parses into it, so `citeflow render` does not build `serve`'s (start-up,
//! `docs/benchmarks.md`).

use clap::builder::{Resettable, StyledStr};
use clap::{ArgMatches, Args, Command, FromArgMatches};

/// `T`'s arguments, added to its subcommand with [`Command::defer`].
#[derive(Debug)]
pub(crate) struct Lazy<T>(pub(crate) T);

impl<T: Args> Args for Lazy<T> {
    fn augment_args(cmd: Command) -> Command {
        cmd.defer(augment::<T>)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(augment_for_update::<T>)
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// `T`'s arguments, keeping the subcommand's about: the subcommand's derive set it (from the
/// variant's doc comment) before this runs, and `T`'s derive would set its own doc comment's
/// over it. Help reads as it did without `Lazy`.
fn augment<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args)
}

fn augment_for_update<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args_for_update)
}

fn keeping_about(cmd: Command, augment: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let reset = |v: Option<StyledStr>| v.map_or(Resettable::Reset, Resettable::Value);
    augment(cmd)
        .about(reset(about))
        .long_about(reset(long_about))
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}
