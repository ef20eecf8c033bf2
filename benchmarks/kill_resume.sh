#!/usr/bin/env bash
# Kill the main command with SIGKILL (Snakemake and all its jobs) at KILLS random moments,
# resuming each time with the README's resume command, then compare what it produced with an
# uninterrupted run's results folder. Outside CI: on the default config this is hours.
#
#   benchmarks/kill_resume.sh REFERENCE_DIR [KILLS=10] [MAX_SECONDS=240]
#
# MAX_SECONDS bounds each wait before a kill; keep KILLS x MAX_SECONDS / 2 below the uninterrupted
# run's wall time so that the kills land while the workflow still runs (each kill records whether
# it did, and how many processes it took down).
#
# REFERENCE_DIR is a finished, uninterrupted run's project folder (its results/ is read). The
# killed run happens in a scratch copy of this checkout; its report goes to
# results/benchmarks/kill_resume.json here.
set -euo pipefail
ref=$(cd "$1" && pwd)
kills=${2:-10}
max_s=${3:-240}
start_s=$(date +%s)
here=$(pwd)
work=$(mktemp -d /tmp/mintrl-kill-XXXXXX)
git -C "$here" worktree add --detach "$work" HEAD >/dev/null
cd "$work"
export PYTHONPATH="$work"  # this checkout's mintrl, whatever is installed
moments=()
alive=()
procs=()
for ((k = 1; k <= kills; k++)); do
    wait_s=$(python -c "import random; random.seed($k); print(random.randint(20, $max_s))")
    setsid snakemake --cores 2 >/dev/null 2>&1 &
    pid=$!
    sleep "$wait_s"
    # the process group setsid made: Snakemake and every job it started
    n=$(pgrep -g "$pid" | wc -l)
    if kill -0 "$pid" 2>/dev/null; then alive+=(1); else alive+=(0); fi
    procs+=("$n")
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    moments+=("$wait_s")
    snakemake --unlock >/dev/null 2>&1
    echo "kill $k after ${wait_s}s (workflow running: ${alive[-1]}, processes killed: $n)"
done
snakemake --cores 2 >/dev/null 2>&1
wall_s=$(( $(date +%s) - start_s ))
echo "killed run kept in $work (git worktree remove --force $work to drop it)"
python - "$ref" "$work" "$here/results/benchmarks/kill_resume.json" "${moments[*]}" \
    "${alive[*]}" "${procs[*]}" "$wall_s" "$(git -C "$work" rev-parse HEAD)" <<'EOF'
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[2]) / "tests"))
from test_kill_resume import _mlflow_points, _outputs
ref, got = Path(sys.argv[1]), Path(sys.argv[2])
want, have = _outputs(ref), _outputs(got)
differ = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
# every metric's steps, each once, resume markers (startup/resumed_after) aside
got_points = _mlflow_points(got)
same_points = (_mlflow_points(ref) == got_points
               and all(len(s) == len(set(s)) for s in got_points.values()))
ints = lambda arg: [int(x) for x in arg.split()]
alive = ints(sys.argv[5])
report = {"commit": sys.argv[8], "kills": len(alive), "kills_while_running": sum(alive),
          "metrics_compared": len(got_points),
          "moments_s": ints(sys.argv[4]), "processes_killed": ints(sys.argv[6]),
          "wall_s_with_kills": int(sys.argv[7]), "files_compared": len(want),
          "files_differing": differ, "mlflow_points_equal": same_points}
out = Path(sys.argv[3]); out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(report, indent=2) + "\n")
print(json.dumps({k: v for k, v in report.items() if k != "files_differing"}),
      f"{len(differ)} files differ")
sys.exit(1 if differ or not same_points else 0)
EOF
