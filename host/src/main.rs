//! The `trellis` binary: parse arguments, set up logging, run the command,
//! map failures to an exit status and one line on stderr.

use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use trellis::cli::{self, Cli, LogFormat};

/// Logs to stderr, as text or one JSON object per line, filtered by
/// `TRELLIS_LOG` (default `warn`); and the console's log tail beside them.
fn init_logging(format: LogFormat) {
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_env("TRELLIS_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
    };
    // Colour only for a person at a terminal: not in a pipe, a log file or
    // the journal, and never with NO_COLOR set (no-color.org).
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let stderr = match format {
        LogFormat::Text => {
            tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi).with_filter(filter()).boxed()
        }
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_writer(std::io::stderr)
            .with_filter(filter())
            .boxed(),
    };
    let tail = trellis::http::logs::TailLayer.with_filter(trellis::http::logs::TailLayer::filter());
    tracing_subscriber::registry().with(stderr).with(tail).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.log_format);
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
