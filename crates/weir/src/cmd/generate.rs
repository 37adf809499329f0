//! `weir generate`: man pages and shell completions, made from the same
//! clap definition that parses the command line, so they cannot drift from
//! it. A command of the binary (not in its help) rather than a build
//! script: the definition uses the workspace's own types (record types,
//! column lists), which a build script could only reach by compiling them
//! twice, and an installer that has the binary needs nothing else.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateCommand};

/// Runs `weir generate man|completions`.
pub(crate) fn generate(command: GenerateCommand) -> Result<()> {
    match command {
        GenerateCommand::Man { dir } => man(&dir),
        GenerateCommand::Completions { shell, dir } => completions(&shell, &dir),
    }
}

/// One page per command that is not hidden, named after its full command
/// line: weir.1, weir-run.1, weir-log-tail.1, ...
fn man(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing man pages to {}", dir.display()))
}

/// The script under the name its shell loads it by: bash-completion's
/// completions/weir, zsh's site-functions/_weir, fish's weir.fish.
fn completions(shell: &str, dir: &Path) -> Result<()> {
    let (shell, name) = match shell {
        "bash" => (Shell::Bash, "weir"),
        "zsh" => (Shell::Zsh, "_weir"),
        "fish" => (Shell::Fish, "weir.fish"),
        other => bail!("no completions for the shell {other}"),
    };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(name);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "weir", &mut out);
    fs::write(&path, out).with_context(|| format!("writing {}", path.display()))
}
