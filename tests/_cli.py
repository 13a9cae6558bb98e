"""Running the real command line from a test: in this process (``invoke``) or in a fresh interpreter
(``run_cli``), and the one-line error contract (``assert_user_error``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``initmem ARGS`` exactly as a user would, in a fresh interpreter."""
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "initmem.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout,
    )


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2, exactly one line on stderr that starts 'initmem: error:', no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("initmem: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def invoke(*args: object) -> subprocess.CompletedProcess:
    """Run ``initmem ARGS`` in this process through the real entry point (``cli.main``: exit codes and
    the one-line errors included), with click's CliRunner isolating stdin, stdout and stderr.

    As exact as :func:`run_cli` for everything but a fresh interpreter, and seconds faster."""
    from click.testing import CliRunner

    from initmem import cli

    with CliRunner().isolation() as (out, err, _):
        rc = cli.main([str(a) for a in args])
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(list(args), rc, stdout, stderr)
