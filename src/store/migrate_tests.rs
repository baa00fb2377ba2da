//! The migration's pure parts here; the copy itself on a real PostgreSQL (tests/integration/store_migrate.rs
//! and the test below, which runs when `MERLYA_TEST_STORE=postgres`).

use super::*;

#[test]
fn tables_are_copied_after_the_tables_they_reference() {
    let tables = ["host_tags", "hosts", "session_messages", "conversations", "audit_log"].map(String::from).to_vec();
    let edges = [("host_tags", "hosts"), ("session_messages", "conversations"), ("hosts", "hosts")]
        .map(|(a, b)| (a.to_string(), b.to_string()));
    let order = parents_first(tables, &edges);
    let at = |t: &str| order.iter().position(|o| o == t).unwrap();
    assert!(at("hosts") < at("host_tags") && at("conversations") < at("session_messages"), "{order:?}");
    assert_eq!(order.len(), 5);
    // A cycle does not lose a table.
    let cycle = [("a", "b"), ("b", "a")].map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(parents_first(vec!["a".into(), "b".into()], &cycle).len(), 2);
}

#[test]
fn values_take_the_target_columns_type_or_name_why_not() {
    assert_eq!(convert(&Val::Int(3), &Kind::Int), Ok(Arg::Int(Some(3))));
    assert_eq!(convert(&Val::Bool(true), &Kind::Int), Ok(Arg::Int(Some(1))));
    assert_eq!(convert(&Val::Null, &Kind::Text), Ok(Arg::Text(None)));
    assert_eq!(convert(&Val::Int(7), &Kind::Text), Ok(Arg::Text(Some("7".into()))));
    assert_eq!(convert(&Val::Int(2), &Kind::Real), Ok(Arg::Real(Some(2.0))));
    assert_eq!(convert(&Val::Text("12".into()), &Kind::Int), Ok(Arg::Int(Some(12))));
    assert!(convert(&Val::Text("twelve".into()), &Kind::Int).is_err());
    assert!(convert(&Val::Real(1.5), &Kind::Int).is_err());
    assert!(convert(&Val::Int(1), &Kind::Other("jsonb".into())).unwrap_err().contains("jsonb"));
    assert_eq!(ident("user"), "\"user\"");
    assert_eq!(ident("a\"b"), "\"a\"\"b\"");
}
