//! `trellis sc`: BACnet/SC tools. `certs` writes a test PKI — a CA, a hub
//! certificate and node certificates — to try BACnet/SC out with.

use super::Failure;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `trellis sc`.
#[derive(Debug, Args)]
pub struct ScArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ScCommand,
}

/// `trellis sc` subcommands.
#[derive(Debug, Subcommand)]
pub enum ScCommand {
    /// Write a test PKI for BACnet/SC into --out: ca.pem (the issuer every
    /// side trusts), hub.pem/hub.key (for --hub-host), node1.pem/node1.key …
    /// (keys mode 0600). EC P-256, TLS 1.3 ready. For trying BACnet/SC out
    /// and tests only: a site's CA belongs to its operator.
    ///
    /// Example: trellis sc certs --out pki --hub-host localhost --hub-host 127.0.0.1 --nodes 2
    Certs(CertsArgs),
}

/// Arguments of `trellis sc certs`.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A name or address the hub is reached by (its certificate's subject
    /// alternative names). Repeatable.
    #[arg(long = "hub-host", value_name = "HOST", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
    pub hub_hosts: Vec<String>,
    /// How many node certificates.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub nodes: u32,
    /// Valid until the end of the year this many years from now.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=30))]
    pub years: u16,
}

/// Run `trellis sc`.
pub fn run(a: ScArgs) -> Result<(), Failure> {
    match a.command {
        ScCommand::Certs(c) => {
            let hosts: Vec<&str> = c.hub_hosts.iter().map(String::as_str).collect();
            let written = trellis_sc::pki::write_test_pki(&c.out, &hosts, c.nodes, c.years).map_err(|e| Failure {
                code: super::exit::OTHER,
                message: format!("--out {}: {e}", c.out.display()),
            })?;
            for f in written {
                println!("{}", f.display());
            }
            Ok(())
        }
    }
}
