//! Feeding a sudo password to sudo and to nothing else (ADR 0014).
//!
//! A `sudo_password` host runs `sudo -S -p MARKER…`: sudo reads the password
//! from the session's stdin, but only once merlya has seen sudo's own prompt —
//! a random per-run marker — on stderr. The command itself runs under a tiny
//! `sh -c` wrapper that first prints a second marker ("authenticated, the
//! command starts") and then `exec`s the command with stdin from `/dev/null`.
//! So:
//! - with cached credentials or NOPASSWD, sudo never prompts, the password is
//!   never sent, and the start marker closes the window in which a prompt is
//!   believed (a command that forges the prompt later gets nothing);
//! - when sudo does prompt, the password is written once, followed by
//!   end-of-file; sudo reads it byte by byte up to the newline, and the
//!   command's stdin is `/dev/null` anyway;
//! - both markers are stripped from what is shown.

use std::io::Read;

/// Which program asks for the password: sudo prints the marker as its prompt;
/// su (which has no `-p`) prints PAM's own prompt inside a window of markers
/// (see `exec::su`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Asker {
    #[default]
    Sudo,
    Su,
}

/// What a run needs to hand the password to sudo (or su).
#[derive(Clone)]
pub struct SudoFeed {
    /// 16 hex characters from /dev/urandom, unique to this run.
    pub marker: String,
    /// The password, written only after the prompt.
    pub password: String,
    /// Who prompts.
    pub asker: Asker,
}

impl std::fmt::Debug for SudoFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the password, even in debug output or logs.
        f.debug_struct("SudoFeed").field("marker", &self.marker).field("password", &"***").finish()
    }
}

impl SudoFeed {
    /// A feed for `password` with a fresh random marker.
    pub fn new(password: String) -> Result<Self, String> {
        Ok(Self { marker: random_marker()?, password, asker: Asker::Sudo })
    }

    /// A feed for su: its prompt is believed only inside the window the
    /// wrapper opens (`prompt()` printed before su starts) and closes
    /// (`started()`, printed by the command su runs).
    pub fn for_su(password: String) -> Result<Self, String> {
        Ok(Self { marker: random_marker()?, password, asker: Asker::Su })
    }

    /// sudo's prompt (`-p`): seeing it means sudo is waiting for the password.
    pub fn prompt(&self) -> String {
        format!("{}P", self.marker)
    }

    /// Printed by the wrapper once sudo has authenticated and the command starts.
    pub fn started(&self) -> String {
        format!("{}S", self.marker)
    }
}

/// 16 hex characters from the kernel's random source.
pub fn random_marker() -> Result<String, String> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for the sudo prompt marker: {e}"))?;
    Ok(hex::encode(bytes))
}

/// The wrapper sudo runs: announce the start on stderr, then run the command
/// with stdin from /dev/null so it can never read what was meant for sudo.
const WRAPPER: &str = r#"sh -c 'printf %s "$0" >&2; exec "$@" </dev/null'"#;

/// Rewrites the words after `sudo ` (`rest`) into the command that runs on a
/// `sudo_password` host. sudo's own options stay in front of the wrapper, so
/// `sudo -u postgres psql` still runs psql as postgres; everything after the
/// command word is left to the shell exactly as written.
pub fn sudo_command(rest: &str, feed: &SudoFeed) -> Result<String, String> {
    let mut line = format!("sudo -S -p '{}'", feed.prompt());
    let Some(at) = command_start(rest)? else {
        line.push(' ');
        line.push_str(rest);
        return Ok(line);
    };
    for part in [rest[..at].trim(), WRAPPER, &feed.started(), rest[at..].trim_end()] {
        if !part.is_empty() {
            line.push(' ');
            line.push_str(part);
        }
    }
    Ok(line)
}

/// Where the command run by sudo starts in `rest`: `Some(offset)` when sudo
/// will run a command (the wrapper goes there), `None` for sudo's own modes
/// (`-v`, `-l`, `-k` alone…) that run nothing.
pub(super) fn command_start(rest: &str) -> Result<Option<usize>, String> {
    let bytes = rest.as_bytes();
    let mut at = 0;
    let (mut shell_mode, mut no_command, mut after_dashes) = (false, false, false);
    let mut needs_value = false;
    loop {
        while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'\t') {
            at += 1;
        }
        if at >= bytes.len() || b";&|<>()\n#".contains(&bytes[at]) {
            if needs_value {
                return Err("sudo option is missing its value".into());
            }
            // No command word: only `sudo -i` / `sudo -s` still run something (a shell).
            return Ok((shell_mode && !no_command).then_some(at));
        }
        let (word, end) = lex_word(rest, at)?;
        if needs_value {
            needs_value = false;
            at = end;
            continue;
        }
        if after_dashes || !word.starts_with('-') || word == "-" {
            if !after_dashes && is_assignment(&word) {
                at = end;
                continue;
            }
            return Ok((!no_command).then_some(at));
        }
        if word == "--" {
            after_dashes = true;
        } else if let Some(long) = word.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            match name {
                "prompt" | "askpass" => return Err(own_prompt_error()),
                "login" | "shell" => shell_mode = true,
                "list" | "validate" | "edit" | "remove-timestamp" | "version" | "help" => no_command = true,
                "user" | "group" | "chdir" | "host" | "chroot" | "role" | "type" | "command-timeout" | "other-user"
                | "close-from" | "auth-type" | "login-class" => needs_value = !has_value,
                _ => {}
            }
        } else {
            let flags: Vec<char> = word[1..].chars().collect();
            for (i, c) in flags.iter().enumerate() {
                match c {
                    'p' | 'A' => return Err(own_prompt_error()),
                    'i' | 's' => shell_mode = true,
                    'l' | 'v' | 'e' | 'K' | 'V' => no_command = true,
                    'h' => {
                        // -h alone is help; -hHOST names a host.
                        if i + 1 == flags.len() {
                            no_command = true;
                        }
                        break;
                    }
                    'C' | 'D' | 'g' | 'R' | 'r' | 't' | 'T' | 'U' | 'u' | 'a' | 'c' => {
                        needs_value = i + 1 == flags.len();
                        break;
                    }
                    _ => {}
                }
            }
        }
        at = end;
    }
}

fn own_prompt_error() -> String {
    "merlya sets sudo's prompt and feeds the password itself: remove -p/--prompt and -A/--askpass".into()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// One shell word starting at `at`: its unquoted value and where it ends.
/// Words with expansions (`$`, backquotes, backslashes) in sudo's options are
/// refused: merlya could not tell where the options end.
fn lex_word(text: &str, mut at: usize) -> Result<(String, usize), String> {
    let bytes = text.as_bytes();
    let mut value = String::new();
    let unclear = || format!("cannot tell where sudo's options end in `{text}`: write them without $, ` or \\");
    while at < bytes.len() {
        match bytes[at] {
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => break,
            b'$' | b'`' | b'\\' => return Err(unclear()),
            quote @ (b'\'' | b'"') => {
                let close = text[at + 1..].find(quote as char).ok_or_else(unclear)? + at + 1;
                let inner = &text[at + 1..close];
                if quote == b'"' && inner.contains(['$', '`', '\\']) {
                    return Err(unclear());
                }
                value.push_str(inner);
                at = close + 1;
            }
            _ => {
                let len = text[at..].chars().next().map(char::len_utf8).unwrap_or(1);
                value.push_str(&text[at..at + len]);
                at += len;
            }
        }
    }
    Ok((value, at))
}

/// What the runner must do after a chunk of stderr went through the gate.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gated {
    /// The chunk with the markers removed, to show.
    pub output: Vec<u8>,
    /// Bytes to write to the remote stdin now (the password and a newline).
    pub write: Option<String>,
    /// Close the remote stdin (end-of-file) now.
    pub close_input: bool,
}

/// Watches stderr for sudo's prompt: the password goes out at most once, and
/// only while sudo is the one reading (before the start marker).
/// Longest text without a newline believed to be a prompt inside su's window.
const MAX_PROMPT: usize = 4096;

pub struct StderrGate {
    feed: SudoFeed,
    pending: Vec<u8>,
    open: bool,
    /// For su: the window (between the two markers) in which a prompt is believed.
    in_window: bool,
    /// The newline a terminal prints after an unechoed password is still to come.
    eat_newline: bool,
}

impl StderrGate {
    /// A gate for one run.
    pub fn new(feed: SudoFeed) -> Self {
        Self { feed, pending: Vec::new(), open: true, in_window: false, eat_newline: false }
    }

    /// Feeds a chunk of stderr.
    pub fn push(&mut self, chunk: &[u8]) -> Gated {
        if self.feed.asker == Asker::Su {
            return self.push_su(chunk);
        }
        self.pending.extend_from_slice(chunk);
        let (prompt, started) = (self.feed.prompt().into_bytes(), self.feed.started().into_bytes());
        let mut gated = Gated::default();
        loop {
            let found = [(&prompt, true), (&started, false)]
                .into_iter()
                .filter_map(|(m, is_prompt)| find(&self.pending, m).map(|at| (at, m.len(), is_prompt)))
                .min_by_key(|(at, _, _)| *at);
            let Some((at, len, is_prompt)) = found else { break };
            gated.output.extend(self.pending.drain(..at));
            self.pending.drain(..len);
            if self.open {
                self.open = false;
                if is_prompt {
                    gated.write = Some(format!("{}\n", self.feed.password));
                }
                gated.close_input = true;
            }
        }
        // Keep a tail that may be the start of a marker split across chunks.
        let keep = (1..prompt.len()).rev().find(|&n| self.pending.ends_with(&prompt[..n])).unwrap_or(0);
        let cut = self.pending.len() - keep;
        gated.output.extend(self.pending.drain(..cut));
        gated
    }

    /// What is left at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }

    /// su: after the opening marker, text without a newline that ends in `:`
    /// (PAM's `Password: `, in any language) is su's prompt: the password is
    /// written once and the prompt is not shown; the closing marker (the
    /// command started) ends the window and stdin.
    fn push_su(&mut self, chunk: &[u8]) -> Gated {
        self.pending.extend_from_slice(chunk);
        let (open, started) = (self.feed.prompt().into_bytes(), self.feed.started().into_bytes());
        let mut gated = Gated::default();
        loop {
            if !self.in_window {
                let Some(at) = find(&self.pending, &open) else { break };
                gated.output.extend(self.pending.drain(..at));
                self.pending.drain(..open.len());
                self.in_window = self.open;
                continue;
            }
            if let Some(at) = find(&self.pending, &started) {
                gated.output.extend(self.pending.drain(..at));
                self.pending.drain(..started.len());
                self.in_window = false;
                self.open = false;
                gated.close_input = true;
                continue;
            }
            // On a terminal, the newline that ends the (unechoed) password is not output.
            if !self.open && self.pending.first() == Some(&b'\n') && std::mem::take(&mut self.eat_newline) {
                self.pending.remove(0);
            } else if !self.open && self.pending.starts_with(b"\r\n") && std::mem::take(&mut self.eat_newline) {
                self.pending.drain(..2);
            }
            // Whole lines inside the window are su's (or PAM's) messages: shown.
            if let Some(newline) = self.pending.iter().rposition(|b| *b == b'\n') {
                gated.output.extend(self.pending.drain(..=newline));
            }
            // A prompt is short: a long run of text without a newline is not su's; it is shown and
            // the window gives nothing (a host flooding it cannot grow memory or get the password).
            if self.pending.len() > MAX_PROMPT {
                gated.output.append(&mut self.pending);
                self.open = false;
                break;
            }
            let tail = String::from_utf8_lossy(&self.pending);
            if self.open && gated.write.is_none() && tail.trim_end().ends_with(':') {
                self.pending.clear();
                gated.write = Some(format!("{}\n", self.feed.password));
                self.open = false;
                self.eat_newline = true;
                gated.close_input = true;
            }
            break;
        }
        if !self.in_window {
            let keep = (1..open.len()).rev().find(|&n| self.pending.ends_with(&open[..n])).unwrap_or(0);
            let cut = self.pending.len() - keep;
            gated.output.extend(self.pending.drain(..cut));
        }
        gated
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed() -> SudoFeed {
        SudoFeed { marker: "0123456789abcdef".into(), password: "pw".into(), asker: Asker::Sudo }
    }

    #[test]
    fn su_gets_the_password_on_its_prompt_inside_the_window_only() {
        let su = SudoFeed { asker: Asker::Su, ..feed() };
        let mut g = StderrGate::new(su.clone());
        // A prompt-looking line before the window is output, never answered.
        let a = g.push(b"motd: 0123456789ab");
        assert_eq!((a.output.as_slice(), a.write.as_deref()), (&b"motd: "[..], None));
        let b = g.push(b"cdefPPass");
        assert_eq!((b.output.as_slice(), b.write.as_deref()), (&b""[..], None));
        let c = g.push(b"word: ");
        assert_eq!((c.output.as_slice(), c.write.as_deref(), c.close_input), (&b""[..], Some("pw\n"), true));
        let d = g.push(b"\n0123456789abcdefSout: ");
        assert_eq!(
            (d.output.as_slice(), d.write.as_deref()),
            (&b"\nout: "[..], None),
            "after the start a prompt gets nothing"
        );
        // A flood inside the window is shown and closes it: no password, no growth.
        let mut g = StderrGate::new(SudoFeed { asker: Asker::Su, ..feed() });
        g.push(b"0123456789abcdefP");
        let flood = g.push(&vec![b'x'; 5000]);
        assert_eq!((flood.output.len(), flood.write.is_none()), (5000, true));
        assert!(g.push(b"Password: ").write.is_none());
        // Without a prompt (no password needed), the start marker closes the window.
        let mut g = StderrGate::new(su);
        let e = g.push(b"0123456789abcdefP0123456789abcdefSPassword: ");
        assert_eq!((e.output.as_slice(), e.write, e.close_input), (&b"Password: "[..], None, true));
    }

    #[test]
    fn markers_are_random_hex() {
        let (a, b) = (random_marker().unwrap(), random_marker().unwrap());
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(!format!("{:?}", SudoFeed::new("hunter2".into()).unwrap()).contains("hunter2"));
    }

    #[test]
    fn the_wrapper_goes_after_sudo_options_and_before_the_command() {
        let f = feed();
        let w = format!("{WRAPPER} 0123456789abcdefS");
        let p = "sudo -S -p '0123456789abcdefP'";
        for (rest, expect) in [
            ("id -u", format!("{p} {w} id -u")),
            ("id -u; cat /etc/hosts", format!("{p} {w} id -u; cat /etc/hosts")),
            ("-u postgres psql -c 'select 1' | head", format!("{p} -u postgres {w} psql -c 'select 1' | head")),
            ("-Eu root -H env", format!("{p} -Eu root -H {w} env")),
            ("-uroot --chdir /tmp LANG=C ls", format!("{p} -uroot --chdir /tmp LANG=C {w} ls")),
            ("--user='www data' -- -weird", format!("{p} --user='www data' -- {w} -weird")),
            ("-i", format!("{p} -i {w} ")),
            ("-v", format!("{p} -v")),
            ("-l", format!("{p} -l")),
            ("-k", format!("{p} -k")),
            ("-k cat", format!("{p} -k {w} cat")),
        ] {
            assert_eq!(sudo_command(rest, &f).unwrap(), expect.trim_end(), "{rest}");
        }
        for refused in ["-p x id", "-Ap x id", "--prompt=x id", "-u $USER id", "-u \"$(id -un)\" id"] {
            assert!(sudo_command(refused, &f).is_err(), "{refused}");
        }
    }

    #[test]
    fn the_password_goes_out_once_and_only_on_the_prompt() {
        let mut g = StderrGate::new(feed());
        // The prompt split across chunks, with text around it.
        let a = g.push(b"lecture\n0123456");
        assert_eq!((a.output.as_slice(), a.write.as_deref(), a.close_input), (&b"lecture\n"[..], None, false));
        let b = g.push(b"789abcdefP");
        assert_eq!((b.output.as_slice(), b.write.as_deref(), b.close_input), (&b""[..], Some("pw\n"), true));
        // A wrong password makes sudo ask again: nothing more is sent.
        let c = g.push(b"Sorry, try again.\n0123456789abcdefP");
        assert_eq!((c.output.as_slice(), c.write, c.close_input), (&b"Sorry, try again.\n"[..], None, false));
        assert!(g.finish().is_empty());
    }

    #[test]
    fn after_the_start_marker_a_forged_prompt_gets_nothing() {
        let mut g = StderrGate::new(feed());
        let a = g.push(b"0123456789abcdefSout");
        assert_eq!((a.output.as_slice(), a.write, a.close_input), (&b"out"[..], None, true));
        let b = g.push(b"0123456789abcdefP\n");
        assert_eq!((b.output.as_slice(), b.write, b.close_input), (&b"\n"[..], None, false));
        let mut g = StderrGate::new(feed());
        let tail = g.push(b"x 0123");
        assert_eq!(tail.output, b"x ");
        assert_eq!(g.finish(), b"0123");
    }
}
