"""Shared plumbing for octet's Python-driven tests: argument parsing, running the CLI,
and a tally that ends with the 'N passed, M failed' line and the right exit code."""
import argparse
import os
import subprocess
import sys
import traceback


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--octet", required=True, help="path to the octet CLI")
    p.add_argument("--source-dir", required=True, help="repository root")
    return p.parse_args()


def make_calibration(source_dir, out_dir, *options):
    """Writes calibration samples for the fixtures (tests/models/make_calibration.py) into
    out_dir/<model>/; `options` go to the script ("--samples", "10", "--seq", "32")."""
    subprocess.run([sys.executable, os.path.join(source_dir, "tests/models/make_calibration.py"), out_dir, *options],
                   check=True, capture_output=True)


def run_octet(octet, *args, timeout=120):
    """Runs the CLI; returns (exit code, stdout, stderr)."""
    proc = subprocess.run([octet, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


class Tally:
    def __init__(self, suite):
        self.suite, self.passed, self.failed = suite, 0, 0

    def check(self, name, fn, *args):
        try:
            fn(*args)
            self.passed += 1
            print(f"PASS {name}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            self.failed += 1
            print(f"FAIL {name}: {e}")
            if os.environ.get("OCTET_TEST_TRACE"):
                traceback.print_exc()

    def finish(self):
        print(f"{self.suite}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed or not self.passed else 0)
