//! The plugins `trellis run` loads: a device's object model and a
//! routing policy, each vetted (signature, manifest, `[policy]`) unless
//! built in; the engine's instance pool; a watched plugin file; the tick
//! that drives a model's time.

use super::*;

/// The engine's instance pool, sized for `devices`: an instance each, a
/// second for each during a hot swap, and a few spare (never fewer than the
/// default 16); each slot as large as the largest device's memory limit.
pub(super) fn pool_for(config: &Config) -> crate::plugin::PoolConfig {
    let (devices, policies) = (&config.devices, config.router.as_ref().map_or(&[][..], |r| &r.policies[..]));
    let default = crate::plugin::PoolConfig::default();
    let largest = devices.iter().map(|d| (d.memory_mb as usize) << 20).max().unwrap_or(0);
    // Two slots per plugin: a hot swap runs the old and the new for a moment.
    let plugins = devices.len() + policies.len();
    crate::plugin::PoolConfig {
        max_instances: default.max_instances.max(u32::try_from(plugins * 2 + 4).unwrap_or(u32::MAX)),
        limits: crate::plugin::Limits { memory_bytes: default.limits.memory_bytes.max(largest), ..default.limits },
    }
}

pub(super) async fn start_device(
    engine: &PluginEngine,
    d: &DeviceSection,
    index: usize,
    base: &Path,
    policy: &PolicySection,
) -> anyhow::Result<(PluginModel, trellis_bip::BipConfig, DeviceConfig, PluginConfig, crate::admin::Provenance)> {
    let bip = trellis_bip::BipConfig::from_cidr(&d.bind, d.port).map_err(|e| anyhow::anyhow!("bind: {e}"))?;
    let mut pc = PluginConfig::new(format!("device{}:{}", index + 1, d.plugin));
    // Relative to the configuration file, like every other path in it.
    pc.data_dir = d.data_dir.as_ref().map(|p| if p.is_absolute() { p.clone() } else { base.join(p) });
    pc.limits.memory_bytes = (d.memory_mb as usize) << 20;
    pc.deadline = Duration::from_millis(d.deadline_ms);
    let base_config = pc.clone();
    let plugin = d.plugin_ref(base)?;
    let engine = engine.clone();
    // Reading, checking and compiling run off the runtime, each under a time
    // limit (crate::offload): no plugin file can stall start-up forever.
    let provenance;
    let (source, granted) = match plugin {
        PluginRef::Builtin(name @ "demo-building") => {
            provenance = crate::admin::Provenance::builtin(&format!("builtin:{name}"));
            (Source::Bytes(builtin::DEMO_BUILDING), None)
        }
        PluginRef::Builtin(name) => {
            provenance = crate::admin::Provenance::builtin(&format!("builtin:{name}"));
            (Source::File(PathBuf::from(builtin::BULK_OBJECTS_PATH)), None)
        }
        PluginRef::File(path) => {
            // ---- signed plugins and capabilities (issue #3 item 9): a plugin FILE loads only as
            // plugin::policy grants it (built-ins are trusted by construction); the bytes
            // checked are the bytes loaded.
            let (rules, what) = (policy.clone(), format!("vetting {}", path.display()));
            let shown = path.clone();
            let (component, caps) =
                offload::run(what, VET_TIME_LIMIT, move || policy::check_file(&path, &rules)).await??;
            provenance = crate::admin::Provenance::of_file(&shown, &component, &caps);
            caps.apply(&mut pc, d.memory_mb);
            (Source::Vetted(component), Some(caps))
        }
    };
    let what = format!("loading plugin {}", pc.name);
    let model = offload::run(what, LOAD_TIME_LIMIT, move || match &source {
        Source::Bytes(bytes) => PluginModel::load(&engine, *bytes, pc),
        Source::File(path) => PluginModel::load(&engine, path.as_path(), pc),
        Source::Vetted(component) => PluginModel::load(&engine, &component[..], pc),
    })
    .await?
    .context("loading the plugin")?;
    // File objects are writable as the plugin's data directory is: a
    // built-in runs with the operator's configuration as it is, a plugin
    // file as its manifest asked and the policy granted.
    let files_may_write = granted.as_ref().is_none_or(|caps| caps.data_dir == policy::DataAccess::Write);
    if let Some(caps) = &granted {
        caps.check_objects(model.objects().await.context("listing the plugin's objects")?.len())?;
    } // ---- end signed plugins
    let granted_caps = granted;
    let mut limits = d.limits.resolve().with_context(|| format!("device {}", index + 1))?;
    if let Some(caps) = &granted_caps {
        // Objects a client creates count against the manifest's ceiling too.
        limits.max_objects = limits.max_objects.min(caps.max_objects as usize);
    }
    let files = d
        .files
        .iter()
        .map(|f| f.resolve(files_may_write))
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}", index + 1))?;
    anyhow::ensure!(
        files.is_empty() || base_config.data_dir.is_some(),
        "device {}: [[device.file]] needs the device's data_dir (the files live there)",
        index + 1
    );
    let notification_classes = d
        .notification_classes
        .iter()
        .map(|c| c.resolve())
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}", index + 1))?;
    let mut classes: Vec<u32> = notification_classes.iter().map(|c| c.instance).collect();
    classes.sort_unstable();
    if let Some(w) = classes.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!("device {}: [[device.notification_class]] instance {} is listed twice", index + 1, w[0]);
    }
    let schedules = d
        .schedules
        .iter()
        .map(|s| s.resolve())
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}", index + 1))?;
    let calendars = d
        .calendars
        .iter()
        .map(|c| c.resolve())
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}", index + 1))?;
    for (what, mut instances) in [
        ("schedule", schedules.iter().map(|s| s.instance).collect::<Vec<_>>()),
        ("calendar", calendars.iter().map(|c| c.instance).collect()),
    ] {
        instances.sort_unstable();
        if let Some(w) = instances.windows(2).find(|w| w[0] == w[1]) {
            anyhow::bail!("device {}: [[device.{what}]] instance {} is listed twice", index + 1, w[0]);
        }
    }
    anyhow::ensure!(
        d.restart_notification_recipients.len() <= trellis_server::restart::MAX_RECIPIENTS,
        "device {}: at most {} restart_notification_recipients",
        index + 1,
        trellis_server::restart::MAX_RECIPIENTS
    );
    let restart_recipients = d
        .restart_notification_recipients
        .iter()
        .map(|r| crate::notification_config::restart_recipient(r))
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}: restart_notification_recipients", index + 1))?;
    let creatable = d
        .create_objects
        .iter()
        .map(|t| crate::config::creatable_type(t))
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("device {}: create_objects", index + 1))?;
    // The model's types need the plugin's consent too (built-ins are
    // trusted): a device that lists one for a plugin that does not ask for
    // it refuses to start, rather than answer every CreateObject with an
    // error the operator did not mean.
    if let (Some(caps), Some(t)) =
        (&granted_caps, creatable.iter().find(|t| !trellis_server::schedule::HOST_CREATABLE.contains(t)))
        && !caps.create_objects
    {
        anyhow::bail!(
            "device {}: create_objects lists {t}, but the manifest of {} does not ask for create_objects",
            index + 1,
            caps.file
        );
    }
    let config = DeviceConfig {
        instance: d.instance,
        limits,
        password: d.password.clone(),
        accept_time_sync: d.accept_time_sync,
        files,
        data_dir: base_config.data_dir.clone(),
        notification_classes,
        schedules,
        calendars,
        restart_recipients,
        creatable,
        ..Default::default()
    };
    Ok((model, bip, config, base_config, provenance))
}

/// Load `[[router.policy]]` number `index + 1`: a built-in, or a file
/// vetted like any plugin file (signature, manifest, `[policy]`).
pub(super) async fn start_policy(
    engine: &PluginEngine,
    p: &RoutingPolicySection,
    index: usize,
    base: &Path,
    rules: &PolicySection,
) -> anyhow::Result<(PolicyPlugin, PolicyConfig)> {
    let name = format!("policy{}:{}", index + 1, p.plugin);
    let mut pc = PolicyConfig::new(name.clone(), p.settings_text());
    pc.on_failure = if p.fails_open()? { FailMode::Open } else { FailMode::Closed };
    pc.deadline = Duration::from_millis(p.deadline_ms);
    pc.limits.memory_bytes = (p.memory_mb as usize) << 20;
    let source = match p.plugin_ref(base)? {
        PluginRef::Builtin(b) => {
            Source::Bytes(builtin::routing_policy(b).with_context(|| format!("no built-in routing policy {b}"))?)
        }
        PluginRef::File(path) => {
            let (rules, what) = (rules.clone(), format!("vetting {}", path.display()));
            let (component, caps) = offload::run(what, VET_TIME_LIMIT, move || policy::check_file(&path, &rules))
                .await?
                .with_context(|| format!("router policy {}", index + 1))?;
            let mb = u64::from(caps.memory_mb).min(p.memory_mb);
            pc.limits.memory_bytes = (mb as usize) << 20;
            Source::Vetted(component)
        }
    };
    let engine = engine.clone();
    let what = format!("loading routing policy {name}");
    let base_config = pc.clone();
    let policy = offload::run(what, LOAD_TIME_LIMIT, move || match &source {
        Source::Bytes(bytes) => PolicyPlugin::load(&engine, *bytes, pc),
        Source::File(path) => PolicyPlugin::load(&engine, path.as_path(), pc),
        Source::Vetted(component) => PolicyPlugin::load(&engine, &component[..], pc),
    })
    .await?
    .with_context(|| format!("router policy {}", index + 1))?;
    let status = policy.status();
    eprintln!(
        "trellis: router: policy {} {} — {} (fails {})",
        status.info.name, status.info.version, status.info.summary, status.on_failure
    );
    Ok((policy, base_config))
}

/// Where a device's component comes from, once vetted.
pub(super) enum Source {
    Bytes(&'static [u8]),
    File(PathBuf),
    Vetted(Vec<u8>),
}

/// Swap `device`'s plugin whenever `file` changes (polled every 2 s; a file
/// still being written is retried at the next change or poll).
pub(super) async fn watch(
    admin: std::sync::Arc<crate::admin::Admin>,
    device: u32,
    file: PathBuf,
) -> anyhow::Result<()> {
    let stamp = |f: &Path| std::fs::metadata(f).and_then(|m| m.modified()).ok();
    let mut last = stamp(&file);
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = stamp(&file);
        if now.is_none() || now == last {
            continue;
        }
        last = now;
        match admin.handle(crate::admin::Request::Swap { device, file: file.clone() }).await {
            crate::admin::Response::Swapped { plugin, pause_us, .. } => {
                eprintln!("trellis: device {device}: {} changed, now {plugin} (pause {pause_us:.0} µs)", file.display())
            }
            crate::admin::Response::Failed { error } => {
                eprintln!("trellis: device {device}: {} changed but was not loaded: {error}", file.display())
            }
            crate::admin::Response::Status { .. }
            | crate::admin::Response::PolicySwapped { .. }
            | crate::admin::Response::AppSwapped { .. } => {}
        }
    }
}

/// Drive the model's time-based behaviour.
pub(super) async fn tick(model: PluginModel, every: Duration) -> anyhow::Result<()> {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        // The plugin's own clock: time synchronization moves it.
        if let Err(e) = model.tick(model.clock().now()).await {
            tracing::warn!(plugin = model.name(), error = %e, "tick failed");
        }
    }
}
