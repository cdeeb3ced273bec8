//! A small DNS stub client for the optional §15.1 discovery (v1.1 §15.1: SRV
//! `_loom._tcp.{domain}`, TXT `_loom.{domain}`): RFC 1035 messages with one question, over
//! UDP to one configured recursive server with a timeout and retries, and over TCP when the
//! UDP answer is truncated (TC bit, RFC 1035 §4.2.2, 2-byte length prefix). Records read:
//! SRV (RFC 2782) and TXT (RFC 1035 §3.3.14); others are skipped.
//!
//! The decoder is strict and bounded, because the answer comes from the network: every
//! length and count is checked against the bytes actually present, names are at most 255
//! bytes (RFC 1035 §2.3.4), compression pointers (§4.1.4) must point strictly backwards
//! (so they cannot loop) and are followed at most [`MAX_POINTER_JUMPS`] times, and a record's
//! data must be consumed exactly by its type's layout. Malformed input is a [`DnsError`],
//! never a panic, and the work is linear in the message size. There is no DNSSEC
//! validation: TLS still verifies the host actually contacted (v1.1 §14.1), and the node
//! document's `domain` must still name the node being resolved (§15.2).
//!
//! No DNS crate is in DESIGN.md §8's list, and this much is small enough to own.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// RR type TXT (RFC 1035 §3.2.2).
pub const TYPE_TXT: u16 = 16;
/// RR type SRV (RFC 2782).
pub const TYPE_SRV: u16 = 33;
/// Class IN.
pub const CLASS_IN: u16 = 1;
/// Longest domain name in wire form (RFC 1035 §2.3.4).
pub const MAX_NAME_LEN: usize = 255;
/// Most compression pointers followed while reading one name.
pub const MAX_POINTER_JUMPS: usize = 64;
/// Longest message read (UDP datagram or TCP frame; the 2-byte TCP length caps it anyway).
pub const MAX_MESSAGE_LEN: usize = 65_535;
/// Fixed header length (RFC 1035 §4.1.1).
const HEADER_LEN: usize = 12;
/// A resource record's fixed part after its name: type, class, TTL, RDLENGTH.
const RR_FIXED_LEN: usize = 10;

/// Why a lookup gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsError {
    /// The name to look up is not a valid DNS name.
    BadName(String),
    /// The answer is not a well-formed DNS message (what is wrong, where).
    Malformed(String),
    /// The server answered with an error RCODE other than NXDOMAIN (2 = SERVFAIL,
    /// 5 = REFUSED, …).
    Rcode(u8),
    /// No usable answer within the timeout after every attempt.
    Timeout,
    /// A socket error.
    Io(String),
}

impl fmt::Display for DnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnsError::BadName(why) => write!(f, "not a DNS name: {why}"),
            DnsError::Malformed(why) => write!(f, "malformed DNS answer: {why} (RFC 1035 §4.1)"),
            DnsError::Rcode(code) => write!(
                f,
                "DNS server answered RCODE {code} ({})",
                match code {
                    1 => "FORMERR",
                    2 => "SERVFAIL",
                    4 => "NOTIMP",
                    5 => "REFUSED",
                    _ => "error",
                }
            ),
            DnsError::Timeout => f.write_str("DNS query timed out"),
            DnsError::Io(why) => write!(f, "DNS socket error: {why}"),
        }
    }
}

fn malformed(why: impl Into<String>) -> DnsError {
    DnsError::Malformed(why.into())
}

/// An SRV record's data (RFC 2782).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv {
    /// Lower is tried first.
    pub priority: u16,
    /// Relative share among records of one priority.
    pub weight: u16,
    /// Port of the service on `target`.
    pub port: u16,
    /// Target host name, lowercase, without the trailing dot (`"."`, "service not
    /// available", reads as the empty string).
    pub target: String,
}

/// A record's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RData {
    /// SRV.
    Srv(Srv),
    /// TXT: its character-strings, in order.
    Txt(Vec<Vec<u8>>),
    /// Any other type (data not read).
    Other,
}

/// One answer-section record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Owner name, lowercase, without the trailing dot.
    pub name: String,
    /// RR type.
    pub rtype: u16,
    /// RR class.
    pub class: u16,
    /// Time to live (seconds).
    pub ttl: u32,
    /// The data.
    pub data: RData,
}

/// A decoded response: the header fields a stub client needs, the question, the answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Message id.
    pub id: u16,
    /// QR: this is a response.
    pub is_response: bool,
    /// OPCODE (0 = standard query).
    pub opcode: u8,
    /// TC: truncated, ask again over TCP.
    pub truncated: bool,
    /// RCODE (0 = no error, 3 = NXDOMAIN).
    pub rcode: u8,
    /// The question `(name, type, class)`, if the message carries one.
    pub question: Option<(String, u16, u16)>,
    /// The answer section (authority and additional sections are not read).
    pub answers: Vec<Record>,
}

/// Encodes a standard query with recursion desired for `name` (dotted, trailing dot
/// optional), type `qtype`, class IN (RFC 1035 §4.1).
pub fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, DnsError> {
    let mut out = Vec::with_capacity(HEADER_LEN + name.len() + 6);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    out.extend_from_slice(&1u16.to_be_bytes()); // QDCOUNT
    out.extend_from_slice(&[0; 6]); // AN, NS, AR counts
    encode_name(name, &mut out)?;
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(out)
}

fn encode_name(name: &str, out: &mut Vec<u8>) -> Result<(), DnsError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return Err(DnsError::BadName("empty name".into()));
    }
    let start = out.len();
    for label in name.split('.') {
        let len = label.len();
        if len == 0 || len > 63 {
            return Err(DnsError::BadName(format!(
                "{name:?}: labels are 1 to 63 bytes (RFC 1035 §2.3.4)"
            )));
        }
        out.push(len as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    if out.len() - start > MAX_NAME_LEN {
        return Err(DnsError::BadName(format!(
            "{name:?} is longer than {MAX_NAME_LEN} bytes (RFC 1035 §2.3.4)"
        )));
    }
    Ok(())
}

/// A bounds-checked reader over a message.
struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DnsError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.msg.len())
            .ok_or_else(|| {
                malformed(format!(
                    "{what} at byte {} needs {n} bytes, the message has {}",
                    self.pos,
                    self.msg.len()
                ))
            })?;
        let s = &self.msg[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, DnsError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, DnsError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, DnsError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a possibly compressed name at the cursor; the cursor ends after the name's
    /// bytes at this position (after the first pointer, if any).
    fn name(&mut self) -> Result<String, DnsError> {
        let (name, next) = read_name(self.msg, self.pos)?;
        self.pos = next;
        Ok(name)
    }
}

/// Reads the name at `start` of `msg`: `(lowercase dotted name without trailing dot, the
/// position after the name's bytes at `start`)`. Pointers must point strictly before the
/// label they occur in, so following them always moves backwards and terminates; at most
/// [`MAX_POINTER_JUMPS`] are followed and the wire length stays within [`MAX_NAME_LEN`].
fn read_name(msg: &[u8], start: usize) -> Result<(String, usize), DnsError> {
    let mut out = String::new();
    let mut wire_len = 1usize; // the root label
    let mut pos = start;
    let mut after: Option<usize> = None;
    let mut jumps = 0usize;
    loop {
        let len = *msg
            .get(pos)
            .ok_or_else(|| malformed(format!("name at byte {start} runs past the message")))?;
        match len & 0xC0 {
            0x00 => {
                if len == 0 {
                    let end = after.unwrap_or(pos + 1);
                    return Ok((out, end));
                }
                let n = usize::from(len);
                let label = msg.get(pos + 1..pos + 1 + n).ok_or_else(|| {
                    malformed(format!("label at byte {pos} runs past the message"))
                })?;
                wire_len += n + 1;
                if wire_len > MAX_NAME_LEN {
                    return Err(malformed(format!(
                        "name at byte {start} is longer than {MAX_NAME_LEN} bytes"
                    )));
                }
                if !out.is_empty() {
                    out.push('.');
                }
                for &c in label {
                    // Names here are host names and `_loom` labels; other bytes are escaped
                    // so a hostile label cannot smuggle separators.
                    if c.is_ascii_alphanumeric() || c == b'-' || c == b'_' {
                        out.push(char::from(c.to_ascii_lowercase()));
                    } else {
                        out.push_str(&format!("\\{c:03}"));
                    }
                }
                pos += 1 + n;
            }
            0xC0 => {
                let low = *msg.get(pos + 1).ok_or_else(|| {
                    malformed(format!("compression pointer at byte {pos} is cut off"))
                })?;
                let target = (usize::from(len & 0x3F) << 8) | usize::from(low);
                if target >= pos {
                    return Err(malformed(format!(
                        "compression pointer at byte {pos} points forwards to {target} (a loop)"
                    )));
                }
                jumps += 1;
                if jumps > MAX_POINTER_JUMPS {
                    return Err(malformed(format!(
                        "name at byte {start} follows more than {MAX_POINTER_JUMPS} pointers"
                    )));
                }
                after.get_or_insert(pos + 2);
                pos = target;
            }
            _ => {
                return Err(malformed(format!(
                    "label type {:#04x} at byte {pos} is not supported",
                    len & 0xC0
                )));
            }
        }
    }
}

/// Decodes a response message (RFC 1035 §4.1): header, at most one question, the answer
/// section. Counts are checked against the bytes present before anything is allocated.
pub fn decode_response(msg: &[u8]) -> Result<Response, DnsError> {
    if msg.len() > MAX_MESSAGE_LEN {
        return Err(malformed(format!(
            "message of {} bytes is longer than {MAX_MESSAGE_LEN}",
            msg.len()
        )));
    }
    let mut r = Reader { msg, pos: 0 };
    let id = r.u16("header")?;
    let flags = r.u16("header")?;
    let qdcount = r.u16("header")?;
    let ancount = r.u16("header")?;
    let _nscount = r.u16("header")?;
    let _arcount = r.u16("header")?;
    if qdcount > 1 {
        return Err(malformed(format!(
            "QDCOUNT {qdcount}: a response to one question carries at most one"
        )));
    }
    // Each record takes at least a 1-byte name and its fixed part.
    let room = msg.len() - HEADER_LEN;
    if usize::from(ancount) * (1 + RR_FIXED_LEN) > room {
        return Err(malformed(format!(
            "ANCOUNT {ancount} cannot fit in {room} bytes"
        )));
    }
    let question = if qdcount == 1 {
        let name = r.name()?;
        let qtype = r.u16("question type")?;
        let qclass = r.u16("question class")?;
        Some((name, qtype, qclass))
    } else {
        None
    };
    let mut answers = Vec::with_capacity(usize::from(ancount));
    for _ in 0..ancount {
        answers.push(read_record(&mut r)?);
    }
    Ok(Response {
        id,
        is_response: flags & 0x8000 != 0,
        opcode: ((flags >> 11) & 0x0F) as u8,
        truncated: flags & 0x0200 != 0,
        rcode: (flags & 0x000F) as u8,
        question,
        answers,
    })
}

fn read_record(r: &mut Reader<'_>) -> Result<Record, DnsError> {
    let name = r.name()?;
    let rtype = r.u16("record type")?;
    let class = r.u16("record class")?;
    let ttl = r.u32("record TTL")?;
    let rdlength = usize::from(r.u16("RDLENGTH")?);
    let rdata_start = r.pos;
    let rdata = r.take(rdlength, "record data")?;
    let data = match rtype {
        TYPE_SRV => {
            let mut d = Reader {
                msg: r.msg,
                pos: rdata_start,
            };
            let priority = d.u16("SRV priority")?;
            let weight = d.u16("SRV weight")?;
            let port = d.u16("SRV port")?;
            let target = d.name()?;
            if d.pos != rdata_start + rdlength {
                return Err(malformed(format!(
                    "SRV data at byte {rdata_start} is {} bytes, RDLENGTH says {rdlength}",
                    d.pos - rdata_start
                )));
            }
            RData::Srv(Srv {
                priority,
                weight,
                port,
                target,
            })
        }
        TYPE_TXT => {
            if rdata.is_empty() {
                return Err(malformed(format!(
                    "TXT data at byte {rdata_start} is empty (one or more character-strings)"
                )));
            }
            let mut strings = Vec::new();
            let mut d = Reader { msg: rdata, pos: 0 };
            while d.pos < rdata.len() {
                let n = usize::from(d.u8("TXT string length")?);
                strings.push(d.take(n, "TXT character-string")?.to_vec());
            }
            RData::Txt(strings)
        }
        _ => RData::Other,
    };
    Ok(Record {
        name,
        rtype,
        class,
        ttl,
        data,
    })
}

/// Whether `resp` answers the query `id` for `(name, qtype)`: a response to a standard
/// query with the same id and the same question (names compared case-insensitively).
fn answers_query(resp: &Response, id: u16, name: &str, qtype: u16) -> bool {
    let want = name.trim_end_matches('.').to_ascii_lowercase();
    resp.id == id
        && resp.is_response
        && resp.opcode == 0
        && resp
            .question
            .as_ref()
            .is_some_and(|(n, t, c)| *n == want && *t == qtype && *c == CLASS_IN)
}

/// The records of `resp` that answer `(name, qtype)` in class IN, or the error its RCODE
/// means. NXDOMAIN (3) is "no records", not an error: the name does not exist.
pub fn matching_records(resp: &Response, name: &str, qtype: u16) -> Result<Vec<Record>, DnsError> {
    match resp.rcode {
        0 => {}
        3 => return Ok(Vec::new()),
        code => return Err(DnsError::Rcode(code)),
    }
    let want = name.trim_end_matches('.').to_ascii_lowercase();
    Ok(resp
        .answers
        .iter()
        .filter(|rec| rec.name == want && rec.rtype == qtype && rec.class == CLASS_IN)
        .cloned()
        .collect())
}

/// Orders SRV records for trying (RFC 2782 "Usage rules"): by ascending priority; within one
/// priority, repeatedly pick among the remaining records with probability proportional to
/// weight — `pick(total)` must return a number in `0..=total` (the node draws it from its
/// seeded RNG; `|_| 0` is the deterministic choice: weight-0 records first, then in answer
/// order). A lone record whose target is `.` means "service not available": no targets.
pub fn order_srv(records: &[Srv], pick: &mut dyn FnMut(u32) -> u32) -> Vec<Srv> {
    if records.len() == 1 && records[0].target.is_empty() {
        return Vec::new();
    }
    let mut by_priority: std::collections::BTreeMap<u16, Vec<Srv>> = Default::default();
    for s in records.iter().filter(|s| !s.target.is_empty()) {
        by_priority.entry(s.priority).or_default().push(s.clone());
    }
    let mut out = Vec::with_capacity(records.len());
    for (_, group) in by_priority {
        // Weight-0 records first (RFC 2782), otherwise in answer order.
        let (mut left, rest): (Vec<Srv>, Vec<Srv>) = group.into_iter().partition(|s| s.weight == 0);
        left.extend(rest);
        while !left.is_empty() {
            let total: u32 = left.iter().map(|s| u32::from(s.weight)).sum();
            let r = pick(total).min(total);
            let mut running = 0u32;
            let idx = left
                .iter()
                .position(|s| {
                    running += u32::from(s.weight);
                    running >= r
                })
                .unwrap_or(0);
            out.push(left.remove(idx));
        }
    }
    out
}

/// A stub resolver asking one recursive server.
#[derive(Debug, Clone)]
pub struct DnsClient {
    /// The server (`127.0.0.1:53`).
    pub server: SocketAddr,
    /// How long one attempt waits for an answer.
    pub timeout: Duration,
    /// Attempts over UDP before giving up (at least 1).
    pub attempts: u32,
}

impl DnsClient {
    /// Looks up `(name, qtype)` with message id `id` (callers draw it from the node's seeded
    /// RNG: an unpredictable id is the stub's defence against spoofed answers). UDP first,
    /// retried on timeout; a truncated answer is asked again over TCP. Datagrams that are not
    /// an answer to this query (other id, other question, not a response) are ignored.
    pub async fn query(&self, name: &str, qtype: u16, id: u16) -> Result<Vec<Record>, DnsError> {
        let query = encode_query(id, name, qtype)?;
        let bind: SocketAddr = if self.server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let io = |e: std::io::Error| DnsError::Io(format!("{}: {e}", self.server));
        let socket = tokio::net::UdpSocket::bind(bind).await.map_err(io)?;
        socket.connect(self.server).await.map_err(io)?;
        let mut buf = vec![0u8; MAX_MESSAGE_LEN];
        for _ in 0..self.attempts.max(1) {
            socket.send(&query).await.map_err(io)?;
            let deadline = tokio::time::Instant::now() + self.timeout;
            loop {
                let n = match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
                    Err(_) => break,
                    // An ICMP "port unreachable" surfaces here; try again until attempts run out.
                    Ok(Err(_)) => {
                        tokio::time::sleep_until(deadline).await;
                        break;
                    }
                    Ok(Ok(n)) => n,
                };
                let msg = &buf[..n];
                // Not our id: another query's late answer or a spoof. Ignore.
                if n < 2 || u16::from_be_bytes([msg[0], msg[1]]) != id {
                    continue;
                }
                let resp = decode_response(msg)?;
                if !answers_query(&resp, id, name, qtype) {
                    continue;
                }
                if resp.truncated {
                    return self.query_tcp(&query, name, qtype, id).await;
                }
                return matching_records(&resp, name, qtype);
            }
        }
        Err(DnsError::Timeout)
    }

    /// The same query over TCP (RFC 1035 §4.2.2), one attempt within the timeout.
    async fn query_tcp(
        &self,
        query: &[u8],
        name: &str,
        qtype: u16,
        id: u16,
    ) -> Result<Vec<Record>, DnsError> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let io = |e: std::io::Error| DnsError::Io(format!("TCP {}: {e}", self.server));
        let exchange = async {
            let mut s = tokio::net::TcpStream::connect(self.server)
                .await
                .map_err(io)?;
            let mut framed = Vec::with_capacity(query.len() + 2);
            framed.extend_from_slice(&(query.len() as u16).to_be_bytes());
            framed.extend_from_slice(query);
            s.write_all(&framed).await.map_err(io)?;
            let mut len = [0u8; 2];
            s.read_exact(&mut len).await.map_err(io)?;
            let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut msg).await.map_err(io)?;
            let resp = decode_response(&msg)?;
            if !answers_query(&resp, id, name, qtype) {
                return Err(malformed("the TCP answer does not answer the query"));
            }
            matching_records(&resp, name, qtype)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(DnsError::Timeout))
    }
}

/// Test and fake-server helpers: encoding answers (a fake DNS server in tests answers from
/// a table with these).
pub mod wire {
    use super::*;

    /// A record to put in an answer.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Answer {
        /// SRV `priority weight port target`.
        Srv(u16, u16, u16, String),
        /// TXT with these character-strings (each at most 255 bytes).
        Txt(Vec<String>),
    }

    /// Encodes a response to `query` (its id and question echoed) with `rcode` and
    /// `answers`, each owned by the question's name (written as a pointer to it) with TTL
    /// 300. `None` when `query` is not a one-question query.
    pub fn encode_response(
        query: &[u8],
        rcode: u8,
        truncated: bool,
        answers: &[Answer],
    ) -> Option<Vec<u8>> {
        let q = decode_response(query).ok()?;
        q.question.as_ref()?;
        let question_end = {
            let (_, end) = read_name(query, HEADER_LEN).ok()?;
            end + 4
        };
        let mut out = Vec::new();
        out.extend_from_slice(&query[0..2]);
        let flags: u16 =
            0x8000 | 0x0100 | 0x0080 | if truncated { 0x0200 } else { 0 } | u16::from(rcode & 0x0F);
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&(answers.len() as u16).to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&query[HEADER_LEN..question_end]);
        for a in answers {
            out.extend_from_slice(&[0xC0, HEADER_LEN as u8]);
            let mut rdata = Vec::new();
            let rtype = match a {
                Answer::Srv(p, w, port, target) => {
                    rdata.extend_from_slice(&p.to_be_bytes());
                    rdata.extend_from_slice(&w.to_be_bytes());
                    rdata.extend_from_slice(&port.to_be_bytes());
                    if target.trim_end_matches('.').is_empty() {
                        rdata.push(0);
                    } else {
                        encode_name(target, &mut rdata).ok()?;
                    }
                    TYPE_SRV
                }
                Answer::Txt(strings) => {
                    for s in strings {
                        rdata.push(u8::try_from(s.len()).ok()?);
                        rdata.extend_from_slice(s.as_bytes());
                    }
                    TYPE_TXT
                }
            };
            out.extend_from_slice(&rtype.to_be_bytes());
            out.extend_from_slice(&CLASS_IN.to_be_bytes());
            out.extend_from_slice(&300u32.to_be_bytes());
            out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            out.extend_from_slice(&rdata);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{Answer, encode_response};
    use super::*;
    use proptest::prelude::*;

    fn srv(priority: u16, weight: u16, target: &str) -> Srv {
        Srv {
            priority,
            weight,
            port: 443,
            target: target.into(),
        }
    }

    #[test]
    fn a_query_encodes_per_rfc_1035() {
        let q = encode_query(0xBEEF, "_loom._tcp.B.test.", TYPE_SRV).unwrap();
        let mut want = vec![0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(b"\x05_loom\x04_tcp\x01B\x04test\x00\x00\x21\x00\x01");
        assert_eq!(q, want);
        let d = decode_response(&q).unwrap();
        assert_eq!(
            d.question,
            Some(("_loom._tcp.b.test".into(), TYPE_SRV, CLASS_IN))
        );
        assert!(!d.is_response);
        for bad in ["", ".", "a..b", &"a".repeat(64), &["abc"; 70].join(".")] {
            assert!(
                matches!(encode_query(1, bad, TYPE_TXT), Err(DnsError::BadName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn answers_decode_with_compression() {
        let q = encode_query(7, "_loom._tcp.b.test", TYPE_SRV).unwrap();
        let a = encode_response(
            &q,
            0,
            false,
            &[
                Answer::Srv(10, 5, 8443, "node.b.test.".into()),
                Answer::Txt(vec!["v=LOOM1.1; ".into(), "api=https://x/v1".into()]),
            ],
        )
        .unwrap();
        let d = decode_response(&a).unwrap();
        assert!(d.is_response && !d.truncated && d.rcode == 0 && d.id == 7);
        assert_eq!(d.answers.len(), 2);
        assert_eq!(d.answers[0].name, "_loom._tcp.b.test");
        assert_eq!(
            d.answers[0].data,
            RData::Srv(Srv {
                priority: 10,
                weight: 5,
                port: 8443,
                target: "node.b.test".into()
            })
        );
        assert_eq!(
            d.answers[1].data,
            RData::Txt(vec![b"v=LOOM1.1; ".to_vec(), b"api=https://x/v1".to_vec()])
        );
        // Only the records of the asked type and name count.
        let m = matching_records(&d, "_loom._tcp.B.test.", TYPE_SRV).unwrap();
        assert_eq!(m.len(), 1);
        assert!(answers_query(&d, 7, "_LOOM._tcp.b.test", TYPE_SRV));
        assert!(!answers_query(&d, 8, "_loom._tcp.b.test", TYPE_SRV));
        assert!(!answers_query(&d, 7, "_loom._tcp.c.test", TYPE_SRV));
    }

    #[test]
    fn rcodes_map_to_no_records_or_errors() {
        let q = encode_query(1, "_loom.b.test", TYPE_TXT).unwrap();
        let nx = decode_response(&encode_response(&q, 3, false, &[]).unwrap()).unwrap();
        assert_eq!(matching_records(&nx, "_loom.b.test", TYPE_TXT), Ok(vec![]));
        let sf = decode_response(&encode_response(&q, 2, false, &[]).unwrap()).unwrap();
        let e = matching_records(&sf, "_loom.b.test", TYPE_TXT).unwrap_err();
        assert_eq!(e, DnsError::Rcode(2));
        assert!(e.to_string().contains("SERVFAIL"), "{e}");
    }

    #[test]
    fn hostile_messages_are_errors() {
        let q = encode_query(1, "_loom.b.test", TYPE_TXT).unwrap();
        let good = encode_response(&q, 0, false, &[Answer::Txt(vec!["v=LOOM1.1".into()])]).unwrap();
        // Every truncation of a good answer is an error, never a panic.
        for n in 0..good.len() {
            assert!(decode_response(&good[..n]).is_err(), "prefix {n}");
        }
        // A pointer to itself, and one pointing forwards.
        let mut looped = q.clone();
        looped[2] |= 0x80;
        looped.truncate(HEADER_LEN);
        looped.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1]);
        let e = decode_response(&looped).unwrap_err().to_string();
        assert!(e.contains("loop"), "{e}");
        // A chain of backwards pointers longer than the jump limit.
        let mut chain = vec![0u8; HEADER_LEN];
        chain[5] = 1; // QDCOUNT 1
        chain.extend_from_slice(&[1, b'a', 0]);
        let mut prev = HEADER_LEN;
        for _ in 0..(MAX_POINTER_JUMPS + 2) {
            let here = chain.len();
            chain.extend_from_slice(&[0xC0 | (prev >> 8) as u8, prev as u8]);
            prev = here;
        }
        let qpos = chain.len();
        chain.extend_from_slice(&[0xC0 | (prev >> 8) as u8, prev as u8, 0, 16, 0, 1]);
        let e = read_name(&chain, qpos).unwrap_err().to_string();
        assert!(e.contains("pointers"), "{e}");
        // Hostile counts.
        let mut counts = good.clone();
        counts[6] = 0xFF;
        counts[7] = 0xFF;
        assert!(
            decode_response(&counts)
                .unwrap_err()
                .to_string()
                .contains("ANCOUNT")
        );
        let mut qd = good.clone();
        qd[5] = 2;
        assert!(
            decode_response(&qd)
                .unwrap_err()
                .to_string()
                .contains("QDCOUNT")
        );
        // RDLENGTH past the end, a TXT string past its data, reserved label types.
        let mut rd = good.clone();
        let l = rd.len();
        rd[l - 11] = 0x40; // RDLENGTH high byte of the one TXT answer
        assert!(decode_response(&rd).is_err());
        let mut txt = good.clone();
        let l = txt.len();
        txt[l - 10] = 200; // the first character-string's length byte
        assert!(
            decode_response(&txt)
                .unwrap_err()
                .to_string()
                .contains("TXT")
        );
        let mut lbl = good.clone();
        lbl[HEADER_LEN] = 0x45;
        assert!(
            decode_response(&lbl)
                .unwrap_err()
                .to_string()
                .contains("label type")
        );
        // A name of more than 255 bytes.
        let mut long = vec![0u8; HEADER_LEN];
        long[5] = 1;
        for _ in 0..5 {
            long.push(63);
            long.extend_from_slice(&[b'a'; 63]);
        }
        long.extend_from_slice(&[0, 0, 16, 0, 1]);
        assert!(
            decode_response(&long)
                .unwrap_err()
                .to_string()
                .contains("255")
        );
    }

    #[test]
    fn srv_records_order_by_priority_then_weight() {
        let recs = [
            srv(20, 0, "c"),
            srv(10, 60, "a1"),
            srv(10, 40, "a2"),
            srv(10, 0, "a0"),
        ];
        let names = |v: Vec<Srv>| v.into_iter().map(|s| s.target).collect::<Vec<_>>();
        // Deterministic: weight 0 first, then answer order; priorities ascending.
        assert_eq!(names(order_srv(&recs, &mut |_| 0)), ["a0", "a1", "a2", "c"]);
        // The largest draw picks the last running sum: a2 first (0+60+40 = 100).
        assert_eq!(
            names(order_srv(&recs, &mut |total| total)),
            ["a2", "a1", "a0", "c"]
        );
        // A draw of 61..=100 among {a0:0, a1:60, a2:40} picks a2; 1..=60 picks a1.
        let mut draws = [61u32, 0, 0].into_iter();
        assert_eq!(
            names(order_srv(&recs, &mut |_| draws.next().unwrap_or(0))),
            ["a2", "a0", "a1", "c"]
        );
        // "." alone: the service is not offered here.
        assert!(order_srv(&[srv(0, 0, "")], &mut |_| 0).is_empty());
    }

    #[tokio::test]
    async fn a_silent_server_times_out_after_every_attempt() {
        let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let c = DnsClient {
            server: silent.local_addr().unwrap(),
            timeout: Duration::from_millis(50),
            attempts: 2,
        };
        let e = c.query("_loom.b.test", TYPE_TXT, 9).await.unwrap_err();
        assert_eq!(e, DnsError::Timeout);
        // Both attempts were sent.
        let mut buf = [0u8; 512];
        let mut got = 0;
        while let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_millis(10), silent.recv_from(&mut buf)).await
        {
            got += 1;
        }
        assert_eq!(got, 2);
    }

    proptest! {
        #[test]
        fn the_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = decode_response(&bytes);
        }

        #[test]
        fn mutated_answers_never_panic(
            flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..8)
        ) {
            let q = encode_query(1, "_loom._tcp.b.test", TYPE_SRV).unwrap();
            let mut a = encode_response(&q, 0, false, &[
                Answer::Srv(1, 2, 3, "x.b.test".into()),
                Answer::Txt(vec!["v=LOOM1.1".into()]),
            ]).unwrap();
            for (at, v) in flips {
                let i = usize::from(at) % a.len();
                a[i] = v;
            }
            let _ = decode_response(&a);
        }
    }
}
