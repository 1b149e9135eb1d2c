"""nouscoder-verl: the NousCoder / DeepCoder / MicroCoder code-RL recipe as a verl 0.9.1 extension."""

from setuptools import find_packages, setup

setup(
    name="nouscoder-verl",
    version="0.1.0",
    description="Competitive-programming RL on verl: GRPO-family plugins, sandboxed code reward, data prep, Slurm launch",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["verl_ext*", "reward_fns*", "data_prep*", "recipe*"]),
    include_package_data=True,
    # The bundled sample's problem folders are data (statements, tests, generators, reference, wrong and hostile
    # programs read by data_prep.sample.bundle), not packages. Installed into site-packages they are hidden from
    # sandboxed programs like the rest of this package (reward_fns/sandbox/isolation.py, interpreter_paths).
    package_data={"data_prep.sample": ["*.md", "*.toml", "problems/*/*"], "recipe": ["**/*.md"]},
    install_requires=[
        "verl==0.9.1",
        "torch>=2.6",
        "numpy",
        "pandas",
        "pyarrow",
        "datasets",
        "hydra-core",
        "omegaconf",
        "ray[default]",
        "tqdm",
        "psutil",
        "matplotlib",
        # verl's V1 trainer (trainer.use_v1=true, our default path) imports these; verl lists them only
        # under its heavy `verl-core` extra, so we name the few we need.
        "TransferQueue>=0.1.10",
        "pyzmq",
        "msgspec",
        "cachetools",
        "fastapi",
        "uvicorn",
    ],
    extras_require={
        # The linters are pinned: a new ruff formats differently and a new mypy finds other errors than the baseline.
        "test": ["pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "ruff==0.17.6", "mypy==2.4.1", "pre-commit"],
        # The cluster stack: verl's own vLLM pin set (vllm 0.24.0 with the torch 2.11.0 / transformers it pins) and
        # its CUDA 13 cupy build (`cupy-cu130`: cupy-cuda13x 14.0.1), which verl's NCCL checkpoint engine, the
        # separate-async configs' weight sync, imports (launch/bill_of_materials.py; `make gpu-deps-check`).
        # flash-attn is not listed: PyPI has only its source, whose build needs that torch installed first and
        # no build isolation; `make setup-gpu` installs it after this extra (Makefile, README "GPU cluster set-up").
        "gpu": ["verl[vllm,cupy-cu130]==0.9.1"],
    },
    entry_points={
        # verl's __init__ loads every entry point of this group on `import verl`, in every process
        # (driver and Ray workers), so our advantage estimators and policy losses are registered
        # wherever verl looks them up.
        "verl.plugins": ["nouscoder = verl_ext"],
    },
)
