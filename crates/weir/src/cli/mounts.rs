//! The options of `weir mounts` (the listing, with findmnt's habits:
//! `-l`, `--tree`, `--ascii`, `--bytes`) and `weir mounts watch`; and the
//! one decision they leave to run time: a tree on a terminal, a list into
//! a pipe.

use clap::{Args, Subcommand};
use weir_mounts::BackendChoice;
use weir_view::mounts_table::{Columns, Style};

use super::{backend_parser, parse_percent};

/// `weir mounts [OPTIONS]` lists; `weir mounts watch` watches. The listing
/// options belong to the listing only, hence the conflict with subcommands.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct MountsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<MountsCommand>,

    #[command(flatten)]
    pub(crate) list: MountsListArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MountsCommand {
    /// Track the mount table in the foreground: log every change and print
    /// a line for it, until SIGINT or SIGTERM.
    Watch(MountsWatchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct MountsWatchArgs {
    /// How to watch: fanotify (mount events), mountinfo (re-reading
    /// /proc/self/mountinfo whenever it changes), or auto (fanotify if
    /// available).
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = backend_parser())]
    pub(crate) backend: BackendChoice,

    /// The share of one CPU, in percent, that whole-table readings may use.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0, value_parser = parse_percent)]
    pub(crate) budget: f64,

    /// Compare the whole table this often even when nothing announced a
    /// change (propagation changes announce nothing); 0 turns it off.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub(crate) audit_secs: u64,
}

#[derive(Debug, Args)]
pub(crate) struct MountsListArgs {
    /// Print a JSON array, one object per mount.
    #[arg(long)]
    pub(crate) json: bool,

    /// Columns, comma-separated, case-insensitive: ID, PARENT, OLD_ID,
    /// TARGET, FSROOT, SOURCE, FSTYPE, OPTIONS, VFS_OPTIONS, FS_OPTIONS,
    /// PROPAGATION, MAJ:MIN, SIZE, AVAIL, USED, USE%, UUID, LABEL.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "COLUMNS",
        default_value = "TARGET,SOURCE,FSTYPE,OPTIONS",
        value_parser = parse_columns
    )]
    pub(crate) columns: ColumnsArg,

    /// A flat list, one mount per line by id (the default when stdout is
    /// not a terminal).
    #[arg(short, long, conflicts_with = "tree")]
    pub(crate) list: bool,

    /// findmnt's tree, each mount under its parent, even into a pipe (the
    /// default on a terminal).
    #[arg(long)]
    pub(crate) tree: bool,

    /// Draw the tree with ASCII characters.
    #[arg(short, long)]
    pub(crate) ascii: bool,

    /// SIZE, AVAIL and USED in bytes rather than 1.9G.
    #[arg(short, long)]
    pub(crate) bytes: bool,

    /// How to read the table: fanotify (listmount + statmount), mountinfo
    /// (/proc/self/mountinfo), or auto (fanotify if available) [default:
    /// auto]. Given, it reads the table directly, without the daemon.
    #[arg(long, value_name = "BACKEND", value_parser = backend_parser())]
    pub(crate) backend: Option<BackendChoice>,

    /// Say on stderr which backend was used, and why if it fell back.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

impl MountsListArgs {
    /// How the table is drawn. findmnt always draws its tree; weir draws
    /// it only on a terminal (or with `--tree`), so that scripts reading
    /// `weir mounts` from a pipe keep the list they always got.
    pub(crate) fn style(&self, stdout_is_terminal: bool) -> Style {
        Style {
            tree: !self.list && (self.tree || stdout_is_terminal),
            ascii: self.ascii,
            bytes: self.bytes,
        }
    }
}

/// `-o COLUMNS`: the columns, and the words as given, which are passed on
/// to the daemon (it parses them the same way).
#[derive(Clone, Debug)]
pub(crate) struct ColumnsArg {
    /// The argument as given.
    pub(crate) text: String,
    /// The columns it names.
    pub(crate) columns: Columns,
}

fn parse_columns(s: &str) -> Result<ColumnsArg, String> {
    Ok(ColumnsArg {
        text: s.to_owned(),
        columns: Columns::parse(s).map_err(|e| e.to_string())?,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn style(args: &[&str], terminal: bool) -> Option<(bool, bool, bool)> {
        let cli = Cli::try_parse_from(args).ok()?;
        let Command::Mounts(m) = cli.command else {
            panic!("not mounts: {:?}", cli.command);
        };
        let s = m.list.style(terminal);
        Some((s.tree, s.ascii, s.bytes))
    }

    #[test]
    fn a_tree_on_a_terminal_a_list_into_a_pipe() {
        assert_eq!(style(&["weir", "mounts"], true), Some((true, false, false)));
        assert_eq!(
            style(&["weir", "mounts"], false),
            Some((false, false, false))
        );
        assert_eq!(
            style(&["weir", "mounts", "-l"], true),
            Some((false, false, false))
        );
        assert_eq!(
            style(&["weir", "mounts", "--tree", "-a", "-b"], false),
            Some((true, true, true))
        );
        assert_eq!(
            style(&["weir", "mounts", "--list", "--ascii", "--bytes"], true),
            Some((false, true, true))
        );
        assert_eq!(style(&["weir", "mounts", "-l", "--tree"], true), None);
        assert_eq!(
            style(&["weir", "mounts", "-o", "target,size,use%"], false),
            Some((false, false, false))
        );
    }
}
