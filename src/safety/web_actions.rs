//! GET requests that change state (issue 24, red team 6 §E; ADR 0030).
//!
//! HTTP says GET and HEAD are safe, and curl and wget are proved to send nothing else. Some admin
//! endpoints do not honour it: Tomcat's manager undeploys on `GET /manager/text/undeploy`, Solr
//! unloads a core on `GET /solr/admin/cores?action=UNLOAD`, Elasticsearch flushes on
//! `GET /_flush`, Jolokia runs an MBean operation on `GET /jolokia/exec/…`, a `?_method=DELETE` or
//! an `X-HTTP-Method-Override` header turns a GET into a DELETE for many frameworks. Whether a GET
//! is read-only is the server's to say, so no text proves it. What the text does show is that such
//! endpoints *name* their action — REST-like ones in the path, RPC-like ones in a parameter — so
//! merlya asks first when:
//!
//! - a word of the path (split at punctuation and camelCase, `%`-decoded) is an action verb
//!   (`undeploy`, `delete`, `flush`, `reload`, `shutdown`…): a deny-list, knowingly, since paths
//!   name resources and no list of read-only resources could exist;
//! - a word of a query *parameter's name* is an action (`deleteIndex=true`, `commit=`, `set=`,
//!   `invoke=`, `stream.body=`);
//! - a parameter whose name says it carries the action (`action`, `cmd`, `command`, `op`,
//!   `operation`, `do`, `verb`, `task`, `method`) has a value that is not a known read
//!   (`status`, `list…`, `get…`, `…status`): here the proof is an allow-list, as elsewhere;
//! - a header overrides the method with anything but GET or HEAD.
//!
//! Query *values* are data (`?q=delete` searches for the word), so they are not read, except for
//! the action parameters above.

use super::invocation::Invocation;

/// Verbs that name a change when they are a word of a URL's path.
const PATH_ACTIONS: &[&str] = &[
    "undeploy",
    "deploy",
    "redeploy",
    "delete",
    "remove",
    "destroy",
    "drop",
    "truncate",
    "flush",
    "purge",
    "clear",
    "wipe",
    "erase",
    "reset",
    "unload",
    "reload",
    "restart",
    "start",
    "stop",
    "shutdown",
    "halt",
    "reboot",
    "poweroff",
    "quit",
    "kill",
    "terminate",
    "abort",
    "cancel",
    "pause",
    "resume",
    "suspend",
    "disable",
    "enable",
    "drain",
    "cordon",
    "uncordon",
    "evict",
    "failover",
    "promote",
    "demote",
    "stepdown",
    "rollback",
    "revert",
    "upgrade",
    "downgrade",
    "install",
    "uninstall",
    "update",
    "upsert",
    "create",
    "insert",
    "add",
    "set",
    "put",
    "post",
    "patch",
    "write",
    "exec",
    "execute",
    "run",
    "invoke",
    "trigger",
    "commit",
    "optimize",
    "forcemerge",
    "expunge",
    "compact",
    "rebalance",
    "reindex",
    "rebuild",
    "refresh",
    "restore",
    "backup",
    "import",
    "expire",
    "gc",
    "findleaks",
    "rename",
    "move",
    "swap",
    "split",
    "merge",
    "lock",
    "unlock",
    "ban",
    "unban",
    "block",
    "unblock",
    "approve",
    "revoke",
    "grant",
    "register",
    "deregister",
    "unregister",
    "leave",
    "join",
    "attach",
    "detach",
    "mount",
    "unmount",
    "umount",
    "format",
    "init",
    "initialize",
    "activate",
    "deactivate",
    "toggle",
    "send",
    "upload",
    "save",
    "edit",
    "modify",
    "replace",
    "scale",
    "warmup",
    "warm",
    "prewarm",
    "preload",
    "sync",
    "resync",
    "rotate",
    "renew",
    "regenerate",
    "invalidate",
    "cleanup",
    "clean",
    "prune",
    "vacuum",
    "migrate",
    "seed",
    "replay",
    "retry",
    "rerun",
    "rollout",
    "publish",
    "silence",
    "ack",
    "acknowledge",
    "snooze",
    "mute",
    "unmute",
    "heal",
    "repair",
    "recover",
    "close",
];

/// Words that name a change only as a URL's whole last path segment: `build` ends Jenkins's trigger
/// (`/job/x/build`, `/job/x/buildWithParameters`) but also names a resource in reads
/// (`/job/x/lastBuild/api/json`, `/api/builds`).
const LAST_SEGMENT_ACTIONS: &[&str] = &["build", "buildwithparameters", "polling", "scan", "recompute", "buildnow"];

/// Words that make a query parameter an action by its name (`deleteIndex=true`, `commit=true`,
/// Tomcat's `set=`/`invoke=`, Solr's `stream.body=`). Narrower than the path's: `start=`, `end=`
/// and `step=` are a time range (Prometheus), `add`… a filter.
const KEY_ACTIONS: &[&str] = &[
    "delete",
    "drop",
    "remove",
    "destroy",
    "truncate",
    "commit",
    "optimize",
    "expunge",
    "purge",
    "flush",
    "wipe",
    "reset",
    "kill",
    "shutdown",
    "restart",
    "reload",
    "unload",
    "undeploy",
    "deploy",
    "terminate",
    "evict",
    "clear",
    "set",
    "invoke",
    "exec",
    "execute",
    "run",
    "call",
    "trigger",
    "body",
];

/// Parameters whose value is the action to take.
const ACTION_KEYS: &[&str] = &["action", "cmd", "command", "op", "operation", "do", "verb", "task", "method"];

/// Action values known to only read (Solr's `STATUS`, `CLUSTERSTATUS`, `LIST`, WebHDFS's
/// `GETFILESTATUS`, `LISTSTATUS`, `OPEN`…): exact words, or a read prefix or suffix without a
/// change verb inside.
const READ_VALUES: &[&str] = &[
    "status",
    "list",
    "get",
    "show",
    "describe",
    "info",
    "health",
    "stats",
    "statistics",
    "ping",
    "version",
    "view",
    "read",
    "query",
    "search",
    "find",
    "check",
    "metrics",
    "help",
    "overview",
    "summary",
    "open",
];
const READ_PREFIXES: &[&str] = &["get", "list", "show", "describe", "view", "read", "query", "search", "find", "check"];
const READ_SUFFIXES: &[&str] = &["status", "stats", "info", "health", "list"];
const CHANGE_INSIDE: &[&str] = &[
    "delete", "drop", "set", "put", "add", "create", "remove", "kill", "stop", "start", "reset", "reload", "unload",
    "purge", "flush", "write", "exec", "run", "update", "commit", "clear", "restart", "shutdown", "split", "swap",
    "rename", "merge", "backup", "restore", "move",
];

/// Why a curl or wget read may change the server's state, if it may: an action named by a URL,
/// or a header that overrides the method.
pub fn check(inv: &Invocation) -> Result<(), String> {
    if !matches!(inv.program.as_str(), "curl" | "wget") {
        return Ok(());
    }
    if let Some(why) = inv.values("-H").chain(inv.values("--header")).find_map(method_override) {
        return Err(why);
    }
    // `--resolve h:80:169.254.169.254`, `--connect-to ::169.254.169.254:`, `-x 169.254.169.254`:
    // any URL then reaches the metadata service.
    let redirects = ["--resolve", "--connect-to", "-x", "--proxy"].iter().flat_map(|o| inv.values(o));
    if let Some(value) = redirects.into_iter().find(|v| points_at_metadata(v)) {
        return Err(format!(
            "`{value}` sends the request to the instance metadata service, whose answers hold credentials (approve it to run it)"
        ));
    }
    for url in inv.operands.iter().map(|w| w.text.as_str()).chain(inv.values("--url")) {
        let Some((host, rest)) = super::egress::split_url(url) else { continue };
        let secret = super::secret_endpoints::secret_answer(url, &host, rest);
        if let Some(why) = secret.or_else(|| state_change(url, rest)) {
            return Err(why);
        }
    }
    Ok(())
}

/// Whether an option value that chooses where curl connects (`HOST:PORT:ADDR`, `[scheme://]HOST[:PORT]`)
/// names a metadata service in one of its parts.
fn points_at_metadata(value: &str) -> bool {
    let host = super::egress::url_host(value).unwrap_or_default();
    super::secret_endpoints::metadata_host(&host)
        || value.split([':', ',', '/', '@']).any(super::secret_endpoints::metadata_host)
        || value.split(',').any(|part| {
            // `HOST:PORT:[ADDR]` (an IPv6 address in brackets, with colons inside).
            part.find('[').is_some_and(|open| super::secret_endpoints::metadata_host(&part[open..]))
        })
}

/// Why a GET or HEAD of `rest` (a URL's path, query and fragment) may change the server's state.
pub fn state_change(url: &str, rest: &str) -> Option<String> {
    let rest = rest.split('#').next().unwrap_or_default();
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let path = decode(path, false);
    let last_segment = path.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    let last_segment =
        last_segment.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
    let last = LAST_SEGMENT_ACTIONS.contains(&last_segment.as_str()).then_some(&last_segment);
    if let Some(word) = words(&path).iter().find(|w| PATH_ACTIONS.contains(&w.as_str())).or(last) {
        return Some(format!(
            "`{url}`: its path names an action (`{word}`); some servers act on a GET there (approve it to run it)"
        ));
    }
    for pair in query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (decode(key, true), decode(value, true));
        if let Some(word) = words(&key).into_iter().find(|w| KEY_ACTIONS.contains(&w.as_str())) {
            return Some(format!(
                "`{url}`: its parameter `{key}` names an action (`{word}`); some servers act on a GET there (approve it to run it)"
            ));
        }
        let name: String = key.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
        if ACTION_KEYS.contains(&name.as_str()) && !read_value(&value) {
            return Some(format!(
                "`{url}`: `{key}={value}` asks the server to act; only known reads (status, list…) are proved (approve it to run it)"
            ));
        }
    }
    None
}

/// A header that turns a GET into another method (`X-HTTP-Method-Override: DELETE`), if any.
pub fn method_override(header: &str) -> Option<String> {
    let (name, value) = header.split_once(':')?;
    let name = name.trim().to_ascii_lowercase();
    let overrides = name.contains("method-override") || name == "x-http-method" || name == "x-method";
    let value = value.trim().to_ascii_uppercase();
    (overrides && value != "GET" && value != "HEAD")
        .then(|| format!("the header `{header}` turns the GET into a {value} (approve it to run it)"))
}

fn read_value(value: &str) -> bool {
    let v: String = value.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
    if READ_VALUES.contains(&v.as_str()) {
        return true;
    }
    let shaped = READ_PREFIXES.iter().any(|p| v.starts_with(p)) || READ_SUFFIXES.iter().any(|s| v.ends_with(s));
    shaped && !CHANGE_INSIDE.iter().any(|c| v.contains(c))
}

/// `%XX` decoded (and `+` as a space in a query), as the server reads it.
pub(super) fn decode(text: &str, query: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if query => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The lower-case words of `text`, split at anything but letters and digits and at camelCase
/// boundaries (`safeRestart` → `safe`, `restart`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current).to_lowercase());
            }
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current).to_lowercase());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_in_paths_parameters_and_headers_are_found() {
        for (path, query) in [
            ("/manager/text/undeploy", "?path=/app"),
            ("/solr/admin/cores", "?action=UNLOAD&core=main&deleteIndex=true"),
            ("/solr/admin/collections", "?action=DELETE&name=x"),
            ("/_flush", ""),
            ("/jolokia/exec/java.lang:type=Memory/gc", ""),
            ("/manager/jmxproxy/", "?set=Catalina:type=x&att=y&val=z"),
            ("/manager/jmxproxy/", "?invoke=Catalina:type=x&op=stop"),
            ("/solr/core/update", "?stream.body=%3Cdelete%3E&commit=true"),
            ("/solr/core/select", "?q=x&commit=true"),
            ("/solr/core/dataimport", "?command=full-import"),
            ("/api/users/1", "?_method=DELETE"),
            ("/%75ndeploy", ""),
            ("/safeRestart", ""),
            ("/-/reload", ""),
            ("/webhdfs/v1/tmp", "?op=DELETE"),
            ("/jkstatus", "?cmd=update&w=lb"),
            ("/admin/cache-warmup", ""),
            ("/job/api/build", "?token=abc"),
            ("/job/api/buildWithParameters", ""),
            ("/api/v1/applications/web/sync", ""),
        ] {
            assert!(state_change("u", &format!("{path}{query}")).is_some(), "{path}{query}");
        }
        for rest in [
            "/_cluster/health?pretty",
            "/_cat/indices?v&s=docs.count:desc",
            "/solr/admin/cores?action=STATUS",
            "/solr/admin/collections?action=CLUSTERSTATUS",
            "/solr/admin/collections?action=LIST",
            "/webhdfs/v1/tmp?op=LISTSTATUS",
            "/webhdfs/v1/tmp?op=GETFILESTATUS",
            "/manager/text/list",
            "/manager/text/serverinfo",
            "/api/v1/query_range?query=up&start=1&end=2&step=15",
            "/latest/meta-data/instance-id",
            "/api/overview",
            "/server-status?auto",
            "/_search?q=delete",
            "/apis/apps/v1/deployments",
            "/metrics#restart",
            "/job/api/lastBuild/api/json",
            "/api/builds?limit=5",
        ] {
            assert_eq!(state_change("u", rest), None, "{rest}");
        }
        assert!(method_override("X-HTTP-Method-Override: DELETE").is_some());
        assert!(method_override("x-http-method: put").is_some());
        assert_eq!(method_override("X-HTTP-Method-Override: GET"), None);
        assert_eq!(method_override("Accept: application/json"), None);
    }
}
