//! Neutralising control characters before text from hosts or the model
//! reaches a terminal.
//!
//! Command output, host names, error messages and the agent's words are
//! untrusted: an escape sequence in them could retitle the window, clear the
//! screen, move the cursor to overwrite an approval prompt (`\r`, `ESC [2J`)
//! or write the clipboard (OSC 52). Everything shown in the console, on the
//! terminal approval prompt, or by `merlya exec` on a terminal goes through
//! [`visible`] (or [`visible_line`]) first, which turns every control
//! character into a printable form: C0 as caret notation (`ESC` → `^[`,
//! `\r` → `^M`, BEL → `^G`), DEL as `^?`, C1 as `<9b>`, and bidirectional
//! controls, zero-width and other invisible format characters as `<U+202E>`.
//! The rest of an escape sequence stays as plain text, so a person sees that
//! something tried.

use std::borrow::Cow;

/// `text` with every control character made visible; `\n` and `\t` are kept
/// for places that lay out lines themselves.
pub fn visible(text: &str) -> Cow<'_, str> {
    neutralise(text, true)
}

/// Like [`visible`] for one line: a newline is shown as `^J` too, so text can
/// never start a fake line of its own (a forged "hosts:" line in a prompt).
pub fn visible_line(text: &str) -> Cow<'_, str> {
    neutralise(text, false)
}

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char, keep_newlines: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => !keep_newlines,
        // C0, DEL, C1.
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional marks, embeddings, overrides and isolates reorder what is shown ("Trojan
        // source"); zero-width and invisible format characters make two different names look alike
        // ("web01" and "web\u{200b}01"); line and paragraph separators break lines in some renderers;
        // tag characters carry hidden text.
        '\u{ad}'
        | '\u{61c}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

fn neutralise(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c, keep_newlines) {
            out.push(c);
            continue;
        }
        match c {
            '\u{0}'..='\u{1f}' => {
                out.push('^');
                out.push(char::from(c as u8 + b'@'));
            }
            '\u{7f}' => out.push_str("^?"),
            '\u{80}'..='\u{9f}' => out.push_str(&format!("<{:02x}>", c as u32)),
            other => out.push_str(&format!("<U+{:04X}>", other as u32)),
        }
    }
    Cow::Owned(out)
}

/// Bytes for a terminal: invalid UTF-8 is replaced, then [`visible`].
pub fn visible_bytes(bytes: &[u8]) -> String {
    visible(&String::from_utf8_lossy(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_become_visible() {
        assert_eq!(visible("\x1b]52;c;cm0gLXJmIC8=\x07"), "^[]52;c;cm0gLXJmIC8=^G");
        assert_eq!(visible("\x1b[2Jsafe\rrm -rf /"), "^[[2Jsafe^Mrm -rf /");
        assert_eq!(visible("a\u{9b}31mb\u{7f}\0"), "a<9b>31mb^?^@");
        assert_eq!(visible("abc\u{202e}txt.exe"), "abc<U+202E>txt.exe");
        assert_eq!(visible_line("web\u{200b}01 \u{200f}\u{2028}x\u{feff}"), "web<U+200B>01 <U+200F><U+2028>x<U+FEFF>");
        assert_eq!(visible("a\u{61c}b\u{2066}c\u{e0041}"), "a<U+061C>b<U+2066>c<U+E0041>");
        assert_eq!(visible("two\nlines\tand tab"), "two\nlines\tand tab");
        assert_eq!(visible_line("two\nlines\tand tab"), "two^Jlines\tand tab");
        assert_eq!(visible_bytes(b"\x1b]0;pwned\x07\xff"), "^[]0;pwned^G\u{fffd}");
    }

    #[test]
    fn plain_text_is_borrowed_untouched() {
        let text = "déjà vu — 日本語 ✓";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
        // No output of the function contains a control character other than \n and \t.
        let all: String = (0u32..0x300).filter_map(char::from_u32).collect();
        assert!(!visible_line(&all).chars().any(|c| unsafe_char(c, false)));
        assert!(!visible(&all).chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
    }
}
