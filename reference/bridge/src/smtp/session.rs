//! The inbound SMTP conversation as a sans-IO state machine (RFC 5321 §3–§4, RFC 3207
//! STARTTLS, RFC 1870 SIZE, RFC 6152 8BITMIME, RFC 2920 PIPELINING, RFC 6531 SMTPUTF8):
//! bytes go in with [`Session::feed`], replies and decisions come out as [`Output`]s, and the
//! socket shell ([`super::server`]) only carries them out — the shape of quinn-proto's
//! `Endpoint::handle`.
//!
//! Commands are parsed by `smtp-proto` (a maintained parser, not ours); the message body by
//! its `DataReceiver`, which ends DATA only at `CRLF . CRLF` and undoes dot-stuffing
//! (RFC 5321 §4.1.1.4, §4.5.2). Smuggling (a second message hidden behind `LF . LF`,
//! `LF . CRLF` or `CR . CR`, CVE-2023-51764/5/6) is refused outright: a message holding a
//! bare LF or bare CR is answered `550 5.5.2` (RFC 5321 §2.3.8: "CR and LF … MUST only occur
//! together as CRLF"), never split into two.
//!
//! Command lines are framed here, by LF, and each complete line is parsed on its own, so the
//! same bytes mean the same commands however TCP splits them (the fuzz body checks it).
//! Every stage is bounded: command lines ([`MAX_COMMAND_LINE`]; RFC 5321 §4.5.3.1.4
//! asks for ≥ 512), recipients per transaction, the message size (announced in EHLO, checked
//! at `MAIL FROM SIZE=` and while DATA streams in, where the excess is discarded, not
//! buffered), and errors per connection before the server hangs up (`421`).

use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver};
use smtp_proto::{Error as ParseError, Request};
use std::fmt::Write as _;

/// Limits of one SMTP connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// Largest message accepted (the EHLO `SIZE` value, RFC 1870).
    pub max_message_bytes: usize,
    /// Most recipients in one transaction (RFC 5321 §4.5.3.1.8 asks a server to take ≥ 100).
    pub max_recipients: usize,
    /// Errors (syntax, sequence, refused recipients) before the server closes the connection.
    pub max_errors: u32,
    /// Transactions (messages) on one connection.
    pub max_messages: u32,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_message_bytes: 25 * 1024 * 1024,
            max_recipients: 100,
            max_errors: 10,
            max_messages: 100,
        }
    }
}

/// What the session needs to know about its host.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The name in the greeting and EHLO reply.
    pub hostname: String,
    /// Limits.
    pub limits: SessionLimits,
    /// STARTTLS is offered (a certificate is configured).
    pub starttls: bool,
    /// Refuse `MAIL FROM` before STARTTLS (`530 5.7.0`, RFC 3207 §4).
    pub require_tls: bool,
}

/// Whether a recipient may receive mail here (checked at `RCPT TO`, before DATA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecipientVerdict {
    /// A local identity the bridge delivers to.
    Accept,
    /// Not a local identity: `550 5.1.1`.
    Unknown,
    /// Not a domain the bridge serves: `550 5.7.1` (no relaying).
    NotLocal,
}

/// Decides recipients for the session.
pub trait Recipients {
    /// The verdict for `address` (the RFC 5321 path without angle brackets).
    fn check(&self, address: &str) -> RecipientVerdict;
}

/// A finished transaction, handed to the bridge to authenticate and map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// The EHLO/HELO name.
    pub helo: String,
    /// The reverse path (empty for a bounce, RFC 5321 §4.5.5).
    pub mail_from: String,
    /// Accepted forward paths, in order.
    pub rcpt_to: Vec<String>,
    /// The message, dot-stuffing undone; it ends with the CRLF before the final `.`
    /// (RFC 5321 §4.1.1.4: that CRLF belongs to the message).
    pub data: Vec<u8>,
    /// The transaction ran over TLS.
    pub tls: bool,
}

/// The bridge's answer to a finished transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// SMTP reply code (250, 451, 550, 554…).
    pub code: u16,
    /// Enhanced status code (RFC 3463), e.g. `[2, 0, 0]`.
    pub status: [u8; 3],
    /// Reply text (one line).
    pub text: String,
}

impl Verdict {
    /// `250 2.0.0` with `text`.
    pub fn accepted(text: impl Into<String>) -> Self {
        Self {
            code: 250,
            status: [2, 0, 0],
            text: text.into(),
        }
    }
}

/// What the shell does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Write these bytes.
    Reply(Vec<u8>),
    /// Run the TLS handshake now (the `220` reply is already out); bytes the client sent
    /// after STARTTLS were discarded (RFC 3207 §4.2, the 2011 command-injection bug).
    StartTls,
    /// A transaction is complete: decide and call [`Session::finish`]. No more input is
    /// processed until then.
    Deliver(Transaction),
    /// Close the connection after writing what came before.
    Close,
}

#[derive(Debug)]
enum State {
    /// Before EHLO/HELO (or after STARTTLS, RFC 3207 §4.2).
    Greeted,
    /// After EHLO/HELO, no transaction.
    Ready,
    /// After MAIL FROM.
    Mail { from: String, rcpts: Vec<String> },
    /// Receiving the message.
    Data {
        from: String,
        rcpts: Vec<String>,
        body: Body,
    },
    /// A transaction waits for [`Session::finish`].
    Deciding,
    /// QUIT, error limit, or a shell decision.
    Closed,
}

enum Body {
    Keeping(DataReceiver, Vec<u8>),
    /// Over the size limit: the rest is read and dropped (RFC 1870 §6.2 `552`).
    Discarding(DummyDataReceiver),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Keeping(_, b) => write!(f, "Keeping({} bytes)", b.len()),
            Body::Discarding(_) => f.write_str("Discarding"),
        }
    }
}

/// One SMTP connection's conversation.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    state: State,
    helo: String,
    tls: bool,
    esmtp: bool,
    errors: u32,
    messages: u32,
    /// Input not yet processed (pipelined commands behind a DATA being decided).
    pending: Vec<u8>,
    /// The command line read so far.
    line: Vec<u8>,
    /// The current line went over [`MAX_COMMAND_LINE`]; skip to its end.
    overlong: bool,
}

/// Longest command line (smtp-proto's limit; RFC 5321 §4.5.3.1.4 asks for at least 512).
pub const MAX_COMMAND_LINE: usize = 4096;

fn reply(code: u16, status: [u8; 3], text: &str) -> Output {
    let [a, b, c] = status;
    Output::Reply(format!("{code} {a}.{b}.{c} {text}\r\n").into_bytes())
}

impl Session {
    /// A new connection: returns the session and its greeting (RFC 5321 §4.3.1 `220`).
    pub fn new(config: SessionConfig) -> (Self, Output) {
        let greeting =
            Output::Reply(format!("220 {} ESMTP LOOM bridge\r\n", config.hostname).into_bytes());
        (
            Self {
                config,
                state: State::Greeted,
                helo: String::new(),
                tls: false,
                esmtp: false,
                errors: 0,
                messages: 0,
                pending: Vec::new(),
                line: Vec::new(),
                overlong: false,
            },
            greeting,
        )
    }

    /// The session runs over TLS from its first byte (implicit TLS) or after the handshake.
    pub fn set_tls(&mut self) {
        self.tls = true;
    }

    /// True once the session is over; the shell closes the socket.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// True while DATA streams in (the shell applies the DATA timeout, RFC 5321 §4.5.3.2.6).
    pub fn in_data(&self) -> bool {
        matches!(self.state, State::Data { .. })
    }

    /// Process `input`; returns what to do, in order.
    pub fn feed(&mut self, input: &[u8], recipients: &dyn Recipients) -> Vec<Output> {
        self.pending.extend_from_slice(input);
        self.run(recipients)
    }

    /// The bridge's verdict on the transaction [`Output::Deliver`] handed out; processing
    /// resumes with any pipelined input.
    pub fn finish(&mut self, verdict: &Verdict, recipients: &dyn Recipients) -> Vec<Output> {
        if !matches!(self.state, State::Deciding) {
            return Vec::new();
        }
        self.state = State::Ready;
        let mut out = vec![reply(verdict.code, verdict.status, &verdict.text)];
        if verdict.code >= 400 {
            self.errors += 1;
        }
        out.extend(self.run(recipients));
        out
    }

    fn run(&mut self, recipients: &dyn Recipients) -> Vec<Output> {
        let mut out = Vec::new();
        let input = std::mem::take(&mut self.pending);
        let mut bytes = input.iter();
        loop {
            match &mut self.state {
                State::Closed => return out,
                State::Deciding => break,
                State::Data { .. } => {
                    if !self.ingest_data(&mut bytes, &mut out) {
                        break;
                    }
                    continue;
                }
                _ => {}
            }
            if bytes.as_slice().is_empty() {
                break;
            }
            let Some(line) = self.next_line(&mut bytes, &mut out) else {
                break;
            };
            let parsed = Request::parse(&mut line.iter()).map(Request::into_owned);
            match parsed {
                Err(ParseError::NeedsMoreData { .. }) => {
                    self.errors += 1;
                    out.push(reply(501, [5, 5, 4], "incomplete command"));
                }
                Ok(request) => {
                    let starttls = matches!(request, Request::StartTls);
                    self.command(request, recipients, &mut out);
                    if starttls && out.last() == Some(&Output::StartTls) {
                        // RFC 3207 §4.2: nothing sent before the handshake counts.
                        return out;
                    }
                }
                Err(e) => self.parse_error(&e, &mut out),
            }
            if self.errors >= self.config.limits.max_errors && !self.is_closed() {
                out.push(reply(421, [4, 7, 0], "too many errors, closing connection"));
                out.push(Output::Close);
                self.state = State::Closed;
            }
        }
        self.pending = bytes.as_slice().to_vec();
        out
    }

    /// The next complete command line from `bytes`, normalized to end in CRLF; `None` until
    /// one is complete. Lines are framed here, by LF, before the parser sees them, so a
    /// command means the same whatever the TCP segmentation (a parser that reads across a
    /// bare LF when more bytes happen to be there would not). A line over the limit is
    /// answered `500 5.5.6` once and skipped to its end.
    fn next_line(
        &mut self,
        bytes: &mut std::slice::Iter<'_, u8>,
        out: &mut Vec<Output>,
    ) -> Option<Vec<u8>> {
        let rest = bytes.as_slice();
        let (take, complete) = match rest.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (rest.len(), false),
        };
        *bytes = rest[take..].iter();
        if !self.overlong {
            self.line.extend_from_slice(&rest[..take]);
            if self.line.len() > MAX_COMMAND_LINE {
                self.overlong = true;
                self.line.clear();
                self.errors += 1;
                out.push(reply(500, [5, 5, 6], "command line too long"));
            }
        }
        if !complete {
            return None;
        }
        if std::mem::take(&mut self.overlong) {
            return None;
        }
        let mut line = std::mem::take(&mut self.line);
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        line.extend_from_slice(b"\r\n");
        Some(line)
    }

    /// Feeds body bytes; true when the state changed (the message completed, or went over
    /// the limit and is now being discarded).
    fn ingest_data(&mut self, bytes: &mut std::slice::Iter<'_, u8>, out: &mut Vec<Output>) -> bool {
        let max = self.config.limits.max_message_bytes;
        let State::Data { body, .. } = &mut self.state else {
            return false;
        };
        match body {
            Body::Keeping(receiver, buf) => {
                let done = receiver.ingest(bytes, buf);
                if buf.len() > max {
                    if done {
                        self.too_big(out);
                    } else {
                        *body = Body::Discarding(DummyDataReceiver::new_data(receiver));
                    }
                    return true;
                }
                if !done {
                    return false;
                }
            }
            Body::Discarding(receiver) => {
                if receiver.ingest(bytes) {
                    self.too_big(out);
                    return true;
                }
                return false;
            }
        }
        let State::Data {
            from,
            rcpts,
            body: Body::Keeping(_, data),
        } = std::mem::replace(&mut self.state, State::Ready)
        else {
            return true;
        };
        if let Some(what) = bare_line_break(&data) {
            self.errors += 1;
            out.push(reply(
                550,
                [5, 5, 2],
                &format!("message contains a bare {what}; lines end with CRLF (RFC 5321 §2.3.8)"),
            ));
            return true;
        }
        self.messages += 1;
        self.state = State::Deciding;
        out.push(Output::Deliver(Transaction {
            helo: self.helo.clone(),
            mail_from: from,
            rcpt_to: rcpts,
            data,
            tls: self.tls,
        }));
        true
    }

    /// RFC 1870 §6.2: the message went over the announced SIZE; the transaction is void.
    fn too_big(&mut self, out: &mut Vec<Output>) {
        let max = self.config.limits.max_message_bytes;
        self.state = State::Ready;
        self.errors += 1;
        out.push(reply(
            552,
            [5, 3, 4],
            &format!("message exceeds the {max}-byte limit (RFC 1870 SIZE)"),
        ));
    }

    fn parse_error(&mut self, e: &ParseError, out: &mut Vec<Output>) {
        self.errors += 1;
        out.push(match e {
            ParseError::UnknownCommand => reply(500, [5, 5, 1], "command not recognized"),
            ParseError::ResponseTooLong => reply(500, [5, 5, 6], "command line too long"),
            ParseError::InvalidSenderAddress => reply(501, [5, 1, 7], "bad sender address syntax"),
            ParseError::InvalidRecipientAddress => {
                reply(501, [5, 1, 3], "bad recipient address syntax")
            }
            ParseError::SyntaxError { syntax } => {
                reply(501, [5, 5, 4], &format!("syntax: {syntax}"))
            }
            ParseError::InvalidParameter { param } => {
                reply(501, [5, 5, 4], &format!("invalid parameter {param}"))
            }
            ParseError::UnsupportedParameter { param } => {
                reply(555, [5, 5, 4], &format!("unsupported parameter {param}"))
            }
            _ => reply(500, [5, 5, 2], "syntax error"),
        });
    }

    fn command(
        &mut self,
        request: Request<String>,
        recipients: &dyn Recipients,
        out: &mut Vec<Output>,
    ) {
        let limits = &self.config.limits;
        match request {
            Request::Ehlo { host } => {
                self.greet(host, true);
                out.push(Output::Reply(self.ehlo_reply().into_bytes()));
            }
            Request::Helo { host } => {
                self.greet(host, false);
                out.push(reply(250, [2, 0, 0], &self.config.hostname.clone()));
            }
            Request::Lhlo { .. } => {
                self.errors += 1;
                out.push(reply(500, [5, 5, 1], "LHLO is LMTP, not SMTP"));
            }
            Request::StartTls => {
                if !self.config.starttls || self.tls {
                    self.errors += 1;
                    out.push(reply(503, [5, 5, 1], "STARTTLS is not available"));
                } else if !matches!(self.state, State::Greeted | State::Ready) {
                    self.errors += 1;
                    out.push(reply(503, [5, 5, 1], "STARTTLS inside a transaction"));
                } else {
                    out.push(reply(220, [2, 0, 0], "ready to start TLS"));
                    out.push(Output::StartTls);
                    // RFC 3207 §4.2: forget everything learned before the handshake.
                    self.state = State::Greeted;
                    self.helo.clear();
                    self.esmtp = false;
                    self.tls = true;
                    self.line.clear();
                    self.overlong = false;
                }
            }
            Request::Mail { from } => {
                if !matches!(self.state, State::Ready) {
                    self.errors += 1;
                    let why = if matches!(self.state, State::Greeted) {
                        "send EHLO first"
                    } else {
                        "a transaction is already open (RSET first)"
                    };
                    out.push(reply(503, [5, 5, 1], why));
                } else if self.config.require_tls && !self.tls {
                    self.errors += 1;
                    out.push(reply(530, [5, 7, 0], "must issue STARTTLS first"));
                } else if from.size > limits.max_message_bytes {
                    self.errors += 1;
                    out.push(reply(
                        552,
                        [5, 3, 4],
                        &format!(
                            "message size {} exceeds the {}-byte limit",
                            from.size, limits.max_message_bytes
                        ),
                    ));
                } else if self.messages >= limits.max_messages {
                    out.push(reply(421, [4, 7, 0], "too many messages on one connection"));
                    out.push(Output::Close);
                    self.state = State::Closed;
                } else {
                    self.state = State::Mail {
                        from: from.address,
                        rcpts: Vec::new(),
                    };
                    out.push(reply(250, [2, 1, 0], "sender ok"));
                }
            }
            Request::Rcpt { to } => {
                let max = limits.max_recipients;
                let State::Mail { rcpts, .. } = &mut self.state else {
                    self.errors += 1;
                    out.push(reply(503, [5, 5, 1], "send MAIL FROM first"));
                    return;
                };
                if rcpts.iter().any(|r| r.eq_ignore_ascii_case(&to.address)) {
                    out.push(reply(250, [2, 1, 5], "recipient ok (already listed)"));
                    return;
                }
                if rcpts.len() >= max {
                    out.push(reply(
                        452,
                        [4, 5, 3],
                        &format!("more than {max} recipients"),
                    ));
                    return;
                }
                match recipients.check(&to.address) {
                    RecipientVerdict::Accept => {
                        rcpts.push(to.address);
                        out.push(reply(250, [2, 1, 5], "recipient ok"));
                    }
                    RecipientVerdict::Unknown => {
                        self.errors += 1;
                        out.push(reply(550, [5, 1, 1], "no such LOOM identity here"));
                    }
                    RecipientVerdict::NotLocal => {
                        self.errors += 1;
                        out.push(reply(550, [5, 7, 1], "relaying denied"));
                    }
                }
            }
            Request::Data => match std::mem::replace(&mut self.state, State::Ready) {
                State::Mail { from, rcpts } if !rcpts.is_empty() => {
                    self.state = State::Data {
                        from,
                        rcpts,
                        body: Body::Keeping(DataReceiver::new(), Vec::new()),
                    };
                    out.push(
                        reply(354, [0, 0, 0], "end data with <CR><LF>.<CR><LF>").strip_status(),
                    );
                }
                other => {
                    self.errors += 1;
                    let mail = matches!(other, State::Mail { .. });
                    self.state = other;
                    out.push(if mail {
                        reply(554, [5, 5, 1], "no valid recipients")
                    } else {
                        reply(503, [5, 5, 1], "send MAIL FROM and RCPT TO first")
                    });
                }
            },
            Request::Bdat { .. } => {
                self.errors += 1;
                out.push(reply(502, [5, 5, 1], "CHUNKING is not offered; use DATA"));
            }
            Request::Rset => {
                if !matches!(self.state, State::Greeted) {
                    self.state = State::Ready;
                }
                out.push(reply(250, [2, 0, 0], "reset"));
            }
            Request::Noop { .. } => out.push(reply(250, [2, 0, 0], "ok")),
            Request::Vrfy { .. } | Request::Expn { .. } => out.push(reply(
                252,
                [2, 5, 2],
                "cannot verify; send mail to find out",
            )),
            Request::Help { .. } => out.push(reply(214, [2, 0, 0], "see RFC 5321")),
            Request::Quit => {
                out.push(reply(221, [2, 0, 0], "bye"));
                out.push(Output::Close);
                self.state = State::Closed;
            }
            Request::Auth { .. }
            | Request::Etrn { .. }
            | Request::Atrn { .. }
            | Request::Burl { .. } => {
                self.errors += 1;
                out.push(reply(502, [5, 5, 1], "command not implemented"));
            }
        }
    }

    fn greet(&mut self, host: String, esmtp: bool) {
        self.helo = host;
        self.esmtp = esmtp;
        self.state = State::Ready;
    }

    fn ehlo_reply(&self) -> String {
        let mut lines = vec![format!("{} greets {}", self.config.hostname, self.helo)];
        lines.push("PIPELINING".into());
        lines.push("8BITMIME".into());
        lines.push("SMTPUTF8".into());
        lines.push("ENHANCEDSTATUSCODES".into());
        lines.push(format!("SIZE {}", self.config.limits.max_message_bytes));
        if self.config.starttls && !self.tls {
            lines.push("STARTTLS".into());
        }
        let mut s = String::new();
        for (i, line) in lines.iter().enumerate() {
            let sep = if i + 1 == lines.len() { ' ' } else { '-' };
            let _ = write!(s, "250{sep}{line}\r\n");
        }
        s
    }
}

impl Output {
    /// `354` has no enhanced status code (RFC 3463 codes go on 2xx/4xx/5xx replies).
    fn strip_status(self) -> Self {
        match self {
            Output::Reply(b) => {
                let s = String::from_utf8_lossy(&b).replacen("354 0.0.0 ", "354 ", 1);
                Output::Reply(s.into_bytes())
            }
            other => other,
        }
    }
}

/// The first bare LF or bare CR in `data` (RFC 5321 §2.3.8), if any.
pub fn bare_line_break(data: &[u8]) -> Option<&'static str> {
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\r' => {
                if data.get(i + 1) != Some(&b'\n') {
                    return Some("CR");
                }
                i += 2;
            }
            b'\n' => return Some("LF"),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Local;

    impl Recipients for Local {
        fn check(&self, address: &str) -> RecipientVerdict {
            match address.rsplit_once('@') {
                Some((_, "a.test"))
                    if address.starts_with("alice") || address.starts_with("bob") =>
                {
                    RecipientVerdict::Accept
                }
                Some((_, "a.test")) => RecipientVerdict::Unknown,
                _ => RecipientVerdict::NotLocal,
            }
        }
    }

    fn config() -> SessionConfig {
        SessionConfig {
            hostname: "mx.a.test".into(),
            limits: SessionLimits {
                max_message_bytes: 1000,
                max_recipients: 3,
                max_errors: 5,
                max_messages: 10,
            },
            starttls: true,
            require_tls: false,
        }
    }

    fn replies(out: &[Output]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Output::Reply(b) => String::from_utf8_lossy(b)
                    .lines()
                    .last()
                    .unwrap_or_default()[..3]
                    .to_string(),
                Output::StartTls => "TLS".into(),
                Output::Deliver(_) => "DELIVER".into(),
                Output::Close => "CLOSE".into(),
            })
            .collect()
    }

    fn delivered(out: &[Output]) -> Vec<Transaction> {
        out.iter()
            .filter_map(|o| match o {
                Output::Deliver(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    const PIPELINED: &[u8] = b"EHLO c.test\r\nMAIL FROM:<x@b.test>\r\nRCPT TO:<alice@a.test>\r\n\
RCPT TO:<bob@a.test>\r\nDATA\r\nSubject: hi\r\n\r\n..dotted\r\nbody\r\n.\r\nQUIT\r\n";

    #[test]
    fn a_pipelined_transaction_is_delivered_once_and_the_rest_waits_for_the_verdict() {
        let (mut s, greeting) = Session::new(config());
        assert_eq!(replies(&[greeting]), ["220"]);
        let out = s.feed(PIPELINED, &Local);
        assert_eq!(
            replies(&out),
            ["250", "250", "250", "250", "354", "DELIVER"]
        );
        let tx = &delivered(&out)[0];
        assert_eq!(tx.mail_from, "x@b.test");
        assert_eq!(tx.rcpt_to, ["alice@a.test", "bob@a.test"]);
        assert_eq!(
            tx.data, b"Subject: hi\r\n\r\n.dotted\r\nbody\r\n",
            "dot-stuffing undone (RFC 5321 §4.5.2)"
        );
        let out = s.finish(&Verdict::accepted("queued"), &Local);
        assert_eq!(replies(&out), ["250", "221", "CLOSE"]);
        assert!(s.is_closed());
    }

    #[test]
    fn feeding_byte_by_byte_gives_the_same_conversation() {
        let (mut whole, _) = Session::new(config());
        let mut expected = whole.feed(PIPELINED, &Local);
        expected.extend(whole.finish(&Verdict::accepted("queued"), &Local));
        let (mut bytes, _) = Session::new(config());
        let mut got = Vec::new();
        for b in PIPELINED {
            for o in bytes.feed(&[*b], &Local) {
                let deliver = matches!(o, Output::Deliver(_));
                got.push(o);
                if deliver {
                    got.extend(bytes.finish(&Verdict::accepted("queued"), &Local));
                }
            }
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn smuggled_end_of_data_sequences_never_end_the_message() {
        // CVE-2023-51764 family: `LF.LF`, `LF.CRLF`, `CRLF.LF`, `CR.CR` hide a second message.
        for (name, sep) in [
            ("LF.LF", &b"\n.\n"[..]),
            ("LF.CRLF", b"\n.\r\n"),
            ("CRLF.LF", b"\r\n.\n"),
            ("CR.CR", b"\r.\r"),
        ] {
            let (mut s, _) = Session::new(config());
            let mut input = b"EHLO c.test\r\nMAIL FROM:<x@b.test>\r\nRCPT TO:<alice@a.test>\r\nDATA\r\nSubject: one\r\n\r\nfirst".to_vec();
            input.extend_from_slice(sep);
            input.extend_from_slice(b"MAIL FROM:<evil@b.test>\r\nRCPT TO:<bob@a.test>\r\nDATA\r\nSubject: smuggled\r\n\r\nsecond\r\n.\r\n");
            let out = s.feed(&input, &Local);
            assert!(
                delivered(&out).is_empty(),
                "{name}: a message with a bare line break is refused"
            );
            let codes = replies(&out);
            assert_eq!(
                codes.last().map(String::as_str),
                Some("550"),
                "{name}: {codes:?}"
            );
            assert_eq!(
                codes.iter().filter(|c| *c == "354").count(),
                1,
                "{name}: the smuggled DATA is message text, never a command"
            );
        }
    }

    #[test]
    fn sequence_errors_and_unknown_recipients_are_refused_before_data() {
        let mut c = config();
        c.limits.max_errors = 10;
        let (mut s, _) = Session::new(c);
        let out = s.feed(b"MAIL FROM:<x@b.test>\r\n", &Local);
        assert_eq!(replies(&out), ["503"], "EHLO first");
        let out = s.feed(b"HELO c.test\r\nRCPT TO:<alice@a.test>\r\nMAIL FROM:<x@b.test>\r\nRCPT TO:<carol@a.test>\r\nRCPT TO:<z@elsewhere.test>\r\nDATA\r\n", &Local);
        assert_eq!(replies(&out), ["250", "503", "250", "550", "550", "554"]);
        assert!(delivered(&out).is_empty());
    }

    #[test]
    fn size_is_enforced_at_mail_from_and_while_data_streams() {
        let (mut s, _) = Session::new(config());
        let out = s.feed(b"EHLO c.test\r\nMAIL FROM:<x@b.test> SIZE=5000\r\n", &Local);
        assert!(
            String::from_utf8_lossy(match &out[0] {
                Output::Reply(b) => b,
                _ => unreachable!(),
            })
            .contains("SIZE 1000")
        );
        assert_eq!(replies(&out)[1], "552");
        let mut big = b"MAIL FROM:<x@b.test>\r\nRCPT TO:<alice@a.test>\r\nDATA\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'a', 3000));
        big.extend_from_slice(b"\r\n.\r\nNOOP\r\n");
        let out = s.feed(&big, &Local);
        assert_eq!(replies(&out), ["250", "250", "354", "552", "250"]);
        assert!(delivered(&out).is_empty());
    }

    #[test]
    fn starttls_discards_pipelined_commands_and_forgets_the_greeting() {
        let (mut s, _) = Session::new(config());
        let out = s.feed(
            b"EHLO c.test\r\nSTARTTLS\r\nMAIL FROM:<x@b.test>\r\n",
            &Local,
        );
        assert_eq!(
            replies(&out),
            ["250", "220", "TLS"],
            "nothing after STARTTLS is answered"
        );
        let out = s.feed(b"MAIL FROM:<x@b.test>\r\n", &Local);
        assert_eq!(
            replies(&out),
            ["503"],
            "RFC 3207 §4.2: EHLO again after the handshake"
        );
        let out = s.feed(b"EHLO c.test\r\n", &Local);
        assert!(
            !String::from_utf8_lossy(match &out[0] {
                Output::Reply(b) => b,
                _ => unreachable!(),
            })
            .contains("STARTTLS")
        );
    }

    #[test]
    fn require_tls_refuses_mail_from_in_the_clear() {
        let (mut s, _) = Session::new(SessionConfig {
            require_tls: true,
            ..config()
        });
        assert_eq!(
            replies(&s.feed(b"EHLO c.test\r\nMAIL FROM:<x@b.test>\r\n", &Local)),
            ["250", "530"]
        );
        s.set_tls();
        assert_eq!(
            replies(&s.feed(b"MAIL FROM:<x@b.test>\r\n", &Local)),
            ["250"]
        );
    }

    #[test]
    fn too_many_errors_close_the_connection() {
        let (mut s, _) = Session::new(config());
        let out = s.feed(b"FOO\r\nBAR\r\nBAZ\r\nQUX\r\nXYZZY\r\nNOOP\r\n", &Local);
        assert_eq!(
            replies(&out),
            ["500", "500", "500", "500", "500", "421", "CLOSE"]
        );
        assert!(s.is_closed());
        assert!(s.feed(b"NOOP\r\n", &Local).is_empty());
    }

    #[test]
    fn recipients_are_capped_per_transaction() {
        let mut c = config();
        c.limits.max_recipients = 2;
        let (mut s, _) = Session::new(c);
        let out = s.feed(
            b"EHLO c\r\nMAIL FROM:<>\r\nRCPT TO:<alice@a.test>\r\nRCPT TO:<carol@a.test>\r\n\
RCPT TO:<bob@a.test>\r\nRCPT TO:<alice@a.test>\r\nRCPT TO:<alice9@a.test>\r\n",
            &Local,
        );
        assert_eq!(
            replies(&out),
            ["250", "250", "250", "550", "250", "250", "452"]
        );
    }

    #[test]
    fn bare_line_breaks_are_found() {
        assert_eq!(bare_line_break(b"a\r\nb\r\n"), None);
        assert_eq!(bare_line_break(b"a\nb"), Some("LF"));
        assert_eq!(bare_line_break(b"a\rb"), Some("CR"));
        assert_eq!(bare_line_break(b"a\r"), Some("CR"));
    }
}
