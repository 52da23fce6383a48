//! Print the report of a run folder as JSON: `report_json RUN_DIR`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("give a run folder")?;
    let run = trace_align::RunFiles::discover(dir)?;
    let start = std::time::Instant::now();
    let report = run_report::Report::build(&run, &run_report::ReportOptions::default())?;
    eprintln!("built in {:.3} s", start.elapsed().as_secs_f64());
    println!("{}", report.to_json());
    Ok(())
}
