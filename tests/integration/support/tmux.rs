//! The real `merlya` console in a tmux session: start it, send keys, read
//! the screen.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{TestEnv, text};

/// A tmux server running one session; killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(name: &str, env: &TestEnv, width: u16, height: u16) -> Self {
        Self::start_with(name, env, "", width, height)
    }

    /// The console with extra `VAR=value` words in its environment.
    pub fn start_with(name: &str, env: &TestEnv, extra_env: &str, width: u16, height: u16) -> Self {
        let cmd = format!(
            "MERLYA_HOME='{}' HOME='{}' USER=tester LANG=C.UTF-8 NO_COLOR=1 MERLYA_SETUP=skip {extra_env} '{}'; echo EXITED $?; sleep 60",
            env.merlya_home().display(),
            env.home().display(),
            env!("CARGO_BIN_EXE_merlya"),
        );
        Self::attach(format!("merlya-e2e-{name}-{}", std::process::id()), &cmd, width, height)
    }

    /// The console configured for the scripted LLM at `url` (see `TestEnv::use_scripted_llm`).
    pub fn start_with_llm(name: &str, env: &TestEnv, url: &str, width: u16, height: u16) -> Self {
        env.use_scripted_llm(url);
        Self::start_with(name, env, "MERLYA_TEST_LLM_KEY=sk-e2e", width, height)
    }

    /// A session running an arbitrary shell command, on a tmux server of its own: `socket` is made
    /// unique within this process (every integration test runs in one), so two tests that chose the
    /// same name never share a server.
    pub fn attach(socket: String, cmd: &str, width: u16, height: u16) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("{socket}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let status = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", &width.to_string(), "-y", &height.to_string(), cmd])
            .env("LANG", "C.UTF-8")
            .env_remove("TMUX")
            .status()
            .expect("tmux is installed (scripts/test.sh installs it)");
        assert!(status.success());
        Self { socket }
    }

    /// Runs a tmux command on this server and returns its output.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket]).args(args).output().unwrap();
        text(&out.stdout)
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"]).output().unwrap();
        text(&out.stdout)
    }

    /// The screen with its attributes as escape sequences (`NO_COLOR`: bold, reverse...).
    #[allow(dead_code)]
    pub fn styled_screen(&self) -> String {
        let out =
            Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-e", "-t", "0"]).output().unwrap();
        text(&out.stdout)
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["-L", self.socket.as_str(), "send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }

    /// Escape on its own: a key sent right after it would read as Alt-key.
    pub fn escape(&self) {
        self.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(250));
    }

    pub fn type_text(&self, literal: &str) {
        assert!(
            Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "0", "-l", literal])
                .status()
                .unwrap()
                .success()
        );
    }

    /// Types `line` in the Chat pane's input and sends it. The input stays open after a question, so
    /// whatever was open is left first (Escape) and the Chat pane focused.
    #[allow(dead_code)]
    pub fn chat(&self, line: &str) {
        self.escape();
        self.keys(&["3", "i"]);
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// Types `line` on the console's command line (`:` or `!` prefix included) and submits it.
    pub fn command(&self, line: &str) {
        let (prefix, rest) = line.split_at(1);
        self.keys(&[prefix]);
        self.type_text(rest);
        self.keys(&["Enter"]);
    }

    /// Waits until the program in the pane has left (or entered) the alternate screen: keys typed for the
    /// shell before a console has exited would be read by the console.
    #[allow(dead_code)]
    pub fn wait_alternate_screen(&self, on: bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let want = if on { "1" } else { "0" };
        while self.tmux(&["display", "-p", "-t", "0", "#{alternate_on}"]).trim() != want {
            assert!(Instant::now() < deadline, "waited for alternate_on={want}; the screen shows:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?}"), |screen| screen.contains(needle))
    }

    /// Waits for a screen `ready` accepts (a redraw can be caught half-way), `what` naming it.
    pub fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "waited for {what}; the screen shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    /// The server and what runs in it (a console, a shell) end with the test, pass or fail.
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).env_remove("TMUX").status();
    }
}
