//! A chat-completions backend (OpenAI-compatible `POST {base}/chat/completions`): the system
//! prompt teaches the block format and the IMF; each cycle sends one user message (`IMF.md`,
//! "How the chat backend sends it") and takes `choices[0].message.content` as the output.

use super::{EngineError, EngineRequest, StateEngine};
use crate::env::BoxFuture;
use crate::http::{Dial, HttpRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// The system prompt: the format rules of GRAMMAR.md and IMF.md, compressed.
pub const SYSTEM_PROMPT: &str = r#"You are a PLSP v0.5 state engine. Each turn you receive:
line 1: INSTR: directives separated by ';'
line 2 (optional): DATA: source=value pairs separated by ';'
last line: the previous state block S{...}S
Reply with ONLY the next state block S{...}S, no other text.
Block syntax: S{ statements each ending in ';' }S. Statements: $id:value; (assignment), >v1,v2; (log data), !action,p1,p2; (action). Values: "string" (no escapes, no inner quotes), number (-?digits[.digits]), or $id (reference). Identifiers: letter then letters/digits. No comments, no duplicate variables.
The block MUST contain every variable of the previous block (the entire state), then the > and ! commands in directive order. Do not repeat the previous block's > and ! commands.
Directives, run in order:
@set:$v=x  set $v to the value of x (create if new; a $ref is copied as its current value)
@upd:$v=x  same, $v must exist
@fetch:src,$v  set $v to the DATA value named src
@if:cond?A:B  run A if cond holds else B (B optional); A/B are one directive or {d1;d2}
@sig:!act,p1  append !act,p1; to the block (keep $refs as written)
@log:x,y  append >x,y; to the block (keep $refs as written)
Conditions: x==y x!=y x<y x<=y x>y x>=y, && binds tighter than ||, parentheses allowed. Numbers compare numerically, strings by bytes.
New variables go after existing ones, in order of creation.
Example: previous S{$t:75;$l:70;}S, INSTR: @upd:$l=$t;@fetch:temp,$t;@if:$t>90?@sig:!page,"op","hot":@log:"OK",$t;@sig:!wait,5000 with DATA: temp=82
Reply: S{$t:82;$l:75;>"OK",$t;!wait,5000;}S"#;

/// Where and how to reach the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatConfig {
    /// Base URL up to and including the version, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// Bearer token, if the server wants one.
    pub api_key: Option<String>,
    /// `max_tokens` of each completion.
    pub max_tokens: u32,
}

impl ChatConfig {
    /// Reads `PLSP_BASE_URL`, `PLSP_MODEL` and `PLSP_API_KEY` (falling back to
    /// `OPENAI_API_KEY`) through `get`, so only `main` touches the real environment.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<ChatConfig, String> {
        let base_url = get("PLSP_BASE_URL")
            .ok_or("PLSP_BASE_URL is not set (e.g. http://127.0.0.1:8080/v1)")?;
        let model = get("PLSP_MODEL").ok_or("PLSP_MODEL is not set")?;
        let api_key = get("PLSP_API_KEY").or_else(|| get("OPENAI_API_KEY"));
        Ok(ChatConfig {
            base_url: base_url.trim_end_matches('/').to_owned(),
            model,
            api_key,
            max_tokens: 512,
        })
    }
}

/// The user message for one cycle.
pub fn user_message(req: &EngineRequest) -> String {
    let instr = req.instr.trim();
    let mut m = if instr.starts_with("INSTR:") {
        instr.to_owned()
    } else {
        format!("INSTR: {instr}")
    };
    if !req.inputs.is_empty() {
        let data: Vec<String> = req.inputs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        m.push_str("\nDATA: ");
        m.push_str(&data.join(";"));
    }
    m.push('\n');
    m.push_str(&req.previous.to_string());
    if let Some(note) = &req.retry_note {
        m.push_str("\nYour previous reply was rejected: ");
        m.push_str(note);
        m.push_str(". Reply with the complete S{...}S block only.");
    }
    m
}

/// The engine.
#[derive(Debug, Clone)]
pub struct ChatEngine {
    config: ChatConfig,
    dial: Arc<dyn Dial>,
}

impl ChatEngine {
    /// A backend sending through `dial`.
    pub fn new(config: ChatConfig, dial: Arc<dyn Dial>) -> Self {
        ChatEngine { config, dial }
    }

    /// The request body for `req`.
    pub fn body(&self, req: &EngineRequest) -> Json {
        json!({
            "model": self.config.model,
            "temperature": 0,
            "max_tokens": self.config.max_tokens,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_message(req)},
            ],
        })
    }
}

impl StateEngine for ChatEngine {
    fn name(&self) -> String {
        format!("chat:{}", self.config.model)
    }

    fn next(&self, req: EngineRequest) -> BoxFuture<Result<String, EngineError>> {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(k) = &self.config.api_key {
            headers.push(("authorization".into(), format!("Bearer {k}")));
        }
        let http = HttpRequest {
            method: "POST".into(),
            url: format!("{}/chat/completions", self.config.base_url),
            headers,
            body: self.body(&req).to_string().into_bytes(),
        };
        let dial = self.dial.clone();
        Box::pin(async move {
            let resp = dial.send(http).await.map_err(EngineError::Transport)?;
            if !(200..300).contains(&resp.status) {
                let text = String::from_utf8_lossy(&resp.body);
                let text: String = text.chars().take(200).collect();
                return Err(EngineError::Transport(format!(
                    "HTTP {}: {text}",
                    resp.status
                )));
            }
            let v: Json = serde_json::from_slice(&resp.body)
                .map_err(|e| EngineError::BadResponse(format!("not JSON: {e}")))?;
            v.pointer("/choices/0/message/content")
                .and_then(Json::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    EngineError::BadResponse("no choices[0].message.content string".into())
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{HttpResponse, MockDial};
    use crate::parse::parse;

    fn req() -> EngineRequest {
        EngineRequest {
            cycle: 1,
            instr: "@set:$a=1".into(),
            previous: parse("S{$b:2;}S").unwrap(),
            inputs: [(
                "temp".to_owned(),
                crate::Literal::Num(crate::Number::from_i64(75)),
            )]
            .into(),
            retry_note: Some("EXPECTED_SEPARATOR at byte 3".into()),
        }
    }

    #[test]
    fn user_message_layout() {
        assert_eq!(
            user_message(&req()),
            "INSTR: @set:$a=1\nDATA: temp=75\nS{$b:2;}S\nYour previous reply was rejected: EXPECTED_SEPARATOR at byte 3. Reply with the complete S{...}S block only."
        );
    }

    #[tokio::test]
    async fn sends_bearer_and_reads_content() {
        let mut dial = MockDial::new();
        dial.expect_send()
            .withf(|r| {
                r.method == "POST"
                    && r.url == "http://m/v1/chat/completions"
                    && r.headers.contains(&("authorization".into(), "Bearer k".into()))
            })
            .times(1)
            .returning(|_| {
                Box::pin(async {
                    Ok(HttpResponse {
                        status: 200,
                        body: br#"{"choices":[{"message":{"role":"assistant","content":"S{$b:2;$a:1;}S"}}]}"#.to_vec(),
                    })
                })
            });
        let cfg = ChatConfig {
            base_url: "http://m/v1".into(),
            model: "x".into(),
            api_key: Some("k".into()),
            max_tokens: 10,
        };
        let e = ChatEngine::new(cfg, Arc::new(dial));
        assert_eq!(e.next(req()).await.unwrap(), "S{$b:2;$a:1;}S");
    }

    #[tokio::test]
    async fn http_errors_are_transport_errors() {
        let mut dial = MockDial::new();
        dial.expect_send().returning(|_| {
            Box::pin(async {
                Ok(HttpResponse {
                    status: 500,
                    body: b"boom".to_vec(),
                })
            })
        });
        let cfg = ChatConfig::from_env(|k| match k {
            "PLSP_BASE_URL" => Some("http://m/v1/".into()),
            "PLSP_MODEL" => Some("x".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(cfg.base_url, "http://m/v1");
        let e = ChatEngine::new(cfg, Arc::new(dial));
        assert!(
            matches!(e.next(req()).await, Err(EngineError::Transport(m)) if m == "HTTP 500: boom")
        );
    }
}
