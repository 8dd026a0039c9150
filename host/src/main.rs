//! The `trellis` binary: parse arguments, set up logging, run the command,
//! map failures to an exit status and one line on stderr.

use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;
use trellis::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TRELLIS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: not in a pipe, a log file
        // or the journal, and never with NO_COLOR set (no-color.org).
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("trellis: cannot start the runtime: {e}");
            return ExitCode::from(cli::exit::OTHER);
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("trellis: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
