//! `trellis sim-line`: a simulated RS-485 line whose stations are
//! pseudo-terminals, to try MS/TP between programs without hardware.

use super::Failure;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use trellis_mstp::sim::{Line, LineConfig, Noise, PtyLine};

/// Arguments of `trellis sim-line`.
#[derive(Debug, Args)]
pub struct SimLineArgs {
    /// The line's baud rate: every octet takes 10 bit times.
    #[arg(long, default_value_t = 38_400, value_parser = clap::value_parser!(u32).range(1_200..=4_000_000))]
    pub baud: u32,
    /// How many stations (pseudo-terminals).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub stations: u8,
    /// Write every frame to this pcap file (linktype 165, BACnet MS/TP) for
    /// Wireshark or tshark.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Probability that an octet arrives with one bit flipped.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub noise_flip: f64,
    /// Probability that an octet is lost.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub noise_drop: f64,
    /// Seed of the noise generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Run `trellis sim-line` until Ctrl-C or SIGTERM.
pub async fn run(a: SimLineArgs) -> Result<(), Failure> {
    for (name, p) in [("--noise-flip", a.noise_flip), ("--noise-drop", a.noise_drop)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(Failure::usage(format!("{name} {p}: a probability is between 0 and 1")));
        }
    }
    let mut config = LineConfig::new(a.baud);
    config.noise = Noise { flip: a.noise_flip, drop: a.noise_drop, seed: a.seed };
    let line = Line::new(config);
    if let Some(path) = &a.capture {
        line.capture_file(path).map_err(|e| Failure::from(anyhow::anyhow!("--capture {}: {e}", path.display())))?;
    }
    let ptys = PtyLine::open(&line, usize::from(a.stations))
        .map_err(|e| Failure::from(anyhow::anyhow!("cannot open pseudo-terminals: {e}")))?;
    {
        let mut out = std::io::stdout().lock();
        for (i, path) in ptys.paths().iter().enumerate() {
            let _ = writeln!(out, "station {i}: {path}");
        }
        let _ = out.flush();
    }
    tracing::info!(baud = a.baud, stations = a.stations, "simulated MS/TP line running; Ctrl-C stops it");
    let stop = Arc::new(AtomicBool::new(false));
    let relay = ptys.spawn(stop.clone()).map_err(|e| Failure::from(anyhow::Error::from(e)))?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::from(anyhow::Error::from(e)))?;
    let stopped_by_itself = tokio::select! {
        _ = tokio::signal::ctrl_c() => false,
        _ = term.recv() => false,
        _ = wait_finished(&relay) => true,
    };
    stop.store(true, Ordering::Relaxed);
    let relayed = tokio::task::spawn_blocking(move || relay.join())
        .await
        .map_err(|e| Failure::from(anyhow::Error::from(e)))?
        .map_err(|_| Failure::from(anyhow::anyhow!("the relay thread panicked")))?;
    let flushed = line.flush();
    let s = line.stats();
    let relayed = relayed.map_err(|e| Failure::from(anyhow::anyhow!("the simulated line stopped: {e}")))?;
    eprintln!(
        "sim-line: {} frames, {} octets, {} collisions, {} octets flipped, {} lost to noise; \
         relay: {} octets in, {} out, {} garbled, {} dropped for a pty nobody read, \
         {} frames cut short by their writer's pause in {} pieces",
        s.transmissions,
        s.octets,
        s.collisions,
        s.flipped,
        s.dropped,
        relayed.octets_in,
        relayed.octets_out,
        relayed.garbled,
        relayed.overflowed,
        relayed.cut_short,
        relayed.cut_pieces
    );
    flushed.map_err(|e| Failure::from(anyhow::anyhow!("writing the capture: {e}")))?;
    if stopped_by_itself {
        return Err(Failure::from(anyhow::anyhow!("the simulated line stopped by itself")));
    }
    Ok(())
}

async fn wait_finished<T>(thread: &std::thread::JoinHandle<T>) {
    while !thread.is_finished() {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
