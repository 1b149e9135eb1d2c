# shellcheck shell=bash
# Ray on Slurm, sourced by launch/stage_chain.sh (and by the tests): node list, network, environment,
# a Ray cluster over the job's nodes, a wait until every node and GPU has joined, and a stop that runs
# on every node however the job ends.
#
# Knobs (environment variables; defaults in brackets):
#   NNODES               nodes to use [SLURM_JOB_NUM_NODES inside a Slurm job, else 1]; outside Slurm only 1
#   GPUS_PER_NODE        GPUs per node given to Ray and verl [SLURM_GPUS_ON_NODE / SLURM_GPUS_PER_NODE, else nvidia-smi -L];
#                        0 stops the job at once. In the CPU mode they are logical device slots (e.g. 2)
#   RAY_NUM_CPUS         CPUs per node given to Ray [SLURM_CPUS_ON_NODE, else Ray's own count]
#   RAY_PORT             GCS port of the head node [6379]
#   RAY_START_ARGS       extra `ray start` arguments for every node, word-split (e.g. "--object-store-memory=...")
#   RAY_HEAD_START_ARGS, RAY_WORKER_START_ARGS   extra `ray start` arguments for the head / the other nodes only
#   RAY_TMP_ROOT         node-local parent of the Ray temp dirs (RAY_TMP_ROOT/ray_<job>/<node index>/); keep
#                        it short, Ray's socket paths live under it [/tmp]
#   RAY_WAIT_TIMEOUT_S   how long to wait for the head, then for every node and GPU, to join before failing [600]
#   RAY_WAIT_POLL_S      seconds between `ray status` polls [5]
#   RAY_JOIN_TIMEOUT_S   how long a worker node retries reaching the head's GCS before giving up [300]
#   RAY_JOIN_POLL_S      seconds between a worker's attempts [5]
#   WATCH_POLL_S         seconds between checks of the running command and every node's Ray [2]
#   RAY_STOP_GRACE_S     seconds between SIGTERM and SIGKILL when stopping Ray on a node [15]
#   NETWORK_INTERFACE    interface for Ray, NCCL and Gloo [the interface of the default route]
#   IP_FAMILY            4 or 6 [4 when the node has an IPv4 default route, else 6]
#   RAY_BIN              the ray executable [ray on PATH]
#   SANDBOX_CHECK        1: before anything trains, run the grader's isolation probe on every node and fail the
#                        job naming each node where the code sandbox would be incomplete; 0: skip [1]
#   SANDBOX_CHECK_CMD    the probe, word-split [python -m reward_fns.sandbox]
#   BOM_CHECK            1: before Ray starts, every node imports each module and looks up each registry entry the
#                        job's configs need (their bill of materials, BOM_MANIFEST, written by launch/preflight.py),
#                        and the job fails naming each node and its missing pieces; 0: skip [1]
#   BOM_CHECK_CMD        the check, word-split; ray_node.sh appends --manifest BOM_MANIFEST --node NODE
#                        [python launch/bill_of_materials.py check]
#   SRUN_ARGS            extra arguments of every node step's srun, word-split (site conventions, launch/README.md
#                        "Site conventions"; e.g. pyxis: "--container-image=/shared/nouscoder.sqsh
#                        --container-mounts=/shared:/shared") []
#   CMD_PREFIX           a prefix of every command a node step runs, word-split (e.g. Apptainer: "apptainer exec --nv
#                        --bind /shared /shared/nouscoder.sif") []
#   HOST_CMD_PREFIX      the same for the Python commands the batch script runs on its own host (preflight, trainer
#                        driver, selection, ...) [CMD_PREFIX]
#   DIAGNOSTICS_TIMEOUT_S  bound of each diagnostics command of a stalled run (py-spy, nvidia-smi, ray status) and of
#                        each node's whole dump [60]
#   NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, NCCL_DEBUG, TORCH_NCCL_ASYNC_ERROR_HANDLING, VLLM_USE_V1,
#   VLLM_ALLOW_LONG_MAX_MODEL_LEN, TOKENIZERS_PARALLELISM, RAY_memory_monitor_refresh_ms, RAY_AUTH_MODE, HYDRA_FULL_ERROR,
#   PYTHONUNBUFFERED, NOFILE_LIMIT: exported with the defaults in export_training_env unless already set.

# bash 4.4 is what RHEL / Rocky 8 ship; nothing here needs more (no `wait -n -p`, `wait -f`, EPOCHSECONDS, ...).
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 4))); then
  echo "[launch] ERROR: launch/ needs bash >= 4.4, this is bash $BASH_VERSION ($BASH): put a newer bash first on PATH." >&2
  exit 1
fi

RAY_SLURM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '[launch %(%Y-%m-%d %H:%M:%S)T] %s\n' -1 "$*"; }
die() { printf '[launch %(%Y-%m-%d %H:%M:%S)T] ERROR: %s\n' -1 "$*" >&2; exit 1; }

in_slurm_job() { [[ -n "${SLURM_JOB_ID:-}" ]]; }

# Ray resource name that marks a node as joined: `ray status` lists it, so missing nodes can be named.
node_marker() { printf 'slurm_host_%s' "${1//[^A-Za-z0-9_]/_}"; }

# Fills NODES (array) with the job's hostnames, batch host first, and checks the count against the
# allocation and NNODES. Outside Slurm: NODES=(this host), NNODES must be 1.
resolve_nodes() {
  if ! in_slurm_job; then
    NNODES=${NNODES:-1}
    [[ "$NNODES" == 1 ]] || die "NNODES=$NNODES needs a Slurm allocation (sbatch or salloc); without Slurm only NNODES=1 runs."
    NODES=("$(hostname -s)")
    return
  fi
  local -a listed
  mapfile -t listed < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  [[ ${#listed[@]} -eq "$SLURM_JOB_NUM_NODES" ]] ||
    die "scontrol expanded SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST to ${#listed[@]} hosts, but SLURM_JOB_NUM_NODES=$SLURM_JOB_NUM_NODES."
  NNODES=${NNODES:-${#listed[@]}}
  [[ "$NNODES" -le ${#listed[@]} ]] ||
    die "NNODES=$NNODES but the job has ${#listed[@]} nodes ($SLURM_JOB_NODELIST): submit with --nodes=$NNODES."
  # The batch host is the head; from a login node (salloc) the first node is.
  local head=${listed[0]} node
  for node in "${listed[@]}"; do [[ "$node" == "${SLURMD_NODENAME:-}" ]] && head=$node; done
  NODES=("$head")
  for node in "${listed[@]}"; do
    [[ "$node" == "$head" || ${#NODES[@]} -ge "$NNODES" ]] || NODES+=("$node")
  done
}

# Sets GPUS_PER_NODE (what Ray and verl are given) and ALLOCATION_GPUS (the GPUs the job holds per node, 0 for none:
# the site check wants that many on every node; in the CPU mode GPUS_PER_NODE counts logical slots instead).
resolve_gpus_per_node() {
  local per_node=${SLURM_GPUS_PER_NODE:-}
  if [[ -n "${SLURM_GPUS_ON_NODE:-}$per_node" ]]; then
    ALLOCATION_GPUS=${SLURM_GPUS_ON_NODE:-${per_node##*:}}
  elif command -v nvidia-smi >/dev/null; then
    ALLOCATION_GPUS=$(nvidia-smi -L | grep -c '^GPU') || ALLOCATION_GPUS=0
  fi
  ALLOCATION_GPUS=${ALLOCATION_GPUS:-0}
  GPUS_PER_NODE=${GPUS_PER_NODE:-$ALLOCATION_GPUS}
  [[ "$GPUS_PER_NODE" =~ ^[0-9]+$ ]] || die "GPUS_PER_NODE=$GPUS_PER_NODE is not a number of GPUs."
  [[ "$GPUS_PER_NODE" -gt 0 ]] ||
    die "no GPU on the job's nodes (Slurm gave the job none and nvidia-smi lists none): submit with --gpus-per-node=N or --gres=gpu:N. The CPU mode (STAGES=\"debug_cpu debug_cpu_extended\") runs on CPU-only nodes with logical device slots: GPUS_PER_NODE=2 RAY_NUM_CPUS=16."
}

# Sets NODE_IP and NODE_IFACE for this host: NETWORK_INTERFACE if given, else the default route's, else
# the first interface with a global address.
detect_node_network() {
  local family=${IP_FAMILY:-}
  if [[ -z "$family" ]]; then
    if ip -4 route show default 2>/dev/null | grep -q .; then family=4; else family=6; fi
  fi
  [[ "$family" == 4 || "$family" == 6 ]] || die "IP_FAMILY=$family: use 4 or 6."
  if [[ -n "${NETWORK_INTERFACE:-}" ]]; then
    NODE_IFACE=$NETWORK_INTERFACE
    local scope=()
    [[ "$family" == 6 ]] && scope=(scope global) # not a link-local fe80:: address
    NODE_IP=$({ ip -o "-$family" addr show dev "$NODE_IFACE" "${scope[@]}" 2>/dev/null || true; } | awk '{split($4, a, "/"); print a[1]; exit}')
  else
    local probe=8.8.8.8
    [[ "$family" == 6 ]] && probe=2001:4860:4860::8888
    read -r NODE_IFACE NODE_IP < <({ ip -o "-$family" route get "$probe" 2>/dev/null || true; } |
      awk '{for (i = 1; i < NF; i++) { if ($i == "dev") d = $(i + 1); if ($i == "src") s = $(i + 1) } print d, s; exit}') || true
    if [[ -z "${NODE_IP:-}" ]]; then # no default route: the first global address of the family
      read -r NODE_IFACE NODE_IP < <({ ip -o "-$family" addr show scope global 2>/dev/null || true; } |
        awk '{split($4, a, "/"); print $2, a[1]; exit}') || true
    fi
  fi
  [[ -n "${NODE_IP:-}" && -n "${NODE_IFACE:-}" ]] ||
    die "no IPv$family address found on $(hostname -s) (interface '${NETWORK_INTERFACE:-default route}'): set NETWORK_INTERFACE (see 'ip -o addr') or IP_FAMILY."
}

# NCCL and Gloo use this node's interface unless the user named one.
export_node_interface() {
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-$NODE_IFACE}
  export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-$NODE_IFACE}
}

# host:port with IPv6 hosts in brackets, the form Ray's --address takes.
ray_address() { if [[ "$1" == *:* ]]; then printf '[%s]:%s' "$1" "$2"; else printf '%s:%s' "$1" "$2"; fi; }

# Environment the trainer, NCCL, Gloo, vLLM and Ray need (srun passes it on to every node). The NCCL/Gloo
# interface is set per node by ray_node.sh (export_node_interface), where Ray's workers inherit it.
export_training_env() {
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # A dead peer aborts the collective with an error instead of hanging until the job's time limit.
  export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-1}
  export VLLM_USE_V1=${VLLM_USE_V1:-1}
  # The final evaluation runs past the model's 40,960 positions with YaRN; vLLM refuses that without this.
  export VLLM_ALLOW_LONG_MAX_MODEL_LEN=${VLLM_ALLOW_LONG_MAX_MODEL_LEN:-1}
  export TOKENIZERS_PARALLELISM=${TOKENIZERS_PARALLELISM:-false}
  # Ray's memory monitor kills rollout workers under vLLM's large, intended host allocations: off.
  export RAY_memory_monitor_refresh_ms=${RAY_memory_monitor_refresh_ms:-0}
  # Ray >= 2.5x turns token authentication on for any process that finds ~/.ray/auth_token, a file any
  # local ray.init() may create at any time: one explicit mode for every process of the job instead.
  # RAY_AUTH_MODE=token (with the token in RAY_AUTH_TOKEN or a shared ~/.ray/auth_token) requires tokens.
  export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
  export HYDRA_FULL_ERROR=${HYDRA_FULL_ERROR:-1}
  export PYTHONUNBUFFERED=${PYTHONUNBUFFERED:-1}
  local hard
  hard=$(ulimit -Hn)
  local want=${NOFILE_LIMIT:-65536}
  [[ "$hard" != unlimited && "$hard" -lt "$want" ]] && want=$hard
  ulimit -n "$want"
}

# The srun arguments that give a node step every GPU of its node, however the job asked for them: a job submitted with
# --gres=gpu:N over the wrappers' #SBATCH --gpus-per-node inherits SLURM_GPUS_PER_NODE, which its steps would request
# on top of the gres (Slurm 22.05: "Step requested gres_per_node=gpu:8 is more than the job's gres_per_node=gpu:4").
# So each step asks for the node's GPUs (SLURM_GPUS_ON_NODE) as gres, which every select plugin understands, and the
# inherited per-node and per-job GPU requests are dropped from its environment (node_step).
node_step_gpu_args() {
  [[ "${SLURM_GPUS_ON_NODE:-0}" =~ ^[1-9][0-9]*$ ]] && printf -- '--gres=gpu:%s' "$SLURM_GPUS_ON_NODE"
  return 0
}

# Runs COMMAND... on NODE with every GPU of it: through srun inside a Slurm job (with SRUN_ARGS), directly otherwise;
# under CMD_PREFIX either way (launch/README.md "Site conventions").
run_on_node() {
  local node=$1
  shift
  local -a prefix srun_args
  read -ra prefix <<<"${CMD_PREFIX:-}"
  if in_slurm_job; then
    read -ra srun_args <<<"$(node_step_gpu_args) ${SRUN_ARGS:-}"
    env -u SLURM_GPUS_PER_NODE -u SLURM_GPUS srun --overlap --nodes=1 --ntasks=1 --nodelist="$node" --kill-on-bad-exit=1 \
      "${srun_args[@]}" "${prefix[@]}" "$@"
  else
    "${prefix[@]}" "$@"
  fi
}

# Runs `launch/lib/ray_node.sh ACTION` on NODE.
on_node() { run_on_node "$1" bash "$RAY_SLURM_LIB_DIR/ray_node.sh" "$2"; }

# HOST_PREFIX: the prefix of the batch script's own commands (HOST_CMD_PREFIX, default CMD_PREFIX); HOST_PYTHON their python.
read -ra HOST_PREFIX <<<"${HOST_CMD_PREFIX-${CMD_PREFIX:-}}"
HOST_PYTHON=("${HOST_PREFIX[@]}" python)

# The per-node checks before Ray starts, all nodes and checks in parallel through srun: the grader's isolation probe
# (SANDBOX_CHECK_CMD, exit 1 when a mechanism is missing: programs under test could escape there, and isolation=strict
# refuses to grade), the bill of materials (BOM_CHECK_CMD, exit 1 naming what the node cannot import or look up) and the
# site check (SITE_CHECK_CMD: driver, GPUs, CUDA, NCCL, the model's weights, the hub and wandb; launch/site_check.py).
# Fails the job naming each node and what it lacks; each check's report is in LOG_DIR/<check>_<node>.log. Then, when
# every node passed, the all-reduce over every GPU of the job (site_collective), and the site check's decisions
# (HF_HUB_OFFLINE, WANDB_MODE) exported for Ray's workers.
check_nodes() {
  local log_dir=$1 i check node message=
  local -a checks=() pids=() pid_check=() pid_node=()
  if [[ "${SANDBOX_CHECK:-1}" == 1 ]]; then
    checks+=(sandbox)
  else
    log "WARNING: sandbox isolation check skipped (SANDBOX_CHECK=${SANDBOX_CHECK}): run it on trusted code only"
  fi
  if [[ "${BOM_CHECK:-1}" == 1 && -n "${BOM_MANIFEST:-}" ]]; then
    checks+=(bom)
  else
    log "WARNING: bill-of-materials check skipped (BOM_CHECK=${BOM_CHECK:-1}): a node without what the configs import fails only once the trainer reaches it"
  fi
  if [[ "${SITE_CHECK:-1}" == 1 && -n "${SITE_MANIFEST:-}" ]]; then
    checks+=(site)
    export SITE_REPORT_DIR=$log_dir
  else
    log "WARNING: site check skipped (SITE_CHECK=${SITE_CHECK:-1}): a node without a working driver, GPU, NCCL or the model fails only once the trainer reaches it"
  fi
  for check in "${checks[@]}"; do
    for i in "${!NODES[@]}"; do
      on_node "${NODES[$i]}" "$check-check" >"$log_dir/${check}_${NODES[$i]}.log" 2>&1 &
      pids+=("$!")
      pid_check+=("$check")
      pid_node+=("${NODES[$i]}")
    done
  done
  local -A failed=()
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed[${pid_check[$i]}]+=" ${pid_node[$i]}"
  done
  if [[ -n "${failed[sandbox]:-}" ]]; then
    message+="sandbox isolation incomplete on node(s)${failed[sandbox]}: programs under test could escape there (isolation=strict refuses to grade). Enable user namespaces there, or exclude the node (sbatch --exclude)."
    for node in ${failed[sandbox]}; do
      message+=$'\n'"$node ($log_dir/sandbox_$node.log):"$'\n'"$(grep -v '\[ok\]' "$log_dir/sandbox_$node.log" | tail -n 12)"
    done
  fi
  if [[ -n "${failed[bom]:-}" ]]; then
    [[ -z "$message" ]] || message+=$'\n'
    message+="bill of materials incomplete on node(s)${failed[bom]}: the job's configs need what these nodes cannot import (the environment activated before sbatch, on every node: make setup-gpu, README.md \"GPU cluster set-up\"), or exclude them (sbatch --exclude)."
    for node in ${failed[bom]}; do
      message+=$'\n'"$node ($log_dir/bom_$node.log):"$'\n'"$(grep '^node ' "$log_dir/bom_$node.log" | tail -n 20)"
    done
  fi
  local decisions=
  if [[ " ${checks[*]} " == *" site "* ]] && ! decisions=$(site_verdict "$log_dir"); then
    [[ -z "$message" ]] || message+=$'\n'
    message+="site check failed on node(s)${failed[site]:- (see below)}; each node's probes: $log_dir/site_<node>.log"$'\n'"$(grep -v '^WARNING' "$log_dir/site_verdict.txt")"
  fi
  [[ -z "$message" ]] || die "$message"
  [[ ${#checks[@]} -eq 0 ]] || log "node checks passed on every node (${NODES[*]}): ${checks[*]}; reports in $log_dir/<check>_<node>.log"
  if [[ " ${checks[*]} " == *" site "* ]]; then
    site_collective "$log_dir"
    export_site_decisions "$decisions"
  fi
}

# The site check's verdict from every node's report (launch/site_check.py verdict): prints the decisions (KEY=VALUE),
# logs its warnings, leaves errors and warnings in LOG_DIR/site_verdict.txt; fails when a node has an error.
site_verdict() {
  local log_dir=$1 node status=0 output
  local -a reports=()
  for node in "${NODES[@]}"; do
    [[ ! -f "$log_dir/site_$node.json" ]] || reports+=("$log_dir/site_$node.json")
  done
  output=$("${HOST_PYTHON[@]}" "$RAY_SLURM_LIB_DIR/../site_check.py" verdict --manifest "$SITE_MANIFEST" \
    --nodes "${NODES[*]}" "${reports[@]}" 2>"$log_dir/site_verdict.txt") || status=$?
  grep '^WARNING' "$log_dir/site_verdict.txt" | while IFS= read -r line; do log "$line"; done
  printf '%s\n' "$output"
  return "$status"
}

# Exports the site check's decisions before Ray starts, so that Ray's workers inherit them: HF_HUB_OFFLINE=1 (a node
# cannot reach the hub: the cached model is used without a request per file), WANDB_MODE=offline (a node cannot reach
# wandb: the run logs under WANDB_DIR, synced afterwards with the command printed here and at the end of the job).
export_site_decisions() {
  local line key value
  while IFS='=' read -r key value; do
    [[ -n "$key" ]] || continue
    case $key in
      HF_HUB_OFFLINE)
        export HF_HUB_OFFLINE=$value
        log "site check: the hub is not reachable from every node: HF_HUB_OFFLINE=1 for every process of the job (the model comes from HF_HOME=${HF_HOME:-~/.cache/huggingface})" ;;
      WANDB_MODE)
        export WANDB_MODE=$value
        log "site check: wandb is not reachable from every node: WANDB_MODE=offline; the runs are written under WANDB_DIR=${WANDB_DIR:-.}; $(wandb_sync_hint)" ;;
      *) log "WARNING: site check decision $key=$value not understood" ;;
    esac
  done <<<"$1"
}

wandb_sync_hint() { printf 'after the job, from a machine with access: wandb sync %s/wandb/offline-run-*' "${WANDB_DIR:-.}"; }

# The all-reduce over every GPU of the job (launch/site_collective.py on every node at once, through srun): fails the
# job naming each node whose ranks did not get the right sum or did not join; logs the bus bandwidth.
site_collective() {
  local log_dir=$1 i node
  local -a pids=() lost=()
  [[ "${SITE_CHECK_SKIP:-}" != *collective* ]] || { log "site check: all-reduce skipped (SITE_CHECK_SKIP)"; return 0; }
  rm -rf "$log_dir/collective"
  for i in "${!NODES[@]}"; do
    RAY_NODE_INDEX=$i SITE_NODES="${NODES[*]}" on_node "${NODES[$i]}" site-collective >"$log_dir/collective_${NODES[$i]}.log" 2>&1 &
    pids+=("$!")
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || lost+=("${NODES[$i]}"); done
  if [[ ${#lost[@]} -gt 0 ]]; then
    local message="the all-reduce over every GPU of the job (${SITE_BACKEND:-?}, the trainer's collectives) failed on node(s) ${lost[*]}: check their network (NETWORK_INTERFACE, NCCL_SOCKET_IFNAME) and GPUs, or exclude them (sbatch --exclude)."
    for node in "${lost[@]}"; do
      message+=$'\n'"$node ($log_dir/collective_$node.log):"$'\n'"$(grep -v '^\[launch' "$log_dir/collective_$node.log" | tail -n 8)"
    done
    die "$message"
  fi
  log "site check: $(grep -h '^site_collective: node' "$log_dir/collective_${NODES[0]}.log" | sed 's/^site_collective: node [^:]*: //' | paste -sd ';')"
}

# Sets HEAD_IP and HEAD_IFACE, detected on the head node itself (the launcher may run on a login node).
detect_head_network() {
  # shellcheck disable=SC2034  # HEAD_IFACE is for the caller's log
  read -r HEAD_IFACE HEAD_IP < <(on_node "${NODES[0]}" network | tail -n 1) || true
  [[ -n "${HEAD_IP:-}" ]] || die "could not detect the network address of the head node ${NODES[0]}; set NETWORK_INTERFACE."
}

# Starts `ray start --block` on the head, waits until it answers, then on every other node (which retry reaching
# the head for up to RAY_JOIN_TIMEOUT_S, ray_node.sh); exports RAY_ADDRESS and waits for every node and GPU.
# Sets RAY_STEP_PIDS / RAY_STEP_NODES; stop_ray_cluster undoes it.
start_ray_cluster() {
  local log_dir=$1
  mkdir -p "$log_dir"
  export RAY_TMP=${RAY_TMP_ROOT:-/tmp}/ray_${SLURM_JOB_ID:-local$$}${SLURM_RESTART_COUNT:+r$SLURM_RESTART_COUNT}
  export RAY_PORT=${RAY_PORT:-6379}
  export RAY_HEAD_IP=$HEAD_IP GPUS_PER_NODE RAY_NUM_CPUS=${RAY_NUM_CPUS:-${SLURM_CPUS_ON_NODE:-}}
  export RAY_ADDRESS
  RAY_ADDRESS=$(ray_address "$RAY_HEAD_IP" "$RAY_PORT")
  RAY_STEP_PIDS=()
  RAY_STEP_NODES=()
  RAY_CLUSTER_STARTED=1
  local i
  start_ray_node 0 start-head "$log_dir"
  wait_for_ray_head "$log_dir"
  for ((i = 1; i < ${#NODES[@]}; i++)); do start_ray_node "$i" start-worker "$log_dir"; done
  wait_for_ray_cluster "$log_dir"
}

# Starts `ray_node.sh ACTION` on node INDEX in the background and records its step.
start_ray_node() {
  local index=$1 action=$2 log_dir=$3 node=${NODES[$1]}
  log "starting Ray ($action) on $node, log $log_dir/ray_$node.log"
  RAY_NODE_NAME=$node RAY_NODE_INDEX=$index on_node "$node" "$action" >"$log_dir/ray_$node.log" 2>&1 &
  RAY_STEP_PIDS+=("$!")
  RAY_STEP_NODES+=("$node")
}

# Dies naming the node and its log tail if any started Ray step has exited.
fail_if_a_ray_node_exited() {
  local log_dir=$1 i
  for i in "${!RAY_STEP_PIDS[@]}"; do
    kill -0 "${RAY_STEP_PIDS[$i]}" 2>/dev/null ||
      die "Ray on node ${RAY_STEP_NODES[$i]} exited while the cluster was starting; see $log_dir/ray_${RAY_STEP_NODES[$i]}.log, which ends:"$'\n'"$(tail -n 8 "$log_dir/ray_${RAY_STEP_NODES[$i]}.log" 2>/dev/null)"
  done
}

# Polls `ray status` until the head answers (as verl's Slurm example waits before starting workers).
wait_for_ray_head() {
  local log_dir=$1 deadline=$((SECONDS + ${RAY_WAIT_TIMEOUT_S:-600})) status
  until status=$("${HOST_PREFIX[@]}" "${RAY_BIN:-ray}" status --address="$RAY_ADDRESS" 2>&1); do
    fail_if_a_ray_node_exited "$log_dir"
    ((SECONDS < deadline)) ||
      die "the Ray head on ${NODES[0]} did not answer at $RAY_ADDRESS within ${RAY_WAIT_TIMEOUT_S:-600}s: ${status##*$'\n'}. See $log_dir/ray_${NODES[0]}.log."
    sleep "${RAY_WAIT_POLL_S:-5}"
  done
  log "Ray head up at $RAY_ADDRESS"
}

# Polls `ray status` until every node's marker resource and NNODES x GPUS_PER_NODE GPUs are listed.
wait_for_ray_cluster() {
  local log_dir=$1 expected_gpus=$((${#NODES[@]} * GPUS_PER_NODE))
  local deadline=$((SECONDS + ${RAY_WAIT_TIMEOUT_S:-600})) status gpus node problem
  local -a missing
  while true; do
    problem=
    status=$("${HOST_PREFIX[@]}" "${RAY_BIN:-ray}" status --address="$RAY_ADDRESS" 2>&1) || problem="; 'ray status' failed: ${status##*$'\n'}"
    missing=()
    for node in "${NODES[@]}"; do
      awk -v m="$(node_marker "$node")" '$2 == m { found = 1 } END { exit !found }' <<<"$status" || missing+=("$node")
    done
    gpus=$(awk '$2 == "GPU" { split($1, a, "/"); print int(a[2]); exit }' <<<"$status")
    gpus=${gpus:-0}
    if [[ ${#missing[@]} -eq 0 && "$gpus" -ge "$expected_gpus" ]]; then
      log "Ray cluster ready at $RAY_ADDRESS: ${#NODES[@]} node(s) (${NODES[*]}), $gpus GPU(s)"
      return 0
    fi
    fail_if_a_ray_node_exited "$log_dir"
    if ((SECONDS >= deadline)); then
      die "Ray cluster incomplete after ${RAY_WAIT_TIMEOUT_S:-600}s: missing node(s): ${missing[*]:-none}; GPUs $gpus of $expected_gpus$problem. See $log_dir/ray_<node>.log and 'ray status --address=$RAY_ADDRESS'."
    fi
    log "waiting for Ray: missing node(s): ${missing[*]:-none}; GPUs $gpus of $expected_gpus$problem"
    sleep "${RAY_WAIT_POLL_S:-5}"
  done
}

# Stops this job's Ray processes on every node (in parallel), then reaps the `ray start --block` steps.
stop_ray_cluster() {
  [[ "${RAY_CLUSTER_STARTED:-0}" == 1 ]] || return 0
  RAY_CLUSTER_STARTED=0
  local node pid i status
  local -a stoppers=() stopped=() unconfirmed=()
  for i in "${!NODES[@]}"; do
    RAY_NODE_NAME=${NODES[$i]} RAY_NODE_INDEX=$i on_node "${NODES[$i]}" stop &
    stoppers+=("$!")
  done
  for i in "${!stoppers[@]}"; do
    status=0
    wait "${stoppers[$i]}" || status=$?
    if [[ "$status" == 0 ]]; then stopped+=("${NODES[$i]}"); else unconfirmed+=("${NODES[$i]}"); fi
  done
  for pid in "${RAY_STEP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${RAY_STEP_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [[ ${#stopped[@]} -eq 0 ]] || log "Ray stopped on ${stopped[*]}"
  # srun refuses new steps once a job is cancelled or past its time limit; Slurm then signals the
  # `ray start --block` steps itself, and each stops the Ray processes it started.
  [[ ${#unconfirmed[@]} -eq 0 ]] ||
    log "WARNING: could not run the Ray stop on ${unconfirmed[*]} (job ending?); Slurm signals the Ray steps there itself"
}

# Runs a command in the background and waits for it, failing fast if a node's Ray exits first: every
# WATCH_POLL_S seconds it checks both (bash 4.4 has no `wait -n -p` to learn which child ended). The pause is a
# `wait` on a background `sleep`, which a trapped signal interrupts (a foreground `sleep` would defer the trap).
# With WATCH_LOG set, the output also goes to that file. With WATCH_STOP_FILE set, a non-empty file there (the
# progress watchdog's stall report) stops the command: diagnostics go to WATCH_DIAGNOSTICS_DIR first, while the
# stalled processes still hang, then the command is stopped and 124 returned. Returns the command's exit status.
run_watched() {
  if [[ -n "${WATCH_LOG:-}" ]]; then
    "$@" > >(tee -a "$WATCH_LOG") 2>&1 &
  else
    "$@" &
  fi
  WATCHED_PID=$!
  WATCHED_NAME=$1
  local status=0 i
  while kill -0 "$WATCHED_PID" 2>/dev/null; do
    if [[ -n "${WATCH_STOP_FILE:-}" && -s "$WATCH_STOP_FILE" ]]; then
      log "ERROR: $(cat "$WATCH_STOP_FILE")"
      dump_diagnostics "${WATCH_DIAGNOSTICS_DIR:-$(dirname "$WATCH_STOP_FILE")/diagnostics}"
      log "stopping '$1' (pid $WATCHED_PID) after the stall"
      kill -TERM "$WATCHED_PID" 2>/dev/null || true
      wait "$WATCHED_PID" 2>/dev/null || true
      WATCHED_PID=
      return 124
    fi
    request_stop_when_due
    for i in "${!RAY_STEP_PIDS[@]}"; do
      kill -0 "${RAY_STEP_PIDS[$i]}" 2>/dev/null && continue
      wait "${RAY_STEP_PIDS[$i]}" || status=$?
      log "ERROR: Ray on node ${RAY_STEP_NODES[$i]} exited (status $status) while '$1' ran: stopping it."
      kill -TERM "$WATCHED_PID" 2>/dev/null || true
      wait "$WATCHED_PID" 2>/dev/null || true
      WATCHED_PID=
      return 1
    done
    sleep "${WATCH_POLL_S:-2}" &
    WATCH_SLEEP_PID=$!
    wait "$WATCH_SLEEP_PID" || true
  done
  wait "$WATCHED_PID" || status=$?
  WATCHED_PID=
  return "$status"
}

# With WATCH_STOP_REQUEST set, writes that file once WATCH_DEADLINE_S (bash's SECONDS) has passed or a SIGUSR1 came
# (STOP_REQUESTED): the trainer reads it at the end of its step, saves and stops (launch/stage_chain.sh arm_stop_request).
request_stop_when_due() {
  [[ -n "${WATCH_STOP_REQUEST:-}" && ! -e "$WATCH_STOP_REQUEST" ]] || return 0
  if [[ "${STOP_REQUESTED:-0}" == 1 ]] || { [[ -n "${WATCH_DEADLINE_S:-}" ]] && ((SECONDS >= WATCH_DEADLINE_S)); }; then
    printf 'save and stop: the job ends in %ss\n' "$(( ${JOB_END_S:-SECONDS} - SECONDS ))" >"$WATCH_STOP_REQUEST"
    log "asking '$WATCHED_NAME' to save at the end of its step and stop ($WATCH_STOP_REQUEST): the job's time limit is near"
  fi
}

# What is cheap to collect from a stalled run, each command bounded by DIAGNOSTICS_TIMEOUT_S, into DIR: on every node
# (in parallel, through srun) the Python stacks of this job's Ray processes (py-spy) and nvidia-smi; `ray status`; and
# the last 200 lines of each log of this job (LOG_DIR, ray_<node>.log included).
dump_diagnostics() {
  local dir=$1 limit=${DIAGNOSTICS_TIMEOUT_S:-60} i file
  local -a dumps=()
  mkdir -p "$dir"
  log "collecting diagnostics in $dir (stacks of every Ray process of this job, nvidia-smi, ray status, log tails)"
  for i in "${!NODES[@]}"; do
    RAY_NODE_NAME=${NODES[$i]} RAY_NODE_INDEX=$i on_node "${NODES[$i]}" diagnostics >"$dir/node_${NODES[$i]}.txt" 2>&1 &
    dumps+=("$!")
  done
  timeout "$limit" "${HOST_PREFIX[@]}" "${RAY_BIN:-ray}" status --address="${RAY_ADDRESS:-}" >"$dir/ray_status.txt" 2>&1 || true
  for file in "${LOG_DIR:-$dir}"/*.log; do
    [[ -f "$file" ]] && { printf '==> %s <==\n' "$file"; tail -n 200 "$file"; } >>"$dir/log_tails.txt"
  done
  # Each node's dump is bounded as a whole too: a node that does not answer is left out, not waited for.
  local deadline=$((SECONDS + limit))
  for i in "${!dumps[@]}"; do
    while kill -0 "${dumps[$i]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 1; done
    kill -TERM "${dumps[$i]}" 2>/dev/null || true
    wait "${dumps[$i]}" 2>/dev/null || true
  done
  log "diagnostics written: $(cd "$dir" && echo *)"
}

# EXIT trap: stop a still-running watched command and the HELPER_PIDS, then Ray everywhere; then, with REQUEUE_REASON
# set, requeue the job (requeue_this_job); keep the exit status.
HELPER_PIDS=()
on_exit_stop_everything() {
  local status=$? pid
  trap - EXIT
  for pid in "${HELPER_PIDS[@]}" ${WATCH_SLEEP_PID:-}; do kill -TERM "$pid" 2>/dev/null || true; done
  if [[ -n "${WATCHED_PID:-}" ]]; then
    log "stopping the running command (pid $WATCHED_PID)"
    kill -TERM "$WATCHED_PID" 2>/dev/null || true
    wait "$WATCHED_PID" 2>/dev/null || true
  fi
  stop_ray_cluster
  [[ -z "${REQUEUE_REASON:-}" ]] || requeue_this_job || status=1
  log "exit status $status"
  exit "$status"
}

# `scontrol requeue` of this job, which runs again from the start once Slurm starts it (same id, options, arguments and
# environment; after its requeue delay, CredExpire: 120 s by default). Refused (a site without requeue), it says how
# to continue, and the job fails, so that a queued retry (submit_with_retries.sh) starts.
requeue_this_job() {
  local output
  log "$REQUEUE_REASON: requeueing job $SLURM_JOB_ID (scontrol requeue); its next run resumes from here"
  output=$(scontrol requeue "$SLURM_JOB_ID" 2>&1) && return 0
  log "ERROR: 'scontrol requeue $SLURM_JOB_ID' failed ($output): resubmit the same command, or queue retries with launch/submit_with_retries.sh, to resume"
  return 1
}

# SIGUSR1 (sbatch --signal=B:USR1@SECONDS) asks the running training stage to save and stop now (run_watched).
arm_stop_trap() {
  trap on_exit_stop_everything EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'STOP_REQUESTED=1' USR1
}
