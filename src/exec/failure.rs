//! Why a command did not complete on a host, as a type: the inventory shows
//! it as a host's last error, reachability and metrics read it, and
//! `--format json` reports it — no module parses error text.

use serde::Serialize;

use crate::ssh::client::SshError;

/// The kind of a host's failure; the human text stays in `HostResult::error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostFailure {
    /// TCP connect failed or did not finish in time (refused, no route, DNS).
    Unreachable,
    /// The server's key was refused (changed, or unknown under the policy).
    HostKey,
    /// No authentication method worked.
    Auth,
    /// The server refused to start the command, or SSH broke after connecting.
    Refused,
    /// The command was cut off by its timeout (and stopped on the host).
    TimedOut,
    /// The operator cancelled the run (the command was stopped on the host).
    Cancelled,
    /// It could not be prepared (a missing secret, no elevation password).
    NotStarted,
    /// The connection closed before the command reported an exit status.
    Lost,
    /// It ran, but its outcome could not be written to the audit log (a full disk): never a success.
    Unrecorded,
}

impl HostFailure {
    /// The kind of an SSH connection failure.
    pub fn of_ssh(error: &SshError) -> Self {
        match error {
            SshError::Timeout(..) | SshError::Unreachable(..) => Self::Unreachable,
            SshError::HostKey(_) => Self::HostKey,
            SshError::Auth(..) => Self::Auth,
            SshError::Protocol(..) => Self::Refused,
        }
    }

    /// Every kind, for reading stored names back.
    pub const ALL: [HostFailure; 9] = [
        Self::Unreachable,
        Self::HostKey,
        Self::Auth,
        Self::Refused,
        Self::TimedOut,
        Self::Cancelled,
        Self::NotStarted,
        Self::Lost,
        Self::Unrecorded,
    ];

    /// Its stored name (as in `--format json`).
    pub fn name(self) -> &'static str {
        self.key().trim_start_matches("failure.")
    }

    /// The kind a stored name stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The locale key of its short name ("unreachable", "host key changed"...).
    pub fn key(self) -> &'static str {
        match self {
            Self::Unreachable => "failure.unreachable",
            Self::HostKey => "failure.host_key",
            Self::Auth => "failure.auth",
            Self::Refused => "failure.refused",
            Self::TimedOut => "failure.timed_out",
            Self::Cancelled => "failure.cancelled",
            Self::NotStarted => "failure.not_started",
            Self::Lost => "failure.lost",
            Self::Unrecorded => "failure.unrecorded",
        }
    }

    /// Whether it says the host cannot be reached at all (`Some(false)` reachability).
    pub fn unreachable(self) -> bool {
        self == Self::Unreachable
    }
}

/// A failure of one run on one host: its kind and the words for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    pub kind: HostFailure,
    pub message: String,
}

impl RunError {
    /// A failure of `kind` described by `message`.
    pub fn new(kind: HostFailure, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

impl From<SshError> for RunError {
    fn from(error: SshError) -> Self {
        Self::new(HostFailure::of_ssh(&error), error.to_string())
    }
}
