//! Target expressions: `web01`, `@tag`, `web*`, `a,b,@db`, `all`.
//!
//! Resolution is pure: it takes the inventory and returns hosts in inventory
//! order without duplicates. A name that is not in the inventory becomes an
//! ad-hoc host only when it reads as an address — it has a dot, is an IP
//! literal, or names a user or port (`ops@newbox:2222`); a bare unknown
//! word is almost always a typo, so it is an error with the nearest names.
//! A tag or glob that matches nothing is an error for the same reason.

use globset::Glob;

use super::host::{Host, LOCALHOST, validate_name};

/// Why a target expression selects nothing usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    /// The expression is empty.
    #[error("no targets given")]
    Empty,
    /// `@tag` with no host carrying the tag.
    #[error("no host has tag @{0}")]
    UnknownTag(String),
    /// A glob that matches no host name.
    #[error("no host matches {0}")]
    NoMatch(String),
    /// A glob that cannot be parsed, or a name that is not a valid host name.
    #[error("invalid target {0:?}: {1}")]
    Invalid(String, String),
    /// A bare name that is not in the inventory (and does not read as an address).
    #[error(
        "{0} is not in the inventory{1}; to reach a host outside it, give an address (with a dot, an IP, or user@host)"
    )]
    UnknownHost(String, String),
    /// The agent named a host that is not in the inventory.
    #[error("{0} is not in the inventory; the agent may only reach inventory hosts")]
    NotInInventory(String),
    /// The agent named localhost, which the operator has not opened to it.
    #[error("localhost is not open to the agent (set policy.agent_localhost: true to allow it)")]
    LocalhostClosed,
}

/// Resolves `expr` against `inventory`; a bare name outside it is accepted
/// when it is one of `ssh_aliases` (concrete `Host` names of ~/.ssh/config).
pub fn resolve_targets(expr: &str, inventory: &[Host], ssh_aliases: &[String]) -> Result<Vec<Host>, TargetError> {
    let mut selected: Vec<Host> = Vec::new();
    let push = |host: &Host, selected: &mut Vec<Host>| {
        if !selected.iter().any(|h| h.name == host.name) {
            selected.push(host.clone());
        }
    };
    let parts: Vec<&str> = expr.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return Err(TargetError::Empty);
    }
    for part in parts {
        if part == "all" {
            inventory.iter().for_each(|h| push(h, &mut selected));
        } else if let Some(tag) = part.strip_prefix('@') {
            let matching: Vec<&Host> = inventory.iter().filter(|h| h.tags.iter().any(|t| t == tag)).collect();
            if matching.is_empty() {
                return Err(TargetError::UnknownTag(tag.into()));
            }
            matching.into_iter().for_each(|h| push(h, &mut selected));
        } else if part.contains(['*', '?', '[']) {
            let matcher =
                Glob::new(part).map_err(|e| TargetError::Invalid(part.into(), e.kind().to_string()))?.compile_matcher();
            let matching: Vec<&Host> = inventory.iter().filter(|h| matcher.is_match(&h.name)).collect();
            if matching.is_empty() {
                return Err(TargetError::NoMatch(part.into()));
            }
            matching.into_iter().for_each(|h| push(h, &mut selected));
        } else if let Some(host) = inventory.iter().find(|h| h.name == part) {
            push(host, &mut selected);
        } else if reads_as_address(part) || ssh_aliases.iter().any(|a| a == part) {
            selected.push(ad_hoc_host(part)?);
        } else {
            validate_name(part).map_err(|e| TargetError::Invalid(part.into(), e))?;
            return Err(TargetError::UnknownHost(part.into(), did_you_mean(part, inventory)));
        }
    }
    Ok(selected)
}

/// The part of the inventory an expression can select: all of it (`all`, a glob), or only the
/// hosts it names and those carrying the tags it names. A command naming three hosts of a
/// 200,000-host inventory reads those rows, not the whole table.
#[derive(Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every host may be selected.
    All,
    /// Only these names (as written, ad-hoc addresses included) and these tags.
    Only {
        /// Bare names and addresses.
        names: Vec<String>,
        /// Tags, without the `@`.
        tags: Vec<String>,
    },
}

/// The [`Scope`] of `expr`, read the way [`resolve_targets`] reads it.
pub fn scope_of(expr: &str) -> Scope {
    let (mut names, mut tags) = (Vec::new(), Vec::new());
    for part in expr.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "all" || part.contains(['*', '?', '[']) {
            return Scope::All;
        }
        match part.strip_prefix('@') {
            Some(tag) => tags.push(tag.to_string()),
            None => names.push(part.to_string()),
        }
    }
    Scope::Only { names, tags }
}

/// Like [`resolve_targets`], for a caller that may only reach the inventory
/// (the agent): an ad-hoc `user@host:port` is refused, and `localhost` only
/// takes part when `allow_localhost` (named explicitly it is an error, in
/// `all`, tags and globs it is left out).
pub fn resolve_inventory_targets(
    expr: &str,
    inventory: &[Host],
    allow_localhost: bool,
) -> Result<Vec<Host>, TargetError> {
    for part in expr.split(',').map(str::trim) {
        let wildcard = part == "all" || part.starts_with('@') || part.contains(['*', '?', '[']);
        if !part.is_empty() && !wildcard && !inventory.iter().any(|h| h.name == part) {
            return Err(TargetError::NotInInventory(part.into()));
        }
        if part == LOCALHOST && !allow_localhost {
            return Err(TargetError::LocalhostClosed);
        }
    }
    let mut hosts = resolve_targets(expr, inventory, &[])?;
    if !allow_localhost {
        hosts.retain(|h| h.name != LOCALHOST);
    }
    if hosts.is_empty() {
        return Err(TargetError::NoMatch(expr.into()));
    }
    Ok(hosts)
}

/// `[user@]name[:port]` not in the inventory: an ad-hoc SSH host.
/// Whether an unknown target is meant as an address rather than a name.
fn reads_as_address(part: &str) -> bool {
    part.contains(['.', '@', ':']) || part.parse::<std::net::IpAddr>().is_ok()
}

/// `"; did you mean web01 or web10?"` for the closest inventory names, or nothing.
fn did_you_mean(part: &str, inventory: &[Host]) -> String {
    let mut close: Vec<(usize, &str)> = inventory
        .iter()
        .map(|h| (strsim::damerau_levenshtein(part, &h.name), h.name.as_str()))
        .filter(|(d, name)| *d <= 2.max(name.len() / 3))
        .collect();
    close.sort();
    let nearest = close.first().map(|(d, _)| *d).unwrap_or(0);
    let names: Vec<&str> = close.iter().filter(|(d, _)| *d == nearest).take(3).map(|(_, n)| *n).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [rest @ .., last] => format!("; did you mean {} or {last}?", rest.join(", ")),
    }
}

fn ad_hoc_host(part: &str) -> Result<Host, TargetError> {
    let (user, rest) = match part.split_once('@') {
        Some((u, r)) => (Some(u.to_string()), r),
        None => (None, part),
    };
    let (name, port) = match rest.rsplit_once(':') {
        Some((n, p)) => {
            let port = p.parse::<u16>().map_err(|_| TargetError::Invalid(part.into(), format!("bad port {p:?}")))?;
            (n, port)
        }
        None => (rest, 22),
    };
    validate_name(name).map_err(|e| TargetError::Invalid(part.into(), e))?;
    let mut host = Host::new(name, name);
    host.username = user;
    host.port = port;
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv() -> Vec<Host> {
        let mut web1 = Host::new("web01", "10.0.0.1");
        web1.add_tag("web");
        let mut web2 = Host::new("web02", "10.0.0.2");
        web2.add_tag("web");
        web2.add_tag("prod");
        let mut db = Host::new("db01", "10.0.0.3");
        db.add_tag("prod");
        vec![Host::localhost(), web1, web2, db]
    }

    fn names(hosts: &[Host]) -> Vec<&str> {
        hosts.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn names_tags_globs_lists_and_all() {
        let inv = inv();
        assert_eq!(names(&resolve_targets("web01", &inv, &[]).unwrap()), ["web01"]);
        assert_eq!(names(&resolve_targets("@prod", &inv, &[]).unwrap()), ["web02", "db01"]);
        assert_eq!(names(&resolve_targets("web*", &inv, &[]).unwrap()), ["web01", "web02"]);
        assert_eq!(names(&resolve_targets("db01, @web ,web02", &inv, &[]).unwrap()), ["db01", "web01", "web02"]);
        assert_eq!(names(&resolve_targets("all", &inv, &[]).unwrap()), ["localhost", "web01", "web02", "db01"]);
    }

    #[test]
    fn unknown_name_becomes_ad_hoc_host_with_user_and_port() {
        let hosts = resolve_targets("ops@newbox:2222", &inv(), &[]).unwrap();
        assert_eq!(hosts[0].name, "newbox");
        assert_eq!(hosts[0].username.as_deref(), Some("ops"));
        assert_eq!(hosts[0].port, 2222);
    }

    #[test]
    fn a_typo_is_an_error_with_the_nearest_names_and_addresses_still_work() {
        let inv = inv();
        let err = resolve_targets("web1", &inv, &[]).unwrap_err();
        assert_eq!(err.to_string().split(';').nth(1).map(str::trim), Some("did you mean web01?"), "{err}");
        assert!(
            matches!(resolve_targets("zzzzzz", &inv, &[]), Err(TargetError::UnknownHost(_, hint)) if hint.is_empty())
        );
        for address in ["10.1.2.3", "db.example.com", "ops@newbox", "newbox:2222"] {
            assert!(resolve_targets(address, &inv, &[]).is_ok(), "{address} is an address");
        }
        assert!(resolve_targets("adhoc-box", &inv, &["adhoc-box".into()]).is_ok(), "an ~/.ssh/config alias");
    }

    #[test]
    fn typos_are_errors() {
        let inv = inv();
        assert_eq!(resolve_targets("@nope", &inv, &[]), Err(TargetError::UnknownTag("nope".into())));
        assert_eq!(resolve_targets("cache*", &inv, &[]), Err(TargetError::NoMatch("cache*".into())));
        assert_eq!(resolve_targets(" , ", &inv, &[]), Err(TargetError::Empty));
        assert!(matches!(resolve_targets("a b", &inv, &[]), Err(TargetError::Invalid(..))));
        assert!(matches!(resolve_targets("x:port", &inv, &[]), Err(TargetError::Invalid(..))));
    }

    #[test]
    fn a_scope_names_what_an_expression_can_select() {
        assert_eq!(scope_of("all"), Scope::All);
        assert_eq!(scope_of("web01, web*"), Scope::All);
        assert_eq!(scope_of("db[12]"), Scope::All);
        assert_eq!(
            scope_of("web01, @prod,ops@newbox:2222,,"),
            Scope::Only { names: vec!["web01".into(), "ops@newbox:2222".into()], tags: vec!["prod".into()] }
        );
        // What a scope reads selects what the whole inventory selects.
        let inv = inv();
        for expr in ["web01", "@prod", "db01,@web", "localhost,@prod"] {
            let Scope::Only { names, tags } = scope_of(expr) else { panic!("{expr}") };
            let part: Vec<Host> = inv
                .iter()
                .filter(|h| names.contains(&h.name) || h.tags.iter().any(|t| tags.contains(t)))
                .cloned()
                .collect();
            assert_eq!(resolve_targets(expr, &part, &[]), resolve_targets(expr, &inv, &[]), "{expr}");
        }
    }

    #[test]
    fn the_agent_reaches_only_the_inventory() {
        let inv = inv();
        assert!(matches!(resolve_inventory_targets("root@evil:22", &inv, false), Err(TargetError::NotInInventory(_))));
        assert!(matches!(resolve_inventory_targets("web01,db9", &inv, false), Err(TargetError::NotInInventory(_))));
        assert!(matches!(resolve_inventory_targets("localhost", &inv, false), Err(TargetError::LocalhostClosed)));
        assert_eq!(names(&resolve_inventory_targets("all", &inv, false).unwrap()), ["web01", "web02", "db01"]);
        assert_eq!(names(&resolve_inventory_targets("all", &inv, true).unwrap())[0], "localhost");
        assert_eq!(names(&resolve_inventory_targets("localhost", &inv, true).unwrap()), ["localhost"]);
    }
}
