//! Record checks `mail-auth` does not make, applied to the records a world preloads, and
//! the closed world's DNS server.
//!
//! `mail-auth` 0.13 parses SPF leniently (an unknown mechanism or an `ip4` prefix beyond /32
//! is skipped or clamped where RFC 7208 §4.6 makes the whole record a `permerror`) and
//! refuses a DMARC record whose `p=` value it does not know (RFC 7489 §6.6.3 step 6 says to
//! treat such a record as `p=none` when it has a valid `rua=`, else to apply no DMARC).
//! Preloaded records go through [`spf_syntax`] and [`dmarc_without_invalid_policies`] first;
//! records a configured `dns_server` returns are parsed by `mail-auth` as they come (the
//! README lists this as a known difference).

use super::zone::{Zone, ZoneServer};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;

/// RFC 7208 §12's grammar for a TXT record: `None` when it is not an SPF record at all
/// (§4.5: it does not begin with `v=spf1` followed by a space or its end), `Some(Ok)` for a
/// well-formed record, `Some(Err(why))` for a record with a syntax error (→ `permerror`).
pub fn spf_syntax(record: &str) -> Option<Result<(), String>> {
    let mut terms = record.split(' ');
    let version = terms.next()?;
    if !version.eq_ignore_ascii_case("v=spf1") {
        return None;
    }
    let (mut redirect, mut exp) = (0, 0);
    for term in terms.filter(|t| !t.is_empty()) {
        let lower = term.to_ascii_lowercase();
        let body = lower.trim_start_matches(['+', '-', '~', '?']);
        if body.len() + 1 < lower.len() {
            return Some(Err(format!("{term:?}: more than one qualifier")));
        }
        let name_end = body.find([':', '/', '=']).unwrap_or(body.len());
        let (name, rest) = body.split_at(name_end);
        if let Some(value) = rest.strip_prefix('=') {
            // §6: a modifier; no qualifier, a valid name, redirect and exp at most once.
            if body.len() != lower.len() {
                return Some(Err(format!("{term:?}: a modifier takes no qualifier")));
            }
            let valid_name = name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !valid_name {
                return Some(Err(format!("{term:?}: not a modifier name")));
            }
            match name {
                "redirect" => redirect += 1,
                "exp" => exp += 1,
                _ => {}
            }
            if (name == "redirect" || name == "exp") && value.is_empty() {
                return Some(Err(format!("{term:?}: {name}= needs a domain")));
            }
            continue;
        }
        if let Err(why) = mechanism(name, rest) {
            return Some(Err(format!("{term:?}: {why}")));
        }
    }
    if redirect > 1 || exp > 1 {
        return Some(Err("redirect= or exp= appears more than once (§6)".into()));
    }
    Some(Ok(()))
}

/// One mechanism's name and arguments (§5).
fn mechanism(name: &str, rest: &str) -> Result<(), String> {
    let domain = |r: &str| -> Result<(), String> {
        match r.strip_prefix(':') {
            Some(d) if !d.is_empty() => Ok(()),
            _ => Err(format!("{name} needs :domain")),
        }
    };
    let split_cidr = |r: &str| -> (String, Option<String>) {
        // The domain part ends where a CIDR suffix starts (a '/' outside macros).
        match r.find('/') {
            Some(i) => (r[..i].to_string(), Some(r[i..].to_string())),
            None => (r.to_string(), None),
        }
    };
    match name {
        "all" if rest.is_empty() => Ok(()),
        "include" | "exists" => domain(rest),
        "a" | "mx" => {
            let (spec, cidr) = split_cidr(rest);
            if !spec.is_empty() {
                domain(&spec)?;
            }
            cidr.map_or(Ok(()), |c| dual_cidr(&c))
        }
        "ptr" if rest.is_empty() => Ok(()),
        "ptr" => domain(rest),
        "ip4" => {
            let (addr, cidr) = split_cidr(rest.strip_prefix(':').ok_or("ip4 needs :address")?);
            addr.parse::<Ipv4Addr>()
                .map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
            cidr.map_or(Ok(()), |c| prefix(&c[1..], 32))
        }
        "ip6" => {
            let (addr, cidr) = split_cidr(rest.strip_prefix(':').ok_or("ip6 needs :address")?);
            addr.parse::<Ipv6Addr>()
                .map_err(|_| format!("{addr:?} is not an IPv6 address"))?;
            cidr.map_or(Ok(()), |c| prefix(&c[1..], 128))
        }
        _ => Err(format!("unknown mechanism {name:?} (§5)")),
    }
}

/// `dual-cidr-length` (§5.6): `/n`, `//m` or `/n//m`.
fn dual_cidr(c: &str) -> Result<(), String> {
    match c.strip_prefix("//") {
        Some(v6) => prefix(v6, 128),
        None => {
            let c = &c[1..];
            match c.split_once("//") {
                Some((v4, v6)) => prefix(v4, 32).and(prefix(v6, 128)),
                None => prefix(c, 32),
            }
        }
    }
}

fn prefix(p: &str, max: u8) -> Result<(), String> {
    match p.parse::<u8>() {
        Ok(n) if n <= max && !p.starts_with('0') || p == "0" => Ok(()),
        _ => Err(format!("/{p} is not a prefix length of 0..={max}")),
    }
}

/// A DMARC record with `p=`, `sp=` and `np=` tags whose values are not `none`,
/// `quarantine` or `reject` removed, so that RFC 7489 §6.6.3 step 6 applies (`p=none` with a
/// valid `rua`, no DMARC without one) instead of a parse error.
pub fn dmarc_without_invalid_policies(record: &str) -> String {
    record
        .split(';')
        .filter(|tag| match tag.split_once('=') {
            Some((k, v)) if matches!(k.trim().to_ascii_lowercase().as_str(), "p" | "sp" | "np") => {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "none" | "quarantine" | "reject"
                )
            }
            _ => true,
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The closed world's name server: an empty [`Zone`] on a loopback UDP socket, which
/// answers every query NXDOMAIN (RFC 1035 §4.1.1 RCODE 3), so a name no record preloads has
/// no records — the answer `mail-auth` needs to tell "no such host" from a lookup that
/// failed. One per process; `None` if no loopback socket could be bound.
pub fn closed_world_server() -> Option<SocketAddr> {
    static SERVER: OnceLock<Option<SocketAddr>> = OnceLock::new();
    *SERVER.get_or_init(|| {
        ZoneServer::start(Zone::default(), SocketAddr::from(([127, 0, 0, 1], 0)))
            .ok()
            .map(ZoneServer::detach)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spf_grammar() {
        for ok in [
            "v=spf1",
            "v=spf1 -all",
            "v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 a mx/24 a:x.example//64 ~all",
            "v=spf1 include:_spf.example.net exists:%{i}.x.example redirect=_s.example",
            "V=SPF1 IP4:192.0.2.1 -ALL",
            "v=spf1 foo=bar ptr ptr:example.com ?all exp=e.example",
        ] {
            assert_eq!(spf_syntax(ok), Some(Ok(())), "{ok}");
        }
        for bad in [
            "v=spf1 foo:bar",
            "v=spf1 ip4:192.0.2.0/33",
            "v=spf1 ip4:192.0.2",
            "v=spf1 ip6:2001:db8::/129",
            "v=spf1 include",
            "v=spf1 all:x",
            "v=spf1 redirect=a.example redirect=b.example",
            "v=spf1 -redirect=a.example",
            "v=spf1 a/024",
        ] {
            assert!(matches!(spf_syntax(bad), Some(Err(_))), "{bad}");
        }
        assert_eq!(spf_syntax("v=spf10 -all"), None);
        assert_eq!(spf_syntax("site-verification=1"), None);
    }

    #[test]
    fn dmarc_policies() {
        assert_eq!(
            dmarc_without_invalid_policies("v=DMARC1; p=bogus; rua=mailto:a@b"),
            "v=DMARC1; rua=mailto:a@b"
        );
        assert_eq!(
            dmarc_without_invalid_policies("v=DMARC1; p=reject; sp=x"),
            "v=DMARC1; p=reject"
        );
    }
}
