//! Real `terraform` on a folder, hermetic: an empty CLI configuration (no ~/.terraformrc, no plugin
//! mirror), TF_IN_AUTOMATION, no input. Only what needs no provider download runs fully offline
//! (the built-in `terraform_data` resource); `fmt` needs no provider at all.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::text;

/// Terraform for the folders of one test: its own empty CLI configuration.
pub struct Terraform {
    rc: PathBuf,
}

impl Terraform {
    /// Uses `scratch` (a test's temporary folder) for its configuration file.
    pub fn new(scratch: &Path) -> Self {
        let rc = scratch.join("terraformrc");
        std::fs::write(&rc, "").unwrap();
        Self { rc }
    }

    /// `terraform ARGS` in `dir`.
    pub fn run(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new("terraform")
            .args(args)
            .current_dir(dir)
            .env("TF_CLI_CONFIG_FILE", &self.rc)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("NO_COLOR", "1")
            .env_remove("TF_PLUGIN_CACHE_DIR")
            .output()
            .expect("terraform on PATH")
    }

    /// `terraform ARGS` in `dir`, expecting exit code `code`; returns stdout.
    #[track_caller]
    pub fn expect(&self, dir: &Path, args: &[&str], code: i32) -> String {
        let out = self.run(dir, args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "terraform {args:?} in {}:\n{}\n{}",
            dir.display(),
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }
}
