//! The store's API as one walk, on the backend `MERLYA_TEST_STORE` names (scripts/test.sh runs it on
//! SQLite and on a real PostgreSQL): every repository written and read back, and concurrent
//! appenders on one audit chain.

use super::audit::AuditOutcome;
use super::audit::tests::request;
use super::conversations::ModelUsage;
use super::history::CommandRecord;
use super::pipelines::{Kind, PipelineRun, PipelineStatus};
use super::test_backend::store_in;
use crate::inventory::Host;

#[tokio::test]
async fn hosts_tags_and_the_inventory_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    let before = store.inventory_version().await.unwrap();
    let mut web = Host::new("web-b", "10.0.0.2");
    web.add_tag("web");
    let mut db = Host::new("db-a", "10.0.0.3");
    db.port = 2222;
    db.username = Some("ops".into());
    assert_eq!(store.upsert_hosts(&[web.clone(), db.clone()]).await.unwrap(), (2, 0));
    assert!(store.inventory_version().await.unwrap() > before);
    let names: Vec<String> = store.list_hosts().await.unwrap().into_iter().map(|h| h.name).collect();
    assert_eq!(names, ["localhost", "db-a", "web-b"], "localhost first, then bytewise by name");
    assert_eq!(store.list_hosts_streamed().await.unwrap().len(), 3);
    let got = store.get_host("db-a").await.unwrap();
    assert_eq!((got.port, got.username.as_deref()), (2222, Some("ops")));
    store.set_tag("db-a", "prod", true).await.unwrap();
    store.set_tag("db-a", "prod", true).await.unwrap();
    store.set_tag("db-a", "db", true).await.unwrap();
    assert_eq!(store.get_host("db-a").await.unwrap().tags, ["db", "prod"]);
    let tagged = store.hosts_matching(&["web-b".into()], &["prod".into()]).await.unwrap();
    assert_eq!(tagged.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["db-a", "web-b"]);
    store.set_reachable("web-b", true).await.unwrap();
    assert_eq!(store.get_host("web-b").await.unwrap().reachable, Some(true));
    let mut renamed = store.get_host("web-b").await.unwrap();
    renamed.name = "web-c".into();
    store.replace_host("web-b", &renamed).await.unwrap();
    assert!(store.get_host("web-b").await.is_err());
    assert_eq!(store.get_host("web-c").await.unwrap().tags, ["web"]);
    store.remove_host("web-c").await.unwrap();
    assert!(store.remove_host("web-c").await.is_err());
    assert!(store.remove_host("localhost").await.is_err());
}

#[tokio::test]
async fn approval_rules_history_errors_capabilities_and_secret_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    store.add_rule("systemctl restart nginx", &["web01".into()], "alice").await.unwrap();
    store.add_rule("systemctl restart nginx", &["web01".into()], "alice").await.unwrap();
    let rules = store.list_rules().await.unwrap();
    assert_eq!(rules.len(), 1, "a rule is kept once");
    assert!(store.revoke_rule(rules[0].id).await.unwrap());
    assert!(!store.revoke_rule(rules[0].id).await.unwrap());

    let record = CommandRecord {
        session_id: "s1",
        host: "web01",
        command: "uptime",
        exit_code: Some(0),
        duration_ms: 12,
        error: None,
        stdout: "up 3 days",
        stderr: "",
    };
    store.record_command(&record, 7).await.unwrap();
    assert_eq!(store.command_count("web01").await.unwrap(), 1);
    let stats = store.command_stats().await.unwrap();
    assert_eq!(stats.pipeline_runs, 0);
    let (commands, _) = store.history_totals().await.unwrap();
    assert_eq!(commands, [("ok".to_string(), 1)]);

    store.set_host_error("web01", Some(("unreachable", "no route"))).await.unwrap();
    assert_eq!(store.host_errors().await.unwrap().len(), 1);
    store.set_host_error("web01", None).await.unwrap();
    assert!(store.host_errors().await.unwrap().is_empty());

    store.set_capabilities("web01", &["kubectl".into()], Some("prod"), Some(true)).await.unwrap();
    let caps = store.capabilities("web01").await.unwrap().unwrap();
    assert_eq!((caps.tools, caps.kube_context.as_deref()), (vec!["kubectl".to_string()], Some("prod")));

    store.index_secret("db:web01:password", "memory").await.unwrap();
    assert_eq!(store.secret_names().await.unwrap().len(), 1);
    store.unindex_secret("db:web01:password").await.unwrap();
    assert!(store.secret_names().await.unwrap().is_empty());

    store.add_skill_run("s1", "triage", "1", 3, &serde_json::json!([{"host": "web01"}])).await.unwrap();
    assert_eq!(store.skill_runs(None, Some("s1")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn conversations_their_messages_and_usage() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    let first = store.create_conversation("why is web01 slow?").await.unwrap();
    let second = store.create_conversation("disk full on db").await.unwrap();
    assert_eq!((first.as_str(), second.as_str()), ("c1", "c2"));
    store.add_message(&first, "s1", "user", "why is web01 slow?").await.unwrap();
    store.add_message(&first, "s1", "assistant", "load is 12").await.unwrap();
    let usage = ModelUsage { model: "m".into(), calls: 2, input_tokens: 100, output_tokens: 20, cost_usd: 0.5 };
    store.add_usage(&first, &usage).await.unwrap();
    store.add_usage(&first, &usage).await.unwrap();
    let listed = store.list_conversations(10).await.unwrap();
    let one = listed.iter().find(|c| c.id == first).unwrap();
    assert_eq!((one.messages, one.tokens), (2, 240));
    assert!((one.cost_usd - 1.0).abs() < 1e-9);
    assert_eq!(store.model_totals().await.unwrap(), [("m".to_string(), 4, 200, 40, 1.0)]);
    assert_eq!(store.conversation_messages(&first).await.unwrap().unwrap().len(), 2);
    store.set_conversation_summary(&first, "load", 2).await.unwrap();
    assert_eq!(store.conversation_summary(&first).await.unwrap(), Some(("load".to_string(), 2)));
    assert!(store.rename_conversation(&second, "disk").await.unwrap());
    assert!(store.latest_conversation().await.unwrap().is_some());
    assert!(store.delete_conversation(&first).await.unwrap());
    assert_eq!(store.create_conversation("again").await.unwrap(), "c3");
    assert_eq!(store.list_conversations(10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn pipeline_runs_are_saved_found_and_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    let mut a = PipelineRun::new(
        Kind::Terraform,
        "/srv/infra",
        serde_json::json!({"kind": "terraform", "dir": "/srv/infra"}),
        "alice",
    );
    a.id = "20261127-a".into();
    a.status = PipelineStatus::Succeeded;
    store.save_pipeline_run(&a).await.unwrap();
    let mut b = PipelineRun::new(Kind::Bash, "web01", serde_json::json!({"kind": "bash"}), "bob");
    b.id = "20261127-b".into();
    b.status = PipelineStatus::Applying;
    b.owner_pid = u32::MAX - 1;
    store.save_pipeline_run(&b).await.unwrap();
    let ids: Vec<String> = store.list_pipeline_runs().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["20261127-b", "20261127-a"], "newest first");
    assert_eq!(store.find_pipeline_run("20261127-a").await.unwrap().unwrap().requested_by, "alice");
    assert!(store.find_pipeline_run("20261127").await.unwrap().is_none(), "ambiguous");
    assert_eq!(store.succeeded_runs_in_folder(Kind::Terraform, "/srv/infra").await.unwrap().len(), 1);
    let marked = store.mark_interrupted_pipelines(|_| false).await.unwrap();
    assert_eq!(marked.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["20261127-b"]);
    let stats = store.command_stats().await.unwrap();
    assert_eq!(stats.pipeline_runs, 2);
}

#[tokio::test]
async fn the_audit_chain_appends_verifies_and_refuses_edits() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    for i in 0..3 {
        let ticket = store.audit_start(request("web01", &format!("echo {i}"))).await.unwrap();
        ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    }
    store.audit_refused(&request("web01", "rm -rf /"), AuditOutcome::Refused, "blocked").await.unwrap();
    let report = store.verify_audit().await.unwrap();
    assert!(report.broken.is_none(), "{report:?}");
    assert_eq!(report.entries, 7);
    let records = store.list_audit(&Default::default()).await.unwrap();
    assert_eq!(records.len(), 4);
    assert!(super::db::query("UPDATE audit_log SET command = 'x'").execute(store.pool()).await.is_err());
    assert!(super::db::query("DELETE FROM audit_log").execute(store.pool()).await.is_err());
}

/// Eight writers, each with a connection pool of its own, append at once: one chain, no fork, no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appenders_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let first = store_in(dir.path()).await;
    first.audit_refused(&request("web01", "seed"), AuditOutcome::Refused, "seed").await.unwrap();
    let location = first.location().to_string();
    let mut writers = Vec::new();
    for w in 0..8 {
        let store = match first.backend() {
            super::Backend::Sqlite => super::Store::open(&dir.path().join("merlya.db")).await.unwrap(),
            super::Backend::Postgres => {
                let url = location.clone();
                super::Store::open_postgres(&dir.path().join("merlya.db"), &url, None).await.unwrap()
            }
        };
        writers.push(tokio::spawn(async move {
            for i in 0..40 {
                store.audit_refused(&request("web01", &format!("w{w} {i}")), AuditOutcome::Refused, "t").await.unwrap();
            }
            store.settle_audit().await;
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let report = first.verify_audit().await.unwrap();
    assert!(report.broken.is_none(), "{report:?}");
    assert_eq!(report.entries, 1 + 8 * 40);
    let ids: Vec<i64> = first.audit_entries().await.unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=321).collect::<Vec<i64>>(), "no gap");
}

/// The store's pool runs no maintenance task (see `db::without_reaper`): no idle timeout, no
/// lifetime, no minimum to keep — on either backend.
#[tokio::test]
async fn the_pool_has_no_reaper_to_spin() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    let (idle, lifetime, min) = match store.pool() {
        super::db::Pool::Sqlite(p) => {
            (p.options().get_idle_timeout(), p.options().get_max_lifetime(), p.options().get_min_connections())
        }
        super::db::Pool::Postgres(p) => {
            (p.options().get_idle_timeout(), p.options().get_max_lifetime(), p.options().get_min_connections())
        }
    };
    assert_eq!((idle, lifetime, min), (None, None, 0));
}
