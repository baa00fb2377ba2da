//! HTTP reads whose answer is a secret (ADR 0030): a GET that changes nothing still needs an
//! approval when what it returns would hand credentials to the model.
//!
//! - Instance metadata services (AWS, GCP, Azure, OpenStack, Oracle, Hetzner, Alibaba, ECS task
//!   credentials) answer any GET with role keys, tokens, user data, `kube-env`, startup scripts.
//!   Their hosts are recognised however they are spelled (every number form `inet_aton` reads,
//!   IPv4 inside IPv6, the service names), and a request there is a read only for a short list of
//!   leaves known to hold no secret (`instance-id`, `zone`…): an allow-list, since each provider
//!   adds paths.
//! - Local admin APIs that return secrets or process memory: a curated table, each with why.

use std::net::{IpAddr, Ipv4Addr};

/// Metadata paths that are plain facts about the instance (lowercase, no trailing slash).
const HARMLESS_METADATA_PATHS: &[&str] = &[
    "/latest/meta-data",
    "/latest/meta-data/instance-id",
    "/latest/meta-data/instance-type",
    "/latest/meta-data/ami-id",
    "/latest/meta-data/hostname",
    "/latest/meta-data/local-hostname",
    "/latest/meta-data/local-ipv4",
    "/latest/meta-data/public-ipv4",
    "/latest/meta-data/public-hostname",
    "/latest/meta-data/mac",
    "/latest/meta-data/placement/availability-zone",
    "/latest/meta-data/placement/availability-zone-id",
    "/latest/meta-data/placement/region",
    "/latest/meta-data/instance-life-cycle",
    "/latest/meta-data/spot/instance-action",
    "/latest/meta-data/spot/termination-time",
    "/latest/meta-data/events/maintenance/scheduled",
    "/latest/meta-data/events/recommendations/rebalance",
    "/latest/meta-data/autoscaling/target-lifecycle-state",
    "/latest/dynamic/instance-identity/document",
    "/computemetadata/v1/instance/id",
    "/computemetadata/v1/instance/zone",
    "/computemetadata/v1/instance/machine-type",
    "/computemetadata/v1/instance/hostname",
    "/computemetadata/v1/instance/name",
    "/computemetadata/v1/instance/image",
    "/computemetadata/v1/instance/cpu-platform",
    "/computemetadata/v1/instance/maintenance-event",
    "/computemetadata/v1/instance/preempted",
    "/computemetadata/v1/project/project-id",
    "/computemetadata/v1/project/numeric-project-id",
    "/metadata/instance/compute/location",
    "/metadata/instance/compute/vmsize",
    "/metadata/instance/compute/vmid",
    "/metadata/instance/compute/name",
    "/metadata/instance/compute/zone",
    "/metadata/scheduledevents",
];

/// Query parameters a harmless metadata read may carry (Azure's version and format).
const HARMLESS_METADATA_PARAMETERS: &[&str] = &["api-version", "format"];

/// Where a pattern of [`SECRET_ENDPOINTS`] must match a URL's path segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// At the path's start (`/v1/kv/…`).
    Start,
    /// At any segment (`/manage/heapdump`, `/actuator/env` under any base path).
    Anywhere,
    /// The whole path (kubelet's `/pods`).
    Whole,
}

/// Local admin endpoints whose GET answer holds secrets or process memory, with why. Deliberately
/// not here: `/actuator/threaddump` (stacks, no values), Go's `/debug/pprof/heap` (allocation
/// sites, not memory contents), `/debug/vars` (the command line, as `ps` shows it), Vault's
/// `/v1/sys/health` and `/v1/sys/seal-status`; etcd v3's gateway reads are POSTs, never proved.
const SECRET_ENDPOINTS: &[(&[&str], Anchor, &str)] = &[
    (&["heapdump"], Anchor::Anywhere, "returns a JVM heap dump: the process memory (keys, tokens, passwords)"),
    (&["actuator", "env"], Anchor::Anywhere, "returns a Spring application's environment and properties"),
    (&["env"], Anchor::Start, "returns a Spring application's environment and properties (Boot 1)"),
    (&["actuator", "configprops"], Anchor::Anywhere, "returns a Spring application's configuration properties"),
    (&["configprops"], Anchor::Start, "returns a Spring application's configuration properties (Boot 1)"),
    (&["jolokia"], Anchor::Anywhere, "reads any JMX attribute (datasource passwords among them)"),
    (&["v1", "kv"], Anchor::Start, "returns Consul KV values (or a Vault kv mount's secrets)"),
    (&["v1", "acl"], Anchor::Start, "returns Consul or Nomad ACL tokens"),
    (&["v1", "snapshot"], Anchor::Start, "returns a Consul snapshot: every KV value and token"),
    (&["v1", "secret"], Anchor::Start, "returns Vault secrets"),
    (&["v1", "cubbyhole"], Anchor::Start, "returns Vault secrets"),
    (&["v1", "sys", "raw"], Anchor::Start, "returns Vault's raw storage"),
    (&["v1", "var"], Anchor::Start, "returns Nomad variables (secrets)"),
    (&["v2", "keys"], Anchor::Start, "returns etcd v2 values (the cluster's secrets)"),
    (&["api", "users"], Anchor::Start, "returns RabbitMQ users with their password hashes"),
    (&["api", "definitions"], Anchor::Start, "returns RabbitMQ definitions, password hashes included"),
    (&["pods"], Anchor::Whole, "returns the kubelet's pod specs, environment values included"),
    (&["runningpods"], Anchor::Whole, "returns the kubelet's pod specs, environment values included"),
    (&["secrets"], Anchor::Anywhere, "returns Secrets (the Kubernetes API through a proxy)"),
];

/// Whether `host` (a URL's host, brackets kept) is an instance metadata service: the link-local
/// 169.254.0.0/16 (AWS, GCP, Azure, OpenStack, Oracle, Hetzner; ECS's 169.254.170.2), Alibaba's
/// 100.100.100.200, Azure's wire server 168.63.129.16, AWS's `fd00:ec2::254`, in any spelling,
/// and the services' names.
pub fn metadata_host(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let named = matches!(host.as_str(), "metadata" | "instance-data" | "metadata.goog")
        || host.starts_with("instance-data.")
        || (host.starts_with("metadata.") && host.ends_with(".internal"));
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(&host);
    named || super::egress::ip_literal(bare).is_some_and(metadata_address)
}

fn metadata_address(ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if v6 == "fd00:ec2::254".parse::<std::net::Ipv6Addr>().unwrap_or(std::net::Ipv6Addr::UNSPECIFIED) {
                return true;
            }
            // NAT64's well-known prefix carries an IPv4 address in its last 32 bits.
            let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
            if nat64 { Some(Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]))) } else { v6.to_ipv4() }
        }
    };
    v4.is_some_and(|v4| {
        v4.is_link_local() || v4 == Ipv4Addr::new(100, 100, 100, 200) || v4 == Ipv4Addr::new(168, 63, 129, 16)
    })
}

/// Why a GET of `rest` (path, query, fragment) on `host` returns a secret, or `None`.
pub fn secret_answer(url: &str, host: &str, rest: &str) -> Option<String> {
    let rest = rest.split('#').next().unwrap_or_default();
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let path = super::web_actions::decode(path, false).to_ascii_lowercase();
    if metadata_host(host) && !harmless_metadata(&path, query) {
        return Some(format!(
            "`{url}` asks the instance metadata service, whose answers hold credentials, tokens and user data: they would reach the model (approve it to run it)"
        ));
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (_, _, why) = SECRET_ENDPOINTS.iter().find(|(pattern, anchor, _)| matches(&segments, pattern, *anchor))?;
    Some(format!("`{url}` {why}: it would reach the model (approve it to run it)"))
}

fn matches(segments: &[&str], pattern: &[&str], anchor: Anchor) -> bool {
    match anchor {
        Anchor::Start => segments.starts_with(pattern),
        Anchor::Whole => segments == pattern,
        Anchor::Anywhere => segments.windows(pattern.len()).any(|w| w == pattern),
    }
}

/// Whether a metadata path (decoded, lowercase) and its query are on the harmless list: no dot
/// segment (curl resolves `..`), no empty segment, only Azure's parameters.
fn harmless_metadata(path: &str, query: &str) -> bool {
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let clean = trimmed.split('/').skip(1).all(|s| !s.is_empty() && s != "." && s != "..");
    let parameters = query.split(['&', ';']).filter(|p| !p.is_empty()).all(|p| {
        let key = super::web_actions::decode(p.split('=').next().unwrap_or_default(), true).to_ascii_lowercase();
        HARMLESS_METADATA_PARAMETERS.contains(&key.as_str())
    });
    clean && parameters && HARMLESS_METADATA_PATHS.contains(&trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_hosts_are_known_however_spelled() {
        for host in [
            "169.254.169.254",
            "169.254.170.2",
            "2852039166",
            "0xa9fea9fe",
            "0251.0376.0251.0376",
            "169.254.43518",
            "[::ffff:169.254.169.254]",
            "[::ffff:a9fe:a9fe]",
            "[64:ff9b::a9fe:a9fe]",
            "[fd00:ec2::254]",
            "100.100.100.200",
            "168.63.129.16",
            "metadata",
            "METADATA.google.internal.",
            "metadata.goog",
            "instance-data",
            "instance-data.ec2.internal",
        ] {
            assert!(metadata_host(host), "{host}");
        }
        for host in ["10.0.0.1", "localhost", "metadata.example.org", "[::1]", "169.255.0.1", "example.org"] {
            assert!(!metadata_host(host), "{host}");
        }
    }

    #[test]
    fn metadata_reads_need_approval_but_plain_facts() {
        for (host, rest) in [
            ("169.254.169.254", "/latest/user-data"),
            ("169.254.169.254", "/latest/meta-data/iam/security-credentials/role"),
            ("169.254.169.254", "/latest/meta-data/instance-id/../../user-data"),
            ("169.254.169.254", "/latest/meta-data/instance-id?x=1"),
            ("169.254.169.254", "/computeMetadata/v1/instance/attributes/kube-env"),
            ("169.254.169.254", "/computeMetadata/v1/?recursive=true"),
            ("169.254.169.254", "/openstack/latest/user_data"),
            ("169.254.170.2", "/v2/credentials/abc"),
            ("[::ffff:a9fe:a9fe]", "/latest/meta-data/instance-id/%2e%2e/%2e%2e/user-data"),
        ] {
            assert!(secret_answer("u", host, rest).is_some(), "{host}{rest}");
        }
        for (host, rest) in [
            ("169.254.169.254", "/latest/meta-data/instance-id"),
            ("metadata.google.internal", "/computeMetadata/v1/instance/zone"),
            ("169.254.169.254", "/metadata/instance/compute/location?api-version=2021-02-01&format=text"),
            ("localhost:8080", "/actuator/health"),
        ] {
            assert_eq!(secret_answer("u", host, rest), None, "{host}{rest}");
        }
    }

    #[test]
    fn admin_endpoints_that_return_secrets_need_approval() {
        for rest in [
            "/actuator/heapdump",
            "/heapdump",
            "/manage/actuator/env",
            "/env",
            "/actuator/configprops",
            "/jolokia/read/java.lang:type=Runtime",
            "/v1/kv/?recurse",
            "/v1/kv/vault/core?raw",
            "/v1/acl/tokens",
            "/v2/keys/?recursive=true",
            "/v1/secret/data/db",
            "/api/users",
            "/pods",
            "/api/v1/namespaces/prod/secrets/db",
            "/%61ctuator/heapdump",
        ] {
            assert!(secret_answer("u", "localhost", rest).is_some(), "{rest}");
        }
        for rest in ["/actuator/health", "/actuator/threaddump", "/v1/sys/health", "/debug/pprof/heap", "/api/overview"]
        {
            assert_eq!(secret_answer("u", "localhost", rest), None, "{rest}");
        }
    }
}
