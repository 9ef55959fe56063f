#!/usr/bin/env bash
# The real single-node Kubernetes of the end-to-end tests: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet + containerd/runc, the CNI bridge, kube-proxy (iptables) and CoreDNS, as plain
# processes, in the style of upstream's hack/local-up-cluster.sh. test/node/index.ts drives it; people use
# `npm run cluster -- up --node`.
#
#   node.sh up   ARCHIVE...    start everything, import the OCI archives (the first is the sandbox image)
#   node.sh down               stop and remove everything `up` made, whatever state it got to
#
# Environment: RUN_DIR (all state, logs and volumes), BIN_DIR (every binary of one release), NODE_IP,
# SANDBOX_IMAGE, PV_POOL. Must run as root. Everything it does to the host is undone by `down`, which is
# safe to run any number of times and after a crash: processes (by the pids recorded here and by the
# paths on their command lines), mounts under RUN_DIR, the bridge, KUBE-*/CNI-* iptables chains, the
# address on lo, the sysctls (restored to the values recorded before `up` changed them), the cgroups.
#
# Why each non-obvious setting (checked on this machine kind, see shared/NOTES.md "A real node"):
# - the node's address is a /32 on lo: pods reach it through the bridge gateway, and nothing routes off the
#   machine (the bridge does no masquerading and the pod/Service ranges exist only here);
# - containerd's CRI `restrict_oom_score_adj`: root here lacks CAP_SYS_RESOURCE, and runc would fail every
#   sandbox lowering oom_score_adj;
# - kubelet `failCgroupV1: false`, `cgroupDriver: cgroupfs`: the VM is cgroup v1, containerd 1.6 has no
#   RuntimeConfig call (this pins the node to Kubernetes 1.36);
# - `local` PersistentVolumes from a pre-made pool: kubelet applies fsGroup to them (not to hostPath), so a
#   non-root MySQL can write its data directory;
# - image garbage collection is off: nothing can be pulled again, there is no registry.
set -uo pipefail

RUN_DIR=${RUN_DIR:?RUN_DIR is required}
BIN_DIR=${BIN_DIR:?BIN_DIR is required}
IP=${NODE_IP:-10.250.0.1}
NODE=recon8s-node
POD_CIDR=10.244.0.0/24
SVC_CIDR=10.0.0.0/24
DNS_IP=10.0.0.10
BRIDGE=recon8s0
CGROUP=recon8s-node
R=$RUN_DIR/run L=$RUN_DIR/logs P=$RUN_DIR/pki
KC="$BIN_DIR/kubectl --kubeconfig=$P/admin.kubeconfig"
CTR="ctr -a $RUN_DIR/containerd/containerd.sock -n k8s.io"
t0=$(date +%s%N)
log() { echo "[node +$(( ($(date +%s%N) - t0) / 1000000 ))ms] $*" >&2; }
die() { echo "node: $*" >&2; exit 1; }

start() { # start NAME CMD...: a daemon in its own session; its pid in $R/NAME.pid
  local name=$1; shift
  setsid "$@" >"$L/$name.log" 2>&1 </dev/null &
  echo $! >"$R/$name.pid"
}
wait_for() { # wait_for SECONDS WHAT CMD...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then log "$what ready"; return 0; fi
    sleep 0.1
  done
  die "timed out after ${seconds}s waiting for $what (logs in $L)"
}

pki() {
  mkdir -p "$P"
  [ -f "$P/ca.crt" ] && return 0
  ( cd "$P" || exit 1
    key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }
    key ca
    openssl req -x509 -new -key ca.key -subj /CN=recon8s-node-ca -days 30 -out ca.crt 2>/dev/null
    cert() { # cert NAME SUBJECT [SAN] [EKU]
      key "$1"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
      { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=${4:-clientAuth}"; [ -n "${3:-}" ] && echo "subjectAltName=$3"; } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    cert apiserver /CN=kube-apiserver "IP:$IP,IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
    cert kubelet-serving "/CN=$NODE" "IP:$IP,DNS:$NODE" serverAuth
    cert admin /O=system:masters/CN=recon8s-node-admin
    cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client
    cert kubelet "/O=system:nodes/CN=system:node:$NODE"
    cert kube-proxy /CN=system:kube-proxy
    cert kube-scheduler /CN=system:kube-scheduler
    cert kube-controller-manager /CN=system:kube-controller-manager
    cert coredns /CN=recon8s-node-coredns
    openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    for u in admin kubelet kube-proxy kube-scheduler kube-controller-manager coredns; do
      cat >"$u.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: recon8s-node, cluster: {server: "https://$IP:6443", certificate-authority: $P/ca.crt}}]
users: [{name: $u, user: {client-certificate: $P/$u.crt, client-key: $P/$u.key}}]
contexts: [{name: recon8s-node, context: {cluster: recon8s-node, user: $u}}]
current-context: recon8s-node
KC
    done
  ) || die "could not make the PKI in $P"
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (it runs kubelet, containerd and changes network settings)"
  for b in kubelet kube-scheduler kube-proxy coredns etcd kube-apiserver kube-controller-manager kubectl; do
    [ -x "$BIN_DIR/$b" ] || die "missing $BIN_DIR/$b"
  done
  for b in containerd runc ctr iptables conntrack; do command -v "$b" >/dev/null || die "missing $b (Debian packages containerd runc iptables conntrack)"; done
  [ -x /usr/lib/cni/bridge ] || die "missing /usr/lib/cni/bridge (Debian package containernetworking-plugins)"
  [ $# -ge 1 ] || die "up needs the sandbox image archive"
  mkdir -p "$R" "$L" "$RUN_DIR/cni/net.d" "$RUN_DIR/cni/ipam" "$RUN_DIR/volumes"

  # What `down` must restore or remove, recorded before anything changes.
  [ -f "$RUN_DIR/sysctl.orig" ] || for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables; do echo "$s=$(sysctl -n "$s" 2>/dev/null)"; done >"$RUN_DIR/sysctl.orig"
  # Paths containerd, the CNI plugins and kubelet use outside RUN_DIR whatever they are told.
  [ -f "$RUN_DIR/host-dirs.created" ] || for d in /run/containerd /var/lib/cni /var/lib/kubelet /etc/cni /opt/cni; do
    [ -e "$d" ] || echo "$d"; done >"$RUN_DIR/host-dirs.created"
  modprobe br_netfilter 2>/dev/null || true
  ip -o addr show dev lo | grep -F " $IP/32" >/dev/null || ip addr add "$IP/32" dev lo || die "could not add $IP/32 to lo"
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 || die "could not set the forwarding sysctls"
  # Forwarding is on for the bridge: a pod may reach pods (directly, or through a Service DNATed to a
  # pod) and the node, and nothing past the machine. (The CNI- prefix puts the chain in `down`'s sweep.)
  if ! iptables -w -n -L CNI-RECON8S-LOCAL >/dev/null 2>&1; then
    iptables -w -N CNI-RECON8S-LOCAL &&
      iptables -w -A CNI-RECON8S-LOCAL -s $POD_CIDR -d $POD_CIDR -j RETURN &&
      iptables -w -A CNI-RECON8S-LOCAL -s $POD_CIDR -j DROP &&
      iptables -w -I FORWARD 1 -j CNI-RECON8S-LOCAL || die "could not confine pod traffic to the machine"
  fi
  # A cgroup parent of our own in every v1 hierarchy, so that kubelet's tree is easy to find and remove.
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    mkdir -p "$h$CGROUP" 2>/dev/null || true
  done
  if [ -d /sys/fs/cgroup/cpuset/$CGROUP ]; then
    cp /sys/fs/cgroup/cpuset/cpuset.cpus /sys/fs/cgroup/cpuset/$CGROUP/cpuset.cpus
    cp /sys/fs/cgroup/cpuset/cpuset.mems /sys/fs/cgroup/cpuset/$CGROUP/cpuset.mems
  fi
  pki

  mkdir -p "$RUN_DIR/containerd"
  cat >"$RUN_DIR/containerd/config.toml" <<EOF
version = 2
root = "$RUN_DIR/containerd/root"
state = "$RUN_DIR/containerd/state"
[grpc]
  address = "$RUN_DIR/containerd/containerd.sock"
[ttrpc]
  address = "$RUN_DIR/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$RUN_DIR/containerd/opt"
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
        Root = "$RUN_DIR/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN_DIR/cni/net.d"
EOF
  cat >"$RUN_DIR/cni/net.d/10-recon8s.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "recon8s", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$RUN_DIR/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  start containerd containerd --config "$RUN_DIR/containerd/config.toml"
  wait_for 30 containerd $CTR version
  # The images are imported while the control plane starts (each archive beside the others: unpacking
  # one is a single-threaded decompression); the kubelet, which runs their containers, starts after.
  local archives=("$@") imports=() i
  for i in "${!archives[@]}"; do
    $CTR images import "${archives[$i]}" >"$L/import-$i.log" 2>&1 &
    imports[i]=$!
  done

  start etcd "$BIN_DIR/etcd" --name=recon8s-node --data-dir="$RUN_DIR/etcd" \
    --listen-client-urls=http://127.0.0.1:23790 --advertise-client-urls=http://127.0.0.1:23790 \
    --listen-peer-urls=http://127.0.0.1:23800 --initial-advertise-peer-urls=http://127.0.0.1:23800 \
    --initial-cluster=recon8s-node=http://127.0.0.1:23800 --listen-metrics-urls=http://127.0.0.1:23810 \
    --unsafe-no-fsync=true --log-level=warn
  start kube-apiserver "$BIN_DIR/kube-apiserver" --bind-address="$IP" --advertise-address="$IP" --secure-port=6443 \
    --etcd-servers=http://127.0.0.1:23790 --service-cluster-ip-range=$SVC_CIDR \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local --service-account-key-file="$P/sa.pub" \
    --service-account-signing-key-file="$P/sa.key" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --kubelet-preferred-address-types=InternalIP --allow-privileged=false --profiling=false --cert-dir="$RUN_DIR/apiserver-certs"
  wait_for 90 kube-apiserver $KC get --raw=/readyz

  start kube-controller-manager "$BIN_DIR/kube-controller-manager" --kubeconfig="$P/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$P/kube-controller-manager.kubeconfig" --authorization-kubeconfig="$P/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --allocate-node-cidrs=false --cluster-cidr=$POD_CIDR --service-cluster-ip-range=$SVC_CIDR \
    --profiling=false --cert-dir="$RUN_DIR/kcm-certs"
  start kube-scheduler "$BIN_DIR/kube-scheduler" --kubeconfig="$P/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$P/kube-scheduler.kubeconfig" --authorization-kubeconfig="$P/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false --cert-dir="$RUN_DIR/scheduler-certs"

  for i in "${!imports[@]}"; do
    wait "${imports[$i]}" || die "could not import ${archives[$i]}: $(cat "$L/import-$i.log")"
  done
  log "images imported: $($CTR images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

  mkdir -p "$RUN_DIR/kubelet" "$RUN_DIR/pod-logs"
  cat >"$RUN_DIR/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP
containerRuntimeEndpoint: unix://$RUN_DIR/containerd/containerd.sock
address: $IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: /etc/resolv.conf
podLogsDir: $RUN_DIR/pod-logs
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
  start kubelet "$BIN_DIR/kubelet" --config="$RUN_DIR/kubelet-config.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
    --root-dir="$RUN_DIR/kubelet" --hostname-override=$NODE --node-ip="$IP" --v=1

  cat >"$RUN_DIR/kube-proxy-config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $P/kube-proxy.kubeconfig}
hostnameOverride: $NODE
bindAddress: $IP
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$IP/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, syncPeriod: 5s, minSyncPeriod: 0s}
EOF
  start kube-proxy "$BIN_DIR/kube-proxy" --config="$RUN_DIR/kube-proxy-config.yaml"

  wait_for 120 "node Ready" sh -c "$KC get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"

  # Storage: a pool of `local` volumes in the default class, bound when the first pod that uses one is scheduled.
  {
    echo '{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"local","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"kubernetes.io/no-provisioner","reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"}'
    for i in $(seq 0 $((${PV_POOL:-40} - 1))); do
      mkdir -p "$RUN_DIR/volumes/pv-$i" && chmod 0755 "$RUN_DIR/volumes/pv-$i"
      echo "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"recon8s-node-pv-$i\"},\"spec\":{\"capacity\":{\"storage\":\"100Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"persistentVolumeReclaimPolicy\":\"Retain\",\"storageClassName\":\"local\",\"local\":{\"path\":\"$RUN_DIR/volumes/pv-$i\"},\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"$NODE\"]}]}]}}}}"
    done
  } | $KC apply -f - >/dev/null || die "could not create the StorageClass and volumes"
  # Frees what deleted claims release (the pool would otherwise run dry in a long run: Retain keeps them).
  start volume-recycler bash "$0" recycle-volumes

  # Cluster DNS: CoreDNS as a host process on the node address, behind the kube-dns Service.
  $KC apply -f - >/dev/null <<EOF || die "could not create the DNS objects"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "recon8s-node:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "recon8s-node:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "recon8s-node:coredns"}
subjects: [{kind: User, name: recon8s-node-coredns}]
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
metadata: {name: kube-dns-host, namespace: kube-system, labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: recon8s-node}}
addressType: IPv4
endpoints: [{addresses: ["$IP"], conditions: {ready: true}}]
ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
EOF
  cat >"$RUN_DIR/Corefile" <<EOF
.:53 {
    bind $IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $P/coredns.kubeconfig recon8s-node
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
}
EOF
  start coredns "$BIN_DIR/coredns" -conf "$RUN_DIR/Corefile"
  wait_for 30 "default ServiceAccount" $KC get serviceaccount default -n default
  log "up: KUBECONFIG=$P/admin.kubeconfig"
}

alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
# What a provisioner's Delete policy does for its volumes: a volume of the pool whose claim is gone
# (Released) is emptied and made Available again, so that any number of clusters can come and go in
# one run. Only the pool's own volumes, only once released and no longer mounted: a volume in use is
# never touched.
recycle_volumes() {
  local pv phase claim
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
      [[ $phase == Released && -n $claim && $pv =~ ^recon8s-node-pv-([0-9]+)$ ]] || continue
      # One recycling per volume at a time: the watch can say Released more than once.
      mkdir "$RUN_DIR/recycling/$pv" 2>/dev/null || continue
      recycle_volume "$pv" "$RUN_DIR/volumes/pv-${BASH_REMATCH[1]}" &
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
    grep -qF "/kubernetes.io~local-volume/$pv " /proc/self/mountinfo || break
    ((i % 60 == 0)) && echo "$(date -u +%FT%TZ) $pv is released but still mounted by a pod; waiting"
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

stop() { # stop NAME: SIGTERM, SIGKILL after 10 s
  local f=$R/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

down() {
  [ -d "$RUN_DIR" ] || return 0
  for n in volume-recycler coredns kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop $n; done
  # kubelet is gone: kill the containers directly; their network namespaces go with the mounts below.
  if [ -S "$RUN_DIR/containerd/containerd.sock" ] && [ -f "$R/containerd.pid" ]; then
    for c in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s SIGKILL "$c" >/dev/null 2>&1; done
    sleep 1
    for c in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks delete -f "$c" >/dev/null 2>&1; done
    for c in $($CTR containers ls -q 2>/dev/null); do $CTR containers delete "$c" >/dev/null 2>&1; done
  fi
  stop containerd
  # Whatever still names this run on its command line (shims that outlived containerd, a daemon whose pid
  # file a crash never wrote).
  for pid in $(pgrep -f "$RUN_DIR/" 2>/dev/null); do [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null; done
  for m in $(findmnt -rn -o TARGET | grep "^$RUN_DIR/" | sort -r); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  ip link del $BRIDGE 2>/dev/null
  # Every KUBE-*/CNI-* chain and rule goes, everything else stays. (The rules are read into a variable
  # first: `iptables-save | grep -q` fails under pipefail when grep stops reading early.) Retried: a
  # component that was just killed may still hold the xtables lock.
  local t rules
  for t in iptables ip6tables; do
    for _ in $(seq 10); do
      rules=$($t-save 2>/dev/null) || break
      grep -qE 'KUBE-|CNI-' <<<"$rules" || break
      grep -vE 'KUBE-|CNI-' <<<"$rules" | $t-restore -w 5 || echo "node: $t-restore failed; retrying" >&2
      sleep 0.2
    done
  done
  ip addr del "$IP/32" dev lo 2>/dev/null
  if [ -f "$RUN_DIR/sysctl.orig" ]; then
    while IFS== read -r k v; do [ -n "$v" ] && sysctl -qw "$k=$v" 2>/dev/null; done <"$RUN_DIR/sysctl.orig"
  fi
  for h in /sys/fs/cgroup/*/$CGROUP; do [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null; done
  if [ -f "$RUN_DIR/host-dirs.created" ]; then while read -r d; do [ -n "$d" ] && rm -rf "$d"; done <"$RUN_DIR/host-dirs.created"; fi
  rm -rf "$RUN_DIR"
  local left
  left=$(pgrep -f "$RUN_DIR/" 2>/dev/null | grep -vx $$ | tr '\n' ' ')
  [ -z "$left" ] || echo "node: processes still running after down: $left" >&2
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  recycle-volumes) recycle_volumes ;;
  *) echo "usage: node.sh up ARCHIVE... | down | recycle-volumes" >&2; exit 2 ;;
esac
