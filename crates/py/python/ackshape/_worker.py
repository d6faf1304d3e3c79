"""What a sweep's executor runs: one resolved scenario with one seed, in whichever process or
machine the executor chose. Module-level, so that process pools and Dask pickle it by name."""

from . import _native


def run_point(scenario: str, file: str, set: list, seed: int) -> str:
    """Run a resolved scenario (TOML text) with ``seed``; the summary.json text."""
    return _native.run_resolved(scenario, file, list(set), int(seed))


def run_record(scenario: str, file: str, set: list, seed: int) -> str:
    """Run a resolved scenario (TOML text) with ``seed``; the run record's text (a reproduction's
    run: its summary with every number exact, and its goodput series)."""
    return _native.run_record(scenario, file, list(set), int(seed))
