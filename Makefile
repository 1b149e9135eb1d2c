# `make demo` and `make test` each create (or reuse) .venv and install what they need.
# torch is installed first, pinned to the CPU build on this disk, so that verl does not pull a CUDA build.
SHELL := /bin/bash
PYTHON ?= python3
# The grader's sandbox mounts its own scratch tmpfs on /tmp, so an interpreter installed under /tmp cannot be seen
# inside it (strict isolation refuses to start, reward_fns/README.md): a checkout under /tmp keeps its environment in
# ~/.cache/nouscoder-verl/ instead of .venv.
# (Its name is the checkout's path with / and spaces replaced: make splits words on spaces.)
DEFAULT_VENV := .venv
space := $(subst ,, )
VENV ?= $(if $(filter /tmp/%,$(CURDIR)/),$(HOME)/.cache/nouscoder-verl/venv$(subst /,-,$(subst $(space),_,$(CURDIR))),$(DEFAULT_VENV))
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
# Debian packages the tests use: slurm + munge (launch tests), shellcheck (shell lint).
SYSTEM_PACKAGES ?= slurm-wlm munge shellcheck
DEMO_OUT ?= demo_out
# The cluster environment: verl 0.9.1's vLLM pin set, then flash-attn built against the torch it brings.
GPU_VENV ?= .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
# verl 0.9.1's own flash-attn pin for torch 2.11 / CUDA 13.0 (its `flash-attn-cu130torch211` extra).
FLASH_ATTN_SPEC ?= flash-attn==2.8.3
GPU_DEPS_REPORT ?= $(VENV)/gpu-deps-report.json

.PHONY: test test-fast demo lint setup setup-gpu gpu-deps-check system-deps clean

$(VENV)/.installed: setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed

# One command on a fresh CUDA node (NVIDIA driver >= 580 for the CUDA 13.0 wheels of torch 2.11; nvcc 13.x and a
# C++ compiler only if flash-attn has no prebuilt wheel for this torch/CUDA/Python and builds from source).
# The vLLM pin set goes in first, in one resolver pass with this package, so torch is the one vLLM pins; then
# flash-attn without build isolation, so its build sees that torch.
setup-gpu:
	test -x $(GPU_PY) || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_PY) -m pip install -q --upgrade pip
	$(GPU_PY) -m pip install -e '.[gpu,test]'
	$(GPU_PY) -m pip install --no-build-isolation '$(FLASH_ATTN_SPEC)'
	$(GPU_PY) -c "import torch, vllm, flash_attn, verl; print('torch', torch.__version__, 'CUDA', torch.version.cuda, '| vllm', vllm.__version__, '| flash-attn', flash_attn.__version__, '| verl', verl.__version__, '| GPUs', torch.cuda.device_count())"
	@echo "GPU environment ready: source $(GPU_VENV)/bin/activate before sbatch"

# Resolves the GPU dependency set (this package's [gpu] extra) for a fresh machine without installing anything,
# so a pin conflict fails here and not on the cluster; needs PyPI. Prints the versions it picks.
gpu-deps-check: setup
	$(PY) -m pip install --dry-run --ignore-installed --quiet --report $(GPU_DEPS_REPORT) '.[gpu]'
	$(PY) launch/check_gpu_deps.py $(GPU_DEPS_REPORT) --flash-attn '$(FLASH_ATTN_SPEC)'

# Installs the Debian packages above when running as root and any is missing; otherwise only reports.
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "WARNING: missing Debian packages ($$missing); tests that need them will fail. Install them as root."; \
	  fi; \
	fi

# ruff's rules, ruff's formatting, and mypy against .ci/mypy-baseline.txt (known errors; the list may only shrink).
# .pre-commit-config.yaml runs the same three before each commit (`pre-commit install`).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) .ci/typecheck.py

test: setup system-deps lint gpu-deps-check
	$(VENV)/bin/pytest --durations=30 tests

# The unit tier for the edit loop: everything but the tests marked integration (whole programs) or gpu.
test-fast: setup lint
	$(VENV)/bin/pytest -m "not integration and not gpu" tests

# The recipe's main job on the bundled sample: data -> grading check -> 2 real RL steps on CPU (debug_cpu).
# The grading check uses a 5 s test limit instead of 15 s so the 9 deliberately-too-slow programs (each >= 10^10
# steps) do not keep the demo waiting; the training run replaces half of the tiny model's responses with the sample's
# own programs (known_answers, a test/demo option, logged as nouscoder/known_answers/*) so that rewards are mixed.
DEMO_RUN = $(abspath $(DEMO_OUT))/cpu_run
demo: setup system-deps
	$(PY) -m data_prep.build_deepcoder_mix --from sample --out $(DEMO_OUT)/data
	$(PY) -m data_prep.sample.export --out $(DEMO_OUT)/grading
	$(PY) -m reward_fns.grade --problems $(DEMO_OUT)/grading/problems.jsonl --completions $(DEMO_OUT)/grading/completions.jsonl --out $(DEMO_OUT)/grading/graded.jsonl --time-limit-s 5 --summary --check-expected
	$(PY) -m recipe.nouscoder.main --config-name debug_cpu trainer.default_local_dir=$(DEMO_RUN) trainer.resume_mode=disable \
	  data.train_files=$(abspath $(DEMO_OUT))/data/train.parquet data.val_files=$(abspath $(DEMO_OUT))/data/test.parquet \
	  trainer.total_training_steps=2 trainer.test_freq=-1 actor_rollout_ref.rollout.engine_kwargs.hf_cpu.known_answers.fraction=0.5
	$(PY) -m recipe.nouscoder.plot_metrics --log $(DEMO_RUN)/metrics.jsonl --out-dir $(DEMO_RUN)/plots
	@echo
	$(PY) -m recipe.nouscoder.run_summary $(DEMO_RUN)
	@echo
	@echo "On a Slurm cluster (6 nodes x 8 GPUs), this recipe runs as:"
	@echo "  sbatch launch/run_dapo_32k_to_40k.sh data.train_files=$(abspath $(DEMO_OUT))/data/train.parquet data.val_files=$(abspath $(DEMO_OUT))/data/test.parquet"

clean:
	rm -rf $(VENV) $(GPU_VENV) $(DEMO_OUT)
