//! The commands a user finds: run-level commands first in `--help`, the
//! cluster workflow and the developer tools in groups, the old top-level
//! names still working with a note, the run commands' flags under headings.

use crate::common;

use common::cli;
use predicates::prelude::*;

fn stdout_of(args: &[&str]) -> String {
    let out = cli().args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

/// The command names listed under `Commands:` in `--help`, in order.
fn listed_commands() -> Vec<String> {
    stdout_of(&["--help"])
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn help_lists_run_commands_first_and_no_developer_tool_at_the_top() {
    let listed = listed_commands();
    assert_eq!(&listed[..3], ["merge", "align", "report"], "{listed:?}");
    for hidden in ["summarize", "fit", "apply", "bench", "synth", "score"] {
        assert!(
            !listed.iter().any(|c| c == hidden),
            "{hidden} listed: {listed:?}"
        );
    }
    for group in ["cluster", "dev"] {
        assert!(
            listed.iter().any(|c| c == group),
            "{group} missing: {listed:?}"
        );
    }
    let cluster = stdout_of(&["cluster", "--help"]);
    for c in ["summarize", "fit", "apply"] {
        assert!(cluster.contains(&format!("  {c} ")), "{cluster}");
    }
    let dev = stdout_of(&["dev", "--help"]);
    for c in ["bench", "synth", "score"] {
        assert!(dev.contains(&format!("  {c} ")), "{dev}");
    }
}

#[test]
fn run_commands_group_their_flags_under_headings() {
    for command in ["merge", "align", "report"] {
        let help = stdout_of(&[command, "--help"]);
        for heading in ["Input:", "Clocks:", "Output:", "Checks:"] {
            assert!(
                help.lines().any(|l| l == heading),
                "{command} --help has no {heading}\n{help}"
            );
        }
    }
    let merge = stdout_of(&["merge", "--help"]);
    let under = |flag: &str| {
        merge
            .lines()
            .take_while(|l| !l.contains(flag))
            .filter(|l| l.ends_with(':') && !l.starts_with(' '))
            .last()
            .map(str::to_owned)
    };
    assert_eq!(under("--run-dir").as_deref(), Some("Input:"));
    assert_eq!(under("--clock-source").as_deref(), Some("Clocks:"));
    assert_eq!(under("--output").as_deref(), Some("Output:"));
    assert_eq!(under("--max-violations").as_deref(), Some("Checks:"));
}

#[test]
fn old_top_level_names_still_run_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.xplane.pb");
    for (old, now) in [
        ("apply", "cluster apply"),
        ("summarize", "cluster summarize"),
    ] {
        // The command runs (and fails on a missing input, naming it).
        let mut cmd = cli();
        cmd.arg(old).arg(&missing);
        if old == "apply" {
            cmd.args(["--clocks", "clocks.json"]);
        }
        cmd.arg("-o").arg(dir.path().join("out"));
        cmd.assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "note: `align-cli {old}` is now `align-cli {now}`"
            )))
            .stderr(predicate::str::contains(if old == "apply" {
                "clocks.json"
            } else {
                "missing.xplane.pb"
            }));
    }
    // The same command under its group: no note.
    cli()
        .args(["cluster", "apply"])
        .arg(&missing)
        .args(["--clocks", "clocks.json", "-o"])
        .arg(dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("note:").not());
}

#[test]
fn a_synthetic_run_is_written_by_the_old_and_the_new_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut listings = Vec::new();
    for (args, out) in [(&["synth"][..], "old"), (&["dev", "synth"][..], "new")] {
        cli()
            .args(args)
            .arg(dir.path().join(out))
            .args(["--nodes", "2", "--steps", "20", "--seed", "3"])
            .assert()
            .success();
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(out))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        listings.push(names);
    }
    assert!(
        listings[0].iter().any(|n| n == "node1.xplane.pb"),
        "{listings:?}"
    );
    assert_eq!(listings[0], listings[1]);
}
