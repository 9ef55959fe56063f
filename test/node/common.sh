# Functions shared by node.sh (the single node: this machine is the node) and nodes.sh (a control plane
# and several nodes, each in Linux namespaces of its own), sourced by both. Each function says which
# variables of its caller it reads; none changes the host by itself being sourced.
#
# Every caller sets: RUN_DIR, BIN_DIR, L (logs), R (pid files), P (PKI), API_IP (kube-apiserver's address),
# SVC_CIDR, DNS_IP, CLUSTER (a name for the CA and kubeconfig contexts), KC (kubectl as the admin).

t0=$(date +%s%N)
log() { echo "[${LOG_TAG:-node} +$(((($(date +%s%N) - t0) / 1000000)))ms] $*" >&2; }
die() {
  echo "${LOG_TAG:-node}: $*" >&2
  exit 1
}

start() { # start NAME CMD...: a daemon in its own session; its pid in $R/NAME.pid, its output in $L/NAME.log
  local name=$1
  shift
  setsid "$@" >"$L/$name.log" 2>&1 </dev/null &
  echo $! >"$R/$name.pid"
}
wait_for() { # wait_for SECONDS WHAT CMD...
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then
      log "$what ready"
      return 0
    fi
    sleep 0.1
  done
  die "timed out after ${seconds}s waiting for $what (logs in $L)"
}
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
stop_pid() { # stop_pid PID: SIGTERM, SIGKILL after 10 s
  local pid=$1
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do
    alive "$pid" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
}
stop() { # stop NAME: the daemon `start NAME` started
  local f=$R/$1.pid
  [ -f "$f" ] || return 0
  stop_pid "$(cat "$f")"
  rm -f "$f"
}

# pki NAME=IP...: a CA, the control plane's certificates and one kubelet's (serving and client) per
# node given, and a kubeconfig per client (the kubelet's named kubelet-NAME). Reads P, CLUSTER, API_IP
# and API_SANS (extra subjectAltNames of kube-apiserver's certificate).
pki() {
  mkdir -p "$P"
  [ -f "$P/ca.crt" ] && return 0
  (
    cd "$P" || exit 1
    key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }
    cert() { # cert NAME SUBJECT [SAN] [EKU]
      key "$1"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=${4:-clientAuth}"
        [ -n "${3:-}" ] && echo "subjectAltName=$3"
      } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    kubeconfig() { # kubeconfig USER
      cat >"$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: $CLUSTER, cluster: {server: "https://$API_IP:6443", certificate-authority: $P/ca.crt}}]
users: [{name: $1, user: {client-certificate: $P/$1.crt, client-key: $P/$1.key}}]
contexts: [{name: $CLUSTER, context: {cluster: $CLUSTER, user: $1}}]
current-context: $CLUSTER
KC
    }
    key ca
    openssl req -x509 -new -key ca.key -subj "/CN=$CLUSTER-ca" -days 30 -out ca.crt 2>/dev/null
    cert apiserver /CN=kube-apiserver "IP:$API_IP,IP:127.0.0.1,$API_SANS,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
    cert admin "/O=system:masters/CN=$CLUSTER-admin"
    cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client
    cert kube-proxy /CN=system:kube-proxy
    cert kube-scheduler /CN=system:kube-scheduler
    cert kube-controller-manager /CN=system:kube-controller-manager
    cert coredns "/CN=$CLUSTER-coredns"
    openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    for u in admin kube-proxy kube-scheduler kube-controller-manager coredns; do kubeconfig "$u"; done
    local n name ip
    for n in "$@"; do
      name=${n%%=*} ip=${n#*=}
      cert "kubelet-serving-$name" "/CN=$name" "IP:$ip,DNS:$name" serverAuth
      cert "kubelet-$name" "/O=system:nodes/CN=system:node:$name"
      kubeconfig "kubelet-$name"
    done
  ) || die "could not make the PKI in $P"
}

# start_control_plane [KCM_FLAG...]: etcd, kube-apiserver, kube-controller-manager, kube-scheduler. Reads
# API_IP, SVC_CIDR, CLUSTER_CIDR, ETCD_IP and ETCD_PORT (its client port; peer and metrics are the next
# two), CP_BIND (where the controller manager and scheduler serve their health), APISERVER_FLAGS (an
# array of extra flags). The extra arguments go to kube-controller-manager.
start_control_plane() {
  local etcd_url="http://$ETCD_IP:$ETCD_PORT"
  start etcd "$BIN_DIR/etcd" --name="$CLUSTER" --data-dir="$RUN_DIR/etcd" \
    --listen-client-urls="$etcd_url" --advertise-client-urls="$etcd_url" \
    --listen-peer-urls="http://$ETCD_IP:$((ETCD_PORT + 10))" --initial-advertise-peer-urls="http://$ETCD_IP:$((ETCD_PORT + 10))" \
    --initial-cluster="$CLUSTER=http://$ETCD_IP:$((ETCD_PORT + 10))" --listen-metrics-urls="http://$ETCD_IP:$((ETCD_PORT + 20))" \
    --unsafe-no-fsync=true --log-level=warn
  start kube-apiserver "$BIN_DIR/kube-apiserver" --bind-address="$API_IP" --advertise-address="$API_IP" --secure-port=6443 \
    --etcd-servers="$etcd_url" --service-cluster-ip-range="$SVC_CIDR" \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local --service-account-key-file="$P/sa.pub" \
    --service-account-signing-key-file="$P/sa.key" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --kubelet-preferred-address-types=InternalIP --allow-privileged=false --profiling=false --cert-dir="$RUN_DIR/apiserver-certs" \
    "${APISERVER_FLAGS[@]}"
  wait_for 90 kube-apiserver $KC get --raw=/readyz

  start kube-controller-manager "$BIN_DIR/kube-controller-manager" --kubeconfig="$P/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$P/kube-controller-manager.kubeconfig" --authorization-kubeconfig="$P/kube-controller-manager.kubeconfig" \
    --bind-address="$CP_BIND" --secure-port=10257 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --allocate-node-cidrs=false --cluster-cidr="$CLUSTER_CIDR" --service-cluster-ip-range="$SVC_CIDR" \
    --profiling=false --cert-dir="$RUN_DIR/kcm-certs" "$@"
  start kube-scheduler "$BIN_DIR/kube-scheduler" --kubeconfig="$P/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$P/kube-scheduler.kubeconfig" --authorization-kubeconfig="$P/kube-scheduler.kubeconfig" \
    --bind-address="$CP_BIND" --secure-port=10259 --leader-elect=false --profiling=false --cert-dir="$RUN_DIR/scheduler-certs"
}

# containerd_config DIR STATE_DIR CNI_CONF_DIR: DIR/config.toml, for a containerd whose root is DIR/root,
# whose socket is DIR/containerd.sock and whose state (on a tmpfs where the node has one) is STATE_DIR.
# Reads SANDBOX_IMAGE.
containerd_config() {
  local dir=$1 state=$2 cni=$3
  cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$state"
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$SANDBOX_IMAGE"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$state/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni"
EOF
}

# cni_config FILE BRIDGE SUBNET IPAM_DIR: the bridge network of a node's pods.
cni_config() {
  cat >"$1" <<EOF
{"cniVersion": "1.0.0", "name": "recon8s", "plugins": [
  {"type": "bridge", "bridge": "$2", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$4", "ranges": [[{"subnet": "$3"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
}

# kubelet_config FILE NAME IP CGROUP_ROOT SOCKET POD_LOGS [SETTING...]: a kubelet's configuration; the
# extra arguments are more lines of it. Reads P, DNS_IP.
kubelet_config() {
  local file=$1 name=$2 ip=$3 cgroup=$4 socket=$5 logs=$6
  shift 6
  cat >"$file" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup
containerRuntimeEndpoint: unix://$socket
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $P/kubelet-serving-$name.crt
tlsPrivateKeyFile: $P/kubelet-serving-$name.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: /etc/resolv.conf
podLogsDir: $logs
failSwapOn: false
imageMinimumGCAge: 876000h
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
serializeImagePulls: false
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 5s
EOF
  local line
  for line in "$@"; do echo "$line" >>"$file"; done
}

# kube_proxy_config FILE NAME IP CLUSTER_CIDR: kube-proxy in iptables mode for one node (NAME at IP).
# Reads P.
kube_proxy_config() {
  cat >"$1" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $P/kube-proxy.kubeconfig}
hostnameOverride: $2
bindAddress: $3
clusterCIDR: $4
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$3/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, syncPeriod: 5s, minSyncPeriod: 0s}
EOF
}

# volume_pool NODE PREFIX DIR COUNT: COUNT `local` PersistentVolumes PREFIX-0.. on NODE (directories
# DIR/pv-0..), as JSON lines for `kubectl apply -f -`.
volume_pool() {
  local node=$1 prefix=$2 dir=$3 count=$4 i
  for i in $(seq 0 $((count - 1))); do
    mkdir -p "$dir/pv-$i" && chmod 0755 "$dir/pv-$i"
    echo "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"$prefix-$i\"},\"spec\":{\"capacity\":{\"storage\":\"100Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"persistentVolumeReclaimPolicy\":\"Retain\",\"storageClassName\":\"local\",\"local\":{\"path\":\"$dir/pv-$i\"},\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"$node\"]}]}]}}}}"
  done
}
STORAGE_CLASS='{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"local","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"kubernetes.io/no-provisioner","reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"}'

# start_dns: CoreDNS as a host process on API_IP, behind the kube-dns Service at DNS_IP. Reads CLUSTER.
start_dns() {
  $KC apply -f - >/dev/null <<EOF || die "could not create the DNS objects"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "$CLUSTER:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "$CLUSTER:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "$CLUSTER:coredns"}
subjects: [{kind: User, name: $CLUSTER-coredns}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $DNS_IP
  ports: [{name: dns, port: 53, protocol: UDP, targetPort: 53}, {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kube-dns-host, namespace: kube-system, labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: $CLUSTER}}
addressType: IPv4
endpoints: [{addresses: ["$API_IP"], conditions: {ready: true}}]
ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
EOF
  cat >"$RUN_DIR/Corefile" <<EOF
.:53 {
    bind $API_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $P/coredns.kubeconfig $CLUSTER
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
}
EOF
  start coredns "$BIN_DIR/coredns" -conf "$RUN_DIR/Corefile"
}

# What a provisioner's Delete policy does for its volumes: a volume of the pool whose claim is gone
# (Released) is emptied and made Available again, so that any number of clusters can come and go in
# one run. Only the pool's own volumes, only once released and no longer mounted: a volume in use is
# never touched. The caller defines volume_dir PV (the directory of one of its pool's volumes, or
# nothing for a volume not of its pool) and volume_busy PV (true while the volume is still mounted, or
# cannot be reached: on a node that is off).
recycle_volumes() {
  local pv phase claim dir
  # stop() signals this shell alone: take its children (kubectl, the volumes being recycled) with it.
  trap 'trap - TERM; kill 0 2>/dev/null; exit 0' TERM
  mkdir -p "$RUN_DIR/recycling"
  # A watch, not a poll: a kubectl every few seconds cost ~0.2 s of CPU each, ~5 % of a core for the
  # whole run. The watch lists every volume first, so one that was released while it was down is seen
  # when it restarts (the API server ends a watch after 30-60 minutes).
  while :; do
    while read -r pv phase claim; do
      # Released with its claim still named: recycling removes the name (and that update is seen
      # Released too, until the volume controller makes it Available).
      [[ $phase == Released && -n $claim ]] || continue
      dir=$(volume_dir "$pv")
      [ -n "$dir" ] || continue
      # One recycling per volume at a time: the watch can say Released more than once.
      mkdir "$RUN_DIR/recycling/$pv" 2>/dev/null || continue
      recycle_volume "$pv" "$dir" &
    done < <($KC get pv --watch -o jsonpath='{.metadata.name} {.status.phase} {.spec.claimRef.uid}{"\n"}' 2>/dev/null)
    sleep 1 &
    wait $!
  done
}

# recycle_volume PV DIR
recycle_volume() {
  local pv=$1 dir=$2 i
  # A claim goes when no pod object uses it, but a force-deleted pod's containers can outlive their
  # object: the kubelet keeps the volume bind-mounted in the pod's directory until they have stopped.
  # Emptied earlier, a running mysqld would write new files beside the hole (a data directory without
  # its data dictionary, which the next member's bootstrap refuses).
  for ((i = 0; ; i++)); do
    volume_busy "$pv" || break
    ((i % 60 == 0)) && echo "$(date -u +%FT%TZ) $pv is released but still mounted by a pod, or its node is off; waiting"
    sleep 1
  done
  # A watch event can be stale (seen after this volume was recycled and bound to a new claim, which then
  # lost files under a running member): only what the API server says now counts. Nothing but this
  # recycler takes a Released volume's claim away, so it cannot be bound again before the patch below,
  # which applies only to the claim checked here.
  local now claim
  now=$($KC get pv "$pv" -o jsonpath='{.status.phase} {.spec.claimRef.uid}' 2>/dev/null)
  claim=${now#Released }
  if [[ -d $dir && $now == "Released "* && -n $claim ]]; then
    find "$dir" -mindepth 1 -delete 2>/dev/null
    chmod 0755 "$dir"
    # No later event would bring this volume back: try again a few times before leaving it Released.
    for _ in 1 2 3 4 5; do
      if $KC patch pv "$pv" --type json -p "[{\"op\":\"test\",\"path\":\"/spec/claimRef/uid\",\"value\":\"$claim\"},{\"op\":\"remove\",\"path\":\"/spec/claimRef\"}]" >/dev/null 2>&1; then
        echo "$(date -u +%FT%TZ) recycled $pv"
        break
      fi
      sleep 1
    done
  fi
  rmdir "$RUN_DIR/recycling/$pv"
}

# The sysctls kubelet (and the single node) change, recorded before `up` changes any, restored by `down`.
record_sysctls() { # record_sysctls NAME...
  [ -f "$RUN_DIR/sysctl.orig" ] && return 0
  local s
  for s in "$@"; do echo "$s=$(sysctl -n "$s" 2>/dev/null)"; done >"$RUN_DIR/sysctl.orig"
}
restore_sysctls() {
  [ -f "$RUN_DIR/sysctl.orig" ] || return 0
  local k v
  while IFS='=' read -r k v; do [ -n "$v" ] && sysctl -qw "$k=$v" 2>/dev/null; done <"$RUN_DIR/sysctl.orig"
}

# cgroup_parents NAME...: a cgroup of each NAME in every v1 hierarchy (the cpuset one given the machine's
# CPUs and memory nodes, which a cpuset cgroup needs before it takes a process).
cgroup_parents() {
  local h c
  for c in "$@"; do
    for h in /sys/fs/cgroup/*/; do
      case $h in */unified/) continue ;; esac
      mkdir -p "$h$c" 2>/dev/null || true
    done
    if [ -d "/sys/fs/cgroup/cpuset/$c" ]; then
      cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$c/cpuset.cpus"
      cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$c/cpuset.mems"
    fi
  done
}
remove_cgroups() { # remove_cgroups NAME...: the cgroups of NAME and everything under them, in every hierarchy
  local h c
  for c in "$@"; do
    for h in /sys/fs/cgroup/*/"$c"; do [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null; done
  done
  return 0
}
