//! Reading a host's facts: one script of read-only commands (proved by the
//! classifier like any command, so what runs is merlya's rendering), run
//! through the audited door, its output cut into sections by a marker that
//! carries a fresh nonce (a file's contents cannot fake a section).

use crate::door::Door;
use crate::exec::{EventSender, HostResult, OUTPUT_CAP};
use crate::inventory::Host;
use crate::safety::clearance::Clearance;
use crate::safety::render::quote;

use super::{Facts, Section};

/// What a capture reads beyond the fixed sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePlan {
    /// Folders whose files are checksummed (`drift.paths`, /etc by default).
    pub paths: Vec<String>,
    /// Files whose full contents are kept (`drift.contents`, none by default).
    pub contents: Vec<String>,
}

/// The most of one opted-in file a capture keeps.
pub const CONTENTS_CAP: usize = 64 * 1024;

/// The capture script for `plan`, its sections marked with `nonce`.
pub fn script(plan: &CapturePlan, nonce: &str) -> String {
    let mark = |section: &str| format!("echo '~~{nonce} {section}'");
    let paths: Vec<String> = plan.paths.iter().map(|p| quote(p)).collect();
    let mut parts = vec![
        mark("os"),
        "cat /etc/os-release 2>/dev/null".to_string(),
        mark("kernel"),
        "uname -srm".to_string(),
        mark("packages"),
        "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f '${Package}\\t${Version}\\n' 2>/dev/null; \
         elif command -v rpm >/dev/null 2>&1; then rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n' 2>/dev/null; fi"
            .to_string(),
        // Enabled units are the links in the *.wants and *.requires folders (`systemctl
        // list-unit-files` scans every unit file: ~0.6 s a host).
        mark("units_enabled"),
        "find /etc/systemd/system -mindepth 2 -maxdepth 2 '(' -path '*.wants/*' -o -path '*.requires/*' ')' 2>/dev/null"
            .to_string(),
        mark("units_failed"),
        "systemctl list-units --failed --no-legend --no-pager --plain 2>/dev/null".to_string(),
        mark("ports"),
        "ss -tulnH 2>/dev/null".to_string(),
        mark("users"),
        "getent passwd".to_string(),
        mark("groups"),
        "getent group".to_string(),
        mark("sysctl"),
        "sysctl -a 2>/dev/null".to_string(),
        // The host's mounts as init sees them: inside the read-only sandbox every mount is read-only.
        mark("mounts"),
        "findmnt -rn --task 1 -o TARGET,SOURCE,FSTYPE,OPTIONS 2>/dev/null || findmnt -rn -o TARGET,SOURCE,FSTYPE,OPTIONS 2>/dev/null"
            .to_string(),
    ];
    if !paths.is_empty() {
        // md5, as dpkg records its configuration files (`dpkg --verify` of every file takes ~13 s).
        parts.push(mark("files"));
        parts.push(format!("find {} -xdev -type f -exec md5sum {{}} + 2>/dev/null", paths.join(" ")));
        parts.push(mark("conffiles"));
        parts.push(
            "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f '${Conffiles}\\n' 2>/dev/null; fi"
                .to_string(),
        );
    }
    for file in &plan.contents {
        parts.push(format!("echo '~~{nonce} contents '{}", quote(file)));
        parts.push(format!("head -c {CONTENTS_CAP} {} 2>/dev/null", quote(file)));
    }
    parts.push(mark("end"));
    parts.push("true".to_string());
    parts.join("; ")
}

/// Why a host's facts could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// The script did not run or did not finish.
    #[error("{0}")]
    Run(String),
    /// The output was cut (more than a result keeps).
    #[error("the capture printed more than {} MiB; narrow drift.paths", OUTPUT_CAP >> 20)]
    Truncated,
    /// The output holds no end marker: the script stopped early.
    #[error("the capture stopped before its end")]
    Incomplete,
}

/// Captures the facts of every host in `hosts` through `door` (audited reads).
pub async fn capture(
    door: &Door<'_>,
    hosts: &[Host],
    plan: &CapturePlan,
    events: &EventSender,
) -> color_eyre::Result<Vec<(String, Result<Facts, CaptureError>)>> {
    let nonce = crate::exec::sudo::random_marker().map_err(|e| color_eyre::eyre::eyre!(e))?;
    let script = script(plan, &nonce);
    let Some(clearance) = Clearance::read_only(&script) else {
        color_eyre::eyre::bail!("the capture script is not proved read-only (a bug): {script}");
    };
    let results = door.fan_out(hosts, clearance, None, events).await?;
    Ok(results.into_iter().map(|r| (r.host.clone(), facts_of(&r, &nonce))).collect())
}

fn facts_of(result: &HostResult, nonce: &str) -> Result<Facts, CaptureError> {
    if let Some(error) = &result.error {
        return Err(CaptureError::Run(error.clone()));
    }
    if result.stdout.len() >= OUTPUT_CAP {
        return Err(CaptureError::Truncated);
    }
    parse(&result.stdout, nonce)
}

/// The facts in a capture's output.
pub fn parse(output: &str, nonce: &str) -> Result<Facts, CaptureError> {
    let marker = format!("~~{nonce} ");
    let mut facts = Facts::default();
    let mut current: Option<(String, Vec<&str>)> = None;
    let mut ended = false;
    let mut conffiles: Vec<(String, String)> = Vec::new();
    for line in output.split('\n') {
        if let Some(name) = line.strip_prefix(&marker) {
            if let Some((section, lines)) = current.take() {
                if section == "conffiles" {
                    // ` /etc/x 0123…` (and `obsolete` after the sum of a file no longer shipped).
                    conffiles.extend(lines.iter().filter_map(|l| {
                        let mut words = l.split_whitespace();
                        Some((words.next()?.to_string(), words.next()?.to_string()))
                    }));
                } else {
                    section_facts(&mut facts, &section, &lines);
                }
            }
            if name == "end" {
                ended = true;
                break;
            }
            current = Some((name.to_string(), Vec::new()));
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        }
    }
    if !ended {
        return Err(CaptureError::Incomplete);
    }
    package_files(&mut facts, &conffiles);
    Ok(facts)
}

/// Configuration files that differ from what their package shipped (dpkg's md5 of each), among
/// the files the capture checksummed.
fn package_files(facts: &mut Facts, conffiles: &[(String, String)]) {
    for (path, shipped) in conffiles {
        if facts.get(Section::Files, path).is_some_and(|md5| md5 != shipped) {
            facts.insert(Section::PackageFiles, path.clone(), "modified from its package");
        }
    }
}

fn section_facts(facts: &mut Facts, name: &str, lines: &[&str]) {
    let lines = lines.iter().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty());
    if let Some(file) = name.strip_prefix("contents ") {
        let text: Vec<&str> = lines.collect();
        facts.insert(Section::Contents, file, text.join("\n"));
        return;
    }
    match name {
        "os" => {
            for line in lines {
                if let Some((key, value)) = line.split_once('=')
                    && matches!(key, "PRETTY_NAME" | "ID" | "VERSION_ID")
                {
                    facts.insert(Section::Os, key.to_ascii_lowercase(), value.trim_matches('"'));
                }
            }
        }
        "kernel" => {
            if let Some(line) = lines.into_iter().next() {
                facts.insert(Section::Os, "kernel", line.trim());
            }
        }
        "packages" => pairs(facts, Section::Packages, lines, |l| l.split_once('\t')),
        "units_enabled" => {
            // `/etc/systemd/system/multi-user.target.wants/ssh.service` → ssh.service: multi-user.target
            let mut wanted: std::collections::BTreeMap<String, Vec<String>> = Default::default();
            for line in lines {
                let mut parts = line.rsplit('/');
                if let (Some(unit), Some(folder)) = (parts.next(), parts.next()) {
                    let target = folder.trim_end_matches(".wants").trim_end_matches(".requires");
                    wanted.entry(unit.to_string()).or_default().push(target.to_string());
                }
            }
            for (unit, mut targets) in wanted {
                targets.sort();
                facts.insert(Section::UnitsEnabled, unit, format!("enabled ({})", targets.join(", ")));
            }
        }
        "units_failed" => pairs(facts, Section::UnitsFailed, lines, |l| Some((l.split_whitespace().next()?, "failed"))),
        "ports" => {
            for line in lines {
                let words: Vec<&str> = line.split_whitespace().collect();
                if let [proto, _state, _recv, _send, local, ..] = words.as_slice() {
                    facts.insert(Section::Ports, format!("{proto} {local}"), "listening");
                }
            }
        }
        "users" => pairs_owned(facts, Section::Users, lines, |l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 7)
                .then(|| (f[0].to_string(), format!("uid={} gid={} home={} shell={}", f[2], f[3], f[5], f[6])))
        }),
        "groups" => pairs_owned(facts, Section::Groups, lines, |l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 4).then(|| (f[0].to_string(), format!("gid={} members={}", f[2], f[3])))
        }),
        "sysctl" => pairs(facts, Section::Sysctl, lines, |l| l.split_once(" = ")),
        "mounts" => pairs_owned(facts, Section::Mounts, lines, |l| {
            let (target, rest) = l.split_once(' ')?;
            Some((unescape_mount(target), rest.to_string()))
        }),
        "files" => pairs_owned(facts, Section::Files, lines, |l| {
            // `HASH  PATH`; md5sum starts the line with `\` when it escaped the name.
            let (hash, path) = l.trim_start_matches('\\').split_once("  ")?;
            Some((path.to_string(), hash.to_string()))
        }),
        _ => {}
    }
}

fn pairs<'a>(
    facts: &mut Facts,
    section: Section,
    lines: impl Iterator<Item = &'a str>,
    split: impl Fn(&'a str) -> Option<(&'a str, &'a str)>,
) {
    for line in lines {
        if let Some((key, value)) = split(line) {
            facts.insert(section, key.trim(), value.trim());
        }
    }
}

fn pairs_owned<'a>(
    facts: &mut Facts,
    section: Section,
    lines: impl Iterator<Item = &'a str>,
    split: impl Fn(&'a str) -> Option<(String, String)>,
) {
    for line in lines {
        if let Some((key, value)) = split(line) {
            facts.insert(section, key, value);
        }
    }
}

/// findmnt -r writes a space in a path as `\x20`.
fn unescape_mount(text: &str) -> String {
    text.replace("\\x20", " ").replace("\\x09", "\t").replace("\\x5c", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_proved_read_only_and_runs_as_written() {
        let plan = CapturePlan { paths: vec!["/etc".into(), "/opt/my app".into()], contents: vec!["/etc/motd".into()] };
        let script = script(&plan, "0123");
        let clearance = Clearance::read_only(&script).expect("the capture script is a proven read");
        assert!(clearance.command().contains("find /etc '/opt/my app' -xdev -type f -exec md5sum"));
    }

    #[test]
    fn output_is_cut_into_sections_and_a_file_cannot_fake_a_marker() {
        let output = "~~n1 os\nPRETTY_NAME=\"Debian 12\"\nID=debian\nVERSION_ID=\"12\"\n~~n1 kernel\nLinux 6.1.0 x86_64\n\
            ~~n1 packages\nnginx\t1.22.1-9\nopenssl\t3.0.11\n~~n1 units_enabled\n/etc/systemd/system/multi-user.target.wants/nginx.service\n\
            ~~n1 units_failed\nfoo.service loaded failed failed Foo\n~~n1 ports\ntcp LISTEN 0 511 0.0.0.0:80 0.0.0.0:*\n\
            ~~n1 users\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n~~n1 groups\nadm:x:4:syslog\n\
            ~~n1 sysctl\nvm.swappiness = 60\n~~n1 mounts\n/ /dev/vda1 ext4 rw,relatime\n/mnt/my\\x20disk /dev/vdb xfs rw\n\
            ~~n1 files\nabc  /etc/nginx/nginx.conf\n\\def  /etc/odd\\nname\nfff  /etc/kept\n~~n1 conffiles\n /etc/nginx/nginx.conf 0aa\n \
            /etc/kept fff\n /etc/gone 123 obsolete\n~~n1 contents /etc/motd\nhello\n~~n2 end\nstill motd\n~~n1 end\n";
        let facts = parse(output, "n1").unwrap();
        assert_eq!(facts.get(Section::Os, "pretty_name"), Some("Debian 12"));
        assert_eq!(facts.get(Section::Os, "kernel"), Some("Linux 6.1.0 x86_64"));
        assert_eq!(facts.get(Section::Packages, "nginx"), Some("1.22.1-9"));
        assert_eq!(facts.get(Section::UnitsEnabled, "nginx.service"), Some("enabled (multi-user.target)"));
        assert_eq!(facts.get(Section::UnitsFailed, "foo.service"), Some("failed"));
        assert_eq!(facts.get(Section::Ports, "tcp 0.0.0.0:80"), Some("listening"));
        assert_eq!(facts.get(Section::Users, "www-data"), Some("uid=33 gid=33 home=/var/www shell=/usr/sbin/nologin"));
        assert_eq!(facts.get(Section::Groups, "adm"), Some("gid=4 members=syslog"));
        assert_eq!(facts.get(Section::Sysctl, "vm.swappiness"), Some("60"));
        assert_eq!(facts.get(Section::Mounts, "/mnt/my disk"), Some("/dev/vdb xfs rw"));
        assert_eq!(facts.get(Section::Files, "/etc/nginx/nginx.conf"), Some("abc"));
        assert_eq!(facts.get(Section::PackageFiles, "/etc/nginx/nginx.conf"), Some("modified from its package"));
        assert_eq!(facts.get(Section::PackageFiles, "/etc/kept"), None, "as shipped");
        assert_eq!(facts.get(Section::PackageFiles, "/etc/gone"), None, "not checksummed");
        // Another nonce's marker in a file is the file's text.
        assert_eq!(facts.get(Section::Contents, "/etc/motd"), Some("hello\n~~n2 end\nstill motd"));
        assert_eq!(parse("~~n1 os\nID=x\n", "n1"), Err(CaptureError::Incomplete));
    }
}
