import time

from mintrl.sandbox import run_python


def test_runs_code_and_captures_output():
    res = run_python("print(6 * 7)")
    assert (res.returncode, res.stdout.strip(), res.timed_out) == (0, "42", False)


def test_crash_is_reported_not_raised():
    res = run_python("raise ValueError('boom')")
    assert res.returncode != 0 and "ValueError" in res.stderr


def test_infinite_loop_is_killed_within_the_wall_clock_bound():
    t0 = time.monotonic()
    res = run_python("while True:\n    pass", timeout_s=1.0)
    assert res.timed_out and time.monotonic() - t0 < 4


def test_empty_environment_and_fresh_directory():
    res = run_python("import os\nprint(sorted(os.environ))\nprint(sorted(os.listdir('.')))")
    env_line, files_line = res.stdout.strip().splitlines()
    assert env_line in ("[]", "['LC_CTYPE']")  # CPython may set LC_CTYPE itself
    assert "main.py" in files_line


def test_memory_limit_stops_a_huge_allocation():
    res = run_python("x = bytearray(4 * 1024**3)\nprint('allocated')")
    assert res.returncode != 0 and "allocated" not in res.stdout


def test_output_is_capped():
    res = run_python("import sys\nsys.stdout.write('x' * 10**6)", max_output=1000)
    assert len(res.stdout) == 1000
