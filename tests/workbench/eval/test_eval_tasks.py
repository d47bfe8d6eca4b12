"""Harbor task folders and datasets read and checked: task.toml's errors name the file and the
key, datasets and --tasks say what is wrong, rewards are parsed, Harbor's absolute paths are
mapped into the sandbox; the local pool's bounds; the progress line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from eval_support import make_task

from workbench.eval.pool import LocalPool
from workbench.eval.progress import Progress
from workbench.eval.task_config import TaskConfigError, read_task_config
from workbench.eval.tasks import DEMO_DIR, DatasetError, load_dataset
from workbench.eval.types import TrialJob, TrialOutcome
from workbench.eval.verifier import read_reward, rewrite_paths


def config_of(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "task.toml").write_text(toml)
    return tmp_path


def test_task_toml_is_read_with_harbor_keys(tmp_path: Path) -> None:
    folder = config_of(
        tmp_path,
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\n[agent]\ntimeout_sec = 90\n'
        '[verifier]\ntimeout_sec = 30.5\n[environment]\ncpus = 2\nmemory = "2G"\n'
        'allow_internet = false\nstorage = "10G"\n',
    )
    (folder / "environment").mkdir()
    (folder / "environment" / "Dockerfile").write_text("FROM scratch\n")
    config = read_task_config(folder)
    assert (config.agent_timeout_s, config.verifier_timeout_s) == (90.0, 30.5)
    assert (config.cpus, config.memory_bytes, config.allow_internet) == (2.0, 2 * 2**30, False)
    assert config.dockerfile == folder / "environment" / "Dockerfile" and config.uses_docker
    assert config.metadata == {"difficulty": "easy"} and not config.warnings
    assert (
        read_task_config(config_of(tmp_path, "[environment]\nmemory_mb = 512\n")).memory_bytes
        == 512 * 2**20
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[agent]\ntimeout_sec = "ten"\n',
            "[agent] timeout_sec must be a number, not text ('ten')",
        ),
        ("[verifier]\ntimeout_sec = -1\n", "[verifier] timeout_sec must be above 0"),
        ('[environment]\nmemory = "lots"\n', '[environment] memory must be a size such as "2G"'),
        (
            '[environment]\nallow_internet = "no"\n',
            "[environment] allow_internet must be true or false",
        ),
        ("[environment]\ndocker_image = 3\n", "[environment] docker_image must be text in quotes"),
        ("agent = 3\n", "[agent] must be a table, not a number"),
        ("[agent\n", "not valid TOML"),
    ],
)
def test_a_bad_task_toml_names_the_file_and_the_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(TaskConfigError) as raised:
        read_task_config(config_of(tmp_path, toml))
    assert str(raised.value).startswith(f"{tmp_path / 'task.toml'}: ")
    assert message in str(raised.value)


def test_an_unknown_key_is_a_warning_not_silence(tmp_path: Path) -> None:
    config = read_task_config(config_of(tmp_path, "[agent]\ntimeout_secs = 5\n"))
    assert config.agent_timeout_s == 600.0
    assert config.warnings == (
        f"{tmp_path / 'task.toml'}: [agent] timeout_secs is not a key this reader knows; ignored",
    )


def test_datasets_and_task_filters(tmp_path: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        make_task(tmp_path / "set", name, "echo 1 > /logs/verifier/reward.txt\n")
    (tmp_path / "set" / "notes").mkdir()  # not a task folder: passed over
    assert [e.name for e in load_dataset(str(tmp_path / "set"))] == ["alpha", "beta", "gamma"]
    assert [e.name for e in load_dataset(str(tmp_path / "set"), ["g*", "alpha"])] == [
        "alpha",
        "gamma",
    ]
    assert [e.name for e in load_dataset(str(tmp_path / "set" / "beta"))] == ["beta"]
    with pytest.raises(DatasetError, match=r"--tasks delta: no such task \(tasks: alpha, beta"):
        load_dataset(str(tmp_path / "set"), ["delta"])
    with pytest.raises(DatasetError, match="no such folder"):
        load_dataset(str(tmp_path / "nothing"))
    with pytest.raises(DatasetError, match="no task folders in it"):
        load_dataset(str(tmp_path / "set" / "notes"))
    (tmp_path / "set" / "beta" / "tests" / "test.sh").unlink()
    with pytest.raises(DatasetError, match=r"beta: no tests/test.sh"):
        load_dataset(str(tmp_path / "set"))


def test_the_demo_suite_loads() -> None:
    names = [e.name for e in load_dataset("demo")]
    assert {"hello-file", "count-lines", "python-fizzbuzz", "json-config"} <= set(names)
    for name in ("hello-file", "count-lines", "python-fizzbuzz", "json-config"):
        assert (DEMO_DIR / name / "solution" / "solve.sh").is_file()


def test_browsergym_ids_need_the_browsergym_task_kind() -> None:
    import importlib.util

    if importlib.util.find_spec("workbench.eval.browsergym_task") is not None:
        assert load_dataset("browsergym/miniwob.click-test")[0].name == "miniwob.click-test"
        return
    with pytest.raises(DatasetError, match="BrowserGym tasks are not available in this build"):
        load_dataset("browsergym/miniwob.click-test")


def test_rewards_are_read_from_either_file(tmp_path: Path) -> None:
    assert read_reward(tmp_path) == (None, {}, None)
    (tmp_path / "reward.json").write_text('{"a": 1, "b": 0}')
    assert read_reward(tmp_path) == (0.5, {"a": 1.0, "b": 0.0}, None)
    (tmp_path / "reward.json").write_text('{"reward": 0.25, "b": 1}')
    assert read_reward(tmp_path)[0] == 0.25
    (tmp_path / "reward.json").write_text('{"a": "yes"}')
    assert read_reward(tmp_path)[2] == "reward.json: a is 'yes', not a number"
    (tmp_path / "reward.txt").write_text(" 0.75\n")  # reward.txt wins
    assert read_reward(tmp_path) == (0.75, {"reward": 0.75}, None)
    (tmp_path / "reward.txt").write_text("nan")
    assert "not a finite number" in str(read_reward(tmp_path)[2])


def test_harbor_paths_are_mapped_into_the_workspace() -> None:
    text = "pytest /tests/test_outputs.py > /logs/verifier/out\ncd /app/tests; ls ~/tests /tests"
    assert rewrite_paths(text, "/w/.verifier") == (
        "pytest /w/.verifier/tests/test_outputs.py > /w/.verifier/logs/verifier/out\n"
        "cd /app/tests; ls ~/tests /w/.verifier/tests"
    )


def test_the_local_pool_keeps_its_bound_and_stops_starting() -> None:
    lock = threading.Lock()
    running, peak, release = [0], [0], threading.Event()
    started: list[str] = []

    def work(job: TrialJob) -> TrialOutcome:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            started.append(job.trial_id)
            if running[0] == 2:
                release.set()
        release.wait(10)
        with lock:
            running[0] -= 1
        return TrialOutcome(job.trial_id, "done", 1.0, cost_usd=job.settings["n"])

    ended: list[str] = []
    jobs = [TrialJob(f"t__{i}", "x", 1, {"n": 0}) for i in range(6)]

    def prepare(job: TrialJob) -> TrialJob:
        return TrialJob(job.trial_id, job.task_ref, job.attempt, {"n": 0.5})

    LocalPool(2).run(
        jobs, work, lambda o: ended.append(o.trial_id), lambda: len(ended) < 3, prepare
    )
    assert peak[0] == 2
    assert len(ended) == len(started) and 3 <= len(started) < 6  # none started after the third end
    with pytest.raises(ValueError, match="at least 1"):
        LocalPool(0)


def test_the_progress_line_off_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress(3, 2, out=out)
    progress.trial_started()
    progress.trial_done(TrialOutcome("a__1", "done", 1.0, cost_usd=0.01), "a")
    progress.trial_done(TrialOutcome("b__1", "error", None, error="no sandbox\nmore"), "b")
    assert out.getvalue() == "a__1: done, reward 1\nb__1: error, reward - (no sandbox)\n"
    line = progress.line()
    assert line.startswith(
        "trials 2/3 · running 0 · failed 0 · errors 1 · success 1/1 (100%) · $0.0100"
    )
    assert "ETA" in line


class Terminal(io.StringIO):
    """A text stream that says it is a terminal, as a person's stderr does."""

    def isatty(self) -> bool:
        return True


def test_the_progress_line_on_a_terminal_is_rewritten_in_place() -> None:
    out = Terminal()
    progress = Progress(2, 2, out=out)
    progress.begin({})
    progress.trial_started()
    progress.trial_started()
    progress.trial_done(TrialOutcome("a__1", "done", 0.0, cost_usd=0.5), "a")
    progress.notice("the cost cap $1 was reached")
    progress.end({})
    text = out.getvalue()
    assert "\n" not in text.split("the cost cap")[0]  # no trial got a line of its own
    assert "\r\033[Ktrials 0/2 · running 1 ·" in text  # the first start
    assert (
        "\r\033[Ktrials 1/2 · running 1 · failed 1 · errors 0 · success 0/1 (0%) · $0.5000" in text
    )
    assert "\r\033[Kthe cost cap $1 was reached\n" in text
    assert text.endswith("\n") and text.count("\n") == 2
    assert progress._ticker is not None and not progress._ticker.is_alive()


def test_the_docs_list_the_eval_exit_codes() -> None:
    from workbench.eval import eval_exit

    docs = (Path(__file__).resolve().parents[3] / "docs" / "eval.md").read_text()
    assert eval_exit.markdown_table() in docs


def test_trial_folders_of_a_killed_driver_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    from workbench.eval import trial

    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    key_of_gone = trial._process_key(gone.pid)
    gone.kill()
    gone.wait()
    folders = {
        name: tmp_path / f"wb-trial-{name}-x"
        for name in ("dead", "live", "young", "old", "other", "garbage", "superscript")
    }
    for folder in folders.values():
        folder.mkdir()
    (folders["garbage"] / trial.DRIVER_FILE).write_text("not a pid\n")  # planted: no driver
    (folders["superscript"] / trial.DRIVER_FILE).write_text("\u00b2 1\n")  # a digit, no int
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("the person's")
    (tmp_path / "wb-trial-link-x").symlink_to(precious)  # planted: never followed
    (folders["dead"] / trial.DRIVER_FILE).write_text(key_of_gone or "")
    (folders["live"] / trial.DRIVER_FILE).write_text(trial._process_key(os.getpid()) or "")
    os.utime(folders["old"], (time.time() - 3600, time.time() - 3600))
    (folders["other"] / trial.DRIVER_FILE).write_text(f"{os.getpid()} 1")  # pid reused
    removed = trial.sweep_orphans(tmp_path)
    assert sorted(p.name for p in removed) == [
        "wb-trial-dead-x",
        "wb-trial-garbage-x",
        "wb-trial-old-x",
        "wb-trial-other-x",
        "wb-trial-superscript-x",
    ]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["precious", "wb-trial-link-x", "wb-trial-live-x", "wb-trial-young-x"]
    assert (precious / "keep.txt").read_text() == "the person's"
