//! merlya's read-only proof of SQL (`psql -c`) against a real PostgreSQL server: every statement
//! it proves runs on the server as one statement inside a read-only transaction, and every attack
//! it refuses is shown to do harm on that server (so the refusal is not of a harmless text).

use merlya::safety::sql::{Dialect, read_only_statement};

use crate::support::postgres::Postgres;

/// Attacks on the reading of a statement; each harms the canary table on a real server.
const ATTACKS: &[&str] = &[
    "select 1; drop table canary",
    "select 'a\\'; drop table canary; --'",
    "select E'\\''; drop table canary; --'",
    "select 1 /* x */; drop table canary",
    "select 1 -- x\n; drop table canary",
    "select $$x$$; drop table canary",
    "with d as (delete from canary returning *) select * from d",
    "select * into canary_copy from canary",
    "select x from canary; truncate canary",
];

fn canary_intact(pg: &Postgres) -> bool {
    pg.value("select count(*) from pg_tables where tablename in ('canary', 'canary_copy')") == "1"
        && pg.value("select count(*) from canary") == "1"
}

fn reset_canary(pg: &Postgres) {
    pg.value("drop table if exists canary; drop table if exists canary_copy; create table canary (x int); insert into canary values (1); select 1");
}

#[test]
fn proved_statements_read_only_and_refused_attacks_harm_a_real_postgres() {
    let pg = Postgres::start();
    reset_canary(&pg);
    let proved: Vec<String> = merlya::safety::sql::incident_corpus()
        .into_iter()
        .filter(|(d, _)| *d == Dialect::Postgres)
        .map(|(_, q)| q)
        .chain(["select x from canary".to_string(), "select count(*) filter (where x > 0) from canary".to_string()])
        .collect();
    for sql in &proved {
        assert_eq!(read_only_statement(Dialect::Postgres, sql), Ok(()), "merlya should prove: {sql}");
        // The server reads it as statements that succeed in a read-only transaction.
        let out = pg.psql(sql, &[("PGOPTIONS", "-c default_transaction_read_only=on")]);
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(canary_intact(&pg), "{sql} changed the canary");
    }
    // A quoted name is a call on the server (what a red team used to reach pg_read_file and
    // lo_export): merlya refuses it, whatever the function.
    assert_eq!(pg.value("select \"upper\"('a')"), "A");
    assert!(read_only_statement(Dialect::Postgres, "select \"upper\"('a')").is_err());
    for sql in ATTACKS {
        let refused = read_only_statement(Dialect::Postgres, sql);
        assert!(refused.is_err(), "merlya proved an attack: {sql}");
        // Run on the server, the attack does harm: the refusal is of something real.
        pg.psql(sql, &[]);
        assert!(!canary_intact(&pg), "the attack {sql:?} did nothing on the server; it tests nothing");
        reset_canary(&pg);
    }
}

#[test]
fn psql_runs_as_rendered_with_no_psqlrc_and_refuses_another_server() {
    let env = crate::support::TestEnv::new();
    let allowed = env.run(&["policy", "check", "--", "sudo -u postgres psql -Atc 'select pg_is_in_recovery()'"]);
    let text = String::from_utf8_lossy(&allowed.stdout).to_string();
    assert!(allowed.status.success(), "{text}");
    assert!(text.contains("runs as: sudo -u postgres psql -X -Atc"), "{text}");
    for refused in [
        "psql -h db.example -c 'select 1'",
        "psql 'host=db.example' -c 'select 1'",
        "psql -c 'select pg_terminate_backend(1)'",
        "psql -c 'select 1' -o /tmp/out",
        "mysql -h db.example -e 'show processlist'",
        "mysql -e 'select load_file(\"/etc/shadow\")'",
    ] {
        let out = env.run(&["policy", "check", "--", refused]);
        assert!(!out.status.success(), "{refused}: {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Statements that read credential catalogs: merlya refuses them (their answer would reach the
/// model), and on a real server each does return the password hash (so the refusal is of a real
/// secret), while `pg_roles` masks it.
#[test]
fn credential_catalogs_are_refused_and_hold_the_secret_on_a_real_postgres() {
    let pg = Postgres::start();
    pg.value(
        "drop role if exists merlya_secret_role; create role merlya_secret_role login password 'canary-pw'; select 1",
    );
    for sql in [
        "select rolpassword from pg_authid where rolname = 'merlya_secret_role'",
        "select passwd from pg_shadow where usename = 'merlya_secret_role'",
        "select a.rolpassword from pg_catalog.pg_authid as a where a.rolname = 'merlya_secret_role'",
        "select \"rolpassword\" from \"pg_authid\" where rolname = 'merlya_secret_role'",
        "select x.* from (select rolname, rolpassword from pg_authid) x where x.rolname = 'merlya_secret_role'",
    ] {
        assert!(read_only_statement(Dialect::Postgres, sql).is_err(), "merlya proved a credential read: {sql}");
        let value = pg.value(sql);
        assert!(value.contains("SCRAM-SHA-256$") || value.contains("md5"), "{sql} returned no hash: {value}");
    }
    assert_eq!(pg.value("select rolpassword from pg_roles where rolname = 'merlya_secret_role'"), "********");
}
