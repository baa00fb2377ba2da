//! A read-only proof for the one SQL statement an operator passes to `psql -c`
//! or `mysql -e` during an incident (`select * from pg_stat_activity`,
//! `SHOW PROCESSLIST`, the replication lag).
//!
//! SQL is a language the server runs, so this is a proof from a grammar, not a
//! search for bad words: one statement that starts with SELECT or SHOW, made
//! of tokens this module reads exactly as both servers do (no backslash, no
//! comment, no dollar quote, no string prefix, ASCII outside quotes), in which
//! every function called is on a list of functions that only read, and no
//! keyword that writes or locks appears (`INTO`, `FOR UPDATE`, a data-changing
//! `WITH`). Anything else is refused with the reason. What a view or an
//! operator defined on the server does is the server's own configuration, as
//! with any program merlya lets read.

/// The server a statement is for: their quoting differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL (`psql -c`): `"identifier"`, `::` casts.
    Postgres,
    /// MySQL and MariaDB (`mysql -e`): `` `identifier` ``, a closing `\G`.
    Mysql,
}

/// Functions that only compute or read: aggregates, arithmetic, text and time,
/// and the servers' status readers. Anything not here (pg_terminate_backend,
/// set_config, pg_read_file, lo_export, nextval, sleep, load_file, …) is refused.
const READ_FUNCTIONS: &[&str] = &[
    // aggregates and windows
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "group_concat",
    "bool_and",
    "bool_or",
    "row_number",
    "rank",
    "dense_rank",
    "lag",
    "lead",
    "percentile_cont",
    "percentile_disc",
    "stddev",
    "variance",
    // arithmetic, comparison, nulls
    "abs",
    "round",
    "floor",
    "ceil",
    "ceiling",
    "trunc",
    "truncate",
    "mod",
    "power",
    "sqrt",
    "greatest",
    "least",
    "coalesce",
    "nullif",
    "ifnull",
    "if",
    "isnull",
    // text
    "length",
    "char_length",
    "octet_length",
    "lower",
    "upper",
    "substring",
    "substr",
    "left",
    "right",
    "trim",
    "ltrim",
    "rtrim",
    "concat",
    "concat_ws",
    "replace",
    "split_part",
    "position",
    "strpos",
    "format",
    "lpad",
    "rpad",
    "quote_ident",
    "md5",
    // time
    "now",
    "current_timestamp",
    "current_date",
    "clock_timestamp",
    "statement_timestamp",
    "age",
    "extract",
    "date_part",
    "date_trunc",
    "to_char",
    "to_timestamp",
    "make_interval",
    "justify_interval",
    "unix_timestamp",
    "from_unixtime",
    "timestampdiff",
    "timediff",
    "sysdate",
    "utc_timestamp",
    "date_format",
    "sec_to_time",
    // casts and arrays
    "cast",
    "convert",
    "array_length",
    "cardinality",
    "unnest",
    "array_to_string",
    // who and where
    "version",
    "current_user",
    "session_user",
    "user",
    "database",
    "current_database",
    "current_schema",
    "inet_server_addr",
    "inet_server_port",
    "inet_client_addr",
    "connection_id",
    // PostgreSQL status readers
    "pg_is_in_recovery",
    "pg_last_xact_replay_timestamp",
    "pg_last_wal_receive_lsn",
    "pg_last_wal_replay_lsn",
    "pg_current_wal_lsn",
    "pg_current_wal_insert_lsn",
    "pg_wal_lsn_diff",
    "pg_is_wal_replay_paused",
    "pg_database_size",
    "pg_total_relation_size",
    "pg_relation_size",
    "pg_table_size",
    "pg_indexes_size",
    "pg_size_pretty",
    "pg_postmaster_start_time",
    "pg_conf_load_time",
    "pg_backend_pid",
    "pg_blocking_pids",
    "pg_get_userbyid",
    "pg_get_indexdef",
    "pg_get_viewdef",
    "pg_get_constraintdef",
    "pg_get_expr",
    "format_type",
    "pg_tablespace_size",
    "pg_column_size",
    "pg_stat_get_live_tuples",
    "pg_stat_get_dead_tuples",
    "current_setting",
    "txid_current_snapshot",
    "pg_jit_available",
    // MySQL status readers (sys schema)
    "format_bytes",
    "format_time",
    "format_pico_time",
    "format_path",
];

/// Keywords that read as `NAME (` without being a call.
const NOT_CALLS: &[&str] = &[
    "in",
    "exists",
    "any",
    "all",
    "some",
    "over",
    "filter",
    "using",
    "on",
    "as",
    "and",
    "or",
    "not",
    "from",
    "where",
    "select",
    "values",
    "within",
    "interval",
    "when",
    "then",
    "else",
    "case",
    "by",
    "join",
    "lateral",
    "is",
    "distinct",
    "having",
    "union",
    "except",
    "intersect",
    "like",
    "between",
    "array",
    "row",
];

/// Keywords that make a SELECT write, lock or run something.
const WRITING_KEYWORDS: &[(&str, &str)] = &[
    ("into", "writes its result (a table or a file)"),
    ("update", "locks or changes rows"),
    ("share", "locks rows"),
    ("lock", "locks"),
    ("insert", "changes rows"),
    ("delete", "changes rows"),
    ("merge", "changes rows"),
    ("call", "runs a procedure"),
    ("do", "runs code"),
    ("outfile", "writes a file"),
    ("dumpfile", "writes a file"),
    ("procedure", "runs a procedure"),
];

/// Catalogs whose rows are credentials, refused wherever named (any schema, any quoting, any
/// case): what a read prints reaches the model, so reading them needs an approval.
const CREDENTIAL_TABLES: &[(&str, &str)] = &[
    ("pg_authid", "holds the roles' password hashes"),
    ("pg_shadow", "holds the roles' password hashes"),
    ("pg_user_mapping", "holds the passwords foreign-data wrappers log in with"),
    ("pg_user_mappings", "holds the passwords foreign-data wrappers log in with"),
    ("pg_subscription", "holds logical replication's connection strings, passwords included"),
    ("pg_foreign_server", "holds foreign servers' options, the credentials of some wrappers"),
    ("slave_master_info", "holds the replication password in clear"),
    ("replica_master_info", "holds the replication password in clear"),
    ("global_priv", "holds MariaDB's password hashes"),
    ("password_history", "holds previous password hashes"),
];

/// MySQL credential tables whose names are also everyday words (an application's `user` table, a
/// column `user`): refused where they are a table (after FROM or JOIN, in a FROM list, or
/// qualified by a schema, since the current database is not known here).
const CREDENTIAL_TABLE_WORDS: &[(&str, &str)] = &[
    ("user", "(mysql.user) holds the accounts' password hashes"),
    ("servers", "(mysql.servers) holds FEDERATED servers' passwords"),
];

/// Parts of an identifier that mark credentials, in catalogs (`authentication_string`,
/// `rolpassword`, `subconninfo`, `umoptions`) and in applications (`password_hash`,
/// `api_tokens`, `oauth_access_tokens`, `client_secret`).
const CREDENTIAL_NAME_PARTS: &[&str] = &[
    "password",
    "passwd",
    "authentication_string",
    "secret",
    "token",
    "credential",
    "api_key",
    "apikey",
    "private_key",
    "conninfo",
    "umoptions",
    "srvoptions",
];

/// Why a statement reads credentials (password hashes, replication and foreign-server
/// passwords, application tokens), or `None`. Names are compared however spelled: lowercase,
/// without their quotes, each part of a qualified name.
fn credential_read(tokens: &[Token]) -> Option<String> {
    let name = |t: &Token| match &t.kind {
        Kind::Word(w) => Some(w.to_ascii_lowercase()),
        Kind::Quoted('"' | '`') => Some(t.text[1..t.text.len() - 1].to_ascii_lowercase()),
        _ => None,
    };
    let keyword = |i: usize| {
        tokens.get(i).and_then(|t| match &t.kind {
            Kind::Word(w) => Some(w.to_ascii_lowercase()),
            _ => None,
        })
    };
    if keyword(0).as_deref() == Some("show") {
        match (keyword(1).as_deref(), keyword(2).as_deref()) {
            (Some("create"), Some("user")) => return Some("`SHOW CREATE USER` prints the password hash".into()),
            (Some("grants"), _) => {
                return Some("`SHOW GRANTS` prints the password hash (MariaDB, MySQL before 5.7)".into());
            }
            _ => {}
        }
    }
    // Whether each parenthesis level is inside a FROM list.
    let mut in_from = vec![false];
    for (i, token) in tokens.iter().enumerate() {
        match &token.kind {
            Kind::Punct('(') => in_from.push(false),
            Kind::Punct(')') if in_from.len() > 1 => {
                in_from.pop();
            }
            Kind::Quoted('\'') if token.text.to_ascii_lowercase().contains("conninfo") => {
                return Some(format!("{} names a connection string, which can hold a password", token.text));
            }
            _ => {}
        }
        let Some(lower) = name(token) else { continue };
        if matches!(token.kind, Kind::Word(_))
            && let Some(top) = in_from.last_mut()
        {
            match lower.as_str() {
                "from" | "join" => *top = true,
                "where" | "group" | "order" | "limit" | "having" | "on" | "using" | "union" | "except"
                | "intersect" | "select" | "window" => *top = false,
                _ => {}
            }
        }
        if let Some((_, why)) = CREDENTIAL_TABLES.iter().find(|(t, _)| *t == lower) {
            return Some(format!("`{}` {why}", token.text));
        }
        if let Some(part) = CREDENTIAL_NAME_PARTS.iter().find(|p| lower.contains(*p)) {
            return Some(format!("`{}` names credentials ({part})", token.text));
        }
        let before = i.checked_sub(1).map(|b| &tokens[b].kind);
        let table = match before {
            Some(Kind::Punct('.')) => true,
            Some(Kind::Punct(',')) => in_from.last().copied().unwrap_or(false),
            Some(Kind::Word(w)) => matches!(w.to_ascii_lowercase().as_str(), "from" | "join"),
            _ => false,
        };
        if table && let Some((_, why)) = CREDENTIAL_TABLE_WORDS.iter().find(|(t, _)| *t == lower) {
            return Some(format!("the table `{}` {why}", token.text));
        }
    }
    None
}

/// Why a statement is refused, or `Ok` when it is proved to read only.
pub fn read_only_statement(dialect: Dialect, text: &str) -> Result<(), String> {
    let tokens = tokens(dialect, text)?;
    if let Some(why) = credential_read(&tokens) {
        return Err(format!("{why}: it would reach the model (approve it to run it)"));
    }
    let words: Vec<&Token> = tokens.iter().collect();
    let Some(first) = words.first() else { return Err("an empty statement".into()) };
    let starts = match &first.kind {
        Kind::Word(w) => w.to_ascii_lowercase(),
        _ => String::new(),
    };
    if starts != "select" && starts != "show" {
        return Err(format!("only SELECT and SHOW are proved read-only, not `{}`", first.text));
    }
    for (i, token) in words.iter().enumerate() {
        match &token.kind {
            Kind::Punct(';') => return Err("more than one statement".into()),
            Kind::Word(w) => {
                let lower = w.to_ascii_lowercase();
                if let Some((_, why)) = WRITING_KEYWORDS.iter().find(|(k, _)| *k == lower) {
                    return Err(format!("`{w}` {why}"));
                }
                let called = matches!(words.get(i + 1).map(|t| &t.kind), Some(Kind::Punct('(')));
                let qualified = matches!(words.get(i + 1).map(|t| &t.kind), Some(Kind::Punct('.')));
                if called && !NOT_CALLS.contains(&lower.as_str()) {
                    let schema =
                        (i >= 2 && matches!(words[i - 1].kind, Kind::Punct('.'))).then(|| match &words[i - 2].kind {
                            Kind::Word(s) => s.to_ascii_lowercase(),
                            _ => String::new(),
                        });
                    let schema_ok = match schema.as_deref() {
                        None => true,
                        Some(s) => matches!(s, "pg_catalog" | "sys"),
                    };
                    if !schema_ok || !READ_FUNCTIONS.contains(&lower.as_str()) {
                        return Err(format!("`{w}(…)` is not a function known to only read"));
                    }
                }
                // `WITH` could hold a data-changing statement (PostgreSQL); a
                // SELECT never needs it here.
                if lower == "with" && !qualified {
                    return Err("`WITH` can hold a statement that changes data".into());
                }
            }
            // `"pg_read_file"(…)`, `` `load_file`(…) ``: a quoted name is still a call.
            Kind::Quoted(q) if *q != '\'' && matches!(words.get(i + 1).map(|t| &t.kind), Some(Kind::Punct('('))) => {
                return Err(format!("{}(…) calls a function by a quoted name", token.text));
            }
            Kind::Quoted(_) | Kind::Punct(_) | Kind::Number => {}
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A keyword or a plain identifier.
    Word(String),
    /// A string literal or a quoted identifier.
    Quoted(char),
    Number,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
}

/// Splits `text` into tokens both servers read the same way; refuses the
/// rest (comments, backslashes, dollar quotes, string prefixes, variables).
fn tokens(dialect: Dialect, text: &str) -> Result<Vec<Token>, String> {
    let mut body = text.trim_end_matches([' ', '\t', '\n', '\r']);
    if dialect == Dialect::Mysql {
        // mysql's `\G`: the statement's end, shown vertically.
        body = body.strip_suffix("\\G").unwrap_or(body);
    }
    body = body.trim_end_matches([' ', '\t', '\n', '\r']);
    body = body.strip_suffix(';').unwrap_or(body);
    let chars: Vec<char> = body.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            '\n' | '\r' if dialect == Dialect::Postgres => i += 1,
            'a'..='z' | 'A'..='Z' | '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                if matches!(chars.get(i), Some('\'' | '"' | '`' | '$')) {
                    return Err(format!(
                        "`{}` right before a quote or `$` (a string prefix or a variable) is not read here",
                        chars[start..=i].iter().collect::<String>()
                    ));
                }
                let word: String = chars[start..i].iter().collect();
                out.push(Token { kind: Kind::Word(word.clone()), text: word });
            }
            '0'..='9' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                let number: String = chars[start..i].iter().collect();
                if !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    return Err(format!("`{number}` is not a plain number"));
                }
                out.push(Token { kind: Kind::Number, text: number });
            }
            '\'' | '"' | '`' => {
                if c == '`' && dialect == Dialect::Postgres {
                    return Err("a backquote is not PostgreSQL".into());
                }
                let start = i;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(format!("a quote {c} that does not close")),
                        Some('\\') => return Err("a backslash in a quoted part (servers read it differently)".into()),
                        Some(q) if *q == c => {
                            // A doubled quote is one quote inside; refused: servers differ on it.
                            if chars.get(i + 1) == Some(&c) {
                                return Err(format!("a doubled quote {c}{c} inside a quoted part"));
                            }
                            i += 1;
                            break;
                        }
                        Some(ch)
                            if ch.is_control() && !(*ch == '\t' || (*ch == '\n' && dialect == Dialect::Postgres)) =>
                        {
                            return Err("a control character in a quoted part".into());
                        }
                        Some(_) => i += 1,
                    }
                }
                out.push(Token { kind: Kind::Quoted(c), text: chars[start..i].iter().collect() });
            }
            '-' if chars.get(i + 1) == Some(&'-') => return Err("a comment (`--`)".into()),
            '/' if chars.get(i + 1) == Some(&'*') => return Err("a comment (`/*`)".into()),
            '#' => return Err("`#` (a comment in MySQL)".into()),
            ':' if dialect == Dialect::Postgres && chars.get(i + 1) == Some(&':') => {
                out.push(Token { kind: Kind::Punct(':'), text: "::".into() });
                i += 2;
            }
            ':' => return Err("`:` (a variable or an assignment)".into()),
            '\n' | '\r' if dialect == Dialect::Mysql => {
                return Err("a new line (mysql reads its own commands at the start of a line)".into());
            }
            '(' | ')' | ',' | '.' | '*' | '=' | '<' | '>' | '+' | '-' | '/' | '%' | '|' | '!' | ';' | '[' | ']'
            | '~' | '&' | '^' | '@' | '?' => {
                out.push(Token { kind: Kind::Punct(c), text: c.to_string() });
                i += 1;
            }
            other => return Err(format!("`{}` is not read here", other.escape_debug())),
        }
    }
    Ok(out)
}

/// The everyday statements of `corpus/sql-read.txt`, each with its server.
pub fn incident_corpus() -> Vec<(Dialect, String)> {
    let mut dialect = Dialect::Postgres;
    let mut out = Vec::new();
    for line in include_str!("corpus/sql-read.txt").lines() {
        match line {
            "" => {}
            _ if line.starts_with('#') => {}
            "[postgres]" => dialect = Dialect::Postgres,
            "[mysql]" => dialect = Dialect::Mysql,
            _ => out.push((dialect, line.replace("\\n", "\n"))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incident_queries_are_proved() {
        let corpus = incident_corpus();
        assert!(corpus.len() > 20);
        for (dialect, q) in corpus {
            assert_eq!(read_only_statement(dialect, &q), Ok(()), "{q}");
        }
    }

    #[test]
    fn statements_that_write_lock_or_run_code_are_refused() {
        for q in [
            "drop table x",
            "select 1; drop table x",
            "select pg_terminate_backend(123)",
            "select pg_cancel_backend(pid) from pg_stat_activity",
            "select set_config('x', 'y', false)",
            "select pg_read_file('/etc/passwd')",
            "select lo_export(1, '/tmp/x')",
            "select nextval('s')",
            "select * into t from pg_stat_activity",
            "select * from t for update",
            "select * from t for share",
            "with d as (delete from t returning *) select * from d",
            "select 1 -- \n; drop table t",
            "select /* x */ 1",
            "select E'\\'' , pg_terminate_backend(1)",
            "select 'a\\', pg_terminate_backend(1), '",
            "select $$x$$",
            "select x.pg_terminate_backend(1)",
            "select \"pg_read_file\"('/etc/passwd')",
            "select pg_catalog.\"pg_promote\"()",
            "select U&\"pg_sleep\"(10)",
            "select * from generate_series(1, 1000000000000)",
            "select public.count(1)",
            "copy t to '/tmp/x'",
            "explain analyze delete from t",
            "\\! id",
            "select 'a''b'",
            "select 1 \u{b} ; drop table t",
            "",
        ] {
            assert!(read_only_statement(Dialect::Postgres, q).is_err(), "{q}");
        }
        for q in [
            "select sleep(100)",
            "select load_file('/etc/passwd')",
            "select * from t into outfile '/tmp/x'",
            "select 1 /*! ; drop table t */",
            "select 1 # \n; drop table t",
            "system id",
            "select @a := 1",
            "select benchmark(100000000, md5(1))",
            "SHOW SLAVE STATUS\\G drop",
            "select 'a\\'', sleep(1), '",
            "pager sh",
            "select `load_file`('/etc/shadow')",
            "select `sleep` (10)",
            "select 1\nsystem id",
        ] {
            assert!(read_only_statement(Dialect::Mysql, q).is_err(), "{q}");
        }
    }
}

#[cfg(test)]
mod credential_tests {
    use super::*;

    #[test]
    fn credential_catalogs_need_approval_however_named() {
        for q in [
            "select * from pg_authid",
            "select rolname, rolpassword from pg_catalog.pg_authid a",
            "select * from \"PG_SHADOW\"",
            "select * from pg_user_mappings",
            "select subconninfo from pg_subscription",
            "select srvoptions from pg_foreign_server",
            "show primary_conninfo",
            "select current_setting('primary_conninfo')",
            "select token from api_tokens",
            "select email, password_hash from app.users",
        ] {
            assert!(read_only_statement(Dialect::Postgres, q).is_err(), "{q}");
        }
        for q in [
            "select user, authentication_string from mysql.user",
            "select * from `mysql`.`user`",
            "select host, user from user",
            "select * from t join user on 1=1",
            "select * from (select 1) a, user",
            "select * from mysql.slave_master_info",
            "select * from mysql.global_priv",
            "select * from mysql.servers",
            "SHOW CREATE USER root@localhost",
            "show grants for app",
        ] {
            assert!(read_only_statement(Dialect::Mysql, q).is_err(), "{q}");
        }
        // `user` as a column, a function or in a string stays a read.
        for q in [
            "select user, host, command from information_schema.processlist",
            "select user()",
            "select current_user",
            "SHOW VARIABLES LIKE 'validate_password%'",
            "SHOW SLAVE STATUS",
        ] {
            assert_eq!(read_only_statement(Dialect::Mysql, q), Ok(()), "{q}");
        }
        assert_eq!(read_only_statement(Dialect::Postgres, "select usename, state from pg_stat_activity"), Ok(()));
    }
}
