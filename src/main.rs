//! The `merlya` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    // First, while the process has one thread: secrets out of /proc/<merlya>/environ, not dumpable.
    merlya::hardening::harden_process();
    merlya::cli::main()
}
