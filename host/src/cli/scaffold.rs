//! `trellis plugin new NAME [--kind object-model|routing|app]`: a plugin
//! project that builds as it is — Cargo.toml (a cdylib for wasm32-wasip2,
//! the size-first release profile), `rust-toolchain.toml` (the toolchain
//! and target this gateway was built with), `src/lib.rs` with a working
//! example and a native test, the capability manifest to sign with it, and
//! a README with the build, sign and serve commands.
//!
//! The SDK is a path dependency into the Trellis sources (`--sdk DIR`,
//! else `$TRELLIS_SDK`, else the source tree this binary was built from).
//!
//! Must never: overwrite anything (an existing directory is refused).

use super::{Failure, exit};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// Which kind of plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// A device's BACnet objects (trellis-guest-sdk).
    ObjectModel,
    /// A routing policy for the router (trellis-routing-sdk).
    Routing,
    /// Application logic next to the points (trellis-app-sdk).
    App,
}

/// Arguments of `trellis plugin new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name: lower-case letters, digits and `-`, starting with a letter.
    pub name: String,
    /// What kind of plugin.
    #[arg(long, value_enum, default_value_t = Kind::ObjectModel)]
    pub kind: Kind,
    /// Where to make it: DIR/NAME [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The Trellis source tree with the SDKs [default: $TRELLIS_SDK, else
    /// the tree this binary was built from].
    #[arg(long, value_name = "DIR")]
    pub sdk: Option<PathBuf>,
}

const CARGO: &str = include_str!("../../templates/plugin/Cargo.toml.in");
const README: &str = include_str!("../../templates/plugin/README.md.in");
const MANIFEST: &str = include_str!("../../templates/plugin/manifest.toml.in");
const OBJECT_MODEL: &str = include_str!("../../templates/plugin/object-model.rs");
const ROUTING: &str = include_str!("../../templates/plugin/routing.rs");
const APP: &str = include_str!("../../templates/plugin/app.rs");
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");

fn usage(message: String) -> Failure {
    Failure { code: exit::USAGE, message }
}

/// Is `name` a plugin name we accept (also a valid crate name)?
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && name.len() <= 64
}

/// Where the SDKs are: the flag, `$TRELLIS_SDK`, or the tree this was built from.
fn sdk_root(flag: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = flag.or_else(|| std::env::var_os("TRELLIS_SDK").map(PathBuf::from)).unwrap_or(built_from);
    let root = std::fs::canonicalize(&root).map_err(|e| {
        usage(format!("the Trellis sources {} are not there ({e}); give them with --sdk DIR", root.display()))
    })?;
    if !root.join("guest-sdk/Cargo.toml").is_file() {
        return Err(usage(format!("{} has no guest-sdk/: give the Trellis sources with --sdk DIR", root.display())));
    }
    Ok(root)
}

/// `text` inside a TOML basic string.
fn toml_escaped(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Make the project; prints where and what next.
pub fn run(a: NewArgs) -> Result<(), Failure> {
    if !valid_name(&a.name) {
        return Err(usage(format!(
            "`{}` is not a plugin name: lower-case letters, digits and `-`, starting with a letter",
            a.name
        )));
    }
    let sdk = sdk_root(a.sdk)?;
    let dir = a.dir.unwrap_or_else(|| PathBuf::from(".")).join(&a.name);
    if dir.exists() {
        return Err(usage(format!("{} exists already; nothing was written", dir.display())));
    }
    let name = a.name.as_str();
    let crate_name = name.replace('-', "_");
    let (sdk_crate, sdk_dir, source, kind_text, summary) = match a.kind {
        Kind::ObjectModel => {
            ("trellis-guest-sdk", "guest-sdk", OBJECT_MODEL, "object-model", "A setpoint and a temperature")
        }
        Kind::Routing => ("trellis-routing-sdk", "guest-routing-sdk", ROUTING, "routing-policy", "A Who-Is budget"),
        Kind::App => ("trellis-app-sdk", "guest-app-sdk", APP, "application", "Logs a point's changes"),
    };
    let serve = match a.kind {
        Kind::ObjectModel => format!(
            "```toml\n[[device]]\nplugin = \"{name}.wasm\"   # beside {name}.wasm.sig and {name}.manifest.toml\nport = 47808\n\n\
             [policy]\ntrusted_keys = [\"<the hex in my-signing-key.pub>\"]\n```\n\n```sh\ntrellis run --config gateway.toml\n```"
        ),
        Kind::Routing => format!(
            "```toml\n[[router.port]]\nbind = \"127.0.0.1\"\nport = 47808\nnetwork = 1\n\n[[router.policy]]\n\
             plugin = \"{name}.wasm\"\non_failure = \"open\"\nsettings = {{ max_who_is_per_minute = 60 }}\n\n\
             [policy]\ntrusted_keys = [\"<the hex in my-signing-key.pub>\"]\n```\n\n```sh\ntrellis run --config gateway.toml\n```"
        ),
        Kind::App => format!(
            "```toml\n[[device]]\ninstance = 1001\nplugin = \"builtin:demo-building\"\n\n[[app]]\nname = \"{name}\"\n\
             plugin = \"{name}.wasm\"\nread = [\"1001/*\"]\nsettings = {{ point = \"1001/analog-input,1\" }}\n\n\
             [policy]\ntrusted_keys = [\"<the hex in my-signing-key.pub>\"]\n```\n\n```sh\ntrellis run --config gateway.toml\n```"
        ),
    };
    let swap = match a.kind {
        Kind::ObjectModel => {
            format!("`trellis plugin swap DEVICE {name}.wasm`, or drop it on the console's Plugins page.")
        }
        Kind::Routing => format!("`trellis plugin swap-policy 1 {name}.wasm`."),
        Kind::App => format!("`trellis plugin swap-app {name} {name}.wasm`."),
    };
    let app_asks =
        if a.kind == Kind::App { "\n[app]\nread = [\"*/*\"]    # the points it may ever read and watch\n" } else { "" };
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{sdk_crate}}", sdk_crate)
            .replace("{{sdk_path}}", &toml_escaped(&sdk.join(sdk_dir).display().to_string()))
            .replace("{{kind_text}}", kind_text)
            .replace("{{summary}}", summary)
            .replace("{{serve}}", &serve)
            .replace("{{swap}}", &swap)
            .replace("{{max_objects}}", if a.kind == Kind::ObjectModel { "100" } else { "0" })
            .replace("{{app_asks}}", app_asks)
    };
    let files = [
        ("Cargo.toml", fill(CARGO)),
        ("README.md", fill(README)),
        (&format!("{name}.manifest.toml")[..], fill(MANIFEST)),
        ("rust-toolchain.toml", TOOLCHAIN.to_string()),
        ("src/lib.rs", fill(source)),
        (".gitignore", "target/\n*.wasm\n".to_string()),
    ];
    // create_dir: fails if someone made it meanwhile; create_new: never overwrites.
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| usage(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::create_dir(&dir).map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
    std::fs::create_dir(dir.join("src")).map_err(|e| usage(format!("cannot create {}/src: {e}", dir.display())))?;
    for (file, text) in files {
        let path = dir.join(file);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        written.map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    }
    println!("{} ({kind_text} plugin) in {}", name, dir.display());
    println!(
        "next: cd {} && cargo build --release --target wasm32-wasip2   (README.md: sign and serve)",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_are_crate_names_in_lower_case() {
        assert!(valid_name("boiler-plant2"));
        assert!(!valid_name("Boiler"));
        assert!(!valid_name("2boilers"));
        assert!(!valid_name("boiler_plant"));
        assert!(!valid_name("boiler-"));
        assert!(!valid_name("../x"));
    }
}
