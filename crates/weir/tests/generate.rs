//! `weir generate`: a man page that parses for every command the help
//! lists, completion scripts that offer every command, and
//! `packaging/install.sh --destdir` putting them where each tool looks.
//! The commands are read from `--help` itself, so a new one is covered
//! without touching this test.

use std::path::{Path, PathBuf};
use std::process::Command;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn run(args: &[&str]) -> String {
    let out = Command::new(WEIR).args(args).output().unwrap();
    assert!(out.status.success(), "weir {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every command path under `weir` (`["log", "tail"]`, ...), from the
/// "Commands:" sections of the help, without clap's `help`.
fn commands(path: &[String]) -> Vec<Vec<String>> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = run(&args);
    let Some(list) = help.split("Commands:\n").nth(1) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for line in list.lines().take_while(|l| l.starts_with("  ")) {
        let name = line.split_whitespace().next().unwrap();
        if name == "help" {
            continue;
        }
        let mut sub = path.to_vec();
        sub.push(name.to_owned());
        found.extend(commands(&sub));
        found.push(sub);
    }
    found
}

fn man_name(path: &[String]) -> String {
    let mut name = String::from("weir");
    for p in path {
        name.push('-');
        name.push_str(p);
    }
    name
}

/// The page's title line names it, section 1; `man -l` renders it when
/// man is installed.
fn check_page(file: &Path, name: &str, man: bool) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let title = text
        .lines()
        .find(|l| l.starts_with(".TH "))
        .unwrap_or_else(|| panic!("{}: no .TH line", file.display()));
    assert!(title.starts_with(&format!(".TH {name} 1 ")), "{title}");
    // Only the string definitions of clap_mangen's preamble come first.
    for line in text.lines().take_while(|l| !l.starts_with(".TH ")) {
        assert!(
            line.starts_with(".ie ") || line.starts_with(".el "),
            "{line}"
        );
    }
    if man {
        let out = Command::new("man")
            .args(["-l", "-P", "cat"])
            .arg(file)
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let rendered = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "man -l {}: {out:?}", file.display());
        assert!(
            rendered.contains("NAME") && rendered.contains(name),
            "{rendered}"
        );
    }
}

fn man_available() -> bool {
    let ok = Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("generate: man is not installed; checking the pages' text only");
    }
    ok
}

#[test]
fn a_man_page_for_every_command_and_completions_that_offer_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    run(&["generate", "man", out.join("man").to_str().unwrap()]);
    for shell in ["bash", "zsh", "fish"] {
        run(&[
            "generate",
            "completions",
            shell,
            out.join("c").to_str().unwrap(),
        ]);
    }

    let all = commands(&[]);
    // The tree as the help shows it today, at least.
    for known in [
        &["run"][..],
        &["log", "tail"],
        &["log", "consumer", "register"],
        &["status"],
    ] {
        let known: Vec<String> = known.iter().map(|s| s.to_string()).collect();
        assert!(all.contains(&known), "{known:?} not in {all:?}");
    }
    let man = man_available();
    check_page(&out.join("man/weir.1"), "weir", man);
    let mut pages = vec![PathBuf::from("weir.1")];
    for path in &all {
        let name = man_name(path);
        check_page(&out.join(format!("man/{name}.1")), &name, man);
        pages.push(PathBuf::from(format!("{name}.1")));
    }
    // Nothing else: no page for the hidden generate command.
    let mut written: Vec<PathBuf> = std::fs::read_dir(out.join("man"))
        .unwrap()
        .map(|e| PathBuf::from(e.unwrap().file_name()))
        .collect();
    written.sort();
    pages.sort();
    assert_eq!(written, pages);

    for script in ["weir", "_weir", "weir.fish"] {
        let text = std::fs::read_to_string(out.join("c").join(script)).unwrap();
        for path in &all {
            let name = path.last().unwrap();
            assert!(
                text.contains(name.as_str()),
                "{script} does not offer {name}"
            );
        }
        assert!(
            !text.contains("generate"),
            "{script} offers the hidden command"
        );
    }
}

#[test]
fn help_does_not_list_generate() {
    assert!(!run(&["--help"]).contains("generate"));
}

#[test]
fn install_sh_stages_pages_and_completions_under_destdir() {
    let dest = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/install.sh");
    let out = Command::new("sh")
        .arg(&script)
        .args(["--prefix", "/usr/local", "--binary", WEIR, "--destdir"])
        .arg(dest.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "install.sh: {out:?}");
    let root = dest.path().join("usr/local");
    for file in [
        "bin/weir",
        "share/man/man1/weir.1",
        "share/man/man1/weir-run.1",
        "share/man/man1/weir-log-tail.1",
        "share/bash-completion/completions/weir",
        "share/zsh/site-functions/_weir",
        "share/fish/vendor_completions.d/weir.fish",
        "lib/sysusers.d/weir.conf",
        "lib/systemd/system/weir.service",
        "lib/systemd/system/weir.socket",
        "share/doc/weir/README.md",
    ] {
        assert!(root.join(file).is_file(), "{file} not staged");
    }
    // The units point at this prefix's binary and documentation.
    for unit in ["weir.service", "weir.socket"] {
        let text = std::fs::read_to_string(root.join("lib/systemd/system").join(unit)).unwrap();
        assert!(
            text.contains("Documentation=file:///usr/local/share/doc/weir/README.md"),
            "{unit}: {text}"
        );
        assert!(text.contains("Documentation=man:weir-run(1)"), "{unit}");
    }
    let service = std::fs::read_to_string(root.join("lib/systemd/system/weir.service")).unwrap();
    assert!(service.contains("ExecStart=/usr/local/bin/weir run"));
}
