//! The chat-completions backend against a local mock OpenAI-compatible server (axum on
//! 127.0.0.1:0), reached through hyper-util's client over tokio TCP: the mock "model" runs the
//! reference engine on the user message, and can first answer garbage to exercise retries.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use loom_plsp::engine::chat::{ChatConfig, ChatEngine, SYSTEM_PROMPT};
use loom_plsp::engine::reference::ReferenceEngine;
use loom_plsp::http::HyperDial;
use loom_plsp::scenario::{self, Scenario};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone)]
struct Mock {
    calls: Arc<AtomicUsize>,
    garbage_first: bool,
}

/// The mock model: parses INSTR / DATA / block from the user message and answers with the
/// reference engine's block.
fn answer(user: &str) -> String {
    let mut lines = user.lines();
    let instr = lines.next().unwrap_or_default().to_owned();
    let mut inputs = loom_plsp::imf::Inputs::new();
    let mut block = "S{}S".to_owned();
    for l in lines {
        if let Some(d) = l.strip_prefix("DATA: ") {
            for kv in d.split(';') {
                let (k, v) = kv.split_once('=').unwrap();
                let lit = match loom_plsp::parse(&format!("S{{$x:{v};}}S"))
                    .unwrap()
                    .stmts
                    .remove(0)
                {
                    loom_plsp::Stmt::Assign(_, loom_plsp::Value::Lit(l)) => l,
                    _ => unreachable!(),
                };
                inputs.insert(k.to_owned(), lit);
            }
        } else if l.starts_with("S{") {
            block = l.to_owned();
        }
    }
    let req = loom_plsp::engine::EngineRequest {
        cycle: 0,
        instr,
        previous: loom_plsp::parse(&block).unwrap(),
        inputs,
        retry_note: None,
    };
    ReferenceEngine::step(&req).unwrap().to_string()
}

async fn completions(
    State(m): State<Mock>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(body["model"], "plsp-mock");
    assert_eq!(body["messages"][0]["content"], SYSTEM_PROMPT);
    let n = m.calls.fetch_add(1, Ordering::SeqCst);
    let user = body["messages"][1]["content"].as_str().unwrap();
    let content = if m.garbage_first && n == 0 {
        "Here is the next state: S{$p:\"run\"".to_owned()
    } else {
        answer(user)
    };
    Json(
        json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}),
    )
}

async fn serve(garbage_first: bool) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(Mock {
            calls: calls.clone(),
            garbage_first,
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), calls)
}

fn engine(base: String) -> Arc<ChatEngine> {
    let cfg = ChatConfig::from_env(|k| match k {
        "PLSP_BASE_URL" => Some(base.clone()),
        "PLSP_MODEL" => Some("plsp-mock".into()),
        "PLSP_API_KEY" => Some("sk-test".into()),
        _ => None,
    })
    .unwrap();
    Arc::new(ChatEngine::new(cfg, Arc::new(HyperDial::new(1 << 20))))
}

fn monitor() -> Scenario {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/temperature-monitor.json"
    ))
    .unwrap();
    Scenario::from_json(&text).unwrap()
}

#[tokio::test]
async fn chat_backend_runs_the_monitor_like_the_reference_engine() {
    let (base, calls) = serve(false).await;
    let chat = scenario::run(&monitor(), engine(base)).await;
    let reference = scenario::run(&monitor(), Arc::new(ReferenceEngine)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    chat.result.as_ref().unwrap();
    // Same blocks, same data; only the trace header's engine name differs.
    assert_eq!(chat.data, reference.data);
    assert_eq!(chat.trace[1..], reference.trace[1..]);
    assert!(chat.trace[0].contains(r#""engine":"chat:plsp-mock""#));
}

#[tokio::test]
async fn incomplete_model_output_is_retried() {
    let (base, calls) = serve(true).await;
    let out = scenario::run(&monitor(), engine(base)).await;
    out.result.as_ref().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 7);
    assert!(
        out.trace[1].contains("UNTERMINATED_BLOCK")
            || out.trace[1].contains("EXPECTED_BLOCK_START"),
        "{}",
        out.trace[1]
    );
}

#[tokio::test]
async fn unreachable_server_is_a_clear_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut sc = monitor();
    sc.config.retry.max_attempts = 2;
    let out = scenario::run(&sc, engine(format!("http://{addr}/v1"))).await;
    let e = out.result.unwrap_err();
    assert!(
        e.starts_with(
            "cycle 1: no usable S{...}S block after 2 attempt(s); last problem: transport: "
        ),
        "{e}"
    );
}
