"""No checkpoint's own code ever runs: not at registration, not in the engine, not even when someone answers "y".

transformers offers to run a checkpoint's Python (``auto_map``) when a load does not say
``trust_remote_code``: on a terminal it asks "Do you wish to run the custom code? [y/N]". Here
stdin answers "y" to everything, and a file written at import time would prove the code ran.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from django.core.management import CommandError, call_command
from hostile_inputs import CANARY

from registry.models import LanguageModel

pytestmark = pytest.mark.backend  # register_model runs in manage.py processes too
ROOT = Path(__file__).resolve().parents[2]
CODE = """
from pathlib import Path
Path({marker!r}).write_text({canary!r})
from transformers import BertConfig, BertModel
class EvilConfig(BertConfig):
    model_type = "evil-bert"
class EvilModel(BertModel):
    config_class = EvilConfig
"""


@pytest.fixture
def remote_code_checkpoint(tmp_path) -> tuple[Path, Path]:
    """A complete checkpoint whose config names an unknown model type and maps it to its own code."""
    directory = tiny_bert(tmp_path / "evil", ["aspirin inhibits cyclooxygenase"] * 5, 120)
    marker = tmp_path / "code-ran"
    config = json.loads((directory / "config.json").read_text())
    config.update(model_type="evil-bert", auto_map={"AutoConfig": "configuration_evil.EvilConfig",
                                                    "AutoModel": "modeling_evil.EvilModel"})  # fmt: skip
    (directory / "config.json").write_text(json.dumps(config))
    for module in ("configuration_evil", "modeling_evil"):
        (directory / f"{module}.py").write_text(CODE.format(marker=str(marker), canary=CANARY))
    return directory, marker


@pytest.fixture
def answering_yes(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 20))


@pytest.mark.django_db
def test_register_model_on_an_auto_map_checkpoint_with_yes_on_stdin_runs_no_code(
    remote_code_checkpoint, answering_yes, artefact_store, capsys
):
    directory, marker = remote_code_checkpoint
    with pytest.raises(
        CommandError, match=r"evil: (configuration_evil|modeling_evil).py: a checkpoint may hold no code"
    ):
        call_command("register_model", str(directory))
    for module in ("configuration_evil", "modeling_evil"):
        (directory / f"{module}.py").unlink()  # without the files, the auto_map itself is refused
    with pytest.raises(CommandError, match=r"config.json: has an auto_map, which asks to run code"):
        call_command("register_model", str(directory))
    assert not marker.exists() and not LanguageModel.objects.filter(slug="evil").exists()
    assert "Do you wish to run the custom code" not in capsys.readouterr().out


def test_the_engines_loaders_refuse_remote_code_without_asking(remote_code_checkpoint, answering_yes, capsys):
    from workers.engine.architectures import ArchitectureError, load_config
    from workers.engine.tokenization import load_tokenizer

    directory, marker = remote_code_checkpoint
    with pytest.raises(ArchitectureError, match=r"its config\.json cannot be read"):
        load_config(directory)
    tokenizer_config = json.loads((directory / "tokenizer_config.json").read_text())
    tokenizer_config["auto_map"] = {"AutoTokenizer": ["configuration_evil.EvilTokenizer", None]}
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    try:  # transformers refuses, or falls back to its own tokenizer class: either way none of the checkpoint's
        tokenizer = load_tokenizer(directory)
    except (OSError, ValueError):
        tokenizer = None
    assert tokenizer is None or type(tokenizer).__module__.startswith("transformers.")
    assert not marker.exists()
    captured = capsys.readouterr()
    assert "Do you wish to run the custom code" not in captured.out + captured.err


def test_the_engine_command_refuses_it_as_the_submissions_fault_with_yes_piped_in(remote_code_checkpoint, tmp_path):
    """Through a real process and a real pipe, as a worker runs the engine."""
    directory, marker = remote_code_checkpoint
    data = ROOT / "plugins" / "datasets" / "demo" / "demo-ner"
    command = [sys.executable, "-m", "workers.engine", "finetune", "--model", str(directory), "--dataset", "demo-ner",
               "--data_dir", str(data), "--out", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(command, input="y\n" * 20, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**_environment(), "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert not marker.exists()
    assert "Do you wish to run the custom code" not in done.stdout + done.stderr


def _environment() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}


@pytest.mark.slow
def test_register_model_in_its_own_process_with_yes_piped_to_stdin_runs_no_code(remote_code_checkpoint, tmp_path):
    """The issue's own probe: a real ``manage.py register_model`` on a fresh SQLite platform, "y" on a pipe."""
    directory, marker = remote_code_checkpoint
    environment = {k: v for k, v in _environment().items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    environment |= {"BIOLM_VAR_DIR": str(tmp_path / "var"), "HF_HUB_OFFLINE": "1"}

    def manage(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *arguments], input="y\n" * 20, capture_output=True,
                              text=True, cwd=ROOT, env=environment, timeout=300)  # fmt: skip

    for setup in (("migrate", "--noinput"), ("sync_plugins",)):
        assert manage(*setup).returncode == 0
    with_code = manage("register_model", str(directory))
    for module in ("configuration_evil", "modeling_evil"):
        (directory / f"{module}.py").unlink()
    auto_map_only = manage("register_model", str(directory))
    for done, reason in ((with_code, "a checkpoint may hold no code"), (auto_map_only, "has an auto_map")):
        assert done.returncode == 1 and reason in done.stderr, done.stderr[-2000:]
        assert "Do you wish to run the custom code" not in done.stdout + done.stderr
    assert not marker.exists()
