"""select_checkpoint on a run directory laid out as verl 0.9.1 writes it (see the module docstring)."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from recipe.nouscoder.run.run_dir import metrics_segments
from recipe.nouscoder.selection import select_checkpoint as sc

# FSDP shards written by gloo subprocesses; the CLI merges them with verl's model merger.
pytestmark = pytest.mark.integration

LCB_KEY = "val-core/livecodebench/acc/mean@8"

# A tiny Qwen2 model saved as one FSDP2 rank would save it: DTensor shards on a 1-rank "fsdp" mesh, written by a
# subprocess with its own gloo process group so the test process stays free of torch.distributed state.
_WRITE_SHARD = textwrap.dedent(
    """
    import json, os, socket, sys
    import torch, torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    from transformers import AutoModelForCausalLM, Qwen2Config

    actor_dir, seed = sys.argv[1], int(sys.argv[2])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("fsdp",))
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False,
                         architectures=["Qwen2ForCausalLM"])
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    shards = {k: distribute_tensor(v.detach(), mesh, [Shard(0)]) for k, v in model.state_dict().items()}
    torch.save(shards, os.path.join(actor_dir, "model_world_size_1_rank_0.pt"))
    torch.save({"plain": model.state_dict()}, os.path.join(actor_dir, "reference.pt"))
    config.save_pretrained(os.path.join(actor_dir, "huggingface"))
    with open(os.path.join(actor_dir, "fsdp_config.json"), "w") as f:
        json.dump({"FSDP_version": 2, "world_size": 1}, f)
    dist.destroy_process_group()
    """
)


def _write_checkpoint(run_dir: Path, step: int, with_weights: bool) -> Path:
    actor_dir = run_dir / f"global_step_{step}" / "actor"
    (actor_dir / "huggingface").mkdir(parents=True)
    torch.save({}, run_dir / f"global_step_{step}" / "data.pt")
    if with_weights:
        subprocess.run([sys.executable, "-c", _WRITE_SHARD, str(actor_dir), str(step)], check=True)
    else:
        (actor_dir / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": 1}))
    return actor_dir


def _write_metrics(path: Path, records: list[tuple[int, dict]]) -> None:
    path.write_text("".join(json.dumps({"step": step, "data": data}) + "\n" for step, data in records))


@pytest.fixture(scope="module")
def written_run_dir(tmp_path_factory) -> Path:
    """Steps 10, 20, 30 checkpointed (20 with real weights), 40 saved but not yet in the tracker file."""
    root = tmp_path_factory.mktemp("written") / "checkpoints" / "nouscoder" / "dapo_32k"
    root.mkdir(parents=True)
    for step in (10, 20, 30, 40):
        _write_checkpoint(root, step, with_weights=step == 20)
    (root / "latest_checkpointed_iteration.txt").write_text("30")
    _write_metrics(
        root / "metrics.jsonl",
        [
            (0, {LCB_KEY: 0.61, "val-aux/livecodebench/score/mean@8": 0.2}),  # before training: no checkpoint
            (10, {"actor/pg_loss": 0.1, LCB_KEY: 0.62}),
            (15, {"actor/pg_loss": 0.1, LCB_KEY: 0.99}),  # validated but not checkpointed
            (20, {"actor/pg_loss": 0.1, LCB_KEY: 0.64}),
            (30, {"actor/pg_loss": 0.1, LCB_KEY: 0.64}),  # tie with 20: earlier step wins
            (40, {"actor/pg_loss": 0.1, LCB_KEY: 0.70}),  # save not complete
        ],
    )
    return root


@pytest.fixture
def run_dir(written_run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the written run directory for one test to change (the shards are written once per module)."""
    root = tmp_path / "checkpoints" / "nouscoder" / "dapo_32k"
    shutil.copytree(written_run_dir, root)
    return root


def test_selects_best_complete_checkpoint_earliest_on_tie(run_dir: Path) -> None:
    selection = sc.select_best(run_dir, run_dir / "metrics.jsonl")
    assert (selection.step, selection.score, selection.metric_key) == (20, 0.64, LCB_KEY)
    assert selection.actor_dir == run_dir / "global_step_20" / "actor"


def test_relogged_step_uses_last_line(run_dir: Path) -> None:
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 10, "data": {LCB_KEY: 0.65}}) + "\n")
    assert sc.select_best(run_dir, run_dir / "metrics.jsonl").step == 10


def test_ambiguous_metric_is_an_error_naming_the_keys(run_dir: Path) -> None:
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 30, "data": {"val-core/lcb_v5/acc/mean@8": 0.5}}) + "\n")
    with pytest.raises(ValueError, match="lcb_v5"):
        sc.select_best(run_dir, run_dir / "metrics.jsonl")
    chosen = sc.select_best(run_dir, run_dir / "metrics.jsonl", metric_pattern=r"^val-core/lcb_v5/acc/mean@8$")
    assert chosen.step == 30


def test_missing_tracker_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="save_freq"):
        sc.select_best(tmp_path, tmp_path / "metrics.jsonl")


def test_a_run_that_never_validated_is_one_message_saying_how_to_get_scores(tmp_path: Path, capsys) -> None:
    """The demo's run (trainer.test_freq=-1): no traceback, exit 2, what to pass to get scores or how to merge."""
    _write_checkpoint(tmp_path, 2, with_weights=False)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("2")
    _write_metrics(tmp_path / "metrics.jsonl", [(1, {"actor/pg_loss": 0.1}), (2, {"actor/pg_loss": 0.2})])
    assert sc.main([str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert (
        error.startswith(f"select_checkpoint: error: {tmp_path}: no validation score was logged") and "\n" not in error
    )
    assert "data.val_files=TEST.parquet trainer.test_freq=N" in error and "verl.model_merger merge" in error
    assert sc.main([str(tmp_path / "missing")]) == 2
    assert "latest_checkpointed_iteration.txt not found" in capsys.readouterr().err


def test_cli_merges_with_verl_model_merger_and_prints_path_last(run_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "recipe.nouscoder.selection.select_checkpoint", str(run_dir)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    merged = Path(result.stdout.strip().splitlines()[-1])
    assert merged == run_dir / "best_hf" / "global_step_20"
    assert "global_step_20" in result.stderr and "0.6400" in result.stderr
    reference = torch.load(run_dir / "global_step_20" / "actor" / "reference.pt")["plain"]
    weights = load_file(merged / "model.safetensors")
    assert set(weights) == set(reference)
    for name, tensor in reference.items():
        assert torch.equal(weights[name], tensor), name
    assert json.loads((merged / "config.json").read_text())["hidden_size"] == 16


def test_cli_no_merge_prints_actor_dir_and_command(run_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "recipe.nouscoder.selection.select_checkpoint", str(run_dir), "--no-merge"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.stdout.strip().splitlines()[-1] == str(run_dir / "global_step_20" / "actor")
    assert "python -m verl.model_merger merge --backend fsdp" in result.stderr


def test_resumed_run_segments_are_read_oldest_first(run_dir: Path) -> None:
    """main renames a previous metrics.jsonl to metrics.<k>.jsonl; the current file's lines win."""
    current = run_dir / "metrics.jsonl"
    current.rename(run_dir / "metrics.1.jsonl")
    _write_metrics(run_dir / "metrics.2.jsonl", [(10, {LCB_KEY: 0.90})])
    _write_metrics(current, [(30, {LCB_KEY: 0.80})])
    assert [p.name for p in metrics_segments(current)] == ["metrics.1.jsonl", "metrics.2.jsonl", "metrics.jsonl"]
    selection = sc.select_best(run_dir, current)
    assert (selection.step, selection.score) == (10, 0.90)


def test_step_merges_any_complete_checkpoint_without_scores(run_dir: Path, capsys) -> None:
    """--step N takes checkpoint N whatever its score, even in a run that logged none; an incomplete one is refused."""
    (run_dir / "metrics.jsonl").unlink()
    assert sc.main([str(run_dir), "--step", "20"]) == 0
    merged = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert merged == run_dir / "step_hf" / "global_step_20"
    reference = torch.load(run_dir / "global_step_20" / "actor" / "reference.pt")["plain"]
    weights = load_file(merged / "model.safetensors")
    assert all(torch.equal(weights[name], tensor) for name, tensor in reference.items())
    assert sc.main([str(run_dir), "--step", "40"]) == 2  # saved after the tracker's step: not complete
    assert "no complete checkpoint global_step_40 (complete: [10, 20, 30]" in capsys.readouterr().err
