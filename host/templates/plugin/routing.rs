//! {{name}}: a Trellis routing policy — asked about every NPDU the gateway's
//! router would send on, it forwards, drops or rejects it.
//!
//! This one drops Who-Is broadcasts beyond `max_who_is_per_minute` (a
//! setting, default 60) and forwards everything else.

use trellis_routing_sdk::{Content, Policy, PolicyInfo, RoutedNpdu, UnconfirmedServiceChoice, Verdict};

/// The policy: a budget of Who-Is per minute.
#[derive(Debug)]
pub struct RateLimit {
    per_minute: u32,
    minute: u64,
    seen: u32,
}

impl Policy for RateLimit {
    fn configure(settings: &str) -> Result<Self, String> {
        // Settings are TOML text from the operator's [[router.policy]]; one key here.
        let mut per_minute = 60;
        for line in settings.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            match line.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("max_who_is_per_minute", v)) => {
                    per_minute = v.parse().map_err(|_| format!("max_who_is_per_minute = {v} is not a number"))?
                }
                _ => return Err(format!("{{name}}: unknown setting {line:?}")),
            }
        }
        Ok(RateLimit { per_minute, minute: 0, seen: 0 })
    }

    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!("at most {} Who-Is a minute", self.per_minute),
            drop_reasons: vec!["Who-Is over budget".into()],
        }
    }

    fn decide(&mut self, now_ms: u64, npdu: &RoutedNpdu<'_>) -> Verdict {
        let who_is = matches!(npdu.content, Content::Apdu(a)
            if a.pdu_type == 1 && a.service == Some(UnconfirmedServiceChoice::WHO_IS.0));
        if !who_is {
            return Verdict::Forward;
        }
        if now_ms / 60_000 != self.minute {
            (self.minute, self.seen) = (now_ms / 60_000, 0);
        }
        self.seen += 1;
        if self.seen > self.per_minute { Verdict::Drop(0) } else { Verdict::Forward }
    }
}

trellis_routing_sdk::register_policy!(RateLimit);
