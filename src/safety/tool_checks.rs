//! Checkers for diagnostic tools whose read-only use an option table cannot
//! express: strace's `-e` qualifiers, jcmd's diagnostic commands, the aws
//! CLI's operation names and parameters, and the environment dumps of docker
//! and systemctl (variables hold the services' credentials, like
//! `/proc/PID/environ`, which is a credential read too).

use super::checks::operand_texts;
use super::invocation::Invocation;

/// What strace's `-e` may choose: which calls and how they are shown.
const STRACE_QUALIFIERS: &[&str] = &[
    "trace",
    "t",
    "abbrev",
    "a",
    "verbose",
    "v",
    "raw",
    "x",
    "signal",
    "signals",
    "s",
    "status",
    "quiet",
    "q",
    "silent",
    "silence",
    "decode-fds",
    "decode-pids",
    "read",
    "reads",
    "r",
    "write",
    "writes",
    "w",
];

pub(super) fn strace(inv: &Invocation) -> Result<(), String> {
    let expressions = inv.values("-e").map(|v| v.to_string());
    let long = ["--trace", "--signal", "--status", "--quiet", "--abbrev", "--verbose", "--raw"]
        .iter()
        .flat_map(|o| inv.values(o).map(move |v| format!("{}={v}", &o[2..])));
    for expression in expressions.chain(long) {
        // `-e open` is `-e trace=open`.
        let qualifier = expression.split_once('=').map_or("trace", |(q, _)| q);
        if !STRACE_QUALIFIERS.contains(&qualifier) {
            return Err(format!("strace -e {expression} changes what the traced calls do or is not known"));
        }
    }
    match inv
        .values("-p")
        .find(|p| !p.split([',', ' ']).all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
    {
        Some(p) => Err(format!("strace -p {p}: process ids are numbers")),
        None => Ok(()),
    }
}

/// jcmd diagnostic commands that only print (never GC.run, GC.heap_dump, JFR.*, VM.set_flag,
/// ManagementAgent.*, VM.log, Compiler.directives_add, which act or write files).
const JCMD_READS: &[&str] = &[
    "help",
    "VM.version",
    "VM.uptime",
    "VM.flags",
    "VM.command_line",
    "VM.system_properties",
    "VM.info",
    "Thread.print",
    "GC.heap_info",
    "VM.native_memory",
    "PerfCounter.print",
    "Compiler.queue",
    "Compiler.codecache",
    "VM.classloader_stats",
    "VM.metaspace",
    "VM.stringtable",
    "VM.symboltable",
    "VM.dynlibs",
    "VM.events",
];

pub(super) fn jcmd(inv: &Invocation) -> Result<(), String> {
    match operand_texts(inv).as_slice() {
        [] | ["-l"] => Ok(()),
        [process, ..] if process.bytes().all(|b| b.is_ascii_digit()) && *process != "0" => Err(format!(
            "jcmd {process}: a pid that is not a JVM gets SIGQUIT and dies (name the JVM's main class, from `jcmd -l`, or 0)"
        )),
        [_process] => Err("jcmd with a process and no command reads commands from its input".into()),
        [_process, command, args @ ..] => {
            if !JCMD_READS.contains(command) {
                return Err(format!("jcmd {command} is not a diagnostic command known to only read"));
            }
            match args
                .iter()
                .find(|a| !matches!(**a, "summary" | "detail" | "-all" | "-l" | "-e" | "scale=KB" | "scale=MB"))
            {
                Some(a) => Err(format!("jcmd {command} {a}: not a known read-only argument")),
                None => Ok(()),
            }
        }
    }
}

/// aws options refused anywhere, with why.
const AWS_REFUSED: &[(&str, &str)] = &[
    ("--endpoint-url", "sends the request, signed with the credentials, to another endpoint"),
    ("--cli-input-json", "reads the parameters from a file"),
    ("--cli-input-yaml", "reads the parameters from a file"),
    ("--debug", "logs the signed requests"),
    ("--no-verify-ssl", "skips TLS verification"),
    ("--ca-bundle", "changes trust"),
];

pub(super) fn aws(inv: &Invocation) -> Result<(), String> {
    let ops = operand_texts(inv);
    let (Some(service), Some(operation)) = (ops.first(), ops.get(1)) else {
        return Err("aws needs a service and an operation".into());
    };
    // `iot describe-endpoint` creates the endpoint when there is none.
    let reads = (operation.starts_with("describe-") && (*service, *operation) != ("iot", "describe-endpoint"))
        || operation.starts_with("list-")
        || (*service, *operation) == ("sts", "get-caller-identity")
        || (*service, *operation) == ("s3", "ls");
    if !reads {
        return Err(format!("`aws {service} {operation}` is not a describe-* or list-* operation"));
    }
    // Global options come first (the spec's); the operation's own options are operands here.
    let options = inv.options.iter().flat_map(|(o, v)| std::iter::once(o.as_str()).chain(v.as_deref()));
    for word in options.chain(ops.iter().skip(2).copied()) {
        let name = word.split('=').next().unwrap_or_default();
        // argparse takes an unambiguous prefix of an option (`--endpoint` is `--endpoint-url`).
        let refused = AWS_REFUSED.iter().find(|(full, _)| name.len() > 2 && full.starts_with(name));
        let why = match refused {
            Some((_, why)) => Some(*why),
            None if name.starts_with("--") && !name.chars().skip(2).all(|c| c.is_ascii_alphanumeric() || c == '-') => {
                Some("is not an option name")
            }
            None => None,
        };
        if let Some(why) = why {
            return Err(format!("aws {name} {why}"));
        }
        let lower = word.to_ascii_lowercase();
        if ["file://", "fileb://", "http://", "https://"].iter().any(|p| lower.contains(p)) {
            return Err(format!("aws reads the parameter `{word}` from a file or a URL"));
        }
    }
    Ok(())
}

/// The words of a read that ask for a process environment: its variables carry the services'
/// passwords and tokens, which would reach the model.
const ENVIRONMENT_WORDS: &[&str] = &["env", "environment"];

/// `docker inspect -f '{{.Config.Env}}'` (or `{{json .Config}}`, which holds it) prints the
/// containers' environment. A plain `inspect` stays a read, as the everyday command it is.
pub(super) fn docker(inv: &Invocation) -> Result<(), String> {
    for format in inv.values("-f").chain(inv.values("--format")) {
        let names = format.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase);
        let whole_config = format.replace(' ', "").contains(".Config}}");
        if whole_config || names.clone().any(|n| ENVIRONMENT_WORDS.contains(&n.as_str())) {
            return Err(format!(
                "the template `{format}` prints the containers' environment (their secrets would reach the model; approve it to run it)"
            ));
        }
    }
    Ok(())
}

/// `systemctl show-environment` prints the service manager's environment; `show -p Environment…`
/// a unit's.
pub(super) fn systemctl(inv: &Invocation) -> Result<(), String> {
    if inv.operands.first().is_some_and(|o| o.text == "show-environment")
        || inv.path.first().is_some_and(|p| p == "show-environment")
    {
        return Err("`systemctl show-environment` prints the manager's environment (credentials for every unit would reach the model; approve it to run it)".into());
    }
    let properties = inv.values("-p").chain(inv.values("--property"));
    match properties.flat_map(|p| p.split(',')).find(|p| p.to_ascii_lowercase().starts_with("environment")) {
        Some(p) => Err(format!(
            "`systemctl show -p {p}` prints a unit's environment (its credentials would reach the model; approve it to run it)"
        )),
        None => Ok(()),
    }
}
