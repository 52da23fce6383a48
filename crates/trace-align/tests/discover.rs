//! A run folder is every profiler trace below it, told by content, each
//! trace's node read from the file; what is not a trace is left out with
//! the reason, or refused when named.

use std::path::{Path, PathBuf};

use trace_align::{FindOptions, NodeId, NodeOrigin, NotTrace, RunError, RunFiles};

fn gloo_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kineto-gloo/n2_gloo_100steps")
}

/// The two ranks of the gloo run copied into `dir` as `names`.
fn copy_ranks(dir: &Path, names: [&str; 2]) -> Vec<PathBuf> {
    (0..2)
        .map(|r| {
            let to = dir.join(names[r]);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(gloo_run().join(format!("rank{r}.pt.trace.json.gz")), &to).unwrap();
            to
        })
        .collect()
}

#[test]
fn traces_below_a_folder_are_found_by_content_and_the_rest_left_out_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let traces = copy_ranks(
        dir.path(),
        ["a/host_7.1.pt.trace.json.gz", "b/c/profile.json.gz"],
    );
    std::fs::write(dir.path().join("run.json"), br#"{"steps": 3}"#).unwrap();
    std::fs::write(dir.path().join("list.json"), b"[1, 2]").unwrap();
    std::fs::write(
        dir.path().join("graph.json"),
        br#"{"schema": "1.0.1", "pid": 1, "nodes": []}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"not looked at").unwrap();
    let run = RunFiles::discover(dir.path()).unwrap();
    assert_eq!(run.nodes.len(), 2);
    for (r, trace) in traces.iter().enumerate() {
        let files = &run.nodes[&NodeId(r as u32)];
        assert_eq!(&files.trace, trace);
        assert_eq!(files.origin, NodeOrigin::DistributedInfo);
        assert_eq!(files.host.as_deref(), Some("vm"));
    }
    let why = |name: &str| {
        run.skipped
            .iter()
            .find(|s| s.path.ends_with(name))
            .map(|s| s.why.clone())
    };
    assert_eq!(why("run.json"), Some(NotTrace::OtherJson));
    assert_eq!(why("list.json"), Some(NotTrace::OtherJson));
    assert_eq!(why("graph.json"), Some(NotTrace::ExecutionTrace));
    assert_eq!(why("notes.txt"), None);
    // Named, each is an error saying what it is.
    let err = RunFiles::from_traces([dir.path().join("graph.json")]).unwrap_err();
    assert!(matches!(err, RunError::NotATrace { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("graph.json: a PyTorch execution trace"),
        "{err}"
    );
}

/// Two files that claim one rank were once told apart by nothing: an
/// error naming both.
#[test]
fn two_files_claiming_one_rank_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let from = gloo_run().join("rank1.pt.trace.json.gz");
    for name in ["x_1.pt.trace.json.gz", "y_2.pt.trace.json.gz"] {
        std::fs::copy(&from, dir.path().join(name)).unwrap();
    }
    let err = RunFiles::discover(dir.path()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            RunError::TwoTraces {
                node: NodeId(1),
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("x_1.pt.trace.json.gz") && text.contains("y_2.pt.trace.json.gz"),
        "{text}"
    );
}

/// A FIFO in a run folder once blocked the discovery that opened it: it
/// is left out unread, with the reason.
#[cfg(unix)]
#[test]
fn regression_a_fifo_in_a_run_folder_is_left_out_unread() {
    let dir = tempfile::tempdir().unwrap();
    copy_ranks(
        dir.path(),
        ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"],
    );
    let fifo = dir.path().join("rank2.pt.trace.json.gz");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let run = RunFiles::discover(dir.path()).unwrap();
    assert_eq!(run.nodes.len(), 2);
    assert_eq!(run.skipped.len(), 1);
    assert_eq!(run.skipped[0].path, fifo);
    assert_eq!(run.skipped[0].why, NotTrace::NotRegular);
}

/// `--trace N=PATH` wins over what the file says, and the file is not
/// also the node it names.
#[test]
fn a_given_node_id_wins_over_the_files_rank() {
    let dir = tempfile::tempdir().unwrap();
    let traces = copy_ranks(dir.path(), ["h_1.pt.trace.json.gz", "h_2.pt.trace.json.gz"]);
    let mut run = RunFiles::find(&[dir.path()], &FindOptions::default()).unwrap();
    run.set_trace(NodeId(5), traces[1].clone());
    assert_eq!(
        run.nodes.keys().copied().collect::<Vec<_>>(),
        [NodeId(0), NodeId(5)]
    );
    assert_eq!(run.nodes[&NodeId(5)].origin, NodeOrigin::Given);
    assert_eq!(run.nodes[&NodeId(5)].rank, Some(1));
    assert!(run.table().contains("node 5: "), "{}", run.table());
}
