//! An OpenAI-compatible chat-completions [`Model`] (`POST {base}/chat/completions`), sending
//! through `loom-plsp`'s HTTP seam ([`loom_plsp::http::Dial`]: hyper over tokio with rustls
//! for real use, any table or mock in tests) rather than a second HTTP client.
//!
//! Protocol with the model (README "Running"): the system message is the phase's system
//! prompt plus a reply contract; the model must answer with ONE JSON object (a Markdown code
//! fence around it is tolerated):
//! - act turns: `{"message": "...", "actions": [<Tool Action v1 objects>], "done": bool}`
//!   (`done` defaults to "no actions");
//! - judge requests: `{"verdict": "pass" | "fail", "reasons": ["..."]}`.
//!
//! Token usage is read from the response's `usage.prompt_tokens`/`usage.completion_tokens`.
//! `Model::reply` is synchronous: each call blocks on a private current-thread tokio runtime,
//! so a `ChatModel` must not be used from inside another tokio runtime.

use super::action::ToolAction;
use super::model::{
    ClaimVerdict, MemoryEntry, Model, ModelError, ModelReply, ModelRequest, Purpose, Replan,
    TokenUsage,
};
use super::tools::Fetch;
use loom_plsp::http::{Dial, HttpRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// Where and how to reach the model: the same configuration as PLSP's chat engine.
pub use loom_plsp::engine::chat::ChatConfig;

/// `model` with the base URL from `LOOM_PROCESS_BASE_URL` (or `OPENAI_BASE_URL`) and the key
/// from `LOOM_PROCESS_API_KEY` (or `OPENAI_API_KEY`), read through `get` so only the CLI
/// touches the real environment.
pub fn config_from_env(
    model: &str,
    get: impl Fn(&str) -> Option<String>,
) -> Result<ChatConfig, String> {
    let base_url = get("LOOM_PROCESS_BASE_URL")
        .or_else(|| get("OPENAI_BASE_URL"))
        .ok_or(
            "LOOM_PROCESS_BASE_URL (or OPENAI_BASE_URL) is not set, e.g. http://127.0.0.1:8080/v1",
        )?;
    Ok(ChatConfig {
        base_url: base_url.trim_end_matches('/').to_owned(),
        model: model.to_owned(),
        api_key: get("LOOM_PROCESS_API_KEY").or_else(|| get("OPENAI_API_KEY")),
        max_tokens: 2048,
    })
}

const ACT_CONTRACT: &str = "Reply with ONE JSON object and nothing else: {\"message\": string, \"actions\": [tool actions], \"done\": boolean}. Each action is a Loop Engine Tool Action v1 object with a unique \"id\" and a \"type\" among terminal.run {program, args, cwd?}, terminal.exec {cmd, cwd?}, fs.read {path}, fs.write {path, content}, fs.applyPatch {path, patch}, fs.search {pattern, paths}, git.status, git.diff {path?}, git.commit {message}, checkpoint.create {label?}, checkpoint.restore {checkpointId}, browser.fetch {url}. Paths are workspace-relative. Set done to true when the phase's deliverables are complete.";

const FACT_CHECK_CONTRACT: &str = "You are a fact checker. For each claim decide from the text and your knowledge whether it is supported, contradicted, or has insufficient evidence. Reply with ONE JSON object and nothing else: {\"claims\": [{\"id\": claim id, \"verdict\": \"supported\" | \"contradicted\" | \"insufficient_evidence\", \"source\": optional evidence reference}]}.";

const MEMORY_CONTRACT: &str = "Extract reusable knowledge of the listed memory types from the text. Reply with ONE JSON object and nothing else: {\"memory\": [{\"type\": one of the listed types, \"content\": string}]}.";

const REPLAN_CONTRACT: &str = "You are the planner. A phase's iteration loop is exhausted. Decide whether to adapt the step. Reply with ONE JSON object and nothing else: {\"replan\": null} to decline, or {\"replan\": {\"instructions\": string, \"criteria\": [strings]}} with instructions for the phase's next loop.";

const JUDGE_CONTRACT: &str = "You are a verifier. Reply with ONE JSON object and nothing else: {\"verdict\": \"pass\" or \"fail\", \"reasons\": [strings]}.";

/// A runtime that blocks on one future at a time.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))
}

/// The chat-completions model.
#[derive(Debug)]
pub struct ChatModel {
    config: ChatConfig,
    dial: Arc<dyn Dial>,
    rt: tokio::runtime::Runtime,
    tier_models: std::collections::BTreeMap<u8, String>,
}

impl ChatModel {
    /// A model sending through `dial`.
    pub fn new(config: ChatConfig, dial: Arc<dyn Dial>) -> Result<Self, String> {
        Ok(ChatModel {
            config,
            dial,
            rt: runtime()?,
            tier_models: std::collections::BTreeMap::new(),
        })
    }

    /// Uses `models` (tier → model name) for requests of those tiers; other tiers use the
    /// configured model (model-tier escalation on retry asks for a higher tier).
    pub fn with_tier_models(mut self, models: std::collections::BTreeMap<u8, String>) -> Self {
        self.tier_models = models;
        self
    }

    /// The model name for a tier.
    fn model_for(&self, tier: u8) -> &str {
        self.tier_models
            .get(&tier)
            .map_or(self.config.model.as_str(), String::as_str)
    }

    /// The request body for `req`.
    pub fn body(&self, req: &ModelRequest) -> Json {
        let (system, user) = match &req.purpose {
            Purpose::Act => {
                let mut user = format!(
                    "Goal: {}\nPhase: {} (attempt {}, turn {})\n{}",
                    req.goal, req.phase_id, req.attempt, req.turn, req.phase_description
                );
                if !req.feedback.is_empty() {
                    user.push_str("\nThe previous attempt failed these checks:\n- ");
                    user.push_str(&req.feedback.join("\n- "));
                }
                for (i, o) in req.observations.iter().enumerate() {
                    let raw = o.raw.to_string();
                    let raw: String = raw.chars().take(4000).collect();
                    user.push_str(&format!(
                        "\nObservation {}: ok={} {} {raw}",
                        i + 1,
                        o.ok,
                        o.summary
                    ));
                }
                (format!("{}\n\n{ACT_CONTRACT}", req.system), user)
            }
            Purpose::Judge {
                rule,
                check,
                subject,
            } => (
                format!("{}\n\n{JUDGE_CONTRACT}", req.system),
                format!("Rule {rule}: {check}\n\nText to judge:\n{subject}"),
            ),
            Purpose::FactCheck { claims, subject } => (
                FACT_CHECK_CONTRACT.to_owned(),
                format!(
                    "Claims:\n{}\n\nText they come from:\n{subject}",
                    claims
                        .iter()
                        .map(|c| format!("- {}: {}", c.id, c.text))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            ),
            Purpose::Memory {
                types,
                guidance,
                subject,
            } => (
                format!("{MEMORY_CONTRACT}\n\n{guidance}"),
                format!(
                    "Memory types:\n{}\n\nText:\n{subject}",
                    types
                        .iter()
                        .map(|t| format!("- {}: {}", t.name, t.description))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            ),
            Purpose::Replan(ctx) => (
                format!("{}\n\n{REPLAN_CONTRACT}", req.system),
                format!(
                    "Goal: {}\nPhase: {} (replan {})\n{}\nFailures of the last attempt:\n- {}\nCurrent criteria:\n- {}\nReplanning triggers:\n{}\nReplanning guidance:\n{}\nPlanner examples:\n{}",
                    req.goal,
                    req.phase_id,
                    ctx.replan,
                    req.phase_description,
                    ctx.failures.join("\n- "),
                    ctx.criteria.join("\n- "),
                    ctx.triggers,
                    ctx.guidance,
                    ctx.examples
                ),
            ),
        };
        json!({
            "model": self.model_for(req.model_tier),
            "temperature": 0,
            "max_tokens": self.config.max_tokens,
            "messages": [
                {"role": "system", "content": system.trim()},
                {"role": "user", "content": user},
            ],
        })
    }
}

/// The JSON object inside a reply, tolerating a Markdown code fence.
fn reply_object(content: &str) -> Result<Json, ModelError> {
    let t = content.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|x| x.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    serde_json::from_str::<Json>(t)
        .ok()
        .filter(Json::is_object)
        .ok_or_else(|| {
            ModelError(format!(
                "the model did not reply with a JSON object: {:?}",
                t.chars().take(200).collect::<String>()
            ))
        })
}

/// Parses a chat-completions response body for `purpose`.
pub fn parse_reply(purpose: &Purpose, body: &[u8]) -> Result<ModelReply, ModelError> {
    let v: Json = serde_json::from_slice(body)
        .map_err(|e| ModelError(format!("chat response is not JSON: {e}")))?;
    let content = v
        .pointer("/choices/0/message/content")
        .and_then(Json::as_str)
        .ok_or_else(|| {
            ModelError("chat response has no choices[0].message.content string".into())
        })?;
    let tokens = TokenUsage {
        prompt: v
            .pointer("/usage/prompt_tokens")
            .and_then(Json::as_u64)
            .unwrap_or(0),
        completion: v
            .pointer("/usage/completion_tokens")
            .and_then(Json::as_u64)
            .unwrap_or(0),
    };
    let obj = reply_object(content)?;
    match purpose {
        Purpose::Act => {
            let mut actions = Vec::new();
            if let Some(list) = obj.get("actions") {
                let list = list
                    .as_array()
                    .ok_or_else(|| ModelError("`actions` must be an array".into()))?;
                for (i, a) in list.iter().enumerate() {
                    actions.push(
                        ToolAction::from_json(a)
                            .map_err(|e| ModelError(format!("actions[{i}]: {e}")))?,
                    );
                }
            }
            let done = obj
                .get("done")
                .and_then(Json::as_bool)
                .unwrap_or(actions.is_empty());
            Ok(ModelReply {
                message: obj
                    .get("message")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_owned(),
                actions,
                tokens,
                done,
                ..Default::default()
            })
        }
        Purpose::Judge { .. } => {
            let verdict = match obj.get("verdict").and_then(Json::as_str) {
                Some("pass") => true,
                Some("fail") => false,
                other => {
                    return Err(ModelError(format!(
                        "`verdict` must be \"pass\" or \"fail\", got {other:?}"
                    )));
                }
            };
            let reasons = obj
                .get("reasons")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Json::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Ok(ModelReply {
                message: content.to_owned(),
                tokens,
                done: true,
                verdict: Some(verdict),
                reasons,
                ..Default::default()
            })
        }
        Purpose::FactCheck { .. } => {
            let claims = obj
                .get("claims")
                .cloned()
                .map(serde_json::from_value::<Vec<ClaimVerdict>>)
                .transpose()
                .map_err(|e| ModelError(format!("`claims`: {e}")))?
                .unwrap_or_default();
            Ok(ModelReply {
                message: content.to_owned(),
                tokens,
                done: true,
                claims,
                ..Default::default()
            })
        }
        Purpose::Memory { .. } => {
            let memory = obj
                .get("memory")
                .cloned()
                .map(serde_json::from_value::<Vec<MemoryEntry>>)
                .transpose()
                .map_err(|e| ModelError(format!("`memory`: {e}")))?
                .unwrap_or_default();
            Ok(ModelReply {
                message: content.to_owned(),
                tokens,
                done: true,
                memory,
                ..Default::default()
            })
        }
        Purpose::Replan(_) => {
            let replan = match obj.get("replan") {
                None | Some(Json::Null) => None,
                Some(v) => Some(
                    serde_json::from_value::<Replan>(v.clone())
                        .map_err(|e| ModelError(format!("`replan`: {e}")))?,
                ),
            };
            Ok(ModelReply {
                message: content.to_owned(),
                tokens,
                done: true,
                replan,
                ..Default::default()
            })
        }
    }
}

impl Model for ChatModel {
    fn name(&self) -> String {
        format!("chat:{}", self.config.model)
    }

    fn reply(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(k) = &self.config.api_key {
            headers.push(("authorization".into(), format!("Bearer {k}")));
        }
        let http = HttpRequest {
            method: "POST".into(),
            url: format!("{}/chat/completions", self.config.base_url),
            headers,
            body: self.body(req).to_string().into_bytes(),
        };
        let resp = self
            .rt
            .block_on(self.dial.send(http))
            .map_err(|e| ModelError(format!("chat request failed: {e}")))?;
        if !(200..300).contains(&resp.status) {
            let text: String = String::from_utf8_lossy(&resp.body)
                .chars()
                .take(200)
                .collect();
            return Err(ModelError(format!(
                "chat request failed: HTTP {}: {text}",
                resp.status
            )));
        }
        parse_reply(&req.purpose, &resp.body)
    }
}

/// `browser.fetch` through a [`Dial`] (used when the task allows the network).
#[derive(Debug)]
pub struct DialFetch {
    dial: Arc<dyn Dial>,
    rt: tokio::runtime::Runtime,
}

impl DialFetch {
    /// A fetcher sending through `dial`.
    pub fn new(dial: Arc<dyn Dial>) -> Result<Self, String> {
        Ok(DialFetch {
            dial,
            rt: runtime()?,
        })
    }
}

impl Fetch for DialFetch {
    fn fetch(&self, url: &str) -> Result<(u16, String), String> {
        let resp = self.rt.block_on(self.dial.send(HttpRequest::get(url)))?;
        Ok((
            resp.status,
            String::from_utf8_lossy(&resp.body).into_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom_plsp::env::BoxFuture;
    use loom_plsp::http::HttpResponse;
    use std::sync::Mutex;

    /// Records requests and answers with a fixed body.
    #[derive(Debug)]
    struct Recorder {
        seen: Mutex<Vec<HttpRequest>>,
        status: u16,
        body: String,
    }

    impl Dial for Recorder {
        fn send(&self, req: HttpRequest) -> BoxFuture<Result<HttpResponse, String>> {
            self.seen.lock().unwrap().push(req);
            let r = HttpResponse {
                status: self.status,
                body: self.body.clone().into_bytes(),
            };
            Box::pin(std::future::ready(Ok(r)))
        }
    }

    fn completion(content: &str) -> String {
        json!({"choices": [{"message": {"role": "assistant", "content": content}}], "usage": {"prompt_tokens": 11, "completion_tokens": 4}}).to_string()
    }

    fn req(purpose: Purpose) -> ModelRequest {
        ModelRequest {
            purpose,
            system: "You are careful.".into(),
            goal: "g".into(),
            phase_id: "p".into(),
            phase_description: "Do p.".into(),
            attempt: 2,
            turn: 1,
            observations: vec![],
            feedback: vec!["gate x: no match".into()],
            model_tier: 2,
        }
    }

    fn model(status: u16, body: String) -> (ChatModel, Arc<Recorder>) {
        let rec = Arc::new(Recorder {
            seen: Mutex::new(vec![]),
            status,
            body,
        });
        let cfg = ChatConfig {
            base_url: "http://m/v1".into(),
            model: "tiny".into(),
            api_key: Some("k".into()),
            max_tokens: 64,
        };
        (ChatModel::new(cfg, rec.clone()).unwrap(), rec)
    }

    #[test]
    fn act_turns_send_the_contract_and_parse_actions_and_usage() {
        let content = "```json\n{\"message\": \"writing\", \"actions\": [{\"id\": \"a\", \"type\": \"fs.write\", \"path\": \"x.md\", \"content\": \"y\"}]}\n```";
        let (m, rec) = model(200, completion(content));
        let r = m.reply(&req(Purpose::Act)).unwrap();
        assert_eq!(r.message, "writing");
        assert_eq!(r.actions[0].type_name(), "fs.write");
        assert!(!r.done, "done defaults to no actions");
        assert_eq!(r.tokens.total(), 15);
        let seen = rec.seen.lock().unwrap();
        assert_eq!(seen[0].url, "http://m/v1/chat/completions");
        assert!(
            seen[0]
                .headers
                .contains(&("authorization".into(), "Bearer k".into()))
        );
        let body: Json = serde_json::from_slice(&seen[0].body).unwrap();
        assert!(
            body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .starts_with("You are careful.\n\nReply with ONE JSON object")
        );
        assert!(
            body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("failed these checks:\n- gate x: no match")
        );
    }

    #[test]
    fn fact_checks_memory_and_replans_parse_their_contracts() {
        let fc = Purpose::FactCheck {
            claims: vec![crate::engine::model::ClaimText {
                id: "CLM-1".into(),
                text: "Sales grew 4%.".into(),
            }],
            subject: "Sales grew 4%.".into(),
        };
        let body =
            completion(r#"{"claims": [{"id": "CLM-1", "verdict": "supported", "source": "E1"}]}"#);
        let r = parse_reply(&fc, body.as_bytes()).unwrap();
        assert_eq!(
            (r.claims[0].id.as_str(), r.claims[0].verdict.as_str()),
            ("CLM-1", "supported")
        );
        let mem = Purpose::Memory {
            types: vec![],
            guidance: String::new(),
            subject: String::new(),
        };
        let body = completion(r#"{"memory": [{"type": "finding", "content": "c"}]}"#);
        assert_eq!(
            parse_reply(&mem, body.as_bytes()).unwrap().memory[0].kind,
            "finding"
        );
        let ctx = crate::engine::model::ReplanContext {
            replan: 1,
            failures: vec!["gate x failed".into()],
            triggers: "- too broad".into(),
            guidance: "narrow it".into(),
            examples: serde_json::json!([]),
            criteria: vec![],
        };
        let rp = Purpose::Replan(ctx);
        let body = completion(
            r#"{"replan": {"instructions": "narrow the scope", "criteria": ["one region"]}}"#,
        );
        let r = parse_reply(&rp, body.as_bytes()).unwrap();
        assert_eq!(r.replan.unwrap().instructions, "narrow the scope");
        let body = completion(r#"{"replan": null}"#);
        assert!(parse_reply(&rp, body.as_bytes()).unwrap().replan.is_none());
        let (m, rec) = model(200, completion("{\"replan\": null}"));
        let m = m.with_tier_models([(3u8, "big-model".to_owned())].into_iter().collect());
        let mut r = req(rp);
        r.model_tier = 3;
        m.reply(&r).unwrap();
        let seen = rec.seen.lock().unwrap();
        let sent = String::from_utf8_lossy(&seen[0].body).into_owned();
        assert!(
            sent.contains("\"model\":\"big-model\"") && sent.contains("narrow it"),
            "{sent}"
        );
    }

    #[test]
    fn judge_requests_parse_verdicts() {
        let (m, _) = model(
            200,
            completion("{\"verdict\": \"fail\", \"reasons\": [\"uncited\"]}"),
        );
        let purpose = Purpose::Judge {
            rule: "r".into(),
            check: "c".into(),
            subject: "s".into(),
        };
        let r = m.reply(&req(purpose)).unwrap();
        assert_eq!(
            (r.verdict, r.reasons),
            (Some(false), vec!["uncited".to_owned()])
        );
    }

    #[test]
    fn bad_replies_are_model_errors() {
        let (m, _) = model(500, "boom".into());
        assert!(
            m.reply(&req(Purpose::Act))
                .unwrap_err()
                .0
                .contains("HTTP 500: boom")
        );
        let (m, _) = model(200, completion("sure, here you go"));
        assert!(
            m.reply(&req(Purpose::Act))
                .unwrap_err()
                .0
                .contains("did not reply with a JSON object")
        );
        let (m, _) = model(
            200,
            completion("{\"actions\": [{\"id\": \"a\", \"type\": \"fs.nuke\"}]}"),
        );
        assert!(
            m.reply(&req(Purpose::Act))
                .unwrap_err()
                .0
                .contains("actions[0]: unknown action type")
        );
        let (m, _) = model(200, completion("{\"verdict\": \"maybe\"}"));
        let purpose = Purpose::Judge {
            rule: "r".into(),
            check: "c".into(),
            subject: "s".into(),
        };
        assert!(m.reply(&req(purpose)).unwrap_err().0.contains("`verdict`"));
    }

    #[test]
    fn fetch_goes_through_the_dial() {
        let rec = Arc::new(Recorder {
            seen: Mutex::new(vec![]),
            status: 200,
            body: "<html>hi</html>".into(),
        });
        let f = DialFetch::new(rec.clone()).unwrap();
        assert_eq!(
            f.fetch("https://example.org/x").unwrap(),
            (200, "<html>hi</html>".to_owned())
        );
        let seen = rec.seen.lock().unwrap();
        assert_eq!(
            (seen[0].method.as_str(), seen[0].url.as_str()),
            ("GET", "https://example.org/x")
        );
    }

    #[test]
    fn config_comes_from_the_environment() {
        let env = |k: &str| match k {
            "OPENAI_BASE_URL" => Some("http://h/v1/".to_owned()),
            "OPENAI_API_KEY" => Some("sk".to_owned()),
            _ => None,
        };
        let c = config_from_env("m", env).unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.api_key.as_deref()),
            ("http://h/v1", Some("sk"))
        );
        assert!(config_from_env("m", |_| None).is_err());
    }
}
