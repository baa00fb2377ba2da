//! Commands that would put a password where others can read it (argv is in
//! `ps` for every local user; shell history; logs). Each finding comes with a
//! safe rewrite that uses a secret reference instead.

use serde::Serialize;

use super::parse::{self, Word};

/// One leaking pattern and how to avoid it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Leak {
    /// What leaks and where.
    pub what: String,
    /// The command rewritten to use a reference or merlya's elevation.
    pub rewrite: String,
}

fn is_reference_text(text: &str) -> bool {
    text.starts_with('@') && text.matches(':').count() == 2
}

fn is_reference_or_variable(w: &Word) -> bool {
    w.dynamic || is_reference_text(&w.text)
}

/// Finds password leaks in `command` run on `host`.
pub fn find_leaks(command: &str, host: &str) -> Vec<Leak> {
    let parsed = parse::parse(command);
    let mut leaks = Vec::new();
    // `echo PW | sudo -S CMD`
    for (i, cmd) in parsed.commands.iter().enumerate() {
        let name = cmd.words.first().map(|w| w.text.as_str()).unwrap_or("");
        if matches!(name, "echo" | "printf")
            && let Some((id, pos)) = cmd.pipeline
            && let Some(next) = parsed.commands.get(i + 1)
            && next.pipeline == Some((id, pos + 1))
            && next.words.first().is_some_and(|w| w.text == "sudo")
            && next.words.iter().any(|w| w.text == "-S")
            && cmd.words.iter().skip(1).any(|w| !is_reference_or_variable(w))
        {
            let rest: Vec<&str> =
                next.words.iter().skip(1).filter(|w| w.text != "-S").map(|w| w.text.as_str()).collect();
            leaks.push(Leak {
                what: "the sudo password is in the command line (visible in ps and history)".into(),
                rewrite: format!(
                    "sudo {} — store the password with `merlya secret set sudo:{host}:password` and set the host's \
                     elevation to sudo_password: merlya writes it to sudo's stdin",
                    rest.join(" ")
                ),
            });
        }
    }
    for cmd in &parsed.commands {
        let Some(first) = cmd.words.first() else { continue };
        let name = first.text.rsplit('/').next().unwrap_or("");
        let words = &cmd.words;
        for (j, w) in words.iter().enumerate().skip(1) {
            let t = w.text.as_str();
            // mysql -pSECRET
            if matches!(name, "mysql" | "mysqldump" | "mysqladmin") && t.starts_with("-p") && t.len() > 2 && !w.dynamic
            {
                let others: Vec<&str> = words.iter().skip(1).filter(|x| x.text != t).map(|x| x.text.as_str()).collect();
                leaks.push(Leak {
                    what: format!("{name} -p puts the password in argv"),
                    rewrite: format!("MYSQL_PWD=@mysql:{host}:password {name} {}", others.join(" ")),
                });
            }
            // --password=SECRET / --password SECRET
            let (flag, value) = match t.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (t, words.get(j + 1).filter(|n| !is_reference_or_variable(n)).map(|n| n.text.clone())),
            };
            if matches!(flag, "--password" | "--passwd" | "--pass") && !w.dynamic {
                let Some(value) = value.filter(|v| !(v.is_empty() || is_reference_text(v))) else {
                    continue;
                };
                let rewritten = command.replace(&value, &format!("@{name}:{host}:password"));
                leaks.push(Leak { what: format!("{name} {flag} puts the password in argv"), rewrite: rewritten });
            }
            // sshpass -p SECRET
            if name == "sshpass" && t == "-p" && words.get(j + 1).is_some_and(|n| !is_reference_or_variable(n)) {
                let rest: Vec<&str> = words.iter().skip(j + 2).map(|x| x.text.as_str()).collect();
                leaks.push(Leak {
                    what: "sshpass -p puts the password in argv".into(),
                    rewrite: format!("SSHPASS=@ssh:{host}:password sshpass -e {}", rest.join(" ")),
                });
            }
        }
    }
    leaks
}

#[cfg(test)]
mod tests {
    use super::find_leaks;

    #[test]
    fn finds_sudo_mysql_password_flags_and_sshpass() {
        let l = find_leaks("echo hunter2 | sudo -S systemctl restart nginx", "web01");
        assert_eq!(l.len(), 1);
        assert!(l[0].rewrite.starts_with("sudo systemctl restart nginx"));
        assert!(l[0].rewrite.contains("merlya secret set sudo:web01:password"));
        let l = find_leaks("mysql -u root -p'hunter2' -e 'show databases'", "db01");
        assert_eq!(l[0].rewrite, "MYSQL_PWD=@mysql:db01:password mysql -u root -e show databases");
        let l = find_leaks("pg_tool --password=hunter2 --host x", "db01");
        assert_eq!(l[0].rewrite, "pg_tool --password=@pg_tool:db01:password --host x");
        let l = find_leaks("sshpass -p hunter2 ssh a", "h");
        assert!(l[0].rewrite.starts_with("SSHPASS=@ssh:h:password sshpass -e ssh a"));
    }

    #[test]
    fn references_and_variables_are_fine() {
        assert!(find_leaks("tool --password=@db:db01:password", "db01").is_empty());
        assert!(find_leaks("tool --password \"$PW\"", "db01").is_empty());
        assert!(find_leaks("df -h", "db01").is_empty());
    }
}
