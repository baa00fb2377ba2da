#!/usr/bin/env python3
"""Where merlya's Terraform overhead goes: interleaved rounds of the bare sequence and of
`merlya pipeline run terraform DIR --yes`, both through terraform_wrapper.c, printing per side the
median gap before each terraform run, after the last one, and each run's duration.

    python3 benches/trace/gaps.py target/release/merlya [ROUNDS] [OTHER_MERLYA]

A second merlya binary (an A/B of two builds) is run as a third side. Needs gcc and terraform."""
import os, shutil, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
merlya = [os.path.abspath(sys.argv[1])] + [os.path.abspath(a) for a in sys.argv[3:4]]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
work = tempfile.mkdtemp(prefix="merlya-trace-")
bin_dir = os.path.join(work, "bin")
os.makedirs(bin_dir)
subprocess.run(["gcc", "-O2", "-o", os.path.join(bin_dir, "terraform"), os.path.join(here, "terraform_wrapper.c")], check=True)
real = shutil.which("terraform")
log = os.path.join(work, "log")
rc = os.path.join(work, "terraformrc")
open(rc, "w").close()
config = "".join(f'resource "terraform_data" "r{i}" {{\n  input = "value-{i}"\n}}\n' for i in range(20))
env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"], TRACE_LOG=log, TRACE_TERRAFORM=real,
           TF_CLI_CONFIG_FILE=rc, TF_IN_AUTOMATION="1", TF_INPUT="0", CHECKPOINT_DISABLE="1",
           MERLYA_HOME=os.path.join(work, "home", ".merlya"), HOME=os.path.join(work, "home"), NO_COLOR="1")
os.makedirs(env["HOME"], exist_ok=True)


def fresh(name):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "main.tf"), "w") as f:
        f.write(config)
    return d


def run(cmd, cwd=None, ok=(0,)):
    out = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert out.returncode in ok, (cmd, out.returncode, out.stderr[-2000:])


def bare(d):
    run(["terraform", "init", "-input=false", "-no-color"], d)
    run(["terraform", "plan", "-input=false", "-no-color", "-detailed-exitcode", "-out=p.tfplan"], d, ok=(2,))
    run(["terraform", "show", "-no-color", "-json", "p.tfplan"], d)
    run(["terraform", "apply", "-input=false", "-no-color", "p.tfplan"], d)
    run(["terraform", "plan", "-input=false", "-no-color", "-detailed-exitcode"], d)


sides = {"bare": bare}
for i, binary in enumerate(merlya):
    sides[f"merlya{i or ''}"] = lambda d, b=binary: run([b, "pipeline", "run", "terraform", d, "--yes", "--format", "json"])
walls = {s: [] for s in sides}
gaps = {s: [] for s in sides}
durations = {s: [] for s in sides}
for r in range(rounds + 1):
    order = list(sides) if r % 2 == 0 else list(reversed(sides))
    for side in order:
        d = fresh(f"{side}{r}")
        if os.path.exists(log):
            os.remove(log)
        t0 = time.monotonic()
        sides[side](d)
        t1 = time.monotonic()
        events = [line.split() for line in open(log)]
        if r == 0:
            continue  # warm-up
        g, du, last, started = [], [], t0, None
        for kind, _, t in events:
            t = float(t)
            if kind == "start":
                g.append(t - last)
                started = t
            else:
                du.append(t - started)
                last = t
        g.append(t1 - last)
        walls[side].append(t1 - t0)
        gaps[side].append(g)
        durations[side].append(du)

ms = lambda v: "%.2f" % (statistics.median(v) * 1000)
for side in sides:
    print(f"{side}: wall {ms(walls[side])} ms")
    print("  gaps (before each run, then after the last):", " ".join(ms(c) for c in zip(*gaps[side])))
    print("  durations:", " ".join(ms(c) for c in zip(*durations[side])))
for side in sides:
    if side != "bare":
        diff = [a - b for a, b in zip(walls[side], walls["bare"])]
        print(f"{side} - bare: paired median {ms(diff)} ms")
shutil.rmtree(work, ignore_errors=True)
