//! The options of `weir mounts` (the listing), as clap derive types, apart
//! from `cli` so that findmnt's habits (`-l`, `--tree`, `--ascii`,
//! `--bytes`) do not crowd it; and the one decision they leave to run
//! time: a tree on a terminal, a list into a pipe.

use clap::Args;
use weir_mounts::BackendChoice;
use weir_view::mounts_table::{Columns, Style};

use crate::cli::backend_parser;

#[derive(Debug, Args)]
pub(crate) struct MountsListArgs {
    /// Print a JSON array, one object per mount.
    #[arg(long)]
    pub(crate) json: bool,

    /// Columns, comma-separated, case-insensitive: ID, PARENT, OLD_ID,
    /// TARGET, ROOT, SOURCE, FSTYPE, OPTIONS, VFS_OPTIONS, FS_OPTIONS,
    /// PROPAGATION, MAJ:MIN, SIZE, AVAIL, USED, USE%.
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
