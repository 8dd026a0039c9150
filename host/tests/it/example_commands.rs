//! Every command an example's header comment documents, run exactly as
//! written (issue 37): the other example tests move a configuration to free
//! ports, so a documented `trellis whois --global` or `mosquitto -p 1883`
//! could break unnoticed. Here each example gets a network namespace of its
//! own, so the documented defaults (127.0.0.1:47808, 1883, 47843, …) are free,
//! and its commands run in order, as a person in a second shell would type
//! them, in a directory holding a copy of `examples/` (relative paths such as
//! `--config examples/…` and `--out examples/sc-pki` mean what they say).
//!
//! What the harness adds, and only that:
//! - PATH starts with a directory holding a copy of the `trellis` binary (a
//!   documented `setcap` changes the copy), and a `sudo` that runs its
//!   arguments when the test is root and has no sudo;
//! - what a comment presumes but does not document, as a [`Setting`]: a
//!   veth pair named eth1/eth2, a device on an Ethernet segment, the OPC UA
//!   server an OPC UA client example talks to, a remote device;
//! - output goes to files, line-buffered as on a terminal (`stdbuf -oL`);
//! - `/var/lib/trellis` is a scratch directory, bind-mounted in the command's
//!   own mount namespace (the host's is never written);
//! - a command that serves (`trellis run`, `listen`, `sim-line`, `mosquitto`,
//!   `mosquitto_sub`, or one ending in `&`) runs in the background until the
//!   example ends, and the next command waits for it to be ready.
//!
//! Each example's [`Plan`] says what the commands must print; a command with
//! no expectation must still exit 0. An example without a plan fails the
//! test, and so does a plan naming a command that is not documented.

use crate::netns::Namespaces;
use crate::scratch::Scratch;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Programs a documented command line may start with.
const PROGRAMS: &[&str] = &["trellis", "mosquitto", "mosquitto_sub", "mosquitto_pub", "curl", "sudo", "pkill"];

/// The command lines of an example's header comment: lines of the leading
/// comment block indented by three spaces that start with one of
/// [`PROGRAMS`], a trailing `\` joined with the next line, a trailing
/// `# comment` cut off.
pub(crate) fn documented_commands(text: &str) -> Vec<String> {
    let header: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    let mut commands = Vec::new();
    let mut i = 0;
    while i < header.len() {
        let line = header[i];
        i += 1;
        let Some(body) = line.strip_prefix("#   ") else { continue };
        let first = body.split_whitespace().next().unwrap_or("");
        if !PROGRAMS.contains(&first) {
            continue;
        }
        let mut command = without_comment(body).to_string();
        while let Some(head) = command.strip_suffix('\\') {
            let next = header.get(i).and_then(|l| l.strip_prefix('#')).unwrap_or("").trim();
            i += 1;
            command = format!("{} {}", head.trim_end(), without_comment(next));
        }
        commands.push(command.trim().to_string());
    }
    commands
}

/// `line` without a trailing ` # comment` (a `#` inside quotes, as in
/// `-t 'building/#'`, is not one).
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..at].trim_end(),
            _ => {}
        }
        previous = c;
    }
    line.trim_end()
}

#[test]
fn documented_commands_are_found_joined_and_cut_at_their_comment() {
    let text = "# A header.\n#\n#   trellis run --config examples/x.toml\n\
        #   mosquitto_sub -p 1883 -t 'site/#' -v     # site/1001/…\n\
        #   trellis --sc-hub wss://h/ --cert a.pem \\\n#       --key a.key whois   # from SC\n\
        #   rs485 = { mode = \"gpio\" }\n#   # a foreign device registers\n\
        #   trellis --port 47809 listen &      # be the recipient\n[[device]]\n#   trellis not-in-the-header\n";
    assert_eq!(
        documented_commands(text),
        [
            "trellis run --config examples/x.toml",
            "mosquitto_sub -p 1883 -t 'site/#' -v",
            "trellis --sc-hub wss://h/ --cert a.pem --key a.key whois",
            "trellis --port 47809 listen &",
        ]
    );
}

/// What a comment presumes but does not document.
#[derive(Clone, Copy, PartialEq)]
enum Setting {
    /// Nothing beyond the namespace's loopback.
    Loopback,
    /// A veth pair eth1 (MAC 02:00:00:00:75:01, the device's MAC the
    /// comment reads from) and eth2, "a client on another interface of the
    /// segment".
    EthernetPair,
    /// An interface eth1 whose segment holds device 7501 (MAC
    /// 02:00:00:00:75:01): `examples/ethernet.toml` served in a second
    /// namespace.
    EthernetSegmentWith7501,
    /// A PLC that speaks only OPC UA on 127.0.0.1:4841 (the tests' asyncua
    /// server, host/tests/peers/opcua_test_server.py).
    OpcuaServerOn4841,
    /// Device 4001 on 127.0.0.1:47900 and a broker on 1883.
    RemoteDevice4001AndBroker,
}

/// What a command must print (stdout and stderr together).
#[derive(Clone, Copy)]
enum Outcome {
    /// Exits 0 having printed this.
    Prints(&'static str),
    /// Printed this within so many seconds (a foreground command is run
    /// again each second until it does; a background one is watched).
    PrintsWithin(&'static str, u64),
    /// Exits non-zero (or, serving, stops) having printed this: what the
    /// comment says is refused, or a port this machine does not have.
    Fails(&'static str),
}

struct Plan {
    file: &'static str,
    setting: Setting,
    /// A part of a documented command, and what it must print.
    expect: &'static [(&'static str, Outcome)],
}

use Outcome::{Fails, Prints, PrintsWithin};
use Setting::*;

const PLANS: &[Plan] = &[
    Plan {
        file: "alarm-threshold.toml",
        setting: Loopback,
        expect: &[("mosquitto_sub", PrintsWithin("building/alarms/cooling-setpoint {\"state\": \"high\"", 20))],
    },
    Plan {
        file: "alarms.toml",
        setting: Loopback,
        expect: &[
            ("listen", PrintsWithin("analog-input,1 alarm normal -> high-limit", 20)),
            ("events", PrintsWithin("analog-input,1", 20)),
        ],
    },
    Plan { file: "bbmd.toml", setting: Loopback, expect: &[] },
    Plan {
        file: "console.toml",
        setting: Loopback,
        expect: &[("/api/devices", Prints("389001")), ("/metrics", Prints("trellis_"))],
    },
    Plan {
        file: "create-objects.toml",
        setting: Loopback,
        expect: &[("trellis create", Prints("analog-value,3")), ("object-list", Prints("analog-value,3"))],
    },
    Plan {
        file: "ethernet-router.toml",
        setting: EthernetSegmentWith7501,
        expect: &[("device,7501 object-name", Prints("Trellis Demo Building"))],
    },
    Plan {
        file: "ethernet.toml",
        setting: EthernetPair,
        expect: &[("eth2 whois", Prints("7501")), ("eth2 read", Prints("degrees-celsius"))],
    },
    Plan { file: "files.toml", setting: Loopback, expect: &[("file,3", Prints("firmware"))] },
    Plan { file: "hardened-gateway.toml", setting: Loopback, expect: &[] },
    Plan { file: "ipv6-bbmd.toml", setting: Loopback, expect: &[("whois", Prints("601")), ("whois", Prints("602"))] },
    Plan { file: "ipv6.toml", setting: Loopback, expect: &[("read bip6", Prints("degrees-celsius"))] },
    Plan {
        file: "mqtt-mapping.toml",
        setting: Loopback,
        expect: &[("mosquitto_sub", PrintsWithin("site/1001/Zone-Setpoint/set/result", 20))],
    },
    Plan {
        file: "mqtt.toml",
        setting: Loopback,
        expect: &[("mosquitto_sub", PrintsWithin("building/1001/analog-value,1/set/result {\"ok\":true}", 20))],
    },
    // The serial-port examples need their port: here the gateway refuses
    // to start and names it (on `trellis sim-line`'s pseudo-terminals they
    // are exercised by mstp.rs, router.rs and mstp_node.rs).
    Plan {
        file: "mstp-node.toml",
        setting: Loopback,
        expect: &[("trellis run", Fails("/dev/ttyUSB0")), ("device,7805", Fails(""))],
    },
    Plan { file: "mstp-rs485.toml", setting: Loopback, expect: &[("trellis run", Fails("/dev/ttyS1"))] },
    Plan {
        file: "mstp-trunk.toml",
        setting: Loopback,
        expect: &[
            ("sim-line", PrintsWithin("/dev/pts/", 10)),
            ("trellis run", Fails("/dev/ttyUSB0")),
            ("analog-input:1", Fails("")),
        ],
    },
    Plan {
        file: "notification-classes.toml",
        setting: Loopback,
        expect: &[("notification-class,1", Prints("recipient-list"))],
    },
    Plan {
        file: "persistence.toml",
        setting: Loopback,
        expect: &[
            ("priority-array", Prints("null, null, 36, null")),
            ("read 127.0.0.1 analog-value,1 present-value", Prints("36")),
        ],
    },
    Plan {
        file: "opcua-client.toml",
        setting: OpcuaServerOn4841,
        expect: &[("present-value 42", Prints("")), ("read", PrintsWithin("20.5", 15))],
    },
    Plan { file: "opcua-server.toml", setting: Loopback, expect: &[("opcua certs", Prints("cert.der"))] },
    Plan {
        file: "remote-points.toml",
        setting: RemoteDevice4001AndBroker,
        expect: &[("47900", PrintsWithin("23.5", 30)), ("mosquitto_sub", PrintsWithin("\"state\": \"high\"", 30))],
    },
    Plan {
        file: "restart-notification.toml",
        setting: Loopback,
        expect: &[
            ("listen", PrintsWithin("device,389011 cov", 20)),
            ("listen", PrintsWithin("last-restart-reason: warmstart", 20)),
            ("last-restart-reason", Prints("warmstart")),
        ],
    },
    Plan {
        file: "router-policy.toml",
        setting: Loopback,
        expect: &[("present-value 22", Fails("Reject-Message-To-Network for network 2 (security-error)"))],
    },
    Plan {
        file: "router.toml",
        setting: Loopback,
        expect: &[("@2:7f000001bac1", Prints("degrees-celsius")), ("@3:00012c", Prints("degrees-celsius"))],
    },
    Plan { file: "sc-hub.toml", setting: Loopback, expect: &[("whois", PrintsWithin("702", 10))] },
    Plan {
        file: "sc-router.toml",
        setting: Loopback,
        expect: &[
            ("--port 0 whois", Prints("901")),
            ("--port 0 whois", Prints("903")),
            ("--ca examples/sc-pki/ca.pem whois", Prints("901")),
            ("--ca examples/sc-pki/ca.pem whois", Prints("903")),
        ],
    },
    Plan {
        file: "schedule.toml",
        setting: Loopback,
        expect: &[("analog-value,1 present-value", PrintsWithin("21 degrees-celsius", 75))],
    },
    Plan {
        file: "schedules.toml",
        setting: Loopback,
        expect: &[
            ("analog-value,1 present-value", PrintsWithin("21", 10)),
            ("weekly-schedule", Prints("07:00")),
            ("trellis create", Prints("calendar,2")),
        ],
    },
    Plan {
        file: "sparkplug.toml",
        setting: Loopback,
        expect: &[("mosquitto_sub", PrintsWithin("spBv1.0/campus/NBIRTH/gateway-1", 20))],
    },
    Plan { file: "two-devices.toml", setting: Loopback, expect: &[] },
    Plan {
        file: "virtual-network.toml",
        setting: Loopback,
        expect: &[("whois --global", Prints("1001:0003e9")), ("@1001:0003e9", Prints("degrees-celsius"))],
    },
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_example_has_a_plan_and_every_plan_names_documented_commands() {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    files.sort();
    let planned: Vec<&str> = PLANS.iter().map(|p| p.file).collect();
    for file in &files {
        assert!(planned.contains(&file.as_str()), "examples/{file} has no plan in example_commands.rs");
        assert!(TESTED.contains(&file.as_str()), "examples/{file} has no test in example_commands.rs");
    }
    for plan in PLANS {
        let text = std::fs::read_to_string(repo().join("examples").join(plan.file)).unwrap();
        let commands = documented_commands(&text);
        assert!(
            commands.iter().any(|c| c.starts_with("trellis")),
            "examples/{} documents no trellis command",
            plan.file
        );
        for (part, _) in plan.expect {
            assert!(
                commands.iter().any(|c| c.contains(part)),
                "examples/{}: no documented command has `{part}`",
                plan.file
            );
        }
    }
}

/// The `trellis` binary the commands find first on PATH (a copy: a
/// documented `setcap` changes it, not the build's), and a `sudo` for root.
fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("trellis-example-bin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_trellis"), dir.join("trellis")).unwrap();
        let has_sudo = Command::new("sh").args(["-c", "command -v sudo"]).output().is_ok_and(|o| o.status.success());
        if !has_sudo {
            std::fs::write(dir.join("sudo"), "#!/bin/sh\n# root, no sudo: run the command as it is\nexec \"$@\"\n")
                .unwrap();
            std::process::Command::new("chmod").args(["+x", dir.join("sudo").to_str().unwrap()]).status().unwrap();
        }
        dir
    })
}

/// Compiled plugins, shared by every example's gateways (each compiles the
/// demo building otherwise).
fn plugin_cache() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("trellis-example-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// One example's run: its namespace and its directory.
struct Session {
    background: Vec<Background>,
    ns: Namespaces,
    /// A second namespace some settings need (an Ethernet segment's device).
    other: Option<Namespaces>,
    work: Scratch,
    /// `/var/lib/trellis` of its commands.
    var_lib: PathBuf,
}

/// A command serving in the background, in a process group of its own
/// (killed whole at the end), its output in files.
struct Background {
    command: String,
    child: Child,
    out: PathBuf,
    /// Held open for a peer that exits at its stdin's end.
    _stdin: Option<std::process::ChildStdin>,
}

impl Background {
    fn output(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.out).unwrap_or_default()).into_owned()
    }
    fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let group = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{group}")]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).status();
        let _ = self.child.wait();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for b in self.background.iter_mut().rev() {
            b.stop();
        }
    }
}

impl Session {
    fn new(tag: &str) -> Session {
        let ns = Namespaces::create(tag, &["main"]);
        let work = Scratch::new("example-commands", tag);
        let copied = Command::new("cp").arg("-r").arg(repo().join("examples")).arg(work.path("examples")).status();
        assert!(copied.unwrap().success(), "copy examples/");
        for dir in ["home", "var-lib-trellis", "out", "admin"] {
            std::fs::create_dir_all(work.path(dir)).unwrap();
        }
        // The admin socket's directory must be the user's alone.
        std::fs::set_permissions(work.path("admin"), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let var_lib = work.path("var-lib-trellis");
        Session { background: Vec::new(), ns, other: None, work, var_lib }
    }

    fn tag(&self) -> &str {
        "main"
    }

    /// `sh -c LINE` in the namespace, with `/var/lib/trellis` bind-mounted
    /// from the scratch directory in a mount namespace of its own.
    fn shell(&self, line: &str, out: &Path) -> Command {
        let path = format!("{}:{}:/usr/sbin:/sbin", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
        // `stdbuf -oL`: line-buffered output, as on the terminal a person
        // reads (mosquitto_sub into a file otherwise holds its lines back).
        let script = "if [ -d /var/lib/trellis ]; then mount --bind \"$VAR_LIB\" /var/lib/trellis; fi; exec stdbuf -oL sh -c \"$1\"";
        let mut c = self.ns.command(self.tag(), "unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c", script, "sh", line])
            .current_dir(&self.work.0)
            .env("PATH", path)
            .env("HOME", self.work.path("home"))
            .env("XDG_CACHE_HOME", plugin_cache())
            .env("XDG_DATA_HOME", self.work.path("home/.local/share"))
            .env("XDG_STATE_HOME", self.work.path("home/.local/state"))
            .env(
                "TRELLIS_ADMIN_SOCKET",
                self.work.path(&format!("admin/{}.sock", out.file_stem().unwrap().to_string_lossy())),
            )
            .env("VAR_LIB", &self.var_lib)
            .env_remove("TRELLIS_LOG")
            .stdin(Stdio::null());
        let file = File::create(out).unwrap();
        c.stdout(file.try_clone().unwrap()).stderr(file);
        c
    }

    /// Start `line` in the background; wait until it is ready (a gateway:
    /// its "serving" line) or has ended.
    fn start(&mut self, index: usize, line: &str) -> Result<(), String> {
        let out = self.work.path(&format!("out/{index}.txt"));
        let child = self.shell(line, &out).process_group(0).spawn().expect("start a background command");
        let mut b = Background { command: line.to_string(), child, out, _stdin: None };
        let serves = is_trellis_run(line);
        let deadline = Instant::now() + Duration::from_secs(if serves { 240 } else { 2 });
        let result = loop {
            let text = b.output();
            if serves && text.contains("trellis: serving") {
                break Ok(());
            }
            if let Some(status) = b.child.try_wait().unwrap() {
                break Err(format!("`{line}` ended ({status}):\n{text}"));
            }
            if Instant::now() >= deadline {
                break if serves { Err(format!("`{line}` did not serve within 240 s:\n{text}")) } else { Ok(()) };
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        self.background.push(b);
        result
    }

    /// Run `line` to its end (60 s at most); its status and output.
    fn run(&self, index: usize, line: &str) -> (bool, String) {
        let out = self.work.path(&format!("out/{index}.txt"));
        let mut child = self.shell(line, &out).process_group(0).spawn().expect("run a command");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if Instant::now() >= deadline {
                let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let text = String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default()).into_owned();
        match status {
            Some(s) => (s.success(), text),
            None => (false, format!("{text}\n(still running after 60 s: killed)")),
        }
    }
}

/// A command that serves until stopped.
fn is_background(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    line.ends_with('&')
        || matches!(words.first(), Some(&"mosquitto") | Some(&"mosquitto_sub"))
        || (words.first() == Some(&"trellis") && words.iter().any(|w| matches!(*w, "run" | "listen" | "sim-line")))
}

fn is_trellis_run(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.first() == Some(&"trellis") && words.contains(&"run")
}

/// Set up what the example's comment presumes; what serves for it joins
/// the session's background.
fn prepare(session: &mut Session, setting: Setting) {
    let ns = session.ns.name(session.tag()).to_string();
    let ip = |args: &[&str]| {
        let o = Command::new("ip").args(["-n", &ns]).args(args).output().unwrap();
        assert!(o.status.success(), "ip -n {ns} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let mut extra = Vec::new();
    match setting {
        Loopback => {}
        EthernetPair => {
            ip(&["link", "add", "eth1", "address", "02:00:00:00:75:01", "type", "veth", "peer", "name", "eth2"]);
            ip(&["link", "set", "eth1", "up"]);
            ip(&["link", "set", "eth2", "up"]);
        }
        EthernetSegmentWith7501 => {
            // The router's eth1 here; device 7501's eth1 in a second namespace.
            let other = Namespaces::create("ex", &["seg7501"]);
            let other_name = other.name("seg7501").to_string();
            let o = Command::new("ip")
                .args([
                    "link",
                    "add",
                    "eth1",
                    "netns",
                    &ns,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth1",
                    "netns",
                    &other_name,
                ])
                .output()
                .unwrap();
            assert!(o.status.success(), "veth: {}", String::from_utf8_lossy(&o.stderr));
            ip(&["link", "set", "eth1", "up"]);
            other.exec_ok("seg7501", &["ip", "link", "set", "eth1", "address", "02:00:00:00:75:01"]);
            other.exec_ok("seg7501", &["ip", "link", "set", "eth1", "up"]);
            let out = session.work.path("out/device-7501.txt");
            let config = session.work.path("examples/ethernet.toml");
            let child = Command::new("ip")
                .args(["netns", "exec", &other_name, bin_dir().join("trellis").to_str().unwrap(), "run", "--config"])
                .arg(&config)
                .env("XDG_CACHE_HOME", plugin_cache())
                .env("TRELLIS_ADMIN_SOCKET", session.work.path("admin/7501.sock"))
                .env_remove("TRELLIS_LOG")
                .stdin(Stdio::null())
                .stdout(File::create(&out).unwrap())
                .stderr(File::create(&out).unwrap())
                .process_group(0)
                .spawn()
                .unwrap();
            let device = Background { command: "device 7501 on the segment".into(), child, out, _stdin: None };
            extra.push(device);
            wait_for(extra.last().unwrap(), "trellis: serving", 240);
            // Deleted after its device is stopped (Session's drop stops the background first).
            session.other = Some(other);
        }
        OpcuaServerOn4841 => {
            let script = repo().join("host/tests/peers/opcua_test_server.py");
            let line = format!("{} {} --stack asyncua --port 4841", crate::peers::python().display(), script.display());
            let out = session.work.path("out/opcua-server.txt");
            // It exits at its stdin's end: a pipe, held open until the example ends.
            let mut child = session.shell(&line, &out).stdin(Stdio::piped()).process_group(0).spawn().unwrap();
            let stdin = child.stdin.take();
            extra.push(Background { command: "the PLC's OPC UA server".into(), child, out, _stdin: stdin });
            wait_for(extra.last().unwrap(), "\"ready\": true", 60);
        }
        RemoteDevice4001AndBroker => {
            let config = session.work.path("device-4001.toml");
            std::fs::write(&config, "[[device]]\ninstance = 4001\nplugin = \"builtin:demo-building\"\nport = 47900\n")
                .unwrap();
            for (name, line, ready, secs) in [
                ("broker.txt", "mosquitto -p 1883".to_string(), "", 1),
                ("device-4001.txt", format!("trellis run --config {}", config.display()), "trellis: serving", 240),
            ] {
                let out = session.work.path(&format!("out/{name}"));
                let child = session.shell(&line, &out).process_group(0).spawn().unwrap();
                extra.push(Background { command: line.clone(), child, out, _stdin: None });
                if ready.is_empty() {
                    std::thread::sleep(Duration::from_secs(secs));
                } else {
                    wait_for(extra.last().unwrap(), ready, secs);
                }
            }
        }
    }
    session.background.extend(extra);
}

fn wait_for(b: &Background, what: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !b.output().contains(what) {
        assert!(Instant::now() < deadline, "{} not ready within {secs} s:\n{}", b.command, b.output());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Run examples/`file`'s documented commands in order and hold them to its plan.
fn run_example(file: &str) {
    let _timing = crate::peers::shared_blocking();
    let plan = PLANS.iter().find(|p| p.file == file).unwrap_or_else(|| panic!("no plan for {file}"));
    let text = std::fs::read_to_string(repo().join("examples").join(file)).unwrap();
    let commands = documented_commands(&text);
    let mut session = Session::new(file.trim_end_matches(".toml"));
    prepare(&mut session, plan.setting);
    let mut watched = Vec::new();
    for (index, line) in commands.iter().enumerate() {
        // Every expectation whose part the command has.
        let expected: Vec<Outcome> =
            plan.expect.iter().filter(|(part, _)| line.contains(part)).map(|(_, o)| *o).collect();
        let fails: Vec<&str> = expected.iter().filter_map(|o| if let Fails(w) = o { Some(*w) } else { None }).collect();
        let prints: Vec<&str> = expected
            .iter()
            .filter_map(|o| match o {
                Prints(w) | PrintsWithin(w, _) => Some(*w),
                Fails(_) => None,
            })
            .collect();
        let within = expected.iter().map(|o| if let PrintsWithin(_, s) = o { *s } else { 0 }).max().unwrap_or(0);
        if is_background(line) {
            let bare = line.trim_end_matches('&').trim_end();
            match session.start(index, bare) {
                Err(e) if !fails.is_empty() => {
                    for what in &fails {
                        assert!(e.contains(what), "examples/{file}: `{line}` failed without `{what}`: {e}");
                    }
                }
                Err(e) => panic!("examples/{file}: {e}\n{}", session.logs()),
                Ok(()) if !fails.is_empty() => {
                    panic!("examples/{file}: `{line}` should have failed:\n{}", session.logs())
                }
                Ok(()) => {
                    for what in prints {
                        watched.push((session.background.len() - 1, line.clone(), what, within.max(10)));
                    }
                }
            }
            continue;
        }
        if !fails.is_empty() {
            let (ok, out) = session.run(index, line);
            assert!(!ok, "examples/{file}: `{line}` should have failed:\n{out}");
            for what in fails {
                assert!(
                    out.to_lowercase().contains(&what.to_lowercase()),
                    "examples/{file}: `{line}` failed without `{what}`:\n{out}"
                );
            }
            continue;
        }
        // Run again each second (within its time) until it exits 0 having printed all it must.
        let deadline = Instant::now() + Duration::from_secs(within);
        loop {
            let (ok, out) = session.run(index, line);
            if ok && prints.iter().all(|what| out.contains(what)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "examples/{file}: `{line}` (exit 0: {ok}) should print {prints:?}{}:\n{out}\n{}",
                if within > 0 { format!(" within {within} s") } else { String::new() },
                session.logs()
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    for (at, line, what, secs) in watched {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !session.background[at].output().contains(what) {
            assert!(
                Instant::now() < deadline,
                "examples/{file}: `{line}` did not print `{what}` within {secs} s:\n{}",
                session.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Session {
    /// What each background command has printed (its last 40 lines): a
    /// failure's context.
    fn logs(&self) -> String {
        let mut all = String::new();
        for b in &self.background {
            let text = b.output();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            all.push_str(&format!("--- `{}`:\n{}\n", b.command, tail.join("\n")));
        }
        all
    }
}

macro_rules! examples_run_as_documented {
    ($($test:ident: $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                run_example($file);
            }
        )*
        /// Every example has its test here.
        const TESTED: &[&str] = &[$($file),*];
    };
}

examples_run_as_documented! {
    alarm_threshold_runs_as_documented: "alarm-threshold.toml",
    alarms_runs_as_documented: "alarms.toml",
    bbmd_runs_as_documented: "bbmd.toml",
    console_runs_as_documented: "console.toml",
    create_objects_runs_as_documented: "create-objects.toml",
    ethernet_router_runs_as_documented: "ethernet-router.toml",
    ethernet_runs_as_documented: "ethernet.toml",
    files_runs_as_documented: "files.toml",
    hardened_gateway_runs_as_documented: "hardened-gateway.toml",
    ipv6_bbmd_runs_as_documented: "ipv6-bbmd.toml",
    ipv6_runs_as_documented: "ipv6.toml",
    mqtt_mapping_runs_as_documented: "mqtt-mapping.toml",
    mqtt_runs_as_documented: "mqtt.toml",
    mstp_node_runs_as_documented: "mstp-node.toml",
    mstp_rs485_runs_as_documented: "mstp-rs485.toml",
    mstp_trunk_runs_as_documented: "mstp-trunk.toml",
    notification_classes_runs_as_documented: "notification-classes.toml",
    persistence_runs_as_documented: "persistence.toml",
    opcua_client_runs_as_documented: "opcua-client.toml",
    opcua_server_runs_as_documented: "opcua-server.toml",
    remote_points_runs_as_documented: "remote-points.toml",
    restart_notification_runs_as_documented: "restart-notification.toml",
    router_policy_runs_as_documented: "router-policy.toml",
    router_runs_as_documented: "router.toml",
    sc_hub_runs_as_documented: "sc-hub.toml",
    sc_router_runs_as_documented: "sc-router.toml",
    schedule_runs_as_documented: "schedule.toml",
    schedules_runs_as_documented: "schedules.toml",
    sparkplug_runs_as_documented: "sparkplug.toml",
    two_devices_runs_as_documented: "two-devices.toml",
    virtual_network_runs_as_documented: "virtual-network.toml",
}
