# merlya's stdout callback for ansible-playbook: one JSON object per line, so that merlya reads
# per-host, per-task results and before/after diffs as data, never as scraped text.
# Shipped inside the merlya binary and pointed at with ANSIBLE_CALLBACK_PLUGINS.
from __future__ import annotations

import json
import sys

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: merlya_json
    type: stdout
    short_description: JSON lines for merlya
    description: One JSON object per task result, then the play recap.
"""


def _plain(value):
    """Ansible's own string and dict types, as JSON can take them."""
    try:
        return json.loads(json.dumps(value, default=str))
    except Exception:  # noqa: BLE001 - anything unserialisable becomes text
        return str(value)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "merlya_json"

    def _emit(self, record):
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()

    def _result(self, status, result):
        res = result._result if hasattr(result, "_result") else {}
        if res.get("_ansible_no_log") or getattr(result._task, "no_log", False):
            # no_log: nothing of the task's data leaves Ansible (ansible-core censors it too).
            res = {"changed": res.get("changed", False), "msg": "(hidden: no_log)"}
        diffs = res.get("diff", [])
        if isinstance(diffs, dict):
            diffs = [diffs]
        if not diffs and "results" in res:
            for item in res.get("results") or []:
                d = item.get("diff") if isinstance(item, dict) else None
                if isinstance(d, dict):
                    diffs.append(d)
                elif isinstance(d, list):
                    diffs.extend(d)
        self._emit(
            {
                "event": "task",
                "host": result._host.get_name(),
                "task": result._task.get_name(),
                "status": status,
                "changed": bool(res.get("changed", False)),
                "msg": str(res.get("msg", ""))[:2000],
                "rc": res.get("rc"),
                "diff": _plain(diffs),
            }
        )

    def v2_runner_on_ok(self, result, **kwargs):
        res = result._result if hasattr(result, "_result") else {}
        self._result("changed" if res.get("changed") else "ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._result("ignored" if ignore_errors else "failed", result)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._result("skipped", result)

    def v2_playbook_on_stats(self, stats):
        hosts = {}
        for host in sorted(stats.processed.keys()):
            s = stats.summarize(host)
            hosts[host] = {k: s.get(k, 0) for k in ("ok", "changed", "failures", "unreachable", "skipped", "rescued", "ignored")}
        self._emit({"event": "stats", "hosts": hosts})
