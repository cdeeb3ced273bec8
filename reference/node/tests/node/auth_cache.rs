//! The read side of authentication is cached in the store (`store::cache`): bearer token →
//! token record, identity → type and active signing keys. These tests prove the cache is
//! used and that every change to what it holds — key revocation (and the tokens it backs),
//! refresh-token rotation, key addition, re-registration, identity update — is seen by the
//! very next request and drops only what it changed, with an in-memory store and with a
//! durable one (reads from the read-only pool), and while other requests keep filling the
//! cache concurrently.

use crate::support::{Ident, TestNode};
use loom_node::store::tokens::token_hash;
use loom_node::{Quirk, Quirks, Storage};
use loom_protocol::keys::{public_key_to_spki_pem, sign_b64url, signing_key_from_seed};
use serde_json::json;
use std::path::PathBuf;

/// A data directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("loom-auth-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn durable(dir: &TempDir) -> TestNode {
    let path = dir.0.clone();
    TestNode::with(move |c| c.storage = Storage::Dir(path))
}

/// Adds signing key `key_id` (from `seed`) to `who`; returns its access token after a login.
async fn add_key_and_login(n: &TestNode, who: &Ident, key_id: &str, seed: u8) -> String {
    let key = signing_key_from_seed(&[seed; 32]);
    n.call(
        "POST",
        "/v1/identity/me/keys",
        Some(&who.token),
        Some(json!({"key_id": key_id, "public_key_pem": public_key_to_spki_pem(&key.verifying_key())})),
    )
    .await
    .expect(201);
    n.login(&who.address, &key, key_id).await.0
}

async fn challenge(n: &TestNode, who: &str, key_id: &str) -> crate::support::Resp {
    n.call(
        "POST",
        "/v1/auth/challenge",
        None,
        Some(json!({"identity": who, "key_id": key_id})),
    )
    .await
}

async fn revoked_key_is_refused_next(n: &TestNode) {
    let alice = n.register("alice", "human", 1).await;
    let other = add_key_and_login(n, &alice, "k_sign_alice_2", 2).await;
    // Warm both caches with what is about to be revoked.
    n.get("/v1/identity/me", &alice.token).await.expect(200);
    challenge(n, &alice.address, &alice.key_id)
        .await
        .expect(200);
    let store = &n.node.service().store;
    assert!(
        store.cache.tokens.get(&token_hash(&alice.token)).is_some(),
        "the access token is served from the cache"
    );
    assert!(
        store
            .cache
            .identities
            .get(&alice.address)
            .and_then(|k| k.key(&alice.key_id))
            .is_some(),
        "alice's key is served from the cache"
    );
    n.call(
        "DELETE",
        &format!("/v1/identity/me/keys/{}", alice.key_id),
        Some(&other),
        None,
    )
    .await
    .expect(200);
    // The very next requests: the token the key backs, and the key itself.
    let r = n
        .get("/v1/identity/me", &alice.token)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    assert_eq!(
        r.body["error"]["details"]["reason"], "the access token was revoked",
        "{}",
        r.body
    );
    challenge(n, &alice.address, &alice.key_id)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let bob = n.register("bob", "human", 3).await;
    let e = alice.message(n, &n.thread_id(), None, &[&bob], "after revocation");
    n.call("POST", "/v1/envelopes", Some(&other), Some(alice.sign(e)))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    // The other key and its token are untouched.
    n.get("/v1/identity/me", &other).await.expect(200);
}

#[tokio::test]
async fn a_revoked_key_and_its_tokens_are_refused_on_the_next_request() {
    revoked_key_is_refused_next(&TestNode::new()).await;
}

#[tokio::test]
async fn a_revoked_key_is_refused_next_with_a_durable_store() {
    let dir = TempDir::new("revoke");
    revoked_key_is_refused_next(&durable(&dir)).await;
}

#[tokio::test]
async fn a_new_key_is_usable_on_the_next_request() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    challenge(&n, &alice.address, &alice.key_id)
        .await
        .expect(200);
    challenge(&n, &alice.address, "k_sign_alice_2")
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let token = add_key_and_login(&n, &alice, "k_sign_alice_2", 2).await;
    n.get("/v1/identity/me", &token).await.expect(200);
}

#[tokio::test]
async fn an_identity_update_drops_exactly_its_own_entry() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    for who in [&alice, &bob] {
        challenge(&n, &who.address, &who.key_id).await.expect(200);
        n.get("/v1/identity/me", &who.token).await.expect(200);
    }
    let cache = &n.node.service().store.cache;
    assert!(cache.identities.get(&alice.address).is_some());
    assert!(cache.identities.get(&bob.address).is_some());
    let tokens_before = cache.tokens.len();
    n.call(
        "PATCH",
        "/v1/identity/me",
        Some(&alice.token),
        Some(json!({"display_name": "Alice A."})),
    )
    .await
    .expect(200);
    assert!(
        cache.identities.get(&alice.address).is_none(),
        "the updated identity is read again"
    );
    assert!(
        cache.identities.get(&bob.address).is_some(),
        "another identity's entry stays"
    );
    assert_eq!(cache.tokens.len(), tokens_before, "no token changed");
    challenge(&n, &alice.address, &alice.key_id)
        .await
        .expect(200);
    assert!(cache.identities.get(&alice.address).is_some());
}

#[tokio::test]
async fn a_rotated_refresh_token_is_refused_on_the_next_request() {
    // Under `token-kind-unchecked` a refresh token authenticates API calls, so it goes
    // through the token cache like an access token; rotation must still end it at once.
    let n = TestNode::with_quirks(Quirks::none().with(Quirk::TokenKindUnchecked), |_| {});
    let alice = n.register("alice", "human", 1).await;
    n.get("/v1/identity/me", &alice.refresh).await.expect(200);
    assert!(
        n.node
            .service()
            .store
            .cache
            .tokens
            .get(&token_hash(&alice.refresh))
            .is_some()
    );
    n.call(
        "POST",
        "/v1/auth/refresh",
        None,
        Some(json!({"refresh_token": alice.refresh})),
    )
    .await
    .expect(200);
    n.get("/v1/identity/me", &alice.refresh)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    n.call(
        "POST",
        "/v1/auth/refresh",
        None,
        Some(json!({"refresh_token": alice.refresh})),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn a_re_registration_replaces_the_cached_keys() {
    // Under `allow-duplicate-registration` a second registration replaces the identity with
    // a new key under the same key id: a stale cache would still verify the old key.
    let n = TestNode::with_quirks(
        Quirks::none().with(Quirk::AllowDuplicateRegistration),
        |_| {},
    );
    let alice = n.register("alice", "human", 1).await;
    challenge(&n, &alice.address, &alice.key_id)
        .await
        .expect(200);
    n.post_registration("alice", "human", 2, json!({}))
        .await
        .expect(201);
    let ch = challenge(&n, &alice.address, &alice.key_id)
        .await
        .expect(200);
    let old_sig = sign_b64url(
        &alice.key,
        None,
        ch.body["nonce"].as_str().unwrap().as_bytes(),
    );
    n.call(
        "POST",
        "/v1/auth/token",
        None,
        Some(json!({"identity": alice.address, "key_id": alice.key_id, "challenge_id": ch.body["challenge_id"], "signature": old_sig})),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
    let new_key = signing_key_from_seed(&[2; 32]);
    n.login(&alice.address, &new_key, &alice.key_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_wins_over_concurrent_cache_fills() {
    let dir = TempDir::new("race");
    let n = std::sync::Arc::new(durable(&dir));
    let alice = n.register("alice", "human", 1).await;
    let keeper = alice.token.clone();
    for round in 0..12u8 {
        let key_id = format!("k_sign_alice_r{round}");
        let victim = add_key_and_login(&n, &alice, &key_id, 10 + round).await;
        // Readers fill the cache with the victim token while it is being revoked.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (n, t, stop) = (n.clone(), victim.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = n.get("/v1/identity/me", &t).await;
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        n.get("/v1/identity/me", &victim).await.expect(200);
        n.call(
            "DELETE",
            &format!("/v1/identity/me/keys/{key_id}"),
            Some(&keeper),
            None,
        )
        .await
        .expect(200);
        n.get("/v1/identity/me", &victim)
            .await
            .expect_error(401, "SIGNATURE_INVALID");
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for r in readers {
            r.await.unwrap();
        }
        n.get("/v1/identity/me", &victim)
            .await
            .expect_error(401, "SIGNATURE_INVALID");
        n.get("/v1/identity/me", &keeper).await.expect(200);
    }
}

#[test]
fn a_read_that_raced_a_revocation_is_not_cached() {
    // The interleaving `Store::token` guards against, step by step on a real store: a reader
    // takes the generation and reads the row before a revocation commits, and only then
    // tries to fill the cache.
    use loom_node::store::{Store, tokens};
    use loom_protocol::Timestamp;
    use loom_protocol::session::TokenKind;
    let store = Store::open(&Storage::Memory).unwrap();
    let tx = store.begin().unwrap();
    for (token, key_id) in [("at_race", "k_sign_alice_1"), ("at_kept", "k_sign_alice_2")] {
        tokens::insert(
            &tx,
            &tokens::NewToken {
                token,
                kind: TokenKind::Access,
                identity: "loom://alice@node.test",
                key_id,
                expires_at: Timestamp::parse("2099-01-01T00:00:00Z").unwrap(),
                family: token,
            },
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let hash = token_hash("at_race");
    let generation = store.cache.tokens.generation();
    let before = tokens::get(&store.read(), "at_race").unwrap().unwrap();
    assert!(!before.revoked);
    let tx = store.begin().unwrap();
    tokens::revoke(&tx, "at_race").unwrap();
    tx.commit().unwrap();
    store.cache.tokens.fill(generation, &hash, before);
    assert!(store.token("at_race").unwrap().unwrap().revoked);
    // A revocation rolled back changes nothing, in the store or the cache.
    assert!(!store.token("at_kept").unwrap().unwrap().revoked);
    let tx = store.begin().unwrap();
    tokens::revoke_for_key(&tx, "loom://alice@node.test", "k_sign_alice_2").unwrap();
    drop(tx);
    assert!(store.cache.tokens.get(&token_hash("at_kept")).is_some());
    assert!(!store.token("at_kept").unwrap().unwrap().revoked);
}

#[tokio::test]
async fn the_cached_directory_answers_as_the_store_and_sees_revocations() {
    // `CachedDirectory` is admission's identity directory through the cache: the same
    // answers as `StoreResolver` over a read connection, and a revoked key gone at once.
    use loom_node::store::resolvers::{CachedDirectory, StoreResolver};
    use loom_protocol::Address;
    use loom_protocol::accept::Directory;
    use loom_protocol::delegation::DelegationResolver;
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let other = add_key_and_login(&n, &alice, "k_sign_alice_2", 2).await;
    let store = &n.node.service().store;
    let addr = Address::parse(&alice.address).unwrap();
    let nobody = Address::parse("loom://nobody@node.test").unwrap();
    let cached = CachedDirectory(store);
    let compare = |key_id: &str| {
        let conn = store.read();
        let direct = StoreResolver {
            conn: &conn,
            thread: None,
        };
        let want = (
            direct.registered_type(&addr),
            direct.active_signing_key(&addr, key_id),
            DelegationResolver::signing_keys(&direct, &addr),
            direct.registered_type(&nobody),
        );
        drop(conn);
        let got = (
            cached.registered_type(&addr),
            cached.active_signing_key(&addr, key_id),
            DelegationResolver::signing_keys(&cached, &addr),
            cached.registered_type(&nobody),
        );
        assert_eq!(got, want, "{key_id}");
        got
    };
    let before = compare(&alice.key_id);
    assert_eq!(before.0.as_deref(), Some("human"));
    assert!(before.1.is_some());
    assert_eq!(before.2.map(|k| k.len()), Some(2));
    assert!(store.cache.identities.get(&alice.address).is_some());
    n.call(
        "DELETE",
        &format!("/v1/identity/me/keys/{}", alice.key_id),
        Some(&other),
        None,
    )
    .await
    .expect(200);
    let after = compare(&alice.key_id);
    assert!(
        after.1.is_none(),
        "the revoked key is gone on the next lookup"
    );
    assert_eq!(after.2.map(|k| k.len()), Some(1));
    assert!(compare("k_sign_alice_2").1.is_some());
}
