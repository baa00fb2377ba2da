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

/// describe-* and list-* operations whose answers carry secrets, with why: they read, but what
/// they print would reach the model, so they need an approval. `get-*` operations
/// (`secretsmanager get-secret-value`, `ssm get-parameter --with-decryption`,
/// `sts get-session-token`, `lambda get-function`, `cloudformation get-template`) are never
/// proved in the first place.
const AWS_SECRET_OPERATIONS: &[(&str, &str, &str)] = &[
    ("lambda", "list-functions", "prints every function's environment variables"),
    ("lambda", "list-versions-by-function", "prints each version's environment variables"),
    ("ec2", "describe-launch-template-versions", "prints the templates' user data"),
    ("ec2", "describe-spot-instance-requests", "prints the launch specifications' user data"),
    ("ec2", "describe-spot-fleet-requests", "prints the launch specifications' user data"),
    ("autoscaling", "describe-launch-configurations", "prints the launch configurations' user data"),
    ("ecs", "describe-task-definition", "prints the containers' environment"),
    ("ecs", "describe-tasks", "prints the tasks' overrides, environment included"),
    ("batch", "describe-job-definitions", "prints the containers' environment"),
    ("batch", "describe-jobs", "prints the containers' environment"),
    ("elasticbeanstalk", "describe-configuration-settings", "prints the environment properties"),
    ("apprunner", "describe-service", "prints the runtime environment variables"),
    ("opsworks", "describe-stacks", "prints the stacks' custom JSON and repository credentials"),
    ("opsworks", "describe-apps", "prints the apps' environment and TLS private keys"),
    ("sagemaker", "describe-training-job", "prints the job's environment and hyperparameters"),
    ("sagemaker", "describe-processing-job", "prints the job's environment"),
    ("sagemaker", "describe-transform-job", "prints the job's environment"),
    ("sagemaker", "describe-model", "prints the containers' environment"),
    ("emr", "describe-cluster", "prints the cluster configurations (metastore passwords among them)"),
    ("amplify", "list-apps", "prints the apps' environment variables and basic-auth credentials"),
    ("amplify", "list-branches", "prints the branches' environment variables and basic-auth credentials"),
    ("appsync", "list-api-keys", "prints the API keys"),
    ("cognito-idp", "describe-user-pool-client", "prints the client secret"),
    ("ssm", "list-commands", "prints the parameters of the commands sent (scripts and their secrets)"),
    ("ssm", "list-command-invocations", "prints the commands sent and, with --details, their output"),
    ("stepfunctions", "describe-execution", "prints the execution's input and output"),
    ("kinesisanalyticsv2", "describe-application", "prints the application's environment properties"),
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
    if let Some((_, _, why)) = AWS_SECRET_OPERATIONS.iter().find(|(s, o, _)| s == service && o == operation) {
        return Err(format!("`aws {service} {operation}` {why}: they would reach the model (approve it to run it)"));
    }
    // `--attribute userData` prints the instance's user data (bootstrap scripts and their secrets).
    if (*service, *operation) == ("ec2", "describe-instance-attribute")
        && ops.iter().skip(2).any(|w| w.to_ascii_lowercase().contains("userdata"))
    {
        return Err("`aws ec2 describe-instance-attribute --attribute userData` prints the instance's user data (its secrets would reach the model; approve it to run it)".into());
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

/// Unit and manager properties whose values are secrets: `Environment=` holds the variables
/// set for a unit (passwords and tokens among them), `SetCredential=` a credential in plain
/// text and `SetCredentialEncrypted=` one this host can decrypt. Compared by prefix, lowercase,
/// so `EnvironmentFiles` and any spelling of them is covered. `ExecStart=` is not here: a
/// command line is what `ps` shows every user; `LoadCredential=` names files, not their bytes.
const SYSTEMCTL_SECRET_PROPERTIES: &[&str] = &["environment", "setcredential"];

/// `systemctl show-environment` prints the service manager's environment; `show` prints every
/// property of a unit (or of the manager, with no unit) unless `-p`/`-P`/`--property` choose
/// some, and `Environment=`/`SetCredential=` hold secrets. So `show` is a read only when it
/// names its properties and none of them is secret-bearing.
pub(super) fn systemctl(inv: &Invocation) -> Result<(), String> {
    if inv.operands.first().is_some_and(|o| o.text == "show-environment")
        || inv.path.first().is_some_and(|p| p == "show-environment")
    {
        return Err("`systemctl show-environment` prints the manager's environment (credentials for every unit would reach the model; approve it to run it)".into());
    }
    let showing =
        inv.path.first().is_some_and(|p| p == "show") || inv.operands.first().is_some_and(|o| o.text == "show");
    let properties: Vec<&str> =
        ["-p", "-P", "--property"].iter().flat_map(|o| inv.values(o)).flat_map(|p| p.split(',')).collect();
    if let Some(p) = properties
        .iter()
        .find(|p| SYSTEMCTL_SECRET_PROPERTIES.iter().any(|s| p.trim().to_ascii_lowercase().starts_with(s)))
    {
        return Err(format!(
            "`systemctl show -p {p}` prints a secret-bearing property (a unit's environment or credentials would reach the model; approve it to run it)"
        ));
    }
    if showing && properties.iter().all(|p| p.trim().is_empty()) {
        return Err("`systemctl show` without `-p PROPERTY` prints every property, the environment and credentials too (they would reach the model; name the properties with -p, or approve it)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::safety::analyze;

    #[test]
    fn systemctl_show_is_a_read_only_for_named_harmless_properties() {
        for cmd in [
            "systemctl show",
            "systemctl show nginx",
            "systemctl --user show",
            "systemctl show -P Environment nginx",
            "systemctl show -PEnvironment nginx",
            "systemctl show --property=ActiveState --property=Environment nginx",
            "systemctl show -p MainPID,SetCredential app",
            "systemctl show -p '' app",
            "systemctl show-environment",
        ] {
            assert!(!analyze(cmd).is_read_only(), "{cmd}");
        }
        for cmd in [
            "systemctl show -p ActiveState,SubState nginx",
            "systemctl show -P MainPID nginx",
            "systemctl status nginx",
        ] {
            assert!(analyze(cmd).is_read_only(), "{cmd}: {:?}", analyze(cmd).reasons);
        }
    }

    #[test]
    fn aws_reads_that_return_secrets_need_approval() {
        for cmd in [
            "aws lambda list-functions",
            "aws ecs describe-task-definition --task-definition app",
            "aws ec2 describe-instance-attribute --instance-id i-1 --attribute userData",
            "aws ec2 describe-instance-attribute --instance-id i-1 --attribute=userData",
            "aws autoscaling describe-launch-configurations",
        ] {
            assert!(!analyze(cmd).is_read_only(), "{cmd}");
        }
        for cmd in
            ["aws ec2 describe-instance-attribute --instance-id i-1 --attribute instanceType", "aws ecs list-services"]
        {
            assert!(analyze(cmd).is_read_only(), "{cmd}: {:?}", analyze(cmd).reasons);
        }
    }
}
