#!/usr/bin/env bash
# One node's part of the Ray cluster; launch/lib/ray_slurm.sh runs it on each node through `srun --overlap`.
#   ray_node.sh start-head    ray start --head --block on this node
#   ray_node.sh start-worker  ray start --block, joining RAY_HEAD_IP:RAY_PORT once the head's GCS answers (retried
#                             every RAY_JOIN_POLL_S for up to RAY_JOIN_TIMEOUT_S, so a slow head is not a failed job)
#   ray_node.sh network       print this node's "INTERFACE IP" (NETWORK_INTERFACE / IP_FAMILY apply)
#   ray_node.sh stop          stop this job's Ray processes here: SIGTERM to `ray start`, SIGKILL after RAY_STOP_GRACE_S
#   ray_node.sh sandbox-check the grader's isolation probe here (SANDBOX_CHECK_CMD [python -m reward_fns.sandbox])
#   ray_node.sh bom-check     the job's bill of materials here (BOM_CHECK_CMD, BOM_MANIFEST: launch/bill_of_materials.py)
#   ray_node.sh site-check    the site check's probes here (SITE_CHECK_CMD, SITE_MANIFEST: launch/site_check.py)
#   ray_node.sh site-collective  this node's part of the all-reduce over every GPU of the job (launch/site_collective.py;
#                             RAY_NODE_INDEX, SITE_NODES, SITE_BACKEND, SITE_CUPY, SITE_REPORT_DIR)
#   ray_node.sh diagnostics   the Python stacks (py-spy dump) of this job's Ray processes here, and nvidia-smi
# Parameters come from the environment (set by start_ray_cluster), never from the command line, so that
# no srun or bash command line contains the node's Ray temp dir and `stop` matches Ray's own processes only:
#   RAY_TMP, RAY_PORT, RAY_HEAD_IP, GPUS_PER_NODE, RAY_NUM_CPUS, RAY_START_ARGS, RAY_HEAD_START_ARGS,
#   RAY_WORKER_START_ARGS, RAY_NODE_NAME, RAY_NODE_INDEX, RAY_BIN.
# The node's Ray temp dir is RAY_TMP/<node index>/ (unique per job and node, so that nodes sharing a host,
# as in the tests, stay apart). `stop` is scoped to processes whose command line names it and their descendants,
# so other jobs' and users' Ray clusters on a shared node are left alone (unlike `ray stop`).
set -euo pipefail
# shellcheck source=launch/lib/ray_slurm.sh
source "$(dirname "${BASH_SOURCE[0]}")/ray_slurm.sh"

NODE_NAME=${RAY_NODE_NAME:-${SLURMD_NODENAME:-$(hostname -s)}}
# Longest temp dir that keeps Ray's deepest socket, <temp dir>session_<date>_<time>_<usec>_<pid>/sockets/plasma_store,
# within the 107 bytes of an AF_UNIX path.
MAX_RAY_TMP_LENGTH=43

# This node's Ray temp dir, RAY_TMP/<node index>/: the index keeps it short, and the trailing slash, part of
# the marker `stop` looks for in command lines, keeps node 1 from matching node 10.
node_ray_tmp() {
  : "${RAY_TMP:?RAY_TMP, the Ray temp dir of this job, must be set by start_ray_cluster}"
  printf '%s/%s/' "$RAY_TMP" "${RAY_NODE_INDEX:-0}"
}

start_node() {
  local role=$1 name=$NODE_NAME temp_dir
  temp_dir=$(node_ray_tmp)
  [[ ${#temp_dir} -le $MAX_RAY_TMP_LENGTH ]] ||
    die "Ray temp dir $temp_dir is longer than $MAX_RAY_TMP_LENGTH characters, so Ray's socket paths would pass the 107-byte limit: set RAY_TMP_ROOT to a shorter directory (default /tmp)."
  detect_node_network
  # Ray's workers on this node (FSDP ranks, vLLM) inherit this environment from `ray start`.
  export_training_env
  export_node_interface
  # Slurm's gres/gpu plugin exports ROCR_VISIBLE_DEVICES beside CUDA_VISIBLE_DEVICES unless gres.conf marks the GPUs
  # as NVIDIA's (AutoDetect=nvml or Flags=nvidia_gpu_env), and verl's workers refuse to start with both set
  # (verl/single_controller/base/worker.py _setup_env_cuda_visible_devices): on these CUDA (or CPU) nodes only
  # CUDA_VISIBLE_DEVICES counts.
  [[ -z "${CUDA_VISIBLE_DEVICES:-}" ]] || unset ROCR_VISIBLE_DEVICES
  local -a args=(start --block --node-ip-address="$NODE_IP" --temp-dir="$temp_dir" --num-gpus="$GPUS_PER_NODE"
    --resources="{\"$(node_marker "$name")\": 1}" --disable-usage-stats)
  [[ -n "${RAY_NUM_CPUS:-}" ]] && args+=(--num-cpus="$RAY_NUM_CPUS")
  local role_args
  if [[ "$role" == head ]]; then
    args+=(--head --port="$RAY_PORT")
    role_args=${RAY_HEAD_START_ARGS:-}
  else
    args+=(--address="$(ray_address "$RAY_HEAD_IP" "$RAY_PORT")")
    role_args=${RAY_WORKER_START_ARGS:-}
    wait_for_head_gcs "$(ray_address "$RAY_HEAD_IP" "$RAY_PORT")"
  fi
  local -a extra
  read -ra extra <<<"${RAY_START_ARGS:-} $role_args"
  log "node $name ($NODE_IP, $NODE_IFACE): ${RAY_BIN:-ray} ${args[*]} ${extra[*]}"
  exec "${RAY_BIN:-ray}" "${args[@]}" "${extra[@]}"
}

# Retries `ray health-check` against the head's GCS until it answers, for up to RAY_JOIN_TIMEOUT_S seconds.
wait_for_head_gcs() {
  local address=$1 attempt=1 deadline=$((SECONDS + ${RAY_JOIN_TIMEOUT_S:-300})) output
  until output=$("${RAY_BIN:-ray}" health-check --address="$address" 2>&1); do
    ((SECONDS < deadline)) ||
      die "node $NODE_NAME: the Ray head at $address did not answer within ${RAY_JOIN_TIMEOUT_S:-300}s ($attempt attempts; last: ${output##*$'\n'}). Check the head's log and that port ${RAY_PORT} is reachable from this node."
    log "node $NODE_NAME: Ray head at $address not reachable yet (attempt $attempt): ${output##*$'\n'}; retrying in ${RAY_JOIN_POLL_S:-5}s"
    attempt=$((attempt + 1))
    sleep "${RAY_JOIN_POLL_S:-5}"
  done
  log "node $NODE_NAME: Ray head at $address answers (attempt $attempt)"
}

# Live (not zombie) processes whose command line contains this node's Ray temp dir, and all their
# descendants, one per line as "PID TOP" where TOP is 1 for the topmost ones (`ray start --block`, which
# stops its children in order). `ps -ww`: whole command lines; with COLUMNS set (pytest-xdist's workers, some
# batch shells) ps cuts them to its width, and a long temp dir was then never found.
job_ray_pids() {
  ps -ww -eo pid=,ppid=,stat=,args= | MARK="$NODE_RAY_TMP" SELF=$$ awk '
    $3 ~ /^Z/ { next }
    { parent[$1] = $2; if ($1 != ENVIRON["SELF"] && index($0, ENVIRON["MARK"]) > 0) keep[$1] = 1 }
    END {
      do { grew = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
      for (p in keep) print p, !(parent[p] in keep)
    }'
}

# Survivors, in PIDS: this job's Ray processes now, and those of FIRST_PIDS still alive (an orphan loses
# its place in the process tree when its parent dies first, but not its PID).
survivors() {
  local pid state
  mapfile -t PIDS < <(job_ray_pids | awk '{ print $1 }')
  for pid in "${FIRST_PIDS[@]}"; do
    state=$(ps -o stat= -p "$pid") || continue
    if [[ "$state" != Z* && " ${PIDS[*]} " != *" $pid "* ]]; then PIDS+=("$pid"); fi
  done
}

# Waits up to $1 seconds for this job's Ray processes to exit; leaves the survivors in PIDS.
wait_for_exit() {
  local deadline=$((SECONDS + $1))
  while true; do
    survivors
    [[ ${#PIDS[@]} -eq 0 ]] && return 0
    ((SECONDS < deadline)) || return 0
    sleep 1
  done
}

stop_node() {
  local name=$NODE_NAME grace=${RAY_STOP_GRACE_S:-15}
  NODE_RAY_TMP=$(node_ray_tmp)
  local -a top
  mapfile -t FIRST_PIDS < <(job_ray_pids | awk '{ print $1 }')
  mapfile -t top < <(job_ray_pids | awk '$2 == 1 { print $1 }')
  if [[ ${#top[@]} -eq 0 ]]; then
    log "node $name: no Ray process of this job left"
    return 0
  fi
  log "node $name: SIGTERM to ${top[*]} (ray start), which stops the Ray processes it started"
  kill -TERM "${top[@]}" 2>/dev/null || true
  wait_for_exit "$grace"
  if [[ ${#PIDS[@]} -gt 0 ]]; then
    log "node $name: ${#PIDS[@]} Ray process(es) still alive after ${grace}s: SIGKILL"
    kill -KILL "${PIDS[@]}" 2>/dev/null || true
    wait_for_exit 5
    [[ ${#PIDS[@]} -eq 0 ]] || die "node $name: Ray processes ${PIDS[*]} survived SIGKILL"
  fi
  log "node $name: Ray stopped"
}

sandbox_check() {
  local -a probe
  read -ra probe <<<"${SANDBOX_CHECK_CMD:-python -m reward_fns.sandbox}"
  log "node $NODE_NAME: ${probe[*]}"
  exec "${probe[@]}"
}

bom_check() {
  local -a check
  : "${BOM_MANIFEST:?BOM_MANIFEST, the bill of materials the launcher wrote, must be set}"
  read -ra check <<<"${BOM_CHECK_CMD:-python $RAY_SLURM_LIB_DIR/../bill_of_materials.py check}"
  log "node $NODE_NAME: ${check[*]} --manifest $BOM_MANIFEST"
  exec "${check[@]}" --manifest "$BOM_MANIFEST" --node "$NODE_NAME"
}

site_check() {
  local -a check
  : "${SITE_MANIFEST:?SITE_MANIFEST, what the job needs (written by launch/preflight.py), must be set}"
  : "${SITE_REPORT_DIR:?SITE_REPORT_DIR, where each node writes its report, must be set}"
  read -ra check <<<"${SITE_CHECK_CMD:-python $RAY_SLURM_LIB_DIR/../site_check.py}"
  log "node $NODE_NAME: ${check[*]} node --manifest $SITE_MANIFEST"
  exec "${check[@]}" node --manifest "$SITE_MANIFEST" --node "$NODE_NAME" --report "$SITE_REPORT_DIR/site_$NODE_NAME.json"
}

# The all-reduce runs on the network the trainer's collectives will use: this node's interface, as Ray's workers get it.
site_collective() {
  local -a cupy=()
  detect_node_network
  export_training_env
  export_node_interface
  [[ "${SITE_CUPY:-0}" != 1 ]] || cupy=(--cupy)
  log "node $NODE_NAME ($NODE_IP, $NODE_IFACE): all-reduce with ${SITE_BACKEND:?} over ${SITE_NODES:?}"
  exec python "$RAY_SLURM_LIB_DIR/../site_collective.py" --node-rank "${RAY_NODE_INDEX:?}" --nodes "$SITE_NODES" \
    --gpus-per-node "$GPUS_PER_NODE" --host "$NODE_IP" --rendezvous "${SITE_REPORT_DIR:?}/collective" \
    --backend "$SITE_BACKEND" --timeout-s "${SITE_COLLECTIVE_TIMEOUT_S:-120}" "${cupy[@]}"
}

# Stacks of this job's Ray processes on this node (not other jobs' or users'), each bounded; py-spy comes with
# ray[default] and needs ptrace permission on the processes (kernel.yama.ptrace_scope 0, or root; otherwise each
# dump says it was refused). Then the GPUs' state.
diagnostics() {
  local limit=${DIAGNOSTICS_TIMEOUT_S:-60} pid
  NODE_RAY_TMP=$(node_ray_tmp)
  echo "== node $NODE_NAME: Ray processes of this job =="
  mapfile -t PIDS < <(job_ray_pids | awk '{ print $1 }')
  for pid in "${PIDS[@]}"; do
    ps -o pid=,etime=,args= -p "$pid" 2>/dev/null | cut -c1-300 || continue
    if command -v py-spy >/dev/null && ps -o args= -p "$pid" 2>/dev/null | grep -q 'python\|ray::'; then
      timeout "$((limit / 4 + 1))" py-spy dump --pid "$pid" 2>&1 | head -n 200 || true
    fi
  done
  if command -v nvidia-smi >/dev/null; then
    echo "== nvidia-smi =="
    timeout "$limit" nvidia-smi || true
  fi
}

case "${1:-}" in
  start-head) start_node head ;;
  start-worker) start_node worker ;;
  network) detect_node_network && echo "$NODE_IFACE $NODE_IP" ;;
  stop) stop_node ;;
  sandbox-check) sandbox_check ;;
  bom-check) bom_check ;;
  site-check) site_check ;;
  site-collective) site_collective ;;
  diagnostics) diagnostics ;;
  *) die "usage: ray_node.sh start-head|start-worker|network|stop|sandbox-check|bom-check|site-check|site-collective|diagnostics (got '${1:-}')" ;;
esac
