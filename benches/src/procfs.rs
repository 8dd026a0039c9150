//! Memory and CPU time of a process, read from `/proc` (Linux).

use std::time::Duration;

/// A `kB` field of `/proc/PID/status` (`VmHWM`: peak resident set;
/// `VmRSS`: resident now), in KiB. `None` when the process is gone.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kib(&status, field)
}

fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Clock ticks per second of `/proc/PID/stat` (`getconf CLK_TCK`; 100, the
/// Linux USER_HZ, when that cannot be asked).
pub fn clock_ticks_per_sec() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// CPU time (user + system, all threads) a process has used so far.
pub fn cpu_time(pid: u32, ticks_per_sec: u64) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = parse_stat_ticks(&stat)?;
    Some(Duration::from_micros(ticks * 1_000_000 / ticks_per_sec))
}

fn parse_stat_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may contain spaces and parentheses: count
    // fields after its closing parenthesis. Field 3 (state) is index 0 there,
    // utime (14) index 11, stime (15) index 12.
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_kib() {
        let s = "Name:\ttrellis\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(parse_status_kib(s, "VmHWM"), Some(20480));
        assert_eq!(parse_status_kib(s, "VmRSS"), Some(10240));
        assert_eq!(parse_status_kib(s, "VmSwap"), None);
    }

    #[test]
    fn stat_ticks_are_utime_plus_stime_even_with_a_parenthesis_in_the_name() {
        let s = "4242 (we ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 700 35 0 0 20 0 3 0 1000 0 0";
        assert_eq!(parse_stat_ticks(s), Some(735));
    }

    #[test]
    fn this_process_has_a_peak_resident_set_and_cpu_time() {
        let me = std::process::id();
        assert!(status_kib(me, "VmHWM").unwrap() > 0);
        assert!(cpu_time(me, clock_ticks_per_sec()).is_some());
    }
}
