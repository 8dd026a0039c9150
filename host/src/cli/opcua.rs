//! `trellis opcua`: OPC UA tools. `certs` makes the server's application
//! instance certificate (self-signed) and the store's folders.

use super::Failure;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `trellis opcua`.
#[derive(Debug, Args)]
pub struct OpcUaArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: OpcUaCommand,
}

/// `trellis opcua` subcommands.
#[derive(Debug, Subcommand)]
pub enum OpcUaCommand {
    /// Make the OPC UA server's certificate store in --pki: own/cert.der (a self-signed application
    /// instance certificate, RSA 2048 / SHA-256, for Basic256Sha256), private/private.pem (its key),
    /// trusted/ (client certificates to trust: copy them there) and rejected/ (certificates the
    /// server refused: move one to trusted/ to trust it). The application URI must be the one the
    /// gateway uses: urn:trellis:gateway:HOST, HOST being [opcua] host_name (localhost by default).
    ///
    /// Example: trellis opcua certs --pki /var/lib/trellis/opcua/pki --host gw1.plant.example --host 10.0.0.5
    Certs(CertsArgs),
}

/// Arguments of `trellis opcua certs`.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// The certificate store's directory (created if missing); [opcua] pki_dir.
    #[arg(long, value_name = "DIR")]
    pub pki: PathBuf,
    /// A host name or address clients reach the server by; the first is the application URI's
    /// (urn:trellis:gateway:HOST). Repeatable. Default: localhost.
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// Days of validity.
    #[arg(long, default_value_t = 1825, value_parser = clap::value_parser!(u32).range(1..=36500))]
    pub days: u32,
    /// Replace a certificate and key that exist.
    #[arg(long)]
    pub force: bool,
}

/// Run `trellis opcua …`.
pub async fn run(a: OpcUaArgs) -> Result<(), Failure> {
    match a.command {
        OpcUaCommand::Certs(c) => {
            let hosts = if c.hosts.is_empty() { vec!["localhost".to_owned()] } else { c.hosts };
            let request = trellis_opcua::certs::CertificateRequest {
                application_uri: format!("urn:trellis:gateway:{}", hosts[0]),
                application_name: "Trellis gateway".into(),
                hosts: hosts.clone(),
                days: c.days,
            };
            let path = trellis_opcua::certs::create(&c.pki, &request, c.force)
                .map_err(|message| Failure { code: super::exit::OTHER, message })?;
            println!("{} (application URI {}, hosts {})", path.display(), request.application_uri, hosts.join(", "));
            Ok(())
        }
    }
}
