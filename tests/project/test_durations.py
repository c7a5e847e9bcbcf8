"""The harness's tests handed out longest module first (tests/durations.py)."""

from tests import durations


def test_the_longest_module_goes_first_its_tests_together_and_in_their_order():
    keys = [("a.py", False), ("b.py", False), ("a.py", False), ("c.py", True), ("b.py", False), ("new.py", False)]
    figures = {"a.py": [1.0, 0.0], "b.py": [30.0, 0.0], "c.py": [2.0, 50.0]}
    got = [keys[i][0] + str(i) for i in durations.order(keys, figures)]
    # c.py's slow figure (50) counts for its slow test; new.py, not listed, counts as DEFAULT_S (10).
    assert got == ["c.py3", "b.py1", "b.py4", "new.py5", "a.py0", "a.py2"]


def test_without_figures_the_collection_order_stands():
    keys = [("b.py", False), ("a.py", True), ("b.py", False)]
    assert durations.order(keys, {}) == [1, 0, 2]  # all DEFAULT_S: by path, each module's tests in order


def test_figures_are_read_from_pytests_durations_lines():
    all_log = "12.50s call     tests/x/test_a.py::test_one[p]\n0.50s setup    tests/x/test_a.py::test_two\n"
    slow_log = "40.00s call     tests/x/test_b.py::test_slow\nnot a durations line\n"
    assert durations.from_logs(all_log, slow_log) == {"tests/x/test_b.py": [0.0, 40.0],
                                                      "tests/x/test_a.py": [13.0, 0.0]}


def test_the_committed_figures_name_modules_that_exist():
    from tests.conftest import ROOT

    figures = durations.load()
    assert figures, "tests/durations.json is missing or unreadable"
    missing = [m for m in figures if not (ROOT / m).is_file()]
    assert not missing, f"tests/durations.json names modules that are gone (refresh it: python -m tests.durations): {missing}"
