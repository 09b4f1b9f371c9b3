//! `citeflow serve --config FILE`: the flags of `citeflow serve` in a TOML file, keyed by their
//! long names (`max-sources = 64`, `api-key = ["a", "b"]`, `allow-no-auth = true`). A value is
//! taken from the file only when neither its flag nor its environment variable gave one:
//! flag > environment > file > default. A key that is not a flag is an error naming it.
//! `--print-config` prints the effective settings in the same form, with where each came from.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// Flags a file may not set.
const NOT_IN_FILE: [&str; 3] = ["config", "print-config", "help"];

/// Flags whose values are secrets: printed as `"***"`.
const SECRET: [&str; 2] = ["api-key", "upstream-api-key"];

/// The extra command-line arguments that give `serve`'s flags the file's values, for the
/// flags `matches` (the command line and environment) left at their default.
///
/// # Errors
/// The file cannot be read or is not TOML; a key is not a flag of `citeflow serve`; a value
/// has the wrong type for its flag.
pub(crate) fn file_args(
    file: &Path,
    serve: &Command,
    matches: &ArgMatches,
) -> anyhow::Result<Vec<OsString>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the config file {}", file.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not a valid TOML file", file.display()))?;
    let mut out = Vec::new();
    for (key, value) in &table {
        let arg = serve
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && !NOT_IN_FILE.contains(&key.as_str()))
            .with_context(|| {
                format!(
                    "{}: unknown key `{key}`: the keys are the long flags of `citeflow serve` \
                     (see `citeflow serve --help`)",
                    file.display()
                )
            })?;
        let given = matches!(
            matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if given {
            continue;
        }
        let flag = OsString::from(format!("--{key}"));
        let wrong = |what: &str| {
            anyhow::anyhow!(
                "{}: `{key}` must be {what}, not {}",
                file.display(),
                value.type_str()
            )
        };
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(b)) => {
                if *b {
                    out.push(flag);
                }
            }
            (ArgAction::SetTrue, _) => return Err(wrong("true or false")),
            (ArgAction::Append, toml::Value::Array(items)) => {
                for item in items {
                    out.push(flag.clone());
                    out.push(scalar(item).ok_or_else(|| wrong("an array of strings"))?);
                }
            }
            (ArgAction::Append, v) => {
                out.push(flag);
                out.push(scalar(v).ok_or_else(|| wrong("a string or an array"))?);
            }
            (_, v) => {
                out.push(flag);
                out.push(scalar(v).ok_or_else(|| wrong("a string or a number"))?);
            }
        }
    }
    Ok(out)
}

/// A string, integer or float as a flag's value.
fn scalar(v: &toml::Value) -> Option<OsString> {
    match v {
        toml::Value::String(s) => Some(s.into()),
        toml::Value::Integer(i) => Some(i.to_string().into()),
        toml::Value::Float(f) => Some(f.to_string().into()),
        _ => None,
    }
}

/// The effective settings of `serve` as TOML, each with a comment naming where it came from
/// (flag, environment, file, default); flags without a value are left out.
pub(crate) fn print(serve: &Command, matches: &ArgMatches, from_file: &[String]) -> String {
    let mut out = String::new();
    for arg in serve.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if NOT_IN_FILE.contains(&long) {
            continue;
        }
        let id = arg.get_id().as_str();
        let Some(raw) = matches.get_raw(id) else {
            // No value: the default its help names (`[default: 65536]`), when there is one.
            if let Some(d) = help_default(arg) {
                if d.parse::<f64>().is_ok() {
                    out.push_str(&format!("{long} = {d}  # default\n"));
                } else {
                    out.push_str(&format!("# {long}: {d}  (default)\n"));
                }
            }
            continue;
        };
        let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
        let render = |v: &str| {
            if SECRET.contains(&long) {
                "\"***\"".to_owned()
            } else if v.parse::<f64>().is_ok() || v == "true" || v == "false" {
                v.to_owned()
            } else {
                toml::Value::String(v.to_owned()).to_string()
            }
        };
        let value = match arg.get_action() {
            ArgAction::SetTrue => values.first().cloned().unwrap_or_default(),
            ArgAction::Append => format!(
                "[{}]",
                values
                    .iter()
                    .map(|v| render(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => values.first().map(|v| render(v)).unwrap_or_default(),
        };
        let source = match matches.value_source(id) {
            Some(ValueSource::CommandLine) if from_file.iter().any(|k| k == long) => "file",
            Some(ValueSource::CommandLine) => "flag",
            Some(ValueSource::EnvVariable) => "environment",
            _ => "default",
        };
        if matches!(arg.get_action(), ArgAction::SetTrue) && value == "false" && source == "default"
        {
            continue;
        }
        out.push_str(&format!("{long} = {value}  # {source}\n"));
    }
    out
}

/// The keys a file gave, from the arguments [`file_args`] made.
pub(crate) fn keys_of(args: &[OsString]) -> Vec<String> {
    args.iter()
        .filter_map(|a| a.to_str()?.strip_prefix("--").map(str::to_owned))
        .collect()
}

/// The default a flag's help text names: `[default: 65536]` → `65536`.
fn help_default(arg: &clap::Arg) -> Option<String> {
    let help = arg.get_help()?.to_string();
    let start = help.find("[default: ")? + "[default: ".len();
    let end = help[start..].find(']')? + start;
    Some(
        help[start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    )
}
