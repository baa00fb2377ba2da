//! Running a local tool (terraform, ansible-playbook, kubectl) for a
//! pipeline: in a process group of its own, bounded by the stage's timeout,
//! stopped SIGINT → SIGTERM → SIGKILL on cancel, its lines streamed live.
//! A call that changes something runs only with the [`Clearance`] the
//! approval gave for exactly its command line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::Env;
use crate::exec::{ExecEvent, Stream};
use crate::safety::clearance::Clearance;
use crate::secrets::reference::mask_values;

/// Turns a line a tool printed on stdout into a live (label, text) line, or `None` to hide it.
pub type StdoutView = fn(&str) -> Option<(String, String)>;

/// One invocation: program, arguments, folder, extra environment.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The program (looked up on PATH).
    pub program: String,
    /// Its arguments, never holding a secret.
    pub args: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Extra environment (secrets travel here or in files, never in `args`).
    pub env: BTreeMap<String, String>,
    /// Label of its live lines in the Output pane.
    pub label: String,
    /// Whether stdout is shown live (not for machine output such as `show -json`, which may hold
    /// sensitive values in clear).
    pub live_stdout: bool,
    /// Turns a stdout line into a live (label, text) line, or hides it (machine output read as data).
    pub stdout_view: Option<StdoutView>,
    /// Values masked in every live line and in the output kept (variable values, become passwords).
    pub secrets: Vec<String>,
}

impl ToolCall {
    /// `program args…` run in `cwd`.
    pub fn new(program: &str, args: &[&str], cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            label: program.to_string(),
            live_stdout: true,
            stdout_view: None,
            secrets: Vec::new(),
        }
    }

    /// The command line as shown in approvals and audit rows (environment values are never shown).
    pub fn display(&self) -> String {
        let mut words = vec![self.program.clone()];
        words.extend(self.args.iter().map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\;&|<>*?".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        }));
        words.join(" ")
    }
}

/// How a call ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// Exit code (128+signal when killed); `None` when it did not start or was stopped.
    pub code: Option<i32>,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    /// Why it has no exit code (not found, timed out, cancelled).
    pub error: Option<String>,
}

impl ToolOutput {
    /// Both streams, stdout first.
    pub fn text(&self) -> String {
        let mut out = self.stdout.clone();
        if !self.stderr.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&self.stderr);
        }
        if let Some(error) = &self.error {
            out.push_str(&format!("\n{error}\n"));
        }
        out
    }
}

/// Whether `program` can be found on PATH (or is a path that exists).
pub fn found(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// `Ok` when `program` can be run here, else the error naming it and how to get it.
pub fn require(program: &str, hint: &str) -> Result<(), super::PipelineError> {
    if found(program) {
        Ok(())
    } else {
        Err(super::PipelineError::ToolMissing { tool: program.into(), hint: hint.into() })
    }
}

/// The audit row of a tool run on this machine (terraform, kubectl): host `localhost`.
pub fn local_audit(
    env: &Env,
    command: &str,
    approved_by: &str,
    approval_ref: Option<String>,
) -> crate::store::audit::AuditRequest {
    crate::store::audit::AuditRequest::local(&env.session_id, &env.requested_by, command, approved_by, approval_ref)
}

/// What a tool run needs of its surroundings: where its live lines go, what cancels it, how long it
/// may take. A run's [`Env`] provides it; a tool started before the store opens is given it directly.
#[derive(Clone)]
pub struct ToolEnv {
    /// Live output.
    pub events: crate::exec::EventSender,
    /// Cancels the run (Ctrl-C, `:cancel`).
    pub cancel: tokio_util::sync::CancellationToken,
    /// Bound of the call.
    pub timeout: Duration,
}

impl Env {
    /// What a tool run of this change needs.
    pub fn tools(&self) -> ToolEnv {
        ToolEnv { events: self.events.clone(), cancel: self.cancel.clone(), timeout: self.timeout }
    }
}

/// Runs a call that only looks or plans (it may still run code: the person started it, or approved
/// its dry run).
pub async fn run(env: &Env, call: &ToolCall) -> ToolOutput {
    spawn(&env.tools(), call).await
}

/// Runs a call that changes something: only with a clearance for exactly its command line.
pub async fn run_cleared(env: &Env, call: &ToolCall, clearance: &Clearance) -> ToolOutput {
    if clearance.command() != call.display() {
        return ToolOutput {
            error: Some(format!(
                "`{}` was not approved (the approval was for `{}`)",
                call.display(),
                clearance.command()
            )),
            ..ToolOutput::default()
        };
    }
    spawn(&env.tools(), call).await
}

/// Starts a call that only looks or plans now — its process runs when this returns, before the
/// caller's next await — and waits for it in a task of its own, which cancels `finished` when it ends
/// (or is dropped).
pub fn start(
    tools: ToolEnv,
    call: ToolCall,
    finished: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<ToolOutput> {
    let launched = launch(&call);
    tokio::spawn(async move {
        let _finished = finished.drop_guard();
        supervise(&tools, &call, launched).await
    })
}

async fn spawn(tools: &ToolEnv, call: &ToolCall) -> ToolOutput {
    supervise(tools, call, launch(call)).await
}

/// The call's process, started in a process group of its own with its output piped.
fn launch(call: &ToolCall) -> Result<tokio::process::Child, ToolOutput> {
    let mut command = Command::new(&call.program);
    command
        .args(&call.args)
        .current_dir(&call.cwd)
        .envs(&call.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    tracing::debug!(program = %call.program, args = call.args.len(), "tool started");
    command
        .spawn()
        .map_err(|e| ToolOutput { error: Some(format!("cannot start {}: {e}", call.program)), ..ToolOutput::default() })
}

/// Streams the call's lines, bounds it by the timeout, stops it on cancel, and collects how it ended
/// (or why it did not start).
async fn supervise(env: &ToolEnv, call: &ToolCall, launched: Result<tokio::process::Child, ToolOutput>) -> ToolOutput {
    let mut child = match launched {
        Ok(child) => child,
        Err(failed) => return failed,
    };
    let pgid = child.id().and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1);
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return ToolOutput { error: Some("no output pipes".into()), ..ToolOutput::default() };
    };
    let read = |pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>, stream: Stream| {
        let (events, label, secrets) = (env.events.clone(), call.label.clone(), call.secrets.clone());
        let live = stream == Stream::Stderr || call.live_stdout;
        let view = if stream == Stream::Stdout { call.stdout_view } else { None };
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            let mut all = String::new();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = if secrets.is_empty() { line } else { mask_values(&line, &secrets) };
                let shown = match view {
                    Some(view) => view(&line),
                    None => live.then(|| (label.clone(), line.clone())),
                };
                if let Some((host, text)) = shown {
                    let _ = events.send(ExecEvent::Line { host, stream, line: text }).await;
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        })
    };
    let stdout = read(Box::new(out), Stream::Stdout);
    let stderr = read(Box::new(err), Stream::Stderr);
    let mut error = None;
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = env.cancel.cancelled() => { stop(pgid, &mut child).await; error = Some("cancelled".to_string()); None }
        () = tokio::time::sleep(env.timeout) => {
            stop(pgid, &mut child).await;
            error = Some(format!("timed out after {}s", env.timeout.as_secs_f64()));
            None
        }
    };
    let code = status.and_then(|s| {
        use std::os::unix::process::ExitStatusExt;
        s.code().or_else(|| s.signal().map(|sig| 128 + sig))
    });
    tracing::debug!(program = %call.program, ?code, "tool ended");
    ToolOutput { code, stdout: stdout.await.unwrap_or_default(), stderr: stderr.await.unwrap_or_default(), error }
}

/// Stops the call's process group as a terminal would: SIGINT, SIGTERM, then SIGKILL.
async fn stop(pgid: Option<i32>, child: &mut tokio::process::Child) {
    let Some(pgid) = pgid else { return };
    for (signal, wait) in [(libc::SIGINT, Duration::from_secs(2)), (libc::SIGTERM, Duration::from_secs(5))] {
        // SAFETY: kill(2) with a negative pid signals the group created for this child only.
        unsafe {
            libc::kill(-pgid, signal);
        }
        if tokio::time::timeout(wait, child.wait()).await.is_ok() {
            return;
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait().await;
}
