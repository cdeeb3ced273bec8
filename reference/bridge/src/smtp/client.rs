//! The outbound SMTP client (RFC 5321 §3.3, §4.1): one transaction to one server — a
//! smarthost or a recipient domain's MX — with a result per recipient, so a partial
//! refusal fails only the recipients the server refused. Replies are read with a bound on
//! line length and count; every step has a timeout.

use std::io;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::time::timeout;

/// One server reply (RFC 5321 §4.2): the code and its text lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Three-digit code.
    pub code: u16,
    /// Text of every line, without the code.
    pub lines: Vec<String>,
}

impl Reply {
    /// 2xx.
    pub fn is_positive(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// 5xx: retrying will not help (RFC 5321 §4.2.1).
    pub fn is_permanent(&self) -> bool {
        self.code >= 500
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.lines.join(" / "))
    }
}

/// What happened to one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecipientOutcome {
    /// The server took responsibility (250 after DATA).
    Delivered,
    /// A 4xx: try again later.
    Deferred(String),
    /// A 5xx: give up.
    Failed(String),
}

/// Why a transaction could not run at all.
#[derive(Debug)]
pub enum SendError {
    /// Connect, read or write failed, or a timeout: temporary.
    Io(io::Error),
    /// The server refused the session or the sender (`reply`).
    Refused(Reply),
    /// The server spoke something that is not SMTP.
    Protocol(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Io(e) => write!(f, "connection: {e}"),
            SendError::Refused(r) => write!(f, "refused: {r}"),
            SendError::Protocol(m) => write!(f, "not SMTP: {m}"),
        }
    }
}

impl std::error::Error for SendError {}

impl From<io::Error> for SendError {
    fn from(e: io::Error) -> Self {
        SendError::Io(e)
    }
}

impl SendError {
    /// A 5xx refusal of the whole transaction; anything else may succeed later.
    pub fn is_permanent(&self) -> bool {
        matches!(self, SendError::Refused(r) if r.is_permanent())
    }
}

/// A message to send.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    /// Our EHLO name.
    pub helo: &'a str,
    /// Reverse path.
    pub mail_from: &'a str,
    /// Forward paths.
    pub rcpt_to: &'a [String],
    /// The message (CRLF line ends); dot-stuffed here.
    pub data: &'a [u8],
}

/// Longest reply line read (RFC 5321 §4.5.3.1.5 says 512; servers send longer).
const MAX_REPLY_LINE: usize = 4096;
/// Most lines in one multi-line reply.
const MAX_REPLY_LINES: usize = 100;

/// Runs one transaction on `stream` (already connected); `step` bounds each exchange.
pub async fn send<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    message: &Envelope<'_>,
    step: Duration,
) -> Result<Vec<(String, RecipientOutcome)>, SendError> {
    let mut io = BufReader::new(stream);
    let extensions = greet(&mut io, message.helo, step).await?;
    transact(io, &extensions, message, step).await
}

/// [`send`] over TLS (RFC 3207): STARTTLS after EHLO, the handshake with `connector` for
/// `name`, EHLO again, then the transaction. A server that does not offer STARTTLS is a
/// [`SendError::Protocol`] (this is for a peer that must encrypt).
pub async fn send_starttls<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    message: &Envelope<'_>,
    step: Duration,
    connector: &tokio_rustls::TlsConnector,
    name: rustls::pki_types::ServerName<'static>,
) -> Result<Vec<(String, RecipientOutcome)>, SendError> {
    let mut io = BufReader::new(stream);
    let extensions = greet(&mut io, message.helo, step).await?;
    if !extensions.iter().any(|e| e == "STARTTLS") {
        return Err(SendError::Protocol(
            "the server does not offer STARTTLS".into(),
        ));
    }
    let r = command(&mut io, "STARTTLS", step).await?;
    if r.code != 220 {
        return Err(SendError::Refused(r));
    }
    // RFC 3207 §4.2: nothing the server sent before the handshake is kept.
    let plain = io.into_inner();
    let tls = timeout(step, connector.connect(name, plain))
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    let mut io = BufReader::new(tls);
    let extensions = hello(&mut io, message.helo, step).await?;
    transact(io, &extensions, message, step).await
}

/// The server's greeting (RFC 5321 §4.3.1), then EHLO; the extensions offered.
async fn greet<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut BufReader<S>,
    helo: &str,
    step: Duration,
) -> Result<Vec<String>, SendError> {
    let greeting = read_reply(io, step).await?;
    if !greeting.is_positive() {
        return Err(SendError::Refused(greeting));
    }
    hello(io, helo, step).await
}

/// EHLO (falling back to HELO); the extensions offered, upper-case.
async fn hello<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut BufReader<S>,
    helo: &str,
    step: Duration,
) -> Result<Vec<String>, SendError> {
    let ehlo = command(io, &format!("EHLO {helo}"), step).await?;
    if ehlo.is_positive() {
        return Ok(ehlo
            .lines
            .iter()
            .skip(1)
            .map(|l| l.to_ascii_uppercase())
            .collect());
    }
    let helo = command(io, &format!("HELO {helo}"), step).await?;
    if !helo.is_positive() {
        return Err(SendError::Refused(helo));
    }
    Ok(Vec::new())
}

/// MAIL, RCPT, DATA and QUIT after the greeting.
async fn transact<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: BufReader<S>,
    extensions: &[String],
    message: &Envelope<'_>,
    step: Duration,
) -> Result<Vec<(String, RecipientOutcome)>, SendError> {
    let has = |ext: &str| extensions.iter().any(|e| e.split(' ').next() == Some(ext));
    let mut mail = format!("MAIL FROM:<{}>", message.mail_from);
    if has("SIZE") {
        mail.push_str(&format!(" SIZE={}", message.data.len()));
    }
    if message.data.iter().any(|b| *b >= 0x80) {
        if has("8BITMIME") {
            mail.push_str(" BODY=8BITMIME");
        }
        if has("SMTPUTF8") && !message.mail_from.is_ascii() {
            mail.push_str(" SMTPUTF8");
        }
    }
    let r = command(&mut io, &mail, step).await?;
    if !r.is_positive() {
        let _ = command(&mut io, "QUIT", step).await;
        return Err(SendError::Refused(r));
    }
    let mut outcomes = Vec::new();
    let mut accepted = Vec::new();
    for rcpt in message.rcpt_to {
        let r = command(&mut io, &format!("RCPT TO:<{rcpt}>"), step).await?;
        if r.is_positive() {
            accepted.push(rcpt.clone());
        } else if r.is_permanent() {
            outcomes.push((rcpt.clone(), RecipientOutcome::Failed(r.to_string())));
        } else {
            outcomes.push((rcpt.clone(), RecipientOutcome::Deferred(r.to_string())));
        }
    }
    if accepted.is_empty() {
        let _ = command(&mut io, "QUIT", step).await;
        return Ok(outcomes);
    }
    let r = command(&mut io, "DATA", step).await?;
    if r.code != 354 {
        let outcome = |r: &Reply| {
            if r.is_permanent() {
                RecipientOutcome::Failed(r.to_string())
            } else {
                RecipientOutcome::Deferred(r.to_string())
            }
        };
        outcomes.extend(accepted.into_iter().map(|a| (a, outcome(&r))));
        return Ok(outcomes);
    }
    let body = dot_stuff(message.data);
    timeout(step, async {
        io.get_mut().write_all(&body).await?;
        io.get_mut().flush().await
    })
    .await
    .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    let r = read_reply(&mut io, step).await?;
    let each = if r.is_positive() {
        RecipientOutcome::Delivered
    } else if r.is_permanent() {
        RecipientOutcome::Failed(r.to_string())
    } else {
        RecipientOutcome::Deferred(r.to_string())
    };
    outcomes.extend(accepted.into_iter().map(|a| (a, each.clone())));
    let _ = command(&mut io, "QUIT", step).await;
    Ok(outcomes)
}

async fn command<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut BufReader<S>,
    line: &str,
    step: Duration,
) -> Result<Reply, SendError> {
    timeout(step, async {
        io.get_mut().write_all(line.as_bytes()).await?;
        io.get_mut().write_all(b"\r\n").await?;
        io.get_mut().flush().await
    })
    .await
    .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    read_reply(io, step).await
}

/// Reads one (possibly multi-line) reply.
pub async fn read_reply<S: AsyncRead + Unpin>(
    io: &mut BufReader<S>,
    step: Duration,
) -> Result<Reply, SendError> {
    let mut lines = Vec::new();
    let mut code = None;
    loop {
        let mut line = Vec::new();
        let n = timeout(
            step,
            AsyncReadExt::take(&mut *io, MAX_REPLY_LINE as u64).read_until(b'\n', &mut line),
        )
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
        if n == 0 {
            return Err(SendError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        let (digits, rest) = text.split_at(text.len().min(3));
        let this: u16 = digits
            .parse()
            .ok()
            .filter(|c| (200..600).contains(c))
            .ok_or_else(|| SendError::Protocol(format!("reply line {text:?}")))?;
        if code.is_some_and(|c| c != this) {
            return Err(SendError::Protocol(format!(
                "reply codes {code:?} and {this} mixed"
            )));
        }
        code = Some(this);
        let (sep, msg) = rest.split_at(rest.len().min(1));
        lines.push(msg.to_string());
        if sep != "-" {
            return Ok(Reply { code: this, lines });
        }
        if lines.len() >= MAX_REPLY_LINES {
            return Err(SendError::Protocol("reply longer than 100 lines".into()));
        }
    }
}

/// RFC 5321 §4.5.2: a line starting with `.` gets another; the data ends `CRLF . CRLF`.
pub fn dot_stuff(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    let mut at_line_start = true;
    for &b in data {
        if at_line_start && b == b'.' {
            out.push(b'.');
        }
        out.push(b);
        at_line_start = b == b'\n';
    }
    if !out.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b".\r\n");
    out
}
