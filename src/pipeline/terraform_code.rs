//! What a Terraform configuration runs on this machine (issue 24 §4): an
//! `external` data source runs its program during `terraform plan` — the dry
//! run — and a `local-exec` provisioner runs its command during the apply, as
//! the person running merlya. The first makes the plan more than a dry run (it
//! is asked about first, whoever proposed the change); the second is named in
//! the approval. Read from the `.tf` files as text: a match inside a comment
//! is named too (asking once too often is the safe mistake).

use regex::Regex;

use super::terraform::Snapshot;

/// What the configuration's plan runs on this machine.
pub fn dry_run_hazards(config: &Snapshot) -> Vec<String> {
    let Ok(data) = Regex::new(r#"data\s+"external"\s+"([^"]+)""#) else {
        return vec!["the configuration could not be read for data sources that run code".into()];
    };
    let mut found = Vec::new();
    for (file, text) in hcl_files(config) {
        for m in data.captures_iter(text) {
            found.push(format!(
                "{file}: data source external.{} runs its program on this machine during the plan",
                &m[1]
            ));
        }
    }
    found
}

/// What the configuration's apply runs on this machine, for the approval.
pub fn controller_programs(config: &Snapshot) -> Vec<String> {
    let (Ok(provisioner), Ok(command)) =
        (Regex::new(r#"provisioner\s+"local-exec"\s*\{"#), Regex::new(r#"command\s*=\s*"((?:[^"\\]|\\.)*)""#))
    else {
        return vec!["the configuration could not be read for local-exec provisioners".into()];
    };
    let mut found = Vec::new();
    for (file, text) in hcl_files(config) {
        for m in provisioner.find_iter(text) {
            let shown = command
                .captures(&text[m.end()..])
                .map(|c| format!("`{}`", crate::term_safe::visible_line(&c[1])))
                .unwrap_or_else(|| "its command".to_string());
            found.push(format!("{file}: a local-exec provisioner runs {shown} on this machine during the apply"));
            // A file outside the folder is not pinned: it is read when the apply runs.
            let outside = shown
                .split(|c: char| c.is_whitespace() || "`'\"".contains(c))
                .find(|w| (w.starts_with('/') && w.len() > 1 && !w.starts_with("/dev/null")) || w.starts_with("../"));
            if let Some(path) = outside {
                found.push(format!(
                    "{file}: NOT PINNED: `{path}` is outside the configuration's folder; it is read when the apply runs"
                ));
            }
        }
    }
    found
}

/// The `.tf` files of `config` (a `.tf.json` file is read as text too).
fn hcl_files(config: &Snapshot) -> impl Iterator<Item = (&str, &str)> {
    config
        .iter()
        .filter(|(name, _)| name.ends_with(".tf") || name.ends_with(".tf.json"))
        .map(|(n, t)| (n.as_str(), t.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(files: &[(&str, &str)]) -> Snapshot {
        files.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    }

    #[test]
    fn an_external_data_source_makes_the_plan_run_code() {
        let c = config(&[(
            "main.tf",
            "data \"external\" \"who\" {\n  program = [\"sh\", \"-c\", \"id > /tmp/x; echo {}\"]\n}\nresource \"terraform_data\" \"a\" {}\n",
        )]);
        assert_eq!(
            dry_run_hazards(&c),
            ["main.tf: data source external.who runs its program on this machine during the plan"]
        );
        assert!(dry_run_hazards(&config(&[("main.tf", "resource \"terraform_data\" \"a\" {}\n")])).is_empty());
    }

    #[test]
    fn local_exec_commands_are_named_for_the_approval() {
        let c = config(&[(
            "main.tf",
            "resource \"terraform_data\" \"a\" {\n  provisioner \"local-exec\" {\n    command = \"./deploy.sh \\\"prod\\\"\"\n  }\n}\n",
        )]);
        let found = controller_programs(&c);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("./deploy.sh") && found[0].contains("this machine"), "{found:?}");
        let outside = config(&[("main.tf", "provisioner \"local-exec\" {\n command = \"sh /opt/deploy.sh\"\n}\n")]);
        let found = controller_programs(&outside);
        assert!(found.iter().any(|f| f.contains("NOT PINNED: `/opt/deploy.sh`")), "{found:?}");
    }
}
