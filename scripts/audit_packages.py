"""The vulnerability audit of what a production host installs (requirements.lock).

pip-audit checks each locked package against the Python Packaging Advisory Database, which it
reads through PyPI's JSON API, and fails on any known vulnerability. It runs with --strict:
without it, a run in which PyPI described no package (no network, say) still ends "No known
vulnerabilities found" and exits 0, an audit that checked nothing and says it passed.

`make audit` runs this as it is: no advisory database, no pass. `make test` runs it with
--unless-unreachable: where PyPI's JSON API does not answer for a package it certainly has
(this machine's registry mirror serves packages, not advisories), it prints, loudly, that the
audit did not run and why, and the tests go on. Whenever the API answers, the audit is strict.
"""

import argparse
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "requirements.lock"
ADVISORY_API = "https://pypi.org/pypi/{name}/{version}/json"  # what pip-audit's PyPI service reads
PROBE_TIMEOUT_S = 15


def locked_version(package: str, lock: Path = LOCK) -> str:
    found = re.search(rf"^{re.escape(package)}==(\S+)", lock.read_text(), re.MULTILINE | re.IGNORECASE)
    if found is None:
        raise SystemExit(f"{package} is not in {lock}")
    return found.group(1)


def why_unreachable(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the advisory API answers for this package; otherwise what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return None
    except urllib.error.HTTPError as error:
        return f"{url} answered {error.code} {error.reason}"
    except (urllib.error.URLError, OSError) as error:
        return f"{url} could not be reached: {getattr(error, 'reason', error)}"


def pip_audit(lock: Path = LOCK) -> int:
    command = [sys.executable, "-m", "pip_audit", "--strict", "--require-hashes", "--disable-pip",
               "--progress-spinner", "off", "--requirement", str(lock)]
    return subprocess.run(command, check=False).returncode


def main(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unless-unreachable", action="store_true",
                        help="where PyPI's advisory data cannot be read, say so and exit 0 (make test)")
    unless_unreachable = parser.parse_args(arguments).unless_unreachable
    why = why_unreachable(ADVISORY_API.format(name="django", version=locked_version("django")))
    if why is not None:
        print(f"VULNERABILITY AUDIT NOT RUN: PyPI's advisory data cannot be read here ({why}).",
              file=sys.stderr)
        if unless_unreachable:
            print("make test goes on without it; run `make audit` where PyPI's JSON API answers.",
                  file=sys.stderr)
            return 0
        return 1
    return pip_audit()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
