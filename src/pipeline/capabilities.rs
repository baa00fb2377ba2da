//! Capability detection: which pipeline tools a host (or localhost) can run,
//! probed with one read-only command through the audited fan-out, cached in
//! the store for `policy.capability_ttl_hours` and forgotten when the host's
//! record changes.

use std::time::Duration;

use super::Env;
use super::fanout::audited_fan_out;
use crate::inventory::Host;
use crate::safety::clearance::Clearance;
pub use crate::store::capabilities::Capabilities;

/// The programs looked for.
pub const TOOLS: [&str; 5] = ["ansible-playbook", "terraform", "kubectl", "git", "python3"];

/// The probe: one path per program found, a marker, then kubectl's current context (if any), a
/// marker, then the options of `/` as the probe sees them: `ro…` when it ran in the read-only
/// sandbox (it is a proven read, so it runs in one where the host has it).
pub const PROBE: &str = "for t in ansible-playbook terraform kubectl git python3; do command -v \"$t\"; done; \
echo merlya-context; kubectl config current-context 2>/dev/null; echo merlya-sandbox; \
awk '$2 == \"/\" {print $4}' /proc/self/mounts; true";

/// Reads the probe's output: the tools, kubectl's context, and whether it ran read-only.
pub fn parse(stdout: &str) -> (Vec<String>, Option<String>, Option<bool>) {
    let (paths, rest) = stdout.split_once("merlya-context").unwrap_or((stdout, ""));
    let (context, sandbox) = rest.split_once("merlya-sandbox").unwrap_or((rest, ""));
    let tools = TOOLS
        .iter()
        .filter(|tool| paths.lines().any(|l| l.trim() == **tool || l.trim().ends_with(&format!("/{tool}"))))
        .map(|t| t.to_string())
        .collect();
    let context = context.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string);
    let sandbox = sandbox.lines().map(str::trim).find(|l| !l.is_empty()).map(|o| o.split(',').any(|opt| opt == "ro"));
    (tools, context, sandbox)
}

/// Whether a cache entry checked at `checked_at` is older than `ttl`.
fn stale(checked_at: &str, ttl: Duration) -> bool {
    chrono::DateTime::parse_from_rfc3339(checked_at)
        .map(|at| chrono::Utc::now().signed_duration_since(at).to_std().unwrap_or_default() > ttl)
        .unwrap_or(true)
}

/// What `host` can run: cached if fresh (and `refresh` not asked), else probed and cached.
pub async fn detect(env: &Env, host: &Host, ttl: Duration, refresh: bool) -> Result<Capabilities, String> {
    if host.is_local() {
        return Ok(detect_local(env, ttl, refresh).await);
    }
    if !refresh
        && let Ok(Some(cached)) = env.store.capabilities(&host.name).await
        && !stale(&cached.checked_at, ttl)
    {
        return Ok(cached);
    }
    let clearance = Clearance::read_only(PROBE).ok_or("the capability probe is not read-only")?;
    let results =
        audited_fan_out(env, std::slice::from_ref(host), clearance, None).await.map_err(|e| format!("{e:#}"))?;
    let result = results.into_iter().next().ok_or("no result")?;
    if let Some(error) = &result.error {
        return Err(format!("{}: {error}", host.name));
    }
    let (tools, context, sandbox) = parse(&result.stdout);
    env.store.set_capabilities(&host.name, &tools, context.as_deref(), sandbox).await.map_err(|e| e.to_string())
}

/// What this machine can run: its own PATH, and kubectl's current context (no command on a host, so
/// nothing to audit); cached under `localhost` like any host.
pub async fn detect_local(env: &Env, ttl: Duration, refresh: bool) -> Capabilities {
    if !refresh
        && let Ok(Some(cached)) = env.store.capabilities("localhost").await
        && !stale(&cached.checked_at, ttl)
    {
        return cached;
    }
    let tools: Vec<String> = TOOLS.iter().filter(|t| super::tool::found(t)).map(|t| t.to_string()).collect();
    let mut context = None;
    if tools.iter().any(|t| t == "kubectl") {
        let mut call = super::tool::ToolCall::new("kubectl", &["config", "current-context"], "/");
        call.live_stdout = false;
        let out = super::tool::run(env, &call).await;
        context = (out.code == Some(0)).then(|| out.stdout.trim().to_string()).filter(|c| !c.is_empty());
    }
    // The sandbox as a proven read on this machine would get it (the same wrapper).
    let probe = "awk '$2 == \"/\" {print $4}' /proc/self/mounts";
    let sandbox = match crate::exec::sandbox::wrap(probe, env.executor.readonly_sandbox(), false, &[]) {
        Ok(script) => tokio::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().split(',').any(|opt| opt == "ro")),
        Err(_) => Some(false),
    };
    let checked_at = crate::store::now_rfc3339();
    match env.store.set_capabilities("localhost", &tools, context.as_deref(), sandbox).await {
        Ok(cached) => cached,
        Err(_) => Capabilities { tools, kube_context: context, checked_at, readonly_sandbox: sandbox },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_read_only_and_its_output_is_read() {
        assert!(Clearance::read_only(PROBE).is_some(), "the probe must pass without an approval");
        let (tools, context, sandbox) =
            parse("/usr/bin/kubectl\n/usr/local/bin/git\nmerlya-context\nstaging\nmerlya-sandbox\nro,relatime\n");
        assert_eq!((tools, context.as_deref()), (vec!["kubectl".to_string(), "git".to_string()], Some("staging")));
        assert_eq!(sandbox, Some(true));
        let (tools, context, sandbox) =
            parse("/opt/venv/bin/ansible-playbook\nmerlya-context\nmerlya-sandbox\nrw,relatime\n");
        assert_eq!((tools, context, sandbox), (vec!["ansible-playbook".to_string()], None, Some(false)));
        assert!(stale("2020-01-01T00:00:00Z", Duration::from_secs(3600)));
        assert!(!stale(&crate::store::now_rfc3339(), Duration::from_secs(3600)));
    }
}
