# The worker gate as ain rendered it before 2026-12 (commit ea424ec), kept to show it failing on a
# Kubernetes >= 1.34 pod status. It matched the JSON as text.
set -u
t="${AIN_GATE_TIMEOUT:-600}"
sa=/var/run/secrets/kubernetes.io/serviceaccount
hf=/etc/mpi/hostfile
log() { echo "ain-worker-gate: $*"; }
if [ ! -r "$hf" ]; then log "no $hf: not an MPIJob launcher, not waiting"; exit 0; fi
workers=$(awk '{print $1}' "$hf" | grep -- '-worker-[0-9][0-9]*$')
api="https://${KUBERNETES_SERVICE_HOST:-kubernetes.default.svc}:${KUBERNETES_SERVICE_PORT:-443}/api/v1/namespaces/$(cat "$sa/namespace")/pods"
get() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" "$api/$1"
  else
    wget -q -T 5 -O - --no-check-certificate --header "Authorization: Bearer $(cat "$sa/token")" "$api/$1"
  fi
}
n=$(echo $workers | wc -w)
log "waiting up to ${t}s for $n worker(s) to be Ready: $(echo $workers)"
start=$(date +%s)
while :; do
  pending=""
  for w in $workers; do
    get "$w" 2>/dev/null | tr -d ' \n' | grep -q '"type":"Ready","status":"True"' || pending="$pending $w"
  done
  el=$(( $(date +%s) - start ))
  if [ -z "$pending" ]; then log "all $n worker(s) Ready after ${el}s: starting mpirun"; exit 0; fi
  if [ "$el" -ge "$t" ]; then log "timed out after ${t}s: workers not Ready:$pending (kubectl describe pod$pending)"; exit 1; fi
  sleep 2
done
