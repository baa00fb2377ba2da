//! Running a skill: each step on every target host at once, through the same
//! classifier, approval gate and audit log as any command. A step proven
//! read-only runs as a read (audited); any other step, and every step the
//! skill lists under `require_confirmation_for`, goes through the one change
//! path (plan → approval → apply → audit) and runs only if approved.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::spec::Skill;
use super::verdict::{Finding, Verdict, judge};
use crate::approval::Route;
use crate::exec::HostResult;
use crate::inventory::Host;
use crate::pipeline::bash::{BashChange, BashSpec};
use crate::pipeline::fanout::audited_fan_out;
use crate::pipeline::{Env, StageName, runner};

/// Why a skill cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillRunError {
    /// A parameter is missing, unknown or does not match its pattern.
    #[error("skill {skill}: {message}")]
    Param { skill: String, message: String },
    /// More targets than the skill or the policy allows.
    #[error("skill {skill} runs on at most {max} hosts ({why}); {given} were named")]
    TooManyHosts { skill: String, max: usize, given: usize, why: &'static str },
    /// No target.
    #[error("skill {0}: no target host")]
    NoHosts(String),
    /// A command could not be rendered.
    #[error("skill {skill}, step {check}: {message}")]
    Render { skill: String, check: String, message: String },
    /// The run's record or the audit log could not be written.
    #[error("skill {skill}: {message}")]
    Store { skill: String, message: String },
}

/// How a run is bounded beyond the skill's own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `policy.max_hosts_per_skill`.
    pub max_hosts: usize,
    /// `policy.confirm_all`: every step asks.
    pub confirm_all: bool,
}

/// What a run found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillOutcome {
    /// The skill.
    pub skill: String,
    /// Its version.
    pub version: String,
    /// The parameters it ran with.
    pub params: BTreeMap<String, String>,
    /// Every finding, worst first (then by host and step order).
    pub findings: Vec<Finding>,
    /// Hosts with a warning or worse, worst first, each with why.
    pub culprits: Vec<Culprit>,
    /// Steps that did not run: not approved, or cancelled.
    pub skipped: Vec<Skipped>,
}

/// A host that needs attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Culprit {
    /// The host.
    pub host: String,
    /// Its worst verdict.
    pub verdict: Verdict,
    /// One line per finding past a threshold (`disk 97% /var (critical at ≥ 95%)`).
    pub why: Vec<String>,
    /// It could not be reached: nothing is known about it, which is itself the finding.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
}

/// A step that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The check.
    pub check: String,
    /// Why.
    pub why: String,
}

/// Binds the given parameters to `skill`'s: defaults filled in, patterns checked, unknown names refused.
pub fn bind(skill: &Skill, given: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, SkillRunError> {
    let fail = |message: String| SkillRunError::Param { skill: skill.name.clone(), message };
    if let Some(unknown) = given.keys().find(|k| !skill.params.contains_key(*k)) {
        let known: Vec<&str> = skill.params.keys().map(String::as_str).collect();
        return Err(fail(format!("no parameter {unknown} (it takes: {})", known.join(", "))));
    }
    let mut bound = BTreeMap::new();
    for (name, param) in &skill.params {
        let value = match (given.get(name), &param.default) {
            (Some(v), _) => v.clone(),
            (None, Some(d)) => d.clone(),
            (None, None) => return Err(fail(format!("parameter {name} is required ({})", param.description))),
        };
        if value.chars().any(char::is_control) {
            return Err(fail(format!("{name}: a value may not hold control characters or line breaks")));
        }
        if let Some(pattern) = &param.pattern {
            let full = regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| fail(e.to_string()))?;
            if !full.is_match(&value) {
                return Err(fail(format!("{name}={value:?} does not match {pattern}")));
            }
        }
        bound.insert(name.clone(), value);
    }
    Ok(bound)
}

/// Named `params`, then positional `values` filling the required parameters in order
/// (`service_status nginx`).
pub fn with_positional(
    skill: &Skill,
    values: Vec<String>,
    params: Vec<(String, String)>,
) -> Result<BTreeMap<String, String>, SkillRunError> {
    let mut given: BTreeMap<String, String> = params.into_iter().collect();
    let mut required = skill.params.iter().filter(|(_, p)| p.default.is_none()).map(|(n, _)| n.clone());
    for value in values {
        let name = required.by_ref().find(|n| !given.contains_key(n)).ok_or_else(|| SkillRunError::Param {
            skill: skill.name.clone(),
            message: format!("no more positional values are taken ({value:?}); name it: NAME=VALUE"),
        })?;
        given.insert(name, value);
    }
    Ok(given)
}

/// The command of a step with the parameters put in, each shell-quoted (a value is one word, never code).
pub fn render(command: &str, params: &BTreeMap<String, String>) -> Result<String, String> {
    let env = minijinja::Environment::new();
    let quoted: BTreeMap<&str, String> =
        params.iter().map(|(k, v)| (k.as_str(), crate::safety::shell_quote(v))).collect();
    env.render_str(command, quoted).map_err(|e| e.to_string())
}

/// Runs `skill` on `hosts` with `params` (already [`bind`]-checked or not: they are checked here).
pub async fn run(
    env: &Env,
    skill: &Skill,
    params: &BTreeMap<String, String>,
    hosts: &[Host],
    limits: Limits,
) -> Result<SkillOutcome, SkillRunError> {
    let params = bind(skill, params)?;
    if hosts.is_empty() {
        return Err(SkillRunError::NoHosts(skill.name.clone()));
    }
    let (max, why) = if limits.max_hosts < skill.max_hosts {
        (limits.max_hosts, "policy.max_hosts_per_skill")
    } else {
        (skill.max_hosts, "the skill's max_hosts")
    };
    if hosts.len() > max {
        return Err(SkillRunError::TooManyHosts { skill: skill.name.clone(), max, given: hosts.len(), why });
    }
    let mut step_env = env.clone();
    step_env.timeout = Duration::from_secs(skill.timeout_seconds).min(env.timeout.max(Duration::from_secs(1)));
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    let now = || {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
    };
    let store_error = |e: String| SkillRunError::Store { skill: skill.name.clone(), message: e };
    let mut commands = Vec::new();
    for step in &skill.steps {
        let command = render(&step.command, &params).map_err(|message| SkillRunError::Render {
            skill: skill.name.clone(),
            check: step.check.clone(),
            message,
        })?;
        let must_ask = limits.confirm_all || skill.require_confirmation_for.contains(&step.check);
        // One routing decision, under the step's own policy (a step its author marked asks always).
        let gate = if must_ask { env.gate.asking_always() } else { env.gate.clone() };
        let plain_read = matches!(gate.route(&command), Route::Read(_));
        commands.push((command, must_ask, plain_read));
    }
    let nonce = crate::home::random_bytes(6).map(hex::encode).unwrap_or_else(|_| std::process::id().to_string());
    let mut order = 0;
    while order < skill.steps.len() {
        if env.cancel.is_cancelled() {
            skipped.extend(
                skill.steps[order..].iter().map(|s| Skipped { check: s.check.clone(), why: "cancelled".into() }),
            );
            break;
        }
        // Consecutive plain reads run as one script per host (one session, one audit entry).
        let batch = commands[order..].iter().take_while(|(_, _, plain)| *plain).count();
        if batch > 0 {
            let group: Vec<String> = commands[order..order + batch].iter().map(|(c, _, _)| c.clone()).collect();
            let script = super::batch::script(&group, &nonce);
            if let Route::Read(clearance) = env.gate.route(&script) {
                let mut batch_env = step_env.clone();
                batch_env.timeout = step_env.timeout.saturating_mul(u32::try_from(batch).unwrap_or(u32::MAX));
                let results = audited_fan_out(&batch_env, hosts, clearance, None)
                    .await
                    .map_err(|e| store_error(e.to_string()))?;
                let at = now();
                for result in &results {
                    for (i, part) in super::batch::split(result, batch, &nonce).iter().enumerate() {
                        findings.push((order + i, judge(&skill.steps[order + i], part, at)));
                    }
                }
                order += batch;
                continue;
            }
        }
        // A step that is not a plain read (or a script that could not be proven): alone.
        let (step, (command, must_ask, plain_read)) = (&skill.steps[order], &commands[order]);
        let gate = if *must_ask { env.gate.asking_always() } else { env.gate.clone() };
        let route = gate.route(command);
        let to_run = route.command(command).to_string();
        let results: Vec<HostResult> = match route {
            Route::Read(clearance) if *plain_read => {
                audited_fan_out(&step_env, hosts, clearance, None).await.map_err(|e| store_error(e.to_string()))?
            }
            _ => match change(&step_env, skill, &step.check, &to_run, hosts, *must_ask).await {
                Ok(results) => results,
                Err(why) => {
                    skipped.push(Skipped { check: step.check.clone(), why });
                    order += 1;
                    continue;
                }
            },
        };
        let at = now();
        for result in &results {
            findings.push((order, judge(step, result, at)));
        }
        order += 1;
    }
    findings.sort_by(|(a_order, a), (b_order, b)| {
        b.verdict.cmp(&a.verdict).then_with(|| a.host.cmp(&b.host)).then_with(|| a_order.cmp(b_order))
    });
    let findings: Vec<Finding> = findings.into_iter().map(|(_, f)| f).collect();
    let outcome = SkillOutcome {
        skill: skill.name.clone(),
        version: skill.version.clone(),
        params,
        culprits: culprits(&findings),
        findings,
        skipped,
    };
    // What the incident report lists: the culprits and why (a failed write loses only that).
    let culprits = serde_json::to_value(&outcome.culprits).unwrap_or_default();
    if let Err(e) = env.store.add_skill_run(&env.session_id, &skill.name, &skill.version, hosts.len(), &culprits).await
    {
        tracing::warn!(error = %e, "cannot record the skill run for the report");
    }
    // Load, disk and memory as read: the console's inventory shows each host's newest.
    if let Err(e) = env.store.record_health(&health_readings(&outcome.findings)).await {
        tracing::warn!(error = %e, "cannot record the health readings");
    }
    Ok(outcome)
}

/// A step that is not a proven read: the one change path, asked for every target host at once.
async fn change(
    env: &Env,
    skill: &Skill,
    check: &str,
    command: &str,
    hosts: &[Host],
    always_ask: bool,
) -> Result<Vec<HostResult>, String> {
    let mut env = env.clone();
    if always_ask {
        env.gate = env.gate.asking_always();
    }
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let summary = Some(format!("skill {} step {check} on {} host(s)", skill.name, names.len()));
    let spec = BashSpec { hosts: names, command: command.to_string(), summary, ..BashSpec::default() };
    let mut bash = BashChange::new(spec, hosts.to_vec());
    let record = runner::record_of(&env, &bash);
    let done = runner::run(&env, &mut bash, record, &|_| {}).await.map_err(|e| e.to_string())?;
    if done.stage(StageName::Apply).is_some() {
        Ok(std::mem::take(&mut bash.applied))
    } else {
        Err(format!("not run: change {} {}", done.id, done.status.as_str()))
    }
}

/// The findings that are health readings the inventory shows (load, disk, memory with a number).
pub fn health_readings(findings: &[Finding]) -> Vec<crate::store::host_health::HealthReading> {
    use crate::store::host_health::{HealthCheck, HealthLevel, HealthReading};
    let at = crate::store::now_rfc3339();
    findings
        .iter()
        .filter_map(|f| {
            let check = HealthCheck::from_check(&f.check)?;
            let level = match f.verdict {
                Verdict::Crit => HealthLevel::Crit,
                Verdict::Warn => HealthLevel::Warn,
                Verdict::Ok => HealthLevel::Ok,
                Verdict::Unknown => return None,
            };
            Some(HealthReading { host: f.host.clone(), check, value: f.number?, level, at: at.clone() })
        })
        .collect()
}

/// Hosts with a warning or worse, worst first (most critical findings, then most warnings).
fn culprits(findings: &[Finding]) -> Vec<Culprit> {
    let mut by_host: BTreeMap<&str, Culprit> = BTreeMap::new();
    // A host out of reach is a culprit: nothing about it is known.
    for f in findings.iter().filter(|f| f.unreachable) {
        let entry = by_host.entry(&f.host).or_insert_with(|| Culprit {
            host: f.host.clone(),
            verdict: Verdict::Unknown,
            why: Vec::new(),
            unreachable: true,
        });
        if entry.why.is_empty() {
            entry.why.push(format!("out of reach: {}", f.detail));
        }
    }
    for f in findings.iter().filter(|f| f.verdict >= Verdict::Warn) {
        let entry = by_host.entry(&f.host).or_insert_with(|| Culprit {
            host: f.host.clone(),
            verdict: f.verdict,
            why: Vec::new(),
            unreachable: false,
        });
        entry.verdict = entry.verdict.max(f.verdict);
        entry.why.push(format!("{} {} ({})", f.check, f.value, f.detail));
    }
    // Out of reach ranks with critical: worst first.
    let score = |c: &Culprit| {
        let crit = findings.iter().filter(|f| f.host == c.host && f.verdict == Verdict::Crit).count();
        let verdict = if c.unreachable { Verdict::Crit } else { c.verdict };
        (verdict, crit, c.why.len())
    };
    let mut list: Vec<Culprit> = by_host.into_values().collect();
    list.sort_by(|a, b| score(b).cmp(&score(a)).then_with(|| a.host.cmp(&b.host)));
    list
}

impl SkillOutcome {
    /// What a person reads first: the culprits and why, then the findings on them, the calm hosts
    /// folded into one line, and a check that could not run said once for the hosts it failed on.
    pub fn to_text(&self) -> String {
        self.to_text_in(&crate::i18n::Locale::default())
    }

    /// [`Self::to_text`] in `locale`'s words (values, checks and verdicts stay as they are).
    pub fn to_text_in(&self, locale: &crate::i18n::Locale) -> String {
        // Values and reasons come from hosts: shown, never obeyed.
        let safe = |s: &str| crate::term_safe::visible_line(s).into_owned();
        let hosts: std::collections::BTreeSet<&str> = self.findings.iter().map(|f| f.host.as_str()).collect();
        let culprits: std::collections::BTreeSet<&str> = self.culprits.iter().map(|c| c.host.as_str()).collect();
        let mut out = locale.tf(
            "skills.text.header",
            &[
                ("skill", &self.skill),
                ("version", &self.version),
                ("hosts", &hosts.len().to_string()),
                ("culprits", &self.culprits.len().to_string()),
            ],
        );
        out.push('\n');
        if self.culprits.is_empty() {
            out.push_str(&format!("{}\n", locale.t("skills.text.none")));
        } else {
            out.push_str(&format!("{}\n", locale.t("skills.text.culprits")));
            for c in &self.culprits {
                let word = if c.unreachable { locale.t("skills.text.unreachable") } else { c.verdict.as_str() };
                out.push_str(&format!("  {} ({word}): {}\n", c.host, safe(&c.why.join("; "))));
            }
        }
        // A check that could not be read the same way on several hosts (no privilege, a missing
        // tool) is one line, not one row per host.
        let mut unread: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
        for f in self.findings.iter().filter(|f| f.verdict == Verdict::Unknown && !f.unreachable) {
            unread.entry((f.check.as_str(), f.detail.as_str())).or_default().push(f.host.as_str());
        }
        unread.retain(|_, on| on.len() > 1);
        let said_once = |f: &Finding| unread.contains_key(&(f.check.as_str(), f.detail.as_str()));
        let rows: Vec<Vec<String>> = self
            .findings
            .iter()
            .filter(|f| culprits.contains(f.host.as_str()) && !f.unreachable)
            .filter(|f| f.verdict > Verdict::Ok && !said_once(f))
            .map(|f| vec![safe(&f.host), safe(&f.check), safe(&f.value), f.verdict.as_str().into(), safe(&f.detail)])
            .collect();
        if !rows.is_empty() {
            out.push('\n');
            let headers =
                ["host", "check", "value", "verdict", "why"].map(|h| locale.t(&format!("skills.h.{h}")).to_string());
            let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
            out.push_str(&crate::text_table::render(&headers, &rows));
        }
        let calm: Vec<&str> = hosts.iter().copied().filter(|h| !culprits.contains(h)).collect();
        if !calm.is_empty() {
            let count = calm.len().to_string();
            out.push_str(&format!(
                "\n{}\n",
                locale.tf("skills.text.calm", &[("count", &count), ("hosts", &safe(&calm.join(", ")))])
            ));
        }
        for ((check, detail), on) in &unread {
            let on = if on.len() == hosts.len() {
                locale.t("skills.text.every_host").to_string()
            } else {
                locale.tf("skills.text.some_hosts", &[("count", &on.len().to_string())])
            };
            let line =
                locale.tf("skills.text.unread", &[("check", &safe(check)), ("on", &on), ("detail", &safe(detail))]);
            out.push_str(&format!("{line}\n"));
        }
        for s in &self.skipped {
            let line = locale.tf("skills.text.skipped", &[("check", &s.check), ("why", &safe(&s.why))]);
            out.push_str(&format!("{line}\n"));
        }
        out
    }
}
