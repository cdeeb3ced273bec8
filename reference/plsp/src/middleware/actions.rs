//! `!` action handlers (spec §2 step 4, §4.6) behind [`ActionHandler`]: `wait` (through the
//! injected [`Sleeper`], so tokio/turmoil time applies), `page` (through a [`Notifier`]) and
//! `fetch` (HTTP GET through a [`Dial`]). Parameters arrive resolved to literals.

use crate::ast::Literal;
use crate::env::{BoxFuture, Sleeper};
use crate::http::{Dial, HttpRequest};
use crate::number::Number;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// An action with its parameters resolved against the block (GRAMMAR.md choice 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedAction {
    /// The action name.
    pub name: String,
    /// Its parameters.
    pub params: Vec<Literal>,
}

/// What an action did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionOutcome {
    /// Done; the text says what happened.
    Done(String),
    /// Data arrived for `source`; it becomes an input of the next cycle (`@fetch:source,…`).
    Data {
        /// The source name (the fetched URL).
        source: String,
        /// The value.
        value: Literal,
    },
}

/// Executes one kind of action.
#[cfg_attr(test, mockall::automock)]
pub trait ActionHandler: Send + Sync + std::fmt::Debug {
    /// Runs `action`; `Err` explains a failure.
    fn run(&self, action: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>>;
}

/// `!wait,ms`: waits `ms` milliseconds (a non-negative integer up to `max_ms`).
#[derive(Debug, Clone)]
pub struct WaitHandler {
    /// How to wait.
    pub sleeper: Arc<dyn Sleeper>,
    /// The longest wait allowed.
    pub max_ms: u64,
}

impl ActionHandler for WaitHandler {
    fn run(&self, a: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>> {
        let ms = match a.params.as_slice() {
            [Literal::Num(n)] => n.as_i64().and_then(|v| u64::try_from(v).ok()),
            _ => None,
        };
        let Some(ms) = ms.filter(|m| *m <= self.max_ms) else {
            let max = self.max_ms;
            return Box::pin(std::future::ready(Err(format!(
                "!wait takes one integer from 0 to {max} (milliseconds)"
            ))));
        };
        let sleep = self.sleeper.sleep(ms);
        Box::pin(async move {
            sleep.await;
            Ok(ActionOutcome::Done(format!("waited {ms} ms")))
        })
    }
}

/// Delivers pages (later: a LOOM `notification.alert@v1` envelope).
#[cfg_attr(test, mockall::automock)]
pub trait Notifier: Send + Sync + std::fmt::Debug {
    /// Pages `target` with `message`.
    fn page(&self, target: String, message: String) -> BoxFuture<Result<(), String>>;
}

/// Keeps every page in memory; clones share the list.
#[derive(Debug, Clone, Default)]
pub struct RecordingNotifier(pub Arc<Mutex<Vec<(String, String)>>>);

impl RecordingNotifier {
    /// The pages so far, in order.
    pub fn pages(&self) -> Vec<(String, String)> {
        self.0.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl Notifier for RecordingNotifier {
    fn page(&self, target: String, message: String) -> BoxFuture<Result<(), String>> {
        let r = self
            .0
            .lock()
            .map(|mut p| p.push((target, message)))
            .map_err(|_| "notifier lock poisoned".to_owned());
        Box::pin(std::future::ready(r))
    }
}

fn text(l: &Literal) -> String {
    match l {
        Literal::Str(s) => s.clone(),
        Literal::Num(n) => n.to_string(),
    }
}

/// `!page,target,message` (spec §4.6 example `!page,$u,$m`), or `!page,message` to `default_target`.
#[derive(Debug, Clone)]
pub struct PageHandler {
    /// Where pages go.
    pub notifier: Arc<dyn Notifier>,
    /// The target of one-parameter pages.
    pub default_target: String,
}

impl ActionHandler for PageHandler {
    fn run(&self, a: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>> {
        let (target, msg) = match a.params.as_slice() {
            [m] => (self.default_target.clone(), text(m)),
            [t, m] => (text(t), text(m)),
            _ => {
                return Box::pin(std::future::ready(Err(
                    "!page takes a message, or a target and a message".to_owned(),
                )));
            }
        };
        let fut = self.notifier.page(target.clone(), msg.clone());
        Box::pin(async move {
            fut.await?;
            Ok(ActionOutcome::Done(format!("paged {target}: {msg}")))
        })
    }
}

/// `!fetch,url`: GETs `url`; a 2xx body (trimmed) that is a number becomes a number, else a
/// string (it must be UTF-8 without `"`), and is offered to the next cycle as input `url`.
#[derive(Debug, Clone)]
pub struct FetchHandler {
    /// How to reach the URL.
    pub dial: Arc<dyn Dial>,
}

/// The literal a fetched body becomes.
pub fn body_literal(body: &[u8]) -> Result<Literal, String> {
    let t = std::str::from_utf8(body)
        .map_err(|_| "the body is not UTF-8".to_owned())?
        .trim();
    if let Some(n) = Number::parse(t) {
        return Ok(Literal::Num(n));
    }
    Literal::string(t)
        .ok_or_else(|| "the body contains `\"`, which a PLSP string cannot hold".to_owned())
}

impl ActionHandler for FetchHandler {
    fn run(&self, a: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>> {
        let url = match a.params.as_slice() {
            [Literal::Str(u)] => u.clone(),
            _ => {
                return Box::pin(std::future::ready(Err(
                    "!fetch takes one URL string".to_owned()
                )));
            }
        };
        let fut = self.dial.send(HttpRequest::get(&url));
        Box::pin(async move {
            let r = fut.await?;
            if !(200..300).contains(&r.status) {
                return Err(format!("GET {url}: HTTP {}", r.status));
            }
            Ok(ActionOutcome::Data {
                source: url,
                value: body_literal(&r.body)?,
            })
        })
    }
}

/// What to do with an action no handler knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownActionPolicy {
    /// Stop the loop with an error.
    #[default]
    Fail,
    /// Record it in the trace as skipped and go on.
    Skip,
}

/// Handlers by action name (a `BTreeMap`: lookups only, but never a `HashMap` near output).
#[derive(Debug, Clone, Default)]
pub struct ActionRegistry {
    handlers: BTreeMap<String, Arc<dyn ActionHandler>>,
}

impl ActionRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` for `name`.
    pub fn with(mut self, name: &str, handler: Arc<dyn ActionHandler>) -> Self {
        self.handlers.insert(name.to_owned(), handler);
        self
    }

    /// `wait`, `page` and `fetch`.
    pub fn standard(
        sleeper: Arc<dyn Sleeper>,
        notifier: Arc<dyn Notifier>,
        dial: Arc<dyn Dial>,
    ) -> Self {
        Self::new()
            .with(
                "wait",
                Arc::new(WaitHandler {
                    sleeper,
                    max_ms: 3_600_000,
                }),
            )
            .with(
                "page",
                Arc::new(PageHandler {
                    notifier,
                    default_target: "operator".into(),
                }),
            )
            .with("fetch", Arc::new(FetchHandler { dial }))
    }

    /// The handler for `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ActionHandler>> {
        self.handlers.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MockSleeper;

    #[tokio::test]
    async fn wait_sleeps_through_the_sleeper() {
        let mut s = MockSleeper::new();
        s.expect_sleep()
            .withf(|ms| *ms == 5000)
            .times(1)
            .returning(|_| Box::pin(async {}));
        let h = WaitHandler {
            sleeper: Arc::new(s),
            max_ms: 10_000,
        };
        let a = ResolvedAction {
            name: "wait".into(),
            params: vec![Literal::Num(Number::from_i64(5000))],
        };
        assert_eq!(
            h.run(a).await,
            Ok(ActionOutcome::Done("waited 5000 ms".into()))
        );
        let bad = ResolvedAction {
            name: "wait".into(),
            params: vec![Literal::Str("x".into())],
        };
        assert!(h.run(bad).await.is_err());
    }

    #[tokio::test]
    async fn page_uses_the_notifier() {
        let mut n = MockNotifier::new();
        n.expect_page()
            .withf(|t, m| t == "op" && m == "CPU High")
            .times(1)
            .returning(|_, _| Box::pin(async { Ok(()) }));
        let h = PageHandler {
            notifier: Arc::new(n),
            default_target: "x".into(),
        };
        let a = ResolvedAction {
            name: "page".into(),
            params: vec![Literal::Str("op".into()), Literal::Str("CPU High".into())],
        };
        assert!(h.run(a).await.is_ok());
    }

    #[test]
    fn fetched_bodies() {
        assert_eq!(
            body_literal(b" 42\n"),
            Ok(Literal::Num(Number::from_i64(42)))
        );
        assert_eq!(body_literal(b"ok"), Ok(Literal::Str("ok".into())));
        assert!(body_literal(b"a\"b").is_err());
        assert!(body_literal(&[0xff]).is_err());
    }
}
