//! Two-person approval on a team store (ADR 0033), with a real PostgreSQL and two homes: a change to
//! a host tagged `@prod` is approved by its requester, then waits until another operator reviews
//! exactly what was planned; the requester cannot approve their own request; a rejection stops the
//! change; every review is in the audit log.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::postgres::Postgres;
use crate::support::{TestEnv, text};

/// A home on the team store as `operator`, with `@prod` needing a second person.
fn operator(url: &str, name: &str) -> TestEnv {
    let env = TestEnv::new();
    let config = format!(
        "store:\n  url: {url}\noperator:\n  name: {name}\npolicy:\n  two_person_approval_for: ['@prod']\n  two_person_expiry_minutes: 5\n"
    );
    std::fs::write(env.merlya_home().join("config.yaml"), config).unwrap();
    env
}

/// A server with a `team` database, Alice's and Bob's homes on it, and localhost tagged `@prod`.
fn team_with_prod_localhost() -> (Postgres, TestEnv, TestEnv) {
    let pg = Postgres::start();
    pg.value("CREATE DATABASE team");
    let url = format!("postgres://postgres@127.0.0.1:{}/team", pg.port);
    let (alice, bob) = (operator(&url, "alice"), operator(&url, "bob"));
    ok(&alice, &["hosts", "tag", "localhost", "prod"]);
    (pg, alice, bob)
}

fn ok(env: &TestEnv, args: &[&str]) -> String {
    let out = env.merlya(args).output().expect("run merlya");
    assert!(out.status.success(), "merlya {args:?}: {}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

/// `merlya exec --yes` of a change on localhost, in the background (it waits for its reviewer).
fn change(env: &TestEnv, file: &std::path::Path) -> Child {
    let command = format!("touch {}", file.display());
    env.merlya(&["exec", "localhost", "--yes", "--", &command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run merlya")
}

/// The id of the one pending request, once it is stored.
fn pending_id(env: &TestEnv) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = ok(env, &["approvals", "pending", "--format", "json"]);
        let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
        if let Some(first) = listed.first() {
            assert_eq!(listed.len(), 1, "{listed:?}");
            return first["id"].to_string();
        }
        assert!(Instant::now() < deadline, "no change request was stored");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_prod_change_waits_for_a_second_person_who_is_not_its_requester() {
    let (pg, alice, bob) = team_with_prod_localhost();
    let work = tempfile::tempdir().unwrap();

    // Approved by a second person: it runs, and the audit says who approved.
    let first = work.path().join("first");
    let waiting = change(&alice, &first);
    let id = pending_id(&bob);
    let shown = bob.merlya(&["approvals", "review", &id, "--approve"]).output().unwrap();
    // Not yet: the requester's own review is refused first (checked below); Bob reviews.
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let review_text = text(&shown.stderr);
    assert!(review_text.contains("from alice") && review_text.contains(&format!("touch {}", first.display())));
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("change request #{id} waits for a second person (@prod)")));
    assert!(first.exists(), "the approved change ran");

    // The requester cannot approve their own request; a rejection by another stops the change.
    let second = work.path().join("second");
    let waiting = change(&alice, &second);
    let id = pending_id(&alice);
    let own = alice.merlya(&["approvals", "review", &id, "--approve"]).output().unwrap();
    assert!(!own.status.success(), "self-approval must be refused");
    assert!(text(&own.stderr).contains("another operator must review it"), "{}", text(&own.stderr));
    ok(&bob, &["approvals", "review", &id, "--reject", "--note", "not during the freeze"]);
    let out = waiting.wait_with_output().unwrap();
    assert!(!out.status.success(), "a rejected change fails");
    assert!(!second.exists(), "the rejected change never ran");

    // Every review is an audit entry, and the chain verifies from either home.
    let reviews = pg_value(
        &pg,
        "SELECT string_agg(outcome || ':' || requested_by, ',' ORDER BY id) FROM audit_log WHERE event = 'review'",
    );
    assert_eq!(reviews, "ok:bob,denied:bob");
    let approved = pg_value(
        &pg,
        "SELECT count(*) FROM audit_log WHERE approved_by LIKE 'alice [%] and bob (two-person, request #%'",
    );
    assert_ne!(approved, "0", "the run's entries name both people");
    ok(&alice, &["audit", "verify"]);
    ok(&bob, &["audit", "verify"]);
}

fn pg_value(pg: &Postgres, sql: &str) -> String {
    pg.value_on("team", sql)
}

#[test]
fn a_teammates_console_is_told_shows_the_same_change_in_its_approval_modal_and_approves_it() {
    let (pg, alice, bob) = team_with_prod_localhost();
    let console = crate::support::tmux::Tmux::start("two-person-bob", &bob, 150, 40);
    console.wait_for("localhost");
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("approved-in-a-console");
    let waiting = change(&alice, &marker);
    let id = pending_id(&bob);

    // Told (a notification) and listed in the Pipeline pane, with the way to review it.
    console.wait_for(&format!("Change request #{id} from alice waits for a second person (@prod)"));
    console.command(":pipeline");
    console.wait_for(&format!(":review {id}"));
    // The approval modal shows exactly what Alice approved.
    console.command(&format!(":review {id}"));
    let screen = console.wait_for("once   [a] always");
    assert!(screen.contains(&format!("change request #{id} from alice")), "{screen}");
    assert!(screen.contains(&format!("touch {}", marker.display())), "{screen}");
    assert!(!marker.exists(), "nothing ran before the second person approved");
    console.keys(&["o"]);
    console.wait_for(&format!("Change request #{id} approved"));
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(marker.exists(), "the change ran once a second person approved it in a console");
    let reviews = pg.value_on("team", "SELECT outcome || ':' || requested_by FROM audit_log WHERE event = 'review'");
    assert_eq!(reviews, "ok:bob");
}

#[test]
fn a_second_name_on_the_same_key_or_a_row_written_in_the_database_approves_nothing() {
    let (pg, alice, bob) = team_with_prod_localhost();
    let work = tempfile::tempdir().unwrap();

    // Alice, under a second name with her own key: the review is stored, but her waiting merlya
    // sees her own key behind it and does not believe it.
    let first = work.path().join("first");
    let waiting = change(&alice, &first);
    let id = pending_id(&bob);
    let forged = alice
        .merlya(&["approvals", "review", &id, "--approve"])
        .env("MERLYA_OPERATOR_NAME", "alice-second")
        .output()
        .unwrap();
    assert!(forged.status.success(), "{}", text(&forged.stderr));
    let out = waiting.wait_with_output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("is not believed: the requester's own key"), "{said}");

    // A row written with the database's password, naming Bob: no signature of his, nothing runs.
    let second = work.path().join("second");
    let waiting = change(&alice, &second);
    let id = pending_id(&bob);
    let rigged = pg.psql_on(
        "team",
        &format!("UPDATE change_requests SET status = 'approved', reviewed_by = 'bob', review_signature = repeat('0', 128) WHERE id = {id}"),
    );
    assert!(rigged.status.success(), "{}", text(&rigged.stderr));
    let out = waiting.wait_with_output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("is not believed: the signature does not match"), "{said}");
    assert!(!first.exists() && !second.exists(), "nothing ran");
}
