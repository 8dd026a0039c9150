//! The WASI context of one plugin instance: no ambient authority.
//!
//! A plugin gets: no environment variables, no arguments, a closed stdin,
//! stdout and stderr captured line by line into `tracing` (tagged with the
//! plugin's name, rate-limited), the host's adjustable wall clock, and at most
//! one preopened directory, its own data directory, seen as `/data` — read-only
//! unless its configuration grants writes. Sockets and name lookup are denied:
//! TCP and UDP are switched off and every address check answers no.
//!
//! This module must never grant anything beyond that list: no inherited
//! stdio, environment or network, and no directory other than the plugin's
//! own.

use super::log::{LineSplitter, PluginLog};
use bytes::Bytes;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tracing::Level;
use trellis_model::HostClock;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// Where the data directory appears inside the plugin.
pub const GUEST_DATA_DIR: &str = "/data";

/// The plugin's view of the host file system.
#[derive(Debug, Clone, Default)]
pub struct DataDir {
    /// Host directory preopened as `/data` in the guest; `None` for no file
    /// system at all.
    pub path: Option<std::path::PathBuf>,
    /// Whether the plugin may create, change and delete files there.
    pub writable: bool,
}

/// Build the context for one instance.
pub fn context(log: &Arc<PluginLog>, clock: &HostClock, data: &DataDir) -> wasmtime::Result<WasiCtx> {
    let mut b = WasiCtxBuilder::new();
    b.stdout(LogStream::new(log.clone(), "stdout", Level::INFO))
        .stderr(LogStream::new(log.clone(), "stderr", Level::WARN))
        .wall_clock(WallClock(clock.clone()))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }))
        // File operations run on the calling thread itself: no hop to the
        // ambient tokio runtime for every read of the plugin's config file.
        .allow_blocking_current_thread(true);
    if let Some(dir) = &data.path {
        preopen(&mut b, dir, data.writable)?;
    }
    Ok(b.build())
}

/// The host's clock as WASI's `wall-clock` (the model crate, which owns
/// [`HostClock`], knows nothing of WASI).
struct WallClock(HostClock);

impl wasmtime_wasi::HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.now().unix_ms)
    }
}

fn preopen(b: &mut WasiCtxBuilder, dir: &Path, writable: bool) -> wasmtime::Result<()> {
    let perms = if writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
    b.preopened_dir(dir, GUEST_DATA_DIR, perms)
        .map_err(|e| wasmtime::format_err!("cannot open plugin data directory {}: {e}", dir.display()))?;
    Ok(())
}

/// stdout or stderr of a plugin: every line becomes a log line.
#[derive(Clone)]
struct LogStream {
    lines: Arc<Mutex<LineSplitter>>,
}

impl LogStream {
    fn new(log: Arc<PluginLog>, source: &'static str, level: Level) -> Self {
        LogStream { lines: Arc::new(Mutex::new(LineSplitter::new(log, source, level))) }
    }

    fn take(&self, bytes: &[u8]) {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner).write(bytes);
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// Writes never block: each is split into lines and logged (or counted as
/// suppressed) at once.
const PERMIT: usize = 64 * 1024;

impl OutputStream for LogStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.take(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LogStream {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.take(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
