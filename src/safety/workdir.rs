//! Where a line's relative paths point (ADR 0026): the login home, or a folder an earlier `cd`
//! in the same line went to. Every `cd` of the line counts for every command (a loop or a
//! subshell may run them in any order), so a relative path is tried against each folder the line
//! may be in; a `cd` to a folder only known at run time makes the folder unknown, and then a
//! relative path is judged by its tail.

use super::parse::SimpleCommand;
use super::paths::normal_path;

/// The login homes a relative path or `~` is tried against (root's and a user's).
pub const HOMES: [&str; 2] = ["/root", "/home/user"];

/// The folders a command of a line may run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workdirs {
    /// Absolute, normalised folders.
    pub dirs: Vec<String>,
    /// A `cd` went to a folder only known at run time (`cd "$D"`, `cd -`, `-execdir`).
    pub unknown: bool,
    /// The line changes directory at all (a bare name may then be `/proc`'s `kmsg`).
    pub changed: bool,
}

impl Default for Workdirs {
    fn default() -> Self {
        Self { dirs: HOMES.iter().map(|h| h.to_string()).collect(), unknown: false, changed: false }
    }
}

impl Workdirs {
    /// Folders unknown: only a path's tail can be judged.
    pub fn unknown() -> Self {
        Self { unknown: true, changed: true, ..Self::default() }
    }

    /// The folders of `commands`, starting from `self` (an outer line's).
    pub fn after(&self, commands: &[SimpleCommand]) -> Self {
        let mut out = self.clone();
        // Twice: a relative `cd` may follow another that a loop ran first.
        for _ in 0..2 {
            for cmd in commands {
                let Some((first, rest)) = cmd.words.split_first() else { continue };
                if !matches!(first.text.as_str(), "cd" | "pushd" | "chdir") {
                    continue;
                }
                out.changed = true;
                let target = rest.iter().find(|w| !(w.is_literal() && w.text.starts_with('-') && w.text != "-"));
                match target {
                    None => out.add(HOMES.iter().map(|h| h.to_string()).collect()),
                    Some(w) if !w.is_literal() || w.glob || w.text == "-" => out.unknown = true,
                    Some(w) => {
                        let dirs = out.resolve(&w.text);
                        out.add(dirs);
                    }
                }
            }
        }
        out
    }

    fn add(&mut self, dirs: Vec<String>) {
        for d in dirs {
            if !self.dirs.contains(&d) {
                self.dirs.push(d);
            }
        }
    }

    /// The absolute paths `text` may name: `~` and `~user` as homes, a relative path against each
    /// folder (normalised: `.`, `..`, `//`).
    pub fn resolve(&self, text: &str) -> Vec<String> {
        if let Some(rest) = text.strip_prefix('~') {
            let (user, rest) = rest.split_once('/').unwrap_or((rest, ""));
            let homes: Vec<String> = if user.is_empty() {
                HOMES.iter().map(|h| h.to_string()).collect()
            } else {
                vec![format!("/home/{user}")]
            };
            return homes.iter().map(|h| normal_path(&format!("{h}/{rest}"))).collect();
        }
        if text.starts_with('/') {
            return vec![normal_path(text)];
        }
        self.dirs.iter().map(|d| normal_path(&format!("{d}/{text}"))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::parse::parse;

    #[test]
    fn cds_of_the_line_are_followed() {
        let w = Workdirs::default().after(&parse("cd /etc; cd ssl && cat x").commands);
        assert!(w.dirs.contains(&"/etc".to_string()) && w.dirs.contains(&"/etc/ssl".to_string()), "{w:?}");
        assert!(!w.unknown && w.changed);
        assert_eq!(w.resolve("../shadow").first().map(String::as_str), Some("/shadow"));
        assert!(w.resolve("./shadow").contains(&"/etc/shadow".to_string()));
        assert!(Workdirs::default().after(&parse("cd \"$D\"; cat x").commands).unknown);
        assert!(Workdirs::default().after(&parse("cd -").commands).unknown);
        assert_eq!(Workdirs::default().resolve(".ssh//./id_rsa")[0], "/root/.ssh/id_rsa");
        assert_eq!(Workdirs::default().resolve("~ops/.pgpass"), vec!["/home/ops/.pgpass".to_string()]);
    }
}
