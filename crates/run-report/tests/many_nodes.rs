//! A run of many nodes: the page stays small (the outliers, compact
//! views, every node folded) and the JSON names every node without the
//! per-node series.

use run_report::{JSON_SERIES_NODES, MANY_NODES, Report, ReportOptions, render_html};
use trace_align::RunFiles;
use trace_synth::{Straggler, SynthConfig, synthesize};

#[test]
fn a_run_of_many_nodes_gets_a_page_with_every_node_one_click_away() {
    let nodes = JSON_SERIES_NODES as u32 + 1;
    let dir = tempfile::tempdir().unwrap();
    let config = SynthConfig {
        nodes,
        gpus_per_node: 1,
        steps: 4,
        kernels_per_stream: 1,
        session_spacing_ms: 1.0,
        straggler: Some(Straggler {
            node: 7,
            delay_ns: 300_000,
        }),
        ..SynthConfig::default()
    };
    synthesize(&config, dir.path()).unwrap();
    let run = RunFiles::discover(dir.path()).unwrap();
    let report = Report::build(&run, &ReportOptions::default()).unwrap();
    assert!(report.nodes.len() > MANY_NODES);
    let page = render_html(&report);
    // One chart per question, not one per node.
    let charts = page.matches("<svg").count();
    assert!(charts <= 40, "{charts} charts");
    for n in 0..nodes {
        assert!(
            page.contains(&format!("<details id=\"node-{n}\">")),
            "node {n}"
        );
    }
    assert!(page.contains("<h2 id=\"outliers\">"));
    // The run first: the critical path and outliers before the clocks.
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s}"));
    assert!(at("id=\"critical-path\"") < at("id=\"outliers\""));
    assert!(at("id=\"outliers\"") < at("1. Clocks"));
    assert!(at("1. Clocks") < at("id=\"every-node\""));
    assert!(page.contains("wait for rank <a href=\"#node-7\">7</a>"));
    assert!(!page.contains("http") && !page.contains("<script"));

    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["nodes"].as_array().unwrap().len(), nodes as usize);
    let clocks = json["clocks"]["nodes"].as_array().unwrap();
    assert_eq!(clocks.len(), nodes as usize);
    assert!(
        clocks
            .iter()
            .all(|c| c["samples"].as_array().unwrap().is_empty())
    );
    assert!(
        json["series_left_out"]
            .as_str()
            .unwrap()
            .contains("every node is listed")
    );
    assert_eq!(json["critical_path"]["by_node"][0]["node"], 7);
}
