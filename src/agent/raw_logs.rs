//! Evidence never lost to trimming: an output longer than what the model is
//! given is kept whole (as masked as what was shown) in a raw log under
//! `MERLYA_HOME/logs/raw`, and the model gets a reference it can read back
//! with the `read_raw_log` tool (from an offset, or only the lines matching a
//! pattern). Raw logs expire after `policy.raw_log_retention_days`.

use std::path::{Path, PathBuf};

use crate::llm::ToolSpec;
use crate::store::Store;

/// Most characters the model is given of a tool's output (the tail is kept; the whole is in a raw log).
pub const FOR_MODEL: usize = 4000;

/// Most lines a grep returns.
const MAX_MATCHES: usize = 200;

/// Where raw logs of the home of `store` are.
pub fn dir(store: &Store) -> PathBuf {
    store.path().parent().map_or_else(|| PathBuf::from("logs/raw"), |home| home.join("logs").join("raw"))
}

/// `text` for the model: as it is when short; else its last [`FOR_MODEL`] characters, with the whole
/// kept in a raw log the model is told how to read. Secret shapes are masked first (a private key
/// block, `NAME=value` where NAME names a secret, a URL's password): a proved read may still print
/// one (an environment dump on a host whose login sets a token), and the model never needs it.
pub fn for_model(store: &Store, text: &str) -> String {
    let masked = crate::redact::redact_command(text);
    let text = masked.as_str();
    if text.len() <= FOR_MODEL {
        return text.to_string();
    }
    let start = text.char_indices().map(|(i, _)| i).find(|i| *i >= text.len() - FOR_MODEL).unwrap_or(0);
    let kept = match keep(&dir(store), text) {
        Ok(id) => format!(
            "[… {start} earlier bytes cut; the whole output ({} bytes) is raw log {id}: read_raw_log {{\"id\": \"{id}\", \"offset\": 0}} or with \"grep\"]",
            text.len()
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a raw log");
            format!("[… {start} earlier bytes cut]")
        }
    };
    format!("{kept}\n{}", &text[start..])
}

/// Writes `text` to a new private raw log; returns its id.
fn keep(dir: &Path, text: &str) -> std::io::Result<String> {
    crate::home::create_private_dir(dir)?;
    let id = format!("r{}", hex::encode(crate::home::random_bytes(6)?));
    crate::home::write_private(&dir.join(format!("{id}.log")), text.as_bytes())?;
    Ok(id)
}

/// The `read_raw_log` tool.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "read_raw_log".into(),
        description: "Read a raw log (the whole output of an earlier tool call that was cut): from a character offset, or only the lines matching a regular expression.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "the raw log id (rXXXXXXXXXXXX)"},
                "offset": {"type": "integer", "description": "character to start at (default 0)"},
                "grep": {"type": "string", "description": "only lines matching this regular expression"},
            },
            "required": ["id"],
            "additionalProperties": false,
        }),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    id: String,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    grep: Option<String>,
}

/// Runs `read_raw_log`; an `Err` is a malformed call.
pub fn read(store: &Store, value: serde_json::Value) -> Result<String, String> {
    let a: ReadArgs = serde_json::from_value(value).map_err(|e| format!("bad arguments for `read_raw_log`: {e}"))?;
    let valid = a.id.len() == 13 && a.id.starts_with('r') && a.id[1..].chars().all(|c| c.is_ascii_hexdigit());
    if !valid {
        return Ok(format!("ERROR: no raw log {:?} (ids look like r0123456789ab)", a.id));
    }
    let text = match std::fs::read_to_string(dir(store).join(format!("{}.log", a.id))) {
        Ok(text) => text,
        Err(_) => return Ok(format!("ERROR: raw log {} does not exist (or has expired)", a.id)),
    };
    if let Some(pattern) = a.grep {
        let regex = regex::Regex::new(&pattern).map_err(|e| format!("bad grep pattern: {e}"))?;
        let matches: Vec<String> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| regex.is_match(l))
            .take(MAX_MATCHES)
            .map(|(n, l)| format!("{}: {}", n + 1, l.chars().take(400).collect::<String>()))
            .collect();
        let shown = matches.join("\n");
        return Ok(if matches.is_empty() { "no line matches".into() } else { shown.chars().take(FOR_MODEL).collect() });
    }
    let total = text.chars().count();
    let part: String = text.chars().skip(a.offset).take(FOR_MODEL).collect();
    let end = a.offset + part.chars().count();
    let next = if end < total { format!("; next offset {end}") } else { "; end of log".into() };
    Ok(format!("[raw log {}, characters {}..{end} of {total}{next}]\n{part}", a.id, a.offset.min(total)))
}

/// Deletes raw logs older than `days` days (at start; a missing folder has none).
pub fn expire(dir: &Path, days: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let limit = std::time::Duration::from_secs(u64::from(days) * 86_400);
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > limit);
        if old && entry.path().extension().is_some_and(|x| x == "log") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_output_is_kept_whole_and_read_back_by_offset_and_grep() {
        let home = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(home.path()).await;
        let text: String =
            (0..2000).map(|i| format!("line {i} {}\n", if i == 7 { "ERROR disk" } else { "ok" })).collect();
        let shown = for_model(&store, &text);
        assert!(shown.len() < FOR_MODEL + 400 && shown.ends_with("line 1999 ok\n"));
        let id = shown.split("raw log ").nth(1).unwrap()[..13].to_string();
        let grep = read(&store, serde_json::json!({"id": id, "grep": "ERROR"})).unwrap();
        assert_eq!(grep, "8: line 7 ERROR disk");
        let first = read(&store, serde_json::json!({"id": id})).unwrap();
        assert!(first.contains("line 0 ok") && first.contains("next offset 4000"), "{}", &first[..200]);
        // Ids are checked: no path leaves the folder.
        let escape = read(&store, serde_json::json!({"id": "../../merlya.db"})).unwrap();
        assert!(escape.starts_with("ERROR: no raw log"));
        assert_eq!(for_model(&store, "short"), "short");
        expire(&dir(&store), 0);
        std::thread::sleep(std::time::Duration::from_millis(10));
        expire(&dir(&store), 0);
        assert!(read(&store, serde_json::json!({"id": id})).unwrap().contains("does not exist"));
    }

    /// An environment dump or a key printed by a proved read reaches the model masked, short or
    /// long, and so does the raw log it can read back.
    #[tokio::test]
    async fn secret_shapes_in_an_output_are_masked_for_the_model_and_the_raw_log() {
        let home = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(home.path()).await;
        let env = "HOME=/root\nGITHUB_TOKEN=ghp_s3cr3t-value\nLANG=C\n";
        let shown = for_model(&store, env);
        assert!(
            shown.contains("GITHUB_TOKEN=***") && shown.contains("LANG=C") && !shown.contains("ghp_s3cr3t"),
            "{shown}"
        );
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n";
        assert!(!for_model(&store, key).contains("b3BlbnNzaC1rZXk"));
        let long: String = format!("DB_PASSWORD=hunter22\n{}", "filler line\n".repeat(4000));
        let shown = for_model(&store, &long);
        let id = shown.split("raw log ").nth(1).unwrap()[..13].to_string();
        let back = read(&store, serde_json::json!({"id": id, "grep": "PASSWORD"})).unwrap();
        assert!(back.contains("DB_PASSWORD=***") && !back.contains("hunter22"), "{back}");
    }
}
