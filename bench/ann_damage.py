"""A damaged ANN cache file against the process that loads it (issue 38,
item 1): 64 KiB of random bytes written at a random offset in the second half
of ``vectors.usearch``, then ``ctxls recall --no-daemon`` in a fresh process
capped at 4 GiB of address space; repeated N times from the pristine file.
Counts the answers (exit 0), the crashes (killed by a signal), the runs out of
memory, and anything else.

Usage: .venv/bin/python bench/ann_damage.py REPO PYTHONPATH N
(REPO indexed with ``ctxls index REPO --embed``; PYTHONPATH '' for this
checkout, or an unpacked older commit's parent folder to measure before)
"""
import os, shutil, subprocess, sys, resource, random, json
repo, pythonpath, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
vec = os.path.join(repo, ".ctxls", "vectors.usearch")
pristine = vec + ".pristine"
if not os.path.exists(pristine):
    shutil.copyfile(vec, pristine)
rng = random.Random(7)
results = {"ok": 0, "crash": 0, "memory": 0, "other": 0}
for trial in range(n):
    shutil.copyfile(pristine, vec)
    size = os.path.getsize(vec)
    with open(vec, "r+b") as f:
        f.seek(rng.randrange(size // 2, size))   # 64 KiB of garbage in the second half
        f.write(rng.randbytes(65536))
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    env = dict(os.environ, PYTHONPATH=pythonpath)
    got = subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", "recall", "callers of a symbol",
                          "--root", repo, "--no-daemon", "--kind", "code", "-n", "1", "--json"],
                         capture_output=True, text=True, env=env, preexec_fn=cap, timeout=300)
    if got.returncode == 0:
        results["ok"] += 1
    elif got.returncode < 0:
        results["crash"] += 1
    elif "MemoryError" in got.stderr or "bad_alloc" in got.stderr:
        results["memory"] += 1
    else:
        results["other"] += 1
        print(got.returncode, got.stderr[-300:], file=sys.stderr)
print(json.dumps(results))
