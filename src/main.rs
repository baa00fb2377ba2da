//! The `merlya` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    merlya::cli::main()
}
