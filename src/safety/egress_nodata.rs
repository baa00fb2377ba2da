//! A request that carries no data to an outside host needs no approval (ADR 0030, "Requests that
//! carry nothing").
//!
//! The egress policy asks before a read sends anything outside the operator's networks, because
//! the words of a read are chosen by the model after it has read other output: a URL's path, a
//! header, a DNS label can carry a secret to a server the attacker runs. But a request whose text
//! holds nothing the command chose except a registrable name carries nothing to such a server:
//!
//! - a name of **two labels** (`example.com`, `AKIAIOSFODNN7EXAMPLE.com`), or `www.` and two labels,
//!   is answered by the top-level domain's registry, not by a server the attacker runs. The
//!   attacker receives the query (or the connection) only for a name they registered *before* the
//!   secret was read: what they learn is which of their names was chosen, a few bits per command,
//!   never text. Three labels or more (`secret.evil.com`) go to `evil.com`'s own servers, and stay
//!   asked; without a public-suffix list `x.co.uk` is one of them;
//! - an address is never such a name: the owner of a network receives every address in it
//!   (8 free bits per IPv4 /24, 64 per IPv6 /64), and the reverse zone (`dig -x`) likewise;
//! - every option must be one that sends nothing chosen by the command, or a choice among a few
//!   fixed protocol values (a record type mnemonic, a well-known port, HTTP's GET or HEAD); an
//!   option with free text or a free number (a header, a user agent, a path, an EDNS option, a
//!   buffer size, a TTL, a payload pattern, any port) keeps the approval;
//! - a name server the query is sent to must be inside or a well-known public resolver (checked
//!   by [`super::egress`] on its own: this rule never excuses a resolver or a proxy);
//! - nothing is read from standard input except an empty line (checked where pipes are read).
//!
//! Only [`carries_nothing`] and [`bare_name`] are used by the egress check: the first on the whole
//! invocation, the second on each outside destination.

use super::egress::{inet_aton, split_url, valid_name};
use super::invocation::Invocation;

/// Ports a probe or a TLS client may name: a choice among these carries at most five bits, no
/// more than the choice among the names an attacker registered. Any other port is 16 free bits.
const WELL_KNOWN_PORTS: &[&str] = &[
    "21", "22", "25", "53", "80", "110", "143", "389", "443", "465", "587", "636", "853", "993", "995", "3306", "5432",
    "6443", "8080", "8443",
];

/// Whether `host` names, by itself, nothing but a registrable domain: two labels, or `www.` and
/// two labels (a trailing dot allowed), and not an address in any spelling.
pub fn bare_name(host: &str) -> bool {
    let lower = host.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.contains([':', '[', ']']) || inet_aton(name).is_some() || !valid_name(name) {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    match labels.as_slice() {
        [_, _] => true,
        [first, _, _] => *first == "www",
        _ => false,
    }
}

/// Whether every option and operand of `inv` sends nothing the command chose except its
/// destinations' names (each of which is then checked with [`bare_name`]).
pub fn carries_nothing(inv: &Invocation) -> bool {
    let options_in = |allowed: &[&str]| inv.options.iter().all(|(name, _)| allowed.contains(&name.as_str()));
    match inv.program.as_str() {
        "dig" | "drill" => {
            options_in(&["-4", "-6", "-t", "-q", "-r", "-u", "-h", "-v", "-T", "-a", "-d", "-s", "-W"])
                && inv.values("-t").all(type_mnemonic)
                && inv.operands.iter().all(|w| w.text.starts_with('@') || dig_word_carries_nothing(&w.text))
        }
        "host" | "nslookup" => {
            options_in(&["-t", "-a", "-v", "-4", "-6", "-W", "-C", "-d", "-l", "-r", "-s", "-T"])
                && inv.values("-t").all(type_mnemonic)
        }
        "getent" => inv.options.is_empty(),
        "ping" | "ping6" => {
            options_in(&["-c", "-W", "-w", "-q", "-n", "-4", "-6", "-D", "-O", "-v", "-a"]) && inv.operands.len() <= 1
        }
        "traceroute" | "traceroute6" | "tracepath" | "tracepath6" | "mtr" => {
            // A second operand is a packet length (a free number).
            options_in(&["-n", "-4", "-6", "-I", "-T", "-U", "-q", "-w", "-m", "-r", "-c", "--report", "--report-wide"])
                && inv.operands.len() <= 1
        }
        "nc" | "ncat" | "netcat" => {
            options_in(&["-z", "-v", "-n", "-w", "-4", "-6", "-u"])
                && inv.operands.iter().skip(1).all(|w| WELL_KNOWN_PORTS.contains(&w.text.as_str()))
        }
        "openssl" if inv.path.first().is_some_and(|p| p == "s_client") => s_client_carries_nothing(inv),
        "curl" => {
            let allowed = [
                "-s",
                "--silent",
                "-S",
                "--show-error",
                "-f",
                "--fail",
                "--fail-with-body",
                "-I",
                "--head",
                "-i",
                "--include",
                "-k",
                "--insecure",
                "-v",
                "--verbose",
                "-4",
                "-6",
                "--ipv4",
                "--ipv6",
                "--http1.0",
                "--http1.1",
                "--http2",
                "--http3",
                "--compressed",
                "-m",
                "--max-time",
                "--connect-timeout",
                "-w",
                "--write-out",
                "-o",
                "--output",
                "-X",
                "--request",
                "--cacert",
                "--capath",
                "--tlsv1.2",
                "--tlsv1.3",
                "--ssl-reqd",
                "-N",
                "--no-buffer",
                "--no-progress-meter",
                "--progress-bar",
                "--cert-status",
                "--pinnedpubkey",
                "-q",
                "--disable",
                "--styled-output",
                "--no-styled-output",
                "-g",
                "--globoff",
                "--url",
            ];
            // `-L` is left out: the server would choose the next destination (see the ADR).
            options_in(&allowed) && urls(inv).all(bare_url)
        }
        "wget" => {
            let allowed = [
                "-q",
                "--quiet",
                "-O",
                "--output-document",
                "--spider",
                "-S",
                "--server-response",
                "-T",
                "--timeout",
                "-t",
                "--tries",
                "--no-check-certificate",
                "-4",
                "-6",
                "--max-redirect",
                "--no-verbose",
                "--no-proxy",
                "--dns-timeout",
                "--connect-timeout",
                "--read-timeout",
            ];
            // wget follows redirects by default: only a spider (which reads no body back) or a
            // request that follows none.
            let no_redirect = inv.has("--spider") || inv.values("--max-redirect").any(|v| v == "0");
            options_in(&allowed) && no_redirect && inv.operands.iter().all(|w| bare_url(&w.text))
        }
        _ => false,
    }
}

/// Every URL curl is given (operands and `--url`).
fn urls(inv: &Invocation) -> impl Iterator<Item = &str> {
    inv.operands.iter().map(|w| w.text.as_str()).chain(inv.values("--url"))
}

/// `http://HOST` or `https://HOST`, with at most a `/`, no user, and the scheme's own port or a
/// well-known one: nothing but the host is sent.
fn bare_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else { return false };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return false;
    }
    let Some((host, tail)) = split_url(url) else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let port = authority.strip_prefix(host.as_str()).unwrap_or("?");
    let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(|p| WELL_KNOWN_PORTS.contains(&p));
    (tail.is_empty() || tail == "/") && !authority.contains('@') && port_ok && bare_name(&host)
}

/// A dig operand other than `@SERVER` and the names: a record type or class mnemonic, or a
/// `+option` that changes only how the answer is printed or one fixed bit of the query.
fn dig_word_carries_nothing(text: &str) -> bool {
    let Some(option) = text.strip_prefix('+') else {
        // A name (checked as a destination) or a mnemonic; `TYPE65280` is 16 free bits.
        return !numbered_keyword(text);
    };
    let lower = option.to_ascii_lowercase();
    let (key, value) = lower.split_once('=').map_or((lower.as_str(), None), |(k, v)| (k, Some(v)));
    let key = key.strip_prefix("no").unwrap_or(key);
    const FLAGS: &[&str] = &[
        "short",
        "all",
        "answer",
        "authority",
        "additional",
        "question",
        "comments",
        "cmd",
        "stats",
        "multiline",
        "ttlid",
        "ttlunits",
        "class",
        "rrcomments",
        "identify",
        "onesoa",
        "crypto",
        "unknownformat",
        "yaml",
        "trace",
        "recurse",
        "dnssec",
        "tcp",
        "vc",
        "cdflag",
        "adflag",
        "aaflag",
        "fail",
        "besteffort",
        "showsearch",
        "search",
        "expandaaaa",
        "nssearch",
    ];
    match value {
        None => FLAGS.contains(&key),
        // Local waits and retries only.
        Some(v) => matches!(key, "time" | "tries" | "retry") && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// `TYPE123` or `CLASS123`: a numbered type or class, which dig sends as given.
fn numbered_keyword(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["type", "class"]
        .iter()
        .any(|p| lower.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// A record type given to `-t`: a mnemonic (letters and digits, not `TYPE123`).
fn type_mnemonic(text: &str) -> bool {
    !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_alphanumeric()) && !numbered_keyword(text)
}

/// openssl s_client: only options that change what is checked or printed, a protocol version or
/// STARTTLS protocol from a fixed list; `-servername` only as the host it connects to; the port
/// a well-known one.
fn s_client_carries_nothing(inv: &Invocation) -> bool {
    const ALLOWED: &[&str] = &[
        "-connect",
        "-host",
        "-port",
        "-servername",
        "-noservername",
        "-showcerts",
        "-brief",
        "-verify_return_error",
        "-verify",
        "-tls1",
        "-tls1_1",
        "-tls1_2",
        "-tls1_3",
        "-CAfile",
        "-CApath",
        "-status",
        "-quiet",
        "-prexit",
        "-no_ign_eof",
        "-ign_eof",
        "-crlf",
        "-4",
        "-6",
        "-verify_hostname",
        "-debug",
        "-msg",
        "-state",
        "-nbio",
        "-timeout",
        "-trace",
        "-security_debug",
        "-no_ticket",
        "-starttls",
    ];
    if !inv.options.iter().all(|(name, _)| ALLOWED.contains(&name.as_str())) {
        return false;
    }
    let mut hosts = Vec::new();
    for target in inv.values("-connect") {
        let (host, port) = match target.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return false,
            None => (target, None),
        };
        if port.is_some_and(|p| !WELL_KNOWN_PORTS.contains(&p)) {
            return false;
        }
        hosts.push(host.to_ascii_lowercase());
    }
    let ports_ok = inv.values("-port").all(|p| WELL_KNOWN_PORTS.contains(&p));
    hosts.extend(inv.values("-host").map(str::to_ascii_lowercase));
    let servername_ok =
        inv.values("-servername").all(|s| hosts.iter().all(|h| h.trim_end_matches('.') == s.to_ascii_lowercase()));
    ports_ok && servername_ok
}

#[cfg(test)]
#[path = "egress_nodata_tests.rs"]
mod tests;
