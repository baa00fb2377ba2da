//! Prefixes that run another command: `sudo`, `env`, `nohup`, `timeout`,
//! `nice`, `xargs`, `watch`, ... Stripping them exposes the command that
//! really runs, which is what gets classified.

use super::parse::Word;

/// What is left after a wrapper, or why it cannot be judged.
pub enum Unwrapped<'a> {
    /// The wrapped command's words (may be empty: the wrapper alone).
    Command(&'a [Word]),
    /// The wrapped command is a shell string (`watch 'df -h'`), to be parsed.
    Script(String),
    /// The wrapper starts an interactive or unknown program.
    Refuse(String),
}

/// Options that take a value, per wrapper.
fn valued_options(wrapper: &str) -> &'static [&'static str] {
    match wrapper {
        "sudo" => &[
            "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-T", "-U", "--user", "--group", "--host", "--prompt",
            "--chdir",
        ],
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
        "stdbuf" => &["-i", "-o", "-e"],
        "xargs" => {
            &["-n", "-I", "-L", "-P", "-d", "-a", "-E", "-s", "--max-args", "--max-procs", "--delimiter", "--arg-file"]
        }
        "watch" => &["-n", "--interval", "-q", "--equexit"],
        "taskset" => &[],
        "chrt" => &[],
        _ => &[],
    }
}

/// Whether `name` is a wrapper this module knows.
pub fn is_wrapper(name: &str) -> bool {
    matches!(
        name,
        "sudo"
            | "doas"
            | "env"
            | "nohup"
            | "time"
            | "command"
            | "exec"
            | "nice"
            | "ionice"
            | "stdbuf"
            | "timeout"
            | "xargs"
            | "watch"
            | "chronic"
    )
}

/// Strips the wrapper `name` from `args` (the words after it).
pub fn unwrap<'a>(name: &str, args: &'a [Word]) -> Unwrapped<'a> {
    let valued = valued_options(name);
    let mut i = 0;
    // `timeout` takes a duration after its options.
    let mut positional_to_skip = usize::from(name == "timeout");
    while i < args.len() {
        let arg = &args[i].text;
        if arg == "--" {
            i += 1;
            break;
        }
        if name == "env" && !arg.starts_with('-') && arg.contains('=') {
            i += 1;
            continue;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            match (name, arg.as_str()) {
                ("sudo" | "doas", "-s" | "-i" | "--shell" | "--login") if i + 1 == args.len() => {
                    return Unwrapped::Refuse(format!("{name} {arg} opens an interactive root shell"));
                }
                ("sudo", "-e" | "--edit") => return Unwrapped::Refuse("sudo -e edits files".into()),
                ("env", "-S" | "--split-string") => {
                    return Unwrapped::Refuse("env -S runs a string as a command".into());
                }
                ("command", "-v" | "-V") => return Unwrapped::Command(&[]),
                _ => {}
            }
            let takes_value = valued.contains(&arg.as_str());
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        // `nice -5 cmd` style numbers were consumed as options above.
        if positional_to_skip > 0 {
            positional_to_skip -= 1;
            i += 1;
            continue;
        }
        break;
    }
    let rest = &args[i.min(args.len())..];
    if name == "watch" {
        let script: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
        return Unwrapped::Script(script.join(" "));
    }
    Unwrapped::Command(rest)
}
