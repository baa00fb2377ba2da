//! The Kubernetes kind: manifests (a file, a folder of them, or a kustomize
//! folder rendered with `kubectl kustomize`) checked object by object,
//! `kubectl diff` as the dry run (0 no change, 1 diff, more an error),
//! `kubectl apply --server-side` of exactly the rendered manifest, `rollout
//! status` as the post-check and `rollout undo` as the rollback for
//! deployments, daemonsets and statefulsets.
//!
//! Proven here: manifest handling and every error path (no API server can be
//! had on the test machines). Unproven: apply, rollout status and undo against
//! a live cluster — see docs/PIPELINES.md.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::tool::{self, ToolCall, ToolOutput, run_cleared};
use super::{
    Approved, Change, DryRun, Env, Kind, PipelineError, PipelineRun, Spec, StageName, StageOutcome, private_dir,
};
use crate::approval::ApprovalRequest;
use crate::safety::{Analysis, Class};
use crate::store::audit::AuditOutcome;

/// What was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesSpec {
    /// A manifest file, a folder of manifests, or a kustomize folder (absolute).
    pub path: PathBuf,
    /// The kubeconfig context (default: the current one).
    #[serde(default)]
    pub context: Option<String>,
    /// The namespace for objects that name none.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// One object of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// `Deployment`.
    pub kind: String,
    /// `web`.
    pub name: String,
    /// Its namespace, if the manifest names one.
    pub namespace: Option<String>,
}

impl Object {
    /// `Deployment/web`.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// Whether `rollout status` and `rollout undo` apply to it.
    pub fn rolls_out(&self) -> bool {
        matches!(self.kind.as_str(), "Deployment" | "DaemonSet" | "StatefulSet")
    }
}

/// Reads the objects of a multi-document manifest; `source` names it in errors.
pub fn objects(source: &str, yaml: &str) -> Result<Vec<Object>, String> {
    crate::input::check_yaml_depth(yaml).map_err(|e| format!("{source}: not read: {e}"))?;
    let mut out = Vec::new();
    for (index, doc) in yaml_serde::Deserializer::from_str(yaml).enumerate() {
        let value = serde_json::Value::deserialize(doc).map_err(|e| {
            format!("{source}, document {}: not valid YAML ({})", index + 1, crate::input::shorten(&e.to_string()))
        })?;
        if value.is_null() {
            continue;
        }
        let field =
            |path: &[&str]| path.iter().try_fold(&value, |v, k| v.get(k)).and_then(|v| v.as_str()).map(str::to_string);
        let missing = |what: &str| {
            format!(
                "{source}, document {}: `{what}` is missing (a Kubernetes object needs apiVersion, kind and metadata.name)",
                index + 1
            )
        };
        field(&["apiVersion"]).ok_or_else(|| missing("apiVersion"))?;
        let kind = field(&["kind"]).ok_or_else(|| missing("kind"))?;
        if kind == "List" {
            return Err(format!(
                "{source}, document {}: a `List` is not supported; give its items as documents",
                index + 1
            ));
        }
        let name = field(&["metadata", "name"]).ok_or_else(|| missing("metadata.name"))?;
        out.push(Object { kind, name, namespace: field(&["metadata", "namespace"]) });
    }
    if out.is_empty() {
        return Err(format!("{source} holds no Kubernetes object"));
    }
    Ok(out)
}

/// How many objects a `kubectl diff` output changes (one `diff -u -N` block each).
pub fn changed_objects(diff: &str) -> usize {
    diff.lines().filter(|l| l.starts_with("diff -u -N ") || l.starts_with("diff -u ")).count()
}

/// A Kubernetes change.
pub struct KubernetesChange {
    spec: KubernetesSpec,
    work: PathBuf,
    objects: Vec<Object>,
    changed: usize,
}

impl KubernetesChange {
    /// The change `spec` asks for.
    pub fn new(spec: KubernetesSpec) -> Self {
        Self { spec, work: PathBuf::new(), objects: Vec::new(), changed: 0 }
    }

    fn manifest(&self) -> PathBuf {
        self.work.join("manifest.yaml")
    }

    fn call(&self, args: &[&str]) -> ToolCall {
        self.kubectl(args, self.spec.namespace.as_deref())
    }

    /// `kubectl ARGS` with the change's context and `namespace`, each as one `--flag=value` word so a
    /// value cannot be read as another option.
    fn kubectl(&self, args: &[&str], namespace: Option<&str>) -> ToolCall {
        let mut words: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if let Some(context) = &self.spec.context {
            words.push(format!("--context={context}"));
        }
        if let Some(namespace) = namespace {
            words.push(format!("--namespace={namespace}"));
        }
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut call = ToolCall::new("kubectl", &refs, self.work.clone());
        call.label = "kubectl".into();
        call
    }

    fn apply_call(&self) -> ToolCall {
        let manifest = self.manifest().display().to_string();
        self.call(&["apply", "--server-side", "-f", &manifest])
    }

    fn workloads(&self) -> Vec<&Object> {
        self.objects.iter().filter(|o| o.rolls_out()).collect()
    }

    /// `kubectl rollout undo` of every workload, as it will run (context and namespace included), for
    /// the approval.
    fn undo_line(&self) -> String {
        self.undo_calls().iter().map(ToolCall::display).collect::<Vec<_>>().join("; ")
    }

    /// `kubectl rollout undo` of every workload.
    fn undo_calls(&self) -> Vec<ToolCall> {
        self.workloads().iter().map(|o| self.rollout("undo", o, "")).collect()
    }

    /// `kubectl rollout VERB kind/name`, in the object's own namespace if it names one.
    fn rollout(&self, verb: &str, object: &Object, timeout: &str) -> ToolCall {
        let reference = object.reference().to_lowercase();
        let mut args = vec!["rollout", verb, reference.as_str()];
        if verb == "status" {
            args.push(timeout);
        }
        self.kubectl(&args, object.namespace.as_deref().or(self.spec.namespace.as_deref()))
    }

    /// Renders the manifest into the run's folder: `kubectl kustomize` for a kustomize folder, else the
    /// file or the folder's `*.yaml`, `*.yml` and `*.json` files in name order.
    async fn render(&self, env: &Env) -> Result<(String, String), PipelineError> {
        let path = &self.spec.path;
        if is_kustomize(path) {
            let out =
                tool::run(env, &ToolCall::new("kubectl", &["kustomize", &path.display().to_string()], &self.work))
                    .await;
            if out.code != Some(0) {
                let why = out.stderr.lines().find(|l| l.starts_with("error")).unwrap_or(out.stderr.trim()).to_string();
                return Err(PipelineError::Invalid(format!("kubectl kustomize {} failed: {why}", path.display())));
            }
            return Ok((format!("kustomize {}", path.display()), out.stdout));
        }
        let files: Vec<PathBuf> = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| PipelineError::Invalid(format!("{}: {e}", path.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
                .collect();
            files.sort();
            files
        } else if path.is_file() {
            vec![path.clone()]
        } else {
            return Err(PipelineError::Invalid(format!("{} is neither a manifest file nor a folder", path.display())));
        };
        let mut manifest = String::new();
        for file in &files {
            let text = std::fs::read_to_string(file)
                .map_err(|e| PipelineError::Invalid(format!("cannot read {}: {e}", file.display())))?;
            // Each file is checked on its own, so an error names the file it is in.
            objects(&file.display().to_string(), &text).map_err(PipelineError::Invalid)?;
            manifest.push_str("---\n");
            manifest.push_str(&text);
            if !text.ends_with('\n') {
                manifest.push('\n');
            }
        }
        Ok((format!("{} file(s) in {}", files.len(), path.display()), manifest))
    }

    /// Runs changing calls one after the other under `decision`, each audited; stops at the first failure.
    async fn run_audited(
        &self,
        env: &Env,
        calls: &[ToolCall],
        decision: &Approved,
        run: &PipelineRun,
        stage: StageName,
    ) -> StageOutcome {
        let mut text = String::new();
        for call in calls {
            let Some(clearance) = decision.clearance(&call.display()) else {
                return StageOutcome::failed(format!("`{}` was not cleared to run", call.display()), text);
            };
            // The previous call's finish first: only the last one is left beside the next stage.
            env.deferred.write().await;
            let ticket = match env
                .store
                .audit_start(tool::local_audit(
                    env,
                    &call.display(),
                    clearance.approved_by(),
                    super::audit_ref(run, stage),
                ))
                .await
            {
                Ok(ticket) => ticket,
                Err(e) => return StageOutcome::failed(format!("not run: the audit log cannot be written ({e})"), text),
            };
            let out = run_cleared(env, call, &clearance).await;
            let outcome = if out.code == Some(0) { AuditOutcome::Ok } else { AuditOutcome::Failed };
            env.deferred.finish_audit(ticket, outcome, out.code, out.error.clone());
            text.push_str(&out.text());
            if out.code != Some(0) {
                return failed(&call.display(), &out);
            }
        }
        StageOutcome::ok(format!("{} command(s) succeeded", calls.len()), text)
    }
}

fn failed(what: &str, out: &ToolOutput) -> StageOutcome {
    let code = out.code.map_or_else(|| out.error.clone().unwrap_or_default(), |c| format!("exit code {c}"));
    let why = out.stderr.lines().rev().find(|l| l.starts_with("error") || l.starts_with("Error")).unwrap_or("").trim();
    StageOutcome::failed(format!("{what} failed ({code}) {why}").trim_end().to_string(), out.text())
}

#[async_trait]
impl Change for KubernetesChange {
    fn kind(&self) -> Kind {
        Kind::Kubernetes
    }

    fn targets(&self) -> String {
        let context = self.spec.context.as_deref().unwrap_or("current context");
        format!("{} ({context})", self.spec.path.display())
    }

    fn spec(&self) -> Spec {
        Spec::Kubernetes(self.spec.clone())
    }

    async fn plan(&mut self, env: &Env, run: &PipelineRun) -> Result<StageOutcome, PipelineError> {
        tool::require("kubectl", "install kubectl and put it on PATH")?;
        self.work = env.store.pipelines_dir().join(&run.id);
        private_dir(&self.work)
            .map_err(|e| PipelineError::Invalid(format!("cannot make {}: {e}", self.work.display())))?;
        if self.spec.context.is_none() {
            // Pinned now: switching the kubeconfig's current context after the approval must not move
            // the change to another cluster.
            let out = tool::run(env, &ToolCall::new("kubectl", &["config", "current-context"], &self.work)).await;
            let current = out.stdout.trim();
            if out.code == Some(0) && !current.is_empty() && !current.contains(char::is_whitespace) {
                self.spec.context = Some(current.to_string());
            }
        }
        if let Some(context) = &self.spec.context {
            let out =
                tool::run(env, &ToolCall::new("kubectl", &["config", "get-contexts", "-o", "name"], &self.work)).await;
            let known: Vec<&str> = out.stdout.lines().collect();
            if !known.contains(&context.as_str()) {
                return Err(PipelineError::Invalid(format!(
                    "no context `{context}` in the kubeconfig (known: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            }
        }
        let (source, manifest) = self.render(env).await?;
        self.objects = objects(&source, &manifest).map_err(PipelineError::Invalid)?;
        std::fs::write(self.manifest(), &manifest)
            .map_err(|e| PipelineError::Invalid(format!("cannot write {}: {e}", self.manifest().display())))?;
        let names: Vec<String> = self.objects.iter().map(Object::reference).collect();
        // A Secret's data never reaches the record: the manifest is kept only without one.
        let kept = if self.objects.iter().any(|o| o.kind == "Secret") {
            format!("(the manifest holds a Secret: not kept here; it is in {})", self.manifest().display())
        } else {
            manifest
        };
        let on = self.spec.context.as_deref().map(|c| format!(" (context {c})")).unwrap_or_default();
        Ok(StageOutcome::ok(format!("{}{on}: {} object(s): {}", source, names.len(), names.join(", ")), kept))
    }

    fn plan_command(&self) -> Option<String> {
        is_kustomize(&self.spec.path).then(|| format!("kubectl kustomize {}", self.spec.path.display()))
    }

    fn dry_run_command(&self) -> Option<String> {
        Some(self.call(&["diff", "--server-side", "-f", &self.manifest().display().to_string()]).display())
    }

    async fn dry_run(&mut self, env: &Env, _run: &PipelineRun) -> Option<DryRun> {
        let manifest = self.manifest().display().to_string();
        let mut call = self.call(&["diff", "--server-side", "-f", &manifest]);
        call.live_stdout = false;
        let out = tool::run(env, &call).await;
        Some(match out.code {
            Some(0) => DryRun {
                outcome: StageOutcome::ok("no changes: the cluster matches the manifest", ""),
                diff: String::new(),
                changes: false,
            },
            Some(1) => {
                self.changed = changed_objects(&out.stdout);
                let detail = format!("{} of {} object(s) would change", self.changed, self.objects.len());
                DryRun { outcome: StageOutcome::ok(detail, ""), diff: out.stdout, changes: true }
            }
            _ => DryRun { outcome: failed("kubectl diff", &out), diff: String::new(), changes: false },
        })
    }

    fn approval(&self, run: &PipelineRun) -> ApprovalRequest {
        let summary =
            format!("kubernetes {}: {} of {} object(s) change", self.targets(), self.changed, self.objects.len());
        let workloads: Vec<String> = self.workloads().iter().map(|o| o.reference()).collect();
        let mut reasons = vec!["applies the rendered manifest with kubectl apply --server-side".to_string()];
        if workloads.is_empty() {
            reasons.push("no rollback: none of the objects is a Deployment, DaemonSet or StatefulSet".into());
        }
        let command = self.apply_call().display();
        let analysis = Analysis { class: Class::Mutating, reasons, commands: vec![command.clone()], rule_keys: None };
        let mut request = ApprovalRequest::new(summary, &command, vec![self.targets()], &analysis, Vec::new());
        request.diff = Some(run.diff.clone());
        if !workloads.is_empty() {
            request.post_check = Some(format!("kubectl rollout status {}", workloads.join(" ")));
            request.rollback = Some(self.undo_line());
            request.runs = self.undo_calls().iter().map(ToolCall::display).collect();
        }
        request
    }

    fn rollback_approval(&self, run: &PipelineRun) -> Option<ApprovalRequest> {
        if self.workloads().is_empty() {
            return None;
        }
        let command = self.undo_line();
        let analysis = Analysis {
            class: Class::Mutating,
            reasons: vec!["rolls the workloads back to their previous revision".into()],
            commands: vec![command.clone()],
            rule_keys: None,
        };
        let mut request = ApprovalRequest::new(
            format!("roll back change {}", run.id),
            &command,
            vec![self.targets()],
            &analysis,
            Vec::new(),
        );
        request.runs = self.undo_calls().iter().map(ToolCall::display).collect();
        Some(request)
    }

    async fn audit_refused(&self, env: &Env, outcome: AuditOutcome, decided_by: &str, why: &str) {
        let request = tool::local_audit(env, &self.apply_call().display(), decided_by, None);
        if let Err(e) = env.store.audit_refused(&request, outcome, why).await {
            tracing::warn!(error = %e, "cannot record a refused kubernetes change");
        }
    }

    async fn apply(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> StageOutcome {
        self.run_audited(env, &[self.apply_call()], decision, run, StageName::Apply).await
    }

    async fn post_check(&mut self, env: &Env, _run: &PipelineRun, _decision: &Approved) -> Option<StageOutcome> {
        let workloads = self.workloads();
        if workloads.is_empty() {
            return None;
        }
        let timeout = format!("--timeout={}s", env.timeout.as_secs().max(1));
        let mut text = String::new();
        for object in workloads {
            let out = tool::run(env, &self.rollout("status", object, &timeout)).await;
            text.push_str(&out.text());
            if out.code != Some(0) {
                return Some(failed(&format!("rollout status {}", object.reference()), &out));
            }
        }
        Some(StageOutcome::ok("every workload rolled out", text))
    }

    async fn prepare_rollback(&mut self, env: &Env, run: &PipelineRun) -> Result<(), PipelineError> {
        if self.objects.is_empty() {
            // On demand: the objects are read again from the run's manifest, before the approval names
            // what the rollback runs.
            self.work = env.store.pipelines_dir().join(&run.id);
            let text = std::fs::read_to_string(self.manifest()).map_err(|e| {
                PipelineError::Invalid(format!("the run's manifest {} cannot be read: {e}", self.manifest().display()))
            })?;
            self.objects = objects("the run's manifest", &text).map_err(PipelineError::Invalid)?;
        }
        Ok(())
    }

    async fn rollback(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome> {
        let calls = self.undo_calls();
        if calls.is_empty() {
            return None;
        }
        Some(self.run_audited(env, &calls, decision, run, StageName::Rollback).await)
    }
}

/// Whether `path` looks like a kustomize folder.
pub fn is_kustomize(path: &Path) -> bool {
    ["kustomization.yaml", "kustomization.yml", "Kustomization"].iter().any(|f| path.join(f).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::GateOutcome;

    #[test]
    fn objects_are_read_per_document_and_errors_name_the_document() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n---\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n";
        let found = objects("a.yaml", yaml).unwrap();
        assert_eq!(found.iter().map(Object::reference).collect::<Vec<_>>(), ["ConfigMap/cfg", "Deployment/web"]);
        assert!(found[1].rolls_out() && !found[0].rolls_out());
        assert_eq!(found[1].namespace.as_deref(), Some("shop"));
        let err = objects("b.yaml", "apiVersion: v1\nkind: Service\nmetadata: {}\n").unwrap_err();
        assert!(err.contains("b.yaml, document 1: `metadata.name` is missing"), "{err}");
        let err = objects("c.yaml", "kind: [\n").unwrap_err();
        assert!(err.starts_with("c.yaml, document 1: not valid YAML"), "{err}");
        assert!(objects("d.yaml", "# nothing\n").unwrap_err().contains("holds no Kubernetes object"));
    }

    #[test]
    fn a_rollback_is_approved_as_it_runs_on_the_pinned_context() {
        let spec =
            KubernetesSpec { path: "/m.yaml".into(), context: Some("prod-eu".into()), namespace: Some("web".into()) };
        let mut change = KubernetesChange::new(spec);
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: data\n";
        change.objects = objects("m.yaml", yaml).unwrap();
        let run = PipelineRun::new(Kind::Kubernetes, "m.yaml", serde_json::Value::Null, "tester");
        let asked = change.rollback_approval(&run).unwrap();
        let runs: Vec<String> = change.undo_calls().iter().map(ToolCall::display).collect();
        assert_eq!(asked.command, runs.join("; "));
        // What the rollback runs is cleared by that approval, and nothing else is.
        let approved = Approved::of(GateOutcome::Approved("alice".into()), &asked);
        assert!(runs.iter().all(|line| approved.clearance(line).is_some()));
        assert!(approved.clearance("kubectl rollout undo deployment/api").is_none(), "without the pinned context");
        assert!(approved.clearance(&change.apply_call().display()).is_none(), "the apply was not asked here");
        assert!(
            asked.command.contains("rollout undo deployment/api --context=prod-eu --namespace=web"),
            "{}",
            asked.command
        );
        assert!(asked.command.contains("statefulset/db --context=prod-eu --namespace=data"), "{}", asked.command);
    }

    #[test]
    fn diff_blocks_count_changed_objects() {
        let diff = "diff -u -N /tmp/LIVE-1/apps.v1.Deployment.default.web /tmp/MERGED-1/apps.v1.Deployment.default.web\n--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\ndiff -u -N /tmp/LIVE-1/v1.ConfigMap.default.cfg /tmp/MERGED-1/v1.ConfigMap.default.cfg\n";
        assert_eq!(changed_objects(diff), 2);
    }
}
