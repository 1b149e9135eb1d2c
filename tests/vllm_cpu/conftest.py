"""The vLLM-on-CPU tier: tests that run in the venv of `make setup-vllm-cpu` (`make test-vllm-cpu`; `make test` runs
them after the main suite). The main suite leaves this folder out (`--ignore=tests/vllm_cpu`): vLLM is not in .venv.

The bundled sample's parquet and the tiny model are built once per session, as for tests/recipe."""

from tests.recipe.conftest import sample_data_dir, tiny_model_dir

__all__ = ["sample_data_dir", "tiny_model_dir"]
