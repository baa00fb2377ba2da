//! From a step's output on one host to a finding: the value its parse rule
//! reads, and the verdict its thresholds give.

use serde::Serialize;

use super::spec::{Parse, Step};
use crate::exec::HostResult;

/// How bad a finding is; ordered so that the worst sorts last (`max` is the worst).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within its thresholds.
    Ok,
    /// No value could be read (the command failed, or said nothing the rule understands).
    Unknown,
    /// Past the warning threshold.
    Warn,
    /// Past the critical threshold.
    Crit,
}

impl Verdict {
    /// The word shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Unknown => "unknown",
            Verdict::Warn => "WARN",
            Verdict::Crit => "CRIT",
        }
    }
}

/// One check on one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The host.
    pub host: String,
    /// The check (`disk`).
    pub check: String,
    /// The value as shown (`97 % /var`).
    pub value: String,
    /// The number read, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    /// The judgement.
    pub verdict: Verdict,
    /// Why: the threshold passed, or why no value could be read.
    pub detail: String,
    /// The host could not be reached (or refused merlya): no check could run there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
}

/// Judges `result` of `step` on its host; `now` is this machine's Unix time (for clock skew).
pub fn judge(step: &Step, result: &HostResult, now: f64) -> Finding {
    let mut finding = Finding {
        host: result.host.clone(),
        check: step.check.clone(),
        value: String::new(),
        number: None,
        verdict: Verdict::Unknown,
        detail: String::new(),
        unreachable: false,
    };
    let Some(code) = result.exit_code else {
        use crate::exec::HostFailure as F;
        finding.unreachable =
            matches!(result.failure, Some(F::Unreachable | F::HostKey | F::Auth | F::Lost | F::Refused));
        finding.detail = first_line(result.error.as_deref().unwrap_or("the command did not complete"));
        return finding;
    };
    if step.parse == Parse::ExitCode {
        let ok = if step.ok_values.is_empty() { code == 0 } else { step.ok_values.contains(&code.to_string()) };
        finding.value = format!("exit {code}");
        finding.number = Some(f64::from(code));
        finding.verdict = if ok { Verdict::Ok } else { Verdict::Crit };
        finding.detail = first_line(&result.stderr);
        return finding;
    }
    if !step.ok_exit_codes.contains(&code) {
        let said = if result.stderr.trim().is_empty() { &result.stdout } else { &result.stderr };
        finding.detail = format!("exit {code}: {}", first_line(said));
        return finding;
    }
    let read = read_value(&step.parse, &result.stdout, now);
    match read {
        Reading::Number { value, label } => {
            finding.number = Some(value);
            (finding.verdict, finding.detail) = threshold(step, value);
            // A counted line is shown as an example only when the count is a problem.
            let label = label.filter(|_| !matches!(step.parse, Parse::Lines { .. }) || finding.verdict > Verdict::Ok);
            finding.value = shown(value, &step.unit, label.as_deref());
        }
        Reading::Text(text) => {
            finding.value = text.clone();
            let ok = step.ok_values.is_empty() || step.ok_values.contains(&text);
            finding.verdict = if ok { Verdict::Ok } else { Verdict::Crit };
            if !ok {
                finding.detail = format!("expected {}", step.ok_values.join(" or "));
            }
        }
        Reading::Nothing(why) => finding.detail = why,
    }
    finding
}

/// What a parse rule read.
enum Reading {
    Number { value: f64, label: Option<String> },
    Text(String),
    Nothing(String),
}

fn read_value(parse: &Parse, stdout: &str, now: f64) -> Reading {
    let nothing = |what: &str| Reading::Nothing(format!("no {what} in the output: {}", first_line(stdout)));
    let captures = |regex: &str| regex::Regex::new(regex).ok().and_then(|r| r.captures(stdout).map(|c| (r.clone(), c)));
    let group = |c: &regex::Captures, name: &str| c.name(name).and_then(|m| m.as_str().parse::<f64>().ok());
    match parse {
        Parse::Number { regex: None } => first_number(stdout).map_or_else(|| nothing("number"), number),
        Parse::Number { regex: Some(regex) } => match captures(regex) {
            Some((_, c)) => {
                let m = c.name("value").or_else(|| c.get(1)).or_else(|| c.get(0));
                m.and_then(|m| m.as_str().trim().parse::<f64>().ok()).map_or_else(|| nothing("number"), number)
            }
            None => nothing("match"),
        },
        Parse::Ratio { regex } | Parse::Percent { regex } => match captures(regex) {
            Some((_, c)) => match (group(&c, "part"), group(&c, "whole")) {
                (Some(part), Some(whole)) => {
                    let ratio = if whole == 0.0 { 0.0 } else { part / whole };
                    number(if matches!(parse, Parse::Percent { .. }) { ratio * 100.0 } else { ratio })
                }
                _ => nothing("numbers"),
            },
            None => nothing("match"),
        },
        Parse::PercentUsed { regex } => match captures(regex) {
            Some((_, c)) => match (group(&c, "total"), group(&c, "available")) {
                (Some(total), Some(available)) if total > 0.0 => number(100.0 * (total - available) / total),
                (Some(_), Some(_)) => number(0.0),
                _ => nothing("numbers"),
            },
            None => nothing("match"),
        },
        Parse::MaxPercent => {
            let mut best: Option<(f64, String)> = None;
            for line in stdout.lines() {
                for word in line.split_whitespace() {
                    if let Some(p) = word.strip_suffix('%').and_then(|w| w.parse::<f64>().ok())
                        && best.as_ref().is_none_or(|(b, _)| p > *b)
                    {
                        best = Some((p, line.split_whitespace().last().unwrap_or_default().to_string()));
                    }
                }
            }
            best.map_or_else(|| nothing("percentage"), |(value, label)| Reading::Number { value, label: Some(label) })
        }
        Parse::Lines { regex } => {
            let matcher = regex.as_deref().and_then(|r| regex::Regex::new(r).ok());
            let lines: Vec<&str> = stdout
                .lines()
                .filter(|l| !l.trim().is_empty())
                .filter(|l| matcher.as_ref().is_none_or(|m| m.is_match(l)))
                .collect();
            let label = lines.first().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "));
            Reading::Number { value: lines.len() as f64, label: label.map(|l| l.chars().take(60).collect()) }
        }
        Parse::Skew => first_number(stdout).map_or_else(|| nothing("time"), |t| number((t - now).abs().round())),
        Parse::Text => Reading::Text(first_line(stdout)),
        Parse::ExitCode => Reading::Nothing("judged by the exit code".into()),
    }
}

fn number(value: f64) -> Reading {
    Reading::Number { value, label: None }
}

fn first_number(text: &str) -> Option<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .find_map(|w| w.parse::<f64>().ok().filter(|v| v.is_finite()))
}

fn first_line(text: &str) -> String {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().chars().take(120).collect()
}

/// `97 %  /var`, `0.42 per core`.
fn shown(value: f64, unit: &str, label: Option<&str>) -> String {
    // A duration in seconds reads as a person says it (uptime "23 min", not "1411.14 s").
    if unit == "s" && value >= 60.0 {
        let human = duration(value);
        return match label {
            Some(label) if !label.is_empty() => format!("{human} {label}"),
            _ => human,
        };
    }
    let number = if value.fract() == 0.0 && value.abs() < 1e15 { format!("{value:.0}") } else { format!("{value:.2}") };
    let unit = if unit.is_empty() || unit == "%" { unit.to_string() } else { format!(" {unit}") };
    match label {
        Some(label) if !label.is_empty() => format!("{number}{unit} {label}"),
        _ => format!("{number}{unit}"),
    }
}

/// Seconds as a person says them: `23 min`, `5 h 2 min`, `41 d 3 h`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    let (days, hours, minutes) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60);
    match (days, hours) {
        (0, 0) => format!("{minutes} min"),
        (0, h) if minutes == 0 => format!("{h} h"),
        (0, h) => format!("{h} h {minutes} min"),
        (d, 0) => format!("{d} d"),
        (d, h) => format!("{d} d {h} h"),
    }
}

/// The verdict of `value` against the step's thresholds, and which one it passed.
fn threshold(step: &Step, value: f64) -> (Verdict, String) {
    let past = |limit: f64| if step.lower_is_worse { value <= limit } else { value >= limit };
    let word = if step.lower_is_worse { "≤" } else { "≥" };
    match (step.crit, step.warn) {
        (Some(crit), _) if past(crit) => (Verdict::Crit, format!("critical at {word} {crit}{}", unit_tail(step))),
        (_, Some(warn)) if past(warn) => (Verdict::Warn, format!("warning at {word} {warn}{}", unit_tail(step))),
        _ => (Verdict::Ok, String::new()),
    }
}

fn unit_tail(step: &Step) -> String {
    if step.unit.is_empty() || step.unit == "%" { step.unit.clone() } else { format!(" {}", step.unit) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(parse: Parse, warn: Option<f64>, crit: Option<f64>) -> Step {
        Step {
            check: "c".into(),
            description: String::new(),
            command: "x".into(),
            parse,
            warn,
            crit,
            lower_is_worse: false,
            unit: String::new(),
            ok_values: Vec::new(),
            ok_exit_codes: vec![0],
        }
    }

    fn out(stdout: &str, code: i32) -> HostResult {
        HostResult { host: "h".into(), exit_code: Some(code), stdout: stdout.into(), ..HostResult::default() }
    }

    #[test]
    fn each_rule_reads_its_value_and_thresholds_judge_it() {
        let df =
            "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/a 10 5 5 50% /\n/dev/b 10 9 1 97% /var\n";
        let f = judge(&step(Parse::MaxPercent, Some(85.0), Some(95.0)), &out(df, 0), 0.0);
        assert_eq!((f.value.as_str(), f.verdict), ("97 /var", Verdict::Crit));

        let load = "12:00:00 up 1 day, load average: 7.50, 1.0, 1.0\n4\n";
        let regex = r"load average:\s*(?P<part>[0-9.]+)(?s:.*)\n(?P<whole>[0-9]+)\s*$".to_string();
        let f = judge(&step(Parse::Ratio { regex }, Some(1.0), Some(2.0)), &out(load, 0), 0.0);
        assert_eq!((f.number, f.verdict), (Some(1.875), Verdict::Warn));

        let free = "              total        used        free      shared  buff/cache   available\nMem:     1000 900 50 0 50 40\nSwap: 0 0 0\n";
        let regex = r"(?m)^Mem:\s+(?P<total>\d+)(?:\s+\d+){4}\s+(?P<available>\d+)".to_string();
        let f = judge(&step(Parse::PercentUsed { regex }, Some(85.0), Some(95.0)), &out(free, 0), 0.0);
        assert_eq!((f.number, f.verdict), (Some(96.0), Verdict::Crit));
        let regex = r"(?m)^Swap:\s+(?P<whole>\d+)\s+(?P<part>\d+)".to_string();
        let f = judge(&step(Parse::Percent { regex }, Some(50.0), None), &out(free, 0), 0.0);
        assert_eq!((f.number, f.verdict), (Some(0.0), Verdict::Ok));

        let f = judge(&step(Parse::Skew, Some(5.0), Some(60.0)), &out("1000300\n", 0), 1_000_000.0);
        assert_eq!((f.number, f.verdict), (Some(300.0), Verdict::Crit));

        let mut up = step(Parse::Number { regex: None }, Some(3600.0), Some(600.0));
        up.lower_is_worse = true;
        assert_eq!(judge(&up, &out("120.5 300.1\n", 0), 0.0).verdict, Verdict::Crit);
        assert_eq!(judge(&up, &out("99999 300.1\n", 0), 0.0).verdict, Verdict::Ok);

        let units = step(Parse::Lines { regex: None }, Some(1.0), Some(3.0));
        let f = judge(&units, &out("nginx.service loaded failed failed nginx\n", 0), 0.0);
        assert_eq!((f.number, f.verdict), (Some(1.0), Verdict::Warn));
        assert!(f.value.contains("nginx.service"), "{}", f.value);

        let mut active = step(Parse::Text, None, None);
        active.ok_values = vec!["active".into()];
        assert_eq!(judge(&active, &out("inactive\n", 0), 0.0).verdict, Verdict::Crit);
        assert_eq!(judge(&active, &out("active\n", 0), 0.0).verdict, Verdict::Ok);
    }

    #[test]
    fn a_failed_or_silent_command_is_unknown_with_the_reason() {
        let s = step(Parse::Lines { regex: None }, Some(1.0), None);
        let f = judge(
            &s,
            &HostResult { stderr: "dmesg: read kernel buffer failed: Operation not permitted".into(), ..out("", 1) },
            0.0,
        );
        assert_eq!(f.verdict, Verdict::Unknown);
        assert!(f.detail.contains("Operation not permitted"), "{}", f.detail);
        let f = judge(&step(Parse::MaxPercent, None, None), &out("nothing here", 0), 0.0);
        assert_eq!(f.verdict, Verdict::Unknown);
        let unreachable =
            HostResult { host: "h".into(), error: Some("connection refused".into()), ..HostResult::default() };
        let f = judge(&s, &unreachable, 0.0);
        assert_eq!((f.verdict, f.detail.as_str()), (Verdict::Unknown, "connection refused"));
    }
}

#[cfg(test)]
mod duration_tests {
    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(super::duration(1411.14), "23 min");
        assert_eq!(super::duration(3600.0 * 5.0 + 120.0), "5 h 2 min");
        assert_eq!(super::duration(7200.0), "2 h");
        assert_eq!(super::duration(86_400.0 * 41.0 + 3.0 * 3600.0), "41 d 3 h");
        assert_eq!(super::shown(1411.14, "s", None), "23 min");
        assert_eq!(super::shown(42.0, "s", None), "42 s");
    }
}
