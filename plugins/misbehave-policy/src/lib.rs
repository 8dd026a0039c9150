//! Misbehave (policy): a routing policy that fails on purpose, for the
//! host's failure tests. It forwards everything, except that an NPDU
//! carrying a request for `service` makes `decide` fail as `failure` says:
//!
//! ```toml
//! service = "write-property"   # the trigger (a confirmed or unconfirmed service)
//! failure = "trap"             # trap | loop | memory | sleep | none
//! ```
//!
//! `drop_service` (optional) is dropped without failing, counted as
//! "dropped on request", to tell a policy's drop from a failure's.

use serde::Deserialize;
use trellis_routing_sdk::{
    ConfirmedServiceChoice, Content, Policy, PolicyInfo, RoutedNpdu, UnconfirmedServiceChoice, Verdict,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    service: Option<String>,
    failure: Option<String>,
    drop_service: Option<String>,
}

/// The policy.
#[derive(Debug)]
pub struct Misbehave {
    trigger: Option<(bool, u8)>,
    failure: String,
    drop: Option<(bool, u8)>,
    decided: u64,
}

fn service(name: Option<&str>) -> Result<Option<(bool, u8)>, String> {
    let Some(name) = name else { return Ok(None) };
    if let Some(c) = ConfirmedServiceChoice::from_name(name) {
        return Ok(Some((true, c.0)));
    }
    UnconfirmedServiceChoice::from_name(name)
        .map(|u| Some((false, u.0)))
        .ok_or_else(|| format!("misbehave-policy: unknown service {name:?}"))
}

fn carries(npdu: &RoutedNpdu<'_>, which: Option<(bool, u8)>) -> bool {
    matches!((npdu.content, which), (Content::Apdu(a), Some((confirmed, s)))
        if a.service == Some(s) && a.pdu_type == if confirmed { 0 } else { 1 })
}

impl Policy for Misbehave {
    fn configure(settings: &str) -> Result<Self, String> {
        let s: Settings = basic_toml::from_str(settings).map_err(|e| format!("misbehave-policy settings: {e}"))?;
        let failure = s.failure.unwrap_or_else(|| "none".into());
        if !["trap", "loop", "memory", "sleep", "none"].contains(&failure.as_str()) {
            return Err(format!("misbehave-policy: unknown failure {failure:?}"));
        }
        Ok(Misbehave {
            trigger: service(s.service.as_deref())?,
            failure,
            drop: service(s.drop_service.as_deref())?,
            decided: 0,
        })
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: "misbehave-policy".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!("fails with {} on its trigger", self.failure),
            drop_reasons: vec!["dropped on request".into()],
        }
    }

    fn decide(&mut self, _now_ms: u64, npdu: &RoutedNpdu<'_>) -> Verdict {
        self.decided += 1;
        if carries(npdu, self.drop) {
            return Verdict::Drop(0);
        }
        if carries(npdu, self.trigger) {
            match self.failure.as_str() {
                "trap" => panic!("misbehave-policy: trapping on request"),
                "loop" => {
                    let mut n = 0u64;
                    loop {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                }
                "memory" => {
                    let mut hoard: Vec<Vec<u8>> = Vec::new();
                    loop {
                        hoard.push(vec![1; 1 << 20]);
                        std::hint::black_box(&hoard);
                    }
                }
                "sleep" => std::thread::sleep(std::time::Duration::from_secs(3600)),
                _ => {}
            }
        }
        Verdict::Forward
    }

    fn export_state(&self) -> Vec<u8> {
        self.decided.to_be_bytes().to_vec()
    }

    fn import_state(&mut self, state: &[u8]) -> Result<(), String> {
        if let Ok(b) = state.try_into() {
            self.decided = u64::from_be_bytes(b);
        }
        Ok(())
    }
}

trellis_routing_sdk::register_policy!(Misbehave);
