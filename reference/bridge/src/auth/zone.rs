//! A small authoritative DNS server for a fixed set of [`Record`]s (RFC 1035 §4): the
//! conformance harness serves its mail world's SPF, DKIM, DMARC and MX records with it to a
//! target whose resolver is pointed at it, and the closed world's resolver asks an empty one
//! (every name NXDOMAIN). UDP only, one question per query, answers never compressed beyond
//! the pointer to the question; names compare case-insensitively (RFC 4343).

use super::Record;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const A: u16 = 1;
const PTR: u16 = 12;
const MX: u16 = 15;
const TXT: u16 = 16;
const AAAA: u16 = 28;
/// Answers' time to live: short, the world is a test's.
const TTL: u32 = 60;

/// Records in wire form: (owner name, lowercase, no trailing dot; type; RDATA).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Zone {
    entries: Vec<(String, u16, Vec<u8>)>,
}

/// A record the zone cannot serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneError(pub String);

impl std::fmt::Display for ZoneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DNS zone: {}", self.0)
    }
}

impl std::error::Error for ZoneError {}

fn owner(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// `name` as DNS labels (RFC 1035 §3.1).
fn labels(name: &str) -> Result<Vec<u8>, ZoneError> {
    let mut out = Vec::new();
    for label in owner(name).split('.').filter(|l| !l.is_empty()) {
        if label.len() > 63 {
            return Err(ZoneError(format!(
                "label {label:?} is longer than 63 octets"
            )));
        }
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    Ok(out)
}

impl Zone {
    /// The zone holding `records` (the types [`Record`] documents).
    pub fn new(records: &[Record]) -> Result<Zone, ZoneError> {
        let mut entries = Vec::new();
        for r in records {
            let bad = |why: String| ZoneError(format!("{} {}: {why}", r.name, r.kind));
            let value = r.value.trim();
            let (name, kind, rdata) = match r.kind.to_ascii_uppercase().as_str() {
                "TXT" => {
                    // RFC 1035 §3.3.14: character-strings of at most 255 octets.
                    let mut rdata = Vec::new();
                    for chunk in value.as_bytes().chunks(255) {
                        rdata.push(chunk.len() as u8);
                        rdata.extend_from_slice(chunk);
                    }
                    if value.is_empty() {
                        rdata.push(0);
                    }
                    (owner(&r.name), TXT, rdata)
                }
                "A" => {
                    let ip: Ipv4Addr = value.parse().map_err(|e| bad(format!("{e}")))?;
                    (owner(&r.name), A, ip.octets().to_vec())
                }
                "AAAA" => {
                    let ip: Ipv6Addr = value.parse().map_err(|e| bad(format!("{e}")))?;
                    (owner(&r.name), AAAA, ip.octets().to_vec())
                }
                "MX" => {
                    let (pref, host) = value
                        .split_once(' ')
                        .ok_or_else(|| bad("MX value is `PREFERENCE HOST`".into()))?;
                    let pref: u16 = pref.parse().map_err(|e| bad(format!("{e}")))?;
                    let mut rdata = pref.to_be_bytes().to_vec();
                    rdata.extend(labels(host)?);
                    (owner(&r.name), MX, rdata)
                }
                "PTR" => {
                    let ip: IpAddr =
                        r.name.trim().parse().map_err(|e| {
                            bad(format!("a PTR record's name is an IP address: {e}"))
                        })?;
                    (reverse_name(ip), PTR, labels(value)?)
                }
                other => {
                    return Err(bad(format!(
                        "type {other} is not one of TXT, A, AAAA, MX, PTR"
                    )));
                }
            };
            labels(&name)?;
            entries.push((name, kind, rdata));
        }
        Ok(Zone { entries })
    }

    /// The reply to `query`, or `None` for something that is not a query to answer.
    pub fn answer(&self, query: &[u8]) -> Option<Vec<u8>> {
        if query.len() < 12 || query[2] & 0x80 != 0 || u16::from_be_bytes([query[4], query[5]]) != 1
        {
            return None;
        }
        let mut at = 12;
        let mut name = Vec::new();
        loop {
            let len = *query.get(at)? as usize;
            if len & 0xC0 != 0 {
                return None;
            }
            at += 1;
            if len == 0 {
                break;
            }
            name.push(String::from_utf8_lossy(query.get(at..at + len)?).to_ascii_lowercase());
            at += len;
        }
        let name = name.join(".");
        let qtype = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
        let question = query.get(12..at + 4)?;
        let answers: Vec<&Vec<u8>> = self
            .entries
            .iter()
            .filter(|(n, t, _)| *n == name && *t == qtype)
            .map(|(_, _, d)| d)
            .collect();
        let exists = self.entries.iter().any(|(n, _, _)| *n == name);
        let mut reply = Vec::with_capacity(512);
        reply.extend_from_slice(&query[..2]);
        reply.push(0x80 | (query[2] & 0x79) | 0x04); // QR, opcode and RD kept, AA
        reply.push(0x80 | if exists { 0 } else { 3 }); // RA; NOERROR or NXDOMAIN
        reply.extend_from_slice(&[0, 1]);
        reply.extend_from_slice(&(answers.len() as u16).to_be_bytes());
        reply.extend_from_slice(&[0, 0, 0, 0]);
        reply.extend_from_slice(question);
        for rdata in answers {
            reply.extend_from_slice(&[0xC0, 0x0C]); // the question's name
            reply.extend_from_slice(&qtype.to_be_bytes());
            reply.extend_from_slice(&[0, 1]); // IN
            reply.extend_from_slice(&TTL.to_be_bytes());
            reply.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            reply.extend_from_slice(rdata);
        }
        Some(reply)
    }
}

/// `d.c.b.a.in-addr.arpa` / the ip6.arpa nibble name of `ip` (RFC 1035 §3.5, RFC 3596 §2.5).
fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0])
        }
        IpAddr::V6(v6) => {
            let mut parts: Vec<String> = Vec::new();
            for byte in v6.octets().iter().rev() {
                parts.push(format!("{:x}", byte & 0x0F));
                parts.push(format!("{:x}", byte >> 4));
            }
            format!("{}.ip6.arpa", parts.join("."))
        }
    }
}

/// A running [`Zone`] on a UDP socket; stops when dropped.
#[derive(Debug)]
pub struct ZoneServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ZoneServer {
    /// Serves `zone` on `bind` (port 0: any free port) from a thread of its own.
    pub fn start(zone: Zone, bind: SocketAddr) -> io::Result<ZoneServer> {
        let socket = UdpSocket::bind(bind)?;
        socket.set_read_timeout(Some(Duration::from_millis(200)))?;
        let addr = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::Builder::new()
            .name("loom-bridge-zone".into())
            .spawn(move || serve(&socket, &zone, &halt))?;
        Ok(ZoneServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it answers.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Keeps serving for the rest of the process (the closed world's server).
    pub fn detach(mut self) -> SocketAddr {
        self.thread.take();
        self.addr
    }
}

impl Drop for ZoneServer {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = t.join();
        }
    }
}

fn serve(socket: &UdpSocket, zone: &Zone, stop: &AtomicBool) {
    let mut buf = [0u8; 1500];
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, peer)) => {
                if let Some(reply) = zone.answer(&buf[..n]) {
                    let _ = socket.send_to(&reply, peer);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend(labels(name).unwrap());
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&[0, 1]);
        q
    }

    fn rec(name: &str, kind: &str, value: &str) -> Record {
        Record {
            name: name.into(),
            kind: kind.into(),
            value: value.into(),
        }
    }

    #[test]
    fn answers_nodata_and_nxdomain() {
        let long = "x".repeat(300);
        let zone = Zone::new(&[
            rec("Example.COM.", "TXT", "v=spf1 -all"),
            rec("sel._domainkey.example.com", "TXT", &long),
            rec("example.com", "MX", "10 mx.example.com"),
            rec("mx.example.com", "A", "192.0.2.1"),
            rec("192.0.2.1", "PTR", "mx.example.com"),
        ])
        .unwrap();
        let r = zone.answer(&query("EXAMPLE.com", TXT)).unwrap();
        assert_eq!(&r[..2], &[0x12, 0x34]);
        assert_eq!(r[3] & 0x0F, 0, "NOERROR");
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1, "one answer");
        assert!(r.ends_with(b"\x0bv=spf1 -all"));
        // A 300-octet TXT is two character-strings (255 + 45).
        let r = zone
            .answer(&query("sel._domainkey.example.com", TXT))
            .unwrap();
        let rdata_len = u16::from_be_bytes([r[r.len() - 304], r[r.len() - 303]]);
        assert_eq!(rdata_len, 302);
        // NODATA: the name exists, the type does not.
        let r = zone.answer(&query("example.com", AAAA)).unwrap();
        assert_eq!((r[3] & 0x0F, u16::from_be_bytes([r[6], r[7]])), (0, 0));
        // NXDOMAIN.
        let r = zone.answer(&query("nowhere.example", A)).unwrap();
        assert_eq!(r[3] & 0x0F, 3);
        assert!(
            zone.answer(&query("1.2.0.192.in-addr.arpa", PTR))
                .is_some_and(|r| r[7] == 1)
        );
        assert!(zone.answer(&r).is_none(), "replies are never answered");
        assert!(zone.answer(&[0; 5]).is_none());
        assert!(Zone::new(&[rec("x", "SRV", "1")]).is_err());
    }
}
