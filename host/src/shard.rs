//! Shards: the threads the gateway's devices run on.
//!
//! A shard is one OS thread running a current-thread tokio runtime. Every
//! task of a device — its station (the port, the transaction state
//! machines, the requests), its COV notifier and its tick — runs on the
//! device's shard, and so does its plugin's guest code. A request is
//! answered on the thread that received it, and nothing on the way wakes
//! another thread. A port's sockets must be created inside the shard
//! ([`Shard::enter`]) so that the shard's own I/O driver polls them.
//!
//! A gateway with several devices spreads them over [`Shards`], one per
//! core by default, round robin: devices on different shards use different
//! cores and never wait on each other; devices on one shard take turns at
//! the granularity of one batch of requests.
//!
//! Must never: run anything that blocks beyond a guest call's deadline
//! (loading, compiling and vetting plugins go to `crate::offload`; the
//! admin socket and configuration live on the main runtime).

use std::future::Future;
use std::num::NonZeroUsize;

/// One thread with its own current-thread runtime; stopped and joined on
/// drop (its tasks are dropped with the runtime).
#[derive(Debug)]
pub struct Shard {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Shard {
    /// Start a shard thread called `name`.
    pub fn start(name: String) -> std::io::Result<Shard> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, handle) = std::sync::mpsc::sync_channel(1);
        // The runtime is built and dropped on the shard's own thread, never
        // inside the caller's runtime (dropping a runtime there panics).
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => return drop(ready.send(Err(e))),
            };
            let _ = ready.send(Ok(runtime.handle().clone()));
            // Serves the spawned tasks until told to stop (or the sender is
            // dropped with the shard).
            let _ = runtime.block_on(stopped);
        })?;
        let handle = handle.recv().map_err(|_| std::io::Error::other("the shard thread ended while starting"))??;
        Ok(Shard { handle, stop: Some(stop), thread: Some(thread) })
    }

    /// Run `task` on this shard.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(task)
    }

    /// The shard's runtime, for work that belongs on its thread (a hot
    /// swap's state hand-over).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Enter the shard's runtime context: sockets created while the guard
    /// lives are polled by the shard's I/O driver.
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.handle.enter()
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

/// The shards of a gateway, devices assigned round robin.
#[derive(Debug)]
pub struct Shards {
    shards: Vec<Shard>,
}

impl Shards {
    /// `count` shards (`None`: one per core the process may use), never
    /// more than `devices`, at least one.
    pub fn start(count: Option<NonZeroUsize>, devices: usize) -> std::io::Result<Shards> {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let n = count.map_or(cores, NonZeroUsize::get).min(devices).max(1);
        let shards = (0..n).map(|i| Shard::start(format!("shard-{i}"))).collect::<std::io::Result<_>>()?;
        Ok(Shards { shards })
    }

    /// The shard device number `index` (0-based, in configuration order)
    /// runs on.
    pub fn for_device(&self, index: usize) -> &Shard {
        &self.shards[index % self.shards.len()]
    }

    /// How many shards there are.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Never true: there is at least one shard.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}
