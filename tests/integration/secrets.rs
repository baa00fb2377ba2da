//! `merlya secret` against the real OS keyrings: the Secret Service
//! (gnome-keyring under its own D-Bus session), the kernel keyring (under its
//! own session keyring), and the in-memory fallback.

use crate::support;

use std::process::{Command, Stdio};

use support::{TestEnv, text};

fn merlya() -> &'static str {
    env!("CARGO_BIN_EXE_merlya")
}

#[test]
fn secret_service_round_trip_with_gnome_keyring() {
    let env = TestEnv::new();
    let runtime = env.dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    support::set_mode(&runtime, 0o700);
    let m = merlya();
    let script = format!(
        "set -e\n\
         printf %s unlock-pw | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null\n\
         printf 'tok-123\\n' | '{m}' secret set api:web01:token\n\
         echo GET=$('{m}' secret get api:web01:token)\n\
         echo TOOL=$(secret-tool lookup service merlya username api:web01:token || true)\n\
         '{m}' secret list\n\
         '{m}' secret rm api:web01:token\n\
         '{m}' secret get api:web01:token || echo GONE\n"
    );
    let out = Command::new("dbus-run-session")
        .args(["--", "sh", "-c", &script])
        .env("HOME", env.home())
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("MERLYA_HOME", env.merlya_home())
        .env("MERLYA_SECRETS_BACKEND", "secret-service")
        .stdin(Stdio::null())
        .output()
        .expect("dbus-run-session (scripts/test.sh installs dbus and gnome-keyring)");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("stored api:web01:token in the Secret Service"), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("GET=tok-123"), "{stdout}");
    assert!(stdout.contains("api:web01:token  Secret Service"), "{stdout}");
    assert!(stdout.contains("removed api:web01:token") && stdout.contains("GONE"), "{stdout}");
    // The value is in the keyring, never in merlya's files.
    assert!(!env.database_text().contains("tok-123"));
}

#[test]
fn kernel_keyring_round_trip_across_processes() {
    let env = TestEnv::new();
    let m = merlya();
    let script = format!(
        "printf 'hunter2\\n' | '{m}' secret set sudo:web01:password && '{m}' secret get sudo:web01:password && \
         '{m}' secret list --format json && '{m}' secret rm sudo:web01:password"
    );
    let out = env.keyring_session(&script).env("MERLYA_SECRETS_BACKEND", "keyring").output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("stored sudo:web01:password in the kernel keyring\nhunter2\n"),
        "{stdout}{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("\"backend\": \"kernel keyring\""), "{stdout}");
    assert!(stdout.contains("removed sudo:web01:password"), "{stdout}");
}

#[test]
fn memory_fallback_warns_and_values_are_never_taken_from_argv() {
    let env = TestEnv::new();
    let mut child = env
        .merlya(&["secret", "set", "api:x:token"])
        .env("MERLYA_SECRETS_BACKEND", "memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"v\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("warning: no OS keyring is usable here"), "{}", text(&out.stderr));
    // There is no way to pass a value on the command line.
    let out = env.run(&["secret", "set", "api:x:token", "value-on-argv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&env.run(&["secret", "set", "bad name"]).stderr).contains("invalid secret name"));
}

#[test]
fn an_explicit_keyring_that_is_not_usable_fails_with_the_reason() {
    let env = TestEnv::new();
    let m = merlya();
    // A session keyring of its own that nobody may write to: keyutils is there but unusable.
    let script = format!(
        "keyctl setperm @s 0 && printf 'v\\n' | '{m}' secret set api:x:token; echo SET=$?; \
         '{m}' secret get api:x:token; echo GET=$?; \
         MERLYA_SECRETS_BACKEND=auto; printf 'v\\n' | '{m}' secret set api:x:token; echo AUTO=$?"
    );
    let out = env.keyring_session(&script).env("MERLYA_SECRETS_BACKEND", "keyring").output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("SET=1") && stdout.contains("GET=1"), "{stdout}{stderr}");
    assert!(
        stderr.contains("secrets.backend is `keyring`, but the kernel keyring is not usable here: a test "),
        "{stderr}"
    );
    assert!(stderr.contains("AccessDenied") || stderr.contains("Permission denied"), "the system's reason: {stderr}");
    let explicit = stdout.split("GET=").next().unwrap_or_default();
    assert!(!explicit.contains("stored"), "nothing kept in memory instead: {stdout}");
    // The default still falls back to memory, with a warning.
    assert!(stdout.contains("AUTO=0") && stdout.contains("stored api:x:token in the memory store"), "{stdout}");
    assert!(stderr.contains("warning: no OS keyring is usable here"), "{stderr}");
}
