//! merlya's own process, hardened before anything else runs (ADR 0026 §12): what a command on
//! this machine could read of it through `/proc/<merlya>` is taken away.
//!
//! - Secret values (a model's API key, tokens, passwords) are wiped from the environment block the
//!   kernel shows as `/proc/<pid>/environ` (and `ps eww`). That block is the memory the process
//!   started with: libc's `environ` points into it. Each secret entry is copied to the heap, `environ`
//!   is pointed at the copy (so `std::env::var` and children still get the value), and the original
//!   bytes are overwritten with `*`. Limits: the value stays in merlya's heap (see below), a program
//!   merlya starts with its environment gets it in its own block, and the length shows.
//! - The process is not dumpable (`PR_SET_DUMPABLE` 0): another process of the same user cannot
//!   read its `environ`, `mem`, `fd/`, `root/` or `exe`, nor ptrace it; root still can. Side effects:
//!   no core dump on a crash, and a debugger must run as root (or start merlya itself).

use std::ffi::{CStr, CString};

unsafe extern "C" {
    /// libc's environment: `NAME=value` strings, at first those the kernel put below the stack.
    static mut environ: *mut *mut libc::c_char;
}

/// Hardens the process. Must run first in `main`, before any thread exists: it rewrites libc's
/// environment in place, which nothing may read meanwhile.
pub fn harden_process() {
    scrub_environment();
    // SAFETY: prctl(2) with PR_SET_DUMPABLE changes only this process's dumpable flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Wipes the values of secret-looking variables from the environment block the kernel shows,
/// keeping them for merlya (see the module comment); returns how many were wiped.
fn scrub_environment() -> usize {
    let mut wiped = 0;
    // SAFETY: called single-threaded before anything reads the environment; `environ` is a
    // null-terminated array of NUL-terminated strings, and the kernel's block is writable.
    unsafe {
        let mut cursor = environ;
        if cursor.is_null() {
            return 0;
        }
        while !(*cursor).is_null() {
            let entry = *cursor;
            let bytes = CStr::from_ptr(entry).to_bytes();
            if let Some(eq) = bytes.iter().position(|b| *b == b'=') {
                let value_len = bytes.len() - eq - 1;
                if value_len > 0 && is_secret_variable(&String::from_utf8_lossy(&bytes[..eq]), &bytes[eq + 1..]) {
                    // `bytes` holds no NUL, so the copy cannot fail; the copy is never freed (libc
                    // frees only strings it allocated itself).
                    if let Ok(copy) = CString::new(bytes) {
                        *cursor = copy.into_raw();
                        std::ptr::write_bytes(entry.add(eq + 1), b'*', value_len);
                        wiped += 1;
                    }
                }
            }
            cursor = cursor.add(1);
        }
    }
    wiped
}

/// Whether a variable looks like it holds a secret: its name (`…_API_KEY`, `…TOKEN`, `…SECRET`,
/// `…PASSWORD`, `…_PASS`, `PGPASSWORD`, `AWS_SECRET_ACCESS_KEY`…) or a URL with a password.
/// Wiping one that is not costs nothing: merlya keeps the value.
fn is_secret_variable(name: &str, value: &[u8]) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::redact::is_secret_name(name)
        || ["KEY", "PASS", "_PWD", "_PIN", "DSN"].iter().any(|end| upper.ends_with(end))
        || url_with_password(&String::from_utf8_lossy(value))
}

/// `scheme://user:password@host…`.
fn url_with_password(value: &str) -> bool {
    value.split_once("://").is_some_and(|(_, rest)| {
        let authority = rest.split('/').next().unwrap_or_default();
        authority.rsplit_once('@').is_some_and(|(user, _)| user.contains(':'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_variables_are_recognised() {
        for name in ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "DB_PASS", "MY_KEY"] {
            assert!(is_secret_variable(name, b"x"), "{name}");
        }
        assert!(is_secret_variable("DATABASE_URL", b"postgres://app:hunter2@db/app"));
        for name in ["PATH", "PWD", "OLDPWD", "HOME", "LANG", "TERM"] {
            assert!(!is_secret_variable(name, b"/usr/bin"), "{name}");
        }
        assert!(!is_secret_variable("URL", b"https://example.com/a:b@c"));
    }
}
