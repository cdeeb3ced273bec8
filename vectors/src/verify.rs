//! `loom-vectors verify --impl CMD`: drives an external implementation through the adapter
//! protocol (one JSON line per test on its stdin, one answer line per test on its stdout)
//! and judges every answer, so a failure names the vector and says expected vs. actual.

use crate::protocol::{Answer, Judgement, Request};
use crate::{TestOutcome, VectorFile};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Results of one verification run, per file in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `(area, outcomes)` for each file.
    pub areas: Vec<(String, Vec<TestOutcome>)>,
}

impl Report {
    /// Counts of (pass, fail, unsupported) over all areas.
    pub fn totals(&self) -> (usize, usize, usize) {
        let mut t = (0, 0, 0);
        for o in self.areas.iter().flat_map(|(_, v)| v) {
            match o.judgement {
                Judgement::Pass => t.0 += 1,
                Judgement::Fail(_) => t.1 += 1,
                Judgement::Unsupported(_) => t.2 += 1,
            }
        }
        t
    }
}

/// Why a run could not happen at all.
#[derive(Debug)]
pub struct VerifyError(pub String);

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VerifyError {}

/// Runs every test of `files` through the adapter started by `sh -c cmd`. An answer that does
/// not arrive within `timeout`, is not JSON, or names another vector fails that vector (and,
/// after the adapter dies or hangs, every remaining one) with the reason.
pub fn verify_command(
    cmd: &str,
    files: &[VectorFile],
    timeout: Duration,
) -> Result<Report, VerifyError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| VerifyError(format!("cannot start adapter {cmd:?}: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let requests: Vec<Request> = files
        .iter()
        .flat_map(|f| f.requests().map(|(_, r)| r).collect::<Vec<_>>())
        .collect();
    let lines: Vec<String> = requests
        .iter()
        .map(|r| serde_json::to_string(r).expect("request serializes"))
        .collect();
    // Writing on its own thread: an adapter may answer before reading everything.
    let writer = std::thread::spawn(move || {
        for l in lines {
            if writeln!(stdin, "{l}").is_err() {
                break;
            }
        }
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Before judging anything, the adapter must start and answer the first request with one
    // adapter line (issue 18): a command that does not exist or speaks something else is a
    // usage error, not thousands of failed vectors.
    let mut first = match rx.recv_timeout(timeout) {
        Ok(line) => match serde_json::from_str::<Answer>(&line) {
            Ok(_) => Some(line),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(VerifyError(format!(
                    "adapter {cmd:?} answered the first request with a line that is not an adapter answer ({e}): {}; see vectors/README.md \"Adapter protocol\"",
                    line.chars().take(200).collect::<String>()
                )));
            }
        },
        Err(err) => {
            let timed_out = matches!(err, mpsc::RecvTimeoutError::Timeout);
            if timed_out {
                let _ = child.kill();
            }
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            let _ = writer.join();
            return Err(VerifyError(if timed_out {
                format!(
                    "adapter {cmd:?} started but did not answer the first request within {timeout:?}; it must answer each request line with one JSON line (vectors/README.md \"Adapter protocol\")"
                )
            } else {
                format!(
                    "adapter {cmd:?} ended before answering the first request ({status}); check that the command exists and runs (it is started as sh -c CMD)"
                )
            }));
        }
    };
    let mut dead: Option<String> = None;
    let mut next_answer = |req: &Request, dead: &mut Option<String>| -> Result<Answer, String> {
        if let Some(why) = dead.as_ref() {
            return Err(why.clone());
        }
        let received = match first.take() {
            Some(line) => Ok(line),
            None => rx.recv_timeout(timeout),
        };
        match received {
            Ok(line) => serde_json::from_str::<Answer>(&line)
                .map_err(|e| format!("answer is not a valid adapter answer ({e}): {line}")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let why = format!(
                    "no answer within {:?} (adapter hung at {})",
                    timeout, req.id
                );
                *dead = Some(why.clone());
                Err(why)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let why = format!("adapter closed its output before answering {}", req.id);
                *dead = Some(why.clone());
                Err(why)
            }
        }
    };
    let mut areas = Vec::new();
    for f in files {
        let outcomes = f
            .requests()
            .map(|(t, req)| {
                let judgement = match next_answer(&req, &mut dead) {
                    Ok(a) if a.id != req.id => {
                        Judgement::Fail(format!("answer is for {:?}, not {:?}", a.id, req.id))
                    }
                    Ok(a) => crate::protocol::judge(t, &a),
                    Err(why) => Judgement::Fail(why),
                };
                TestOutcome {
                    id: req.id,
                    judgement,
                }
            })
            .collect();
        areas.push((f.area.clone(), outcomes));
    }
    // Every answer arrived: the adapter has read all requests and sees EOF when the writer
    // ends. Otherwise it is stuck or gone, and must not keep the run waiting.
    let stuck = dead.is_some();
    if stuck {
        let _ = child.kill();
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(Report { areas })
}
