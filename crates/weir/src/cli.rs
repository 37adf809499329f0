//! The command line, as clap derive types. Parsing only: no command logic.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use weir_log::{RecordType, TypeMask};

/// weir: storage-state engine for Linux.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// The state directory [default: /var/lib/weir for root,
    /// $XDG_STATE_HOME/weir (or ~/.local/state/weir) otherwise].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the daemon: host the changelog until SIGTERM or SIGINT.
    Run,
    /// Work with the changelog.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum LogCommand {
    /// Append each line of stdin as a record and print its index.
    Write(WriteArgs),
    /// Print records.
    Tail(TailArgs),
    /// Manage consumers.
    Consumer {
        #[command(subcommand)]
        command: ConsumerCommand,
    },
    /// Check every record's CRC and the continuity of the index.
    Verify,
    /// Show sizes, indexes and consumers.
    Stats(JsonArg),
}

#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// Record type: a name (MARK, CREAT, ...) or a number 0-65535.
    #[arg(long = "type", value_name = "TYPE", default_value = "MARK", value_parser = parse_type)]
    pub(crate) kind: RecordType,

    /// Print an index only once its record is durable (fsynced).
    #[arg(long)]
    pub(crate) sync: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TailArgs {
    /// Start at this index [default: the oldest record, or the consumer's cursor].
    #[arg(long, value_name = "INDEX")]
    pub(crate) from: Option<u64>,

    /// Start after this consumer's cleared index and apply its mask.
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// Only these types, e.g. `CREAT,UNLNK,200-300` or `all,-MARK`.
    #[arg(long, value_name = "TYPES", value_parser = parse_mask)]
    pub(crate) mask: Option<TypeMask>,

    /// Keep printing records as they are written, until SIGINT or SIGTERM.
    #[arg(short = 'f', long)]
    pub(crate) follow: bool,

    /// One JSON object per line.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConsumerCommand {
    /// Register a consumer and print its id. It starts after the last record.
    Register {
        /// 1-64 characters from [A-Za-z0-9._-].
        name: String,
        /// The types it reads [default: all].
        #[arg(long, value_name = "TYPES", value_parser = parse_mask)]
        mask: Option<TypeMask>,
    },
    /// List consumers with their lag.
    List(JsonArg),
    /// Mark records up to INDEX as processed (0: everything so far).
    Clear {
        /// The consumer.
        name: String,
        /// The last processed index.
        index: u64,
    },
    /// Remove a consumer.
    Deregister {
        /// The consumer.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

fn parse_type(s: &str) -> Result<RecordType, String> {
    RecordType::parse(s).map_err(|e| e.to_string())
}

fn parse_mask(s: &str) -> Result<TypeMask, String> {
    TypeMask::parse(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_tail_options() {
        let cli = Cli::try_parse_from([
            "weir", "log", "tail", "--mask", "CREAT", "-f", "--from", "7",
        ])
        .unwrap();
        let Command::Log {
            command: LogCommand::Tail(t),
        } = cli.command
        else {
            panic!("not tail: {:?}", cli.command);
        };
        assert_eq!(t.from, Some(7));
        assert!(t.follow && !t.json);
        let m = t.mask.unwrap();
        assert!(m.contains(RecordType::CREAT) && !m.contains(RecordType::MARK));
        assert!(Cli::try_parse_from(["weir", "log", "write", "--type", "NOPE"]).is_err());
    }
}
