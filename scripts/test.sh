#!/usr/bin/env bash
# Runs the whole test suite, installing what the tests need (as root on Debian).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v sudo >/dev/null || need+=(sudo)
command -v tmux >/dev/null || need+=(tmux)
command -v keyctl >/dev/null || need+=(keyutils)
command -v gnome-keyring-daemon >/dev/null || need+=(gnome-keyring)
command -v dbus-run-session >/dev/null || need+=(dbus)
command -v secret-tool >/dev/null || need+=(libsecret-tools)
# su elevation: a test sshd gets root a password in its own mount namespace (openssl hashes it).
command -v openssl >/dev/null || need+=(openssl)
command -v unshare >/dev/null || need+=(util-linux)
# Audit witnesses: a journald namespace of the tests' own (systemd-journald, journalctl).
[ -x /lib/systemd/systemd-journald ] && command -v journalctl >/dev/null || need+=(systemd)
command -v doas >/dev/null || need+=(doas)
# Shell completion is tested in the shells it is written for.
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
# Ansible pipelines: the tests put ansible-core in a venv of their own (target/tmp/ansible-venv).
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
# MCP: the tests install the reference servers and the TypeScript SDK from npm (target/tmp/mcp-npm).
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v curl >/dev/null || need+=(curl)
# SQL proofs are checked against a real PostgreSQL server (Debian's; the tests start their own).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
install -d -m 0755 /run/sshd
# Terraform pipelines run the real terraform (the built-in terraform_data resource needs no provider).
command -v terraform >/dev/null || echo "warning: terraform is not on PATH; the Terraform pipeline tests will fail" >&2
export LANG=C.UTF-8

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --lib --bins --tests
# The library's tests again with every store on a private PostgreSQL (the store's whole API on both
# backends; see src/store/test_backend.rs).
MERLYA_TEST_STORE=postgres cargo test --locked --lib
