#!/usr/bin/env bash
# A control plane and several worker nodes on this one machine, each node a kubelet + containerd of its
# own in Linux namespaces of its own (network, mount, PID, UTS, IPC), in the manner of a kind node
# without a container runtime to hold it. test/node/nodes.ts drives it; people use
# `npm run cluster -- up --nodes 3`.
#
#   nodes.sh up N ARCHIVE...   the control plane on the host, then N nodes; the OCI archives are imported
#                              into every node's containerd (the first is the sandbox image)
#   nodes.sh down              stop and remove everything `up` made, whatever state it got to
#   nodes.sh power-off I       node I loses power: its link goes down and every process in it (kubelet,
#                              containerd, shims, containers) is killed at once
#   nodes.sh power-on I        node I boots again (its disks kept, its /run empty)
#   nodes.sh cut I | heal I    node I's link goes down (nothing in or out) | up again
#   nodes.sh stop-kubelet I    kill node I's kubelet alone: its containers keep running
#   nodes.sh start-kubelet I   start it again
#
# Environment: RUN_DIR; for up also BIN_DIR, SANDBOX_IMAGE, PV_POOL (volumes per node, default 12). Root only.
#
# The layout (addresses chosen apart from the single node's, see node.sh):
# - the host holds the bridge recon8s1 with 10.251.0.1/24, where etcd, kube-apiserver, the controller
#   manager, the scheduler and CoreDNS serve; node I is the network namespace recon8s-wI at 10.251.0.(10+I),
#   joined to the bridge by the veth pair r8s-wI (host side) / eth0 (node side);
# - node I's pods are 10.245.I.0/24 on a bridge cni0 inside its namespace; every node and the host route
#   each other node's pod range via that node's address (Kubernetes the Hard Way), so pod-to-pod traffic
#   crosses the host bridge, and a node whose link is down is unreachable both ways;
# - each node's processes run under a PID namespace whose init is this script (`node-init`), so a power
#   off is one SIGKILL of that init: the kernel kills everything in the namespace, containers included;
# - each node has its own mount namespace (private from the host, shared inside for kubelet's mount
#   propagation) with a tmpfs on /run and /var/lib/cni (containerd's shims, runc's state, CNI's cache and
#   pod addresses are per node and gone at power off, as on a reboot), and its own cgroup parent
#   recon8s-wI in every v1 hierarchy (two kubelets under one cgroup root kill each other's pods);
# - each node's containerd directory (images, unpacked snapshots) is a tmpfs of the host's
#   (containerd_disk): kept over a power off, gone in one umount at `down`;
# - node faults are seen quickly: nodes report every 4 s, the controller manager marks a silent node
#   NotReady after 16 s, and pods tolerate an unreachable or not-ready node for 30 s (not 300 s).
set -uo pipefail

RUN_DIR=${RUN_DIR:?RUN_DIR is required}
# `up` records its binaries and sandbox image: the faults (a power on boots a node) need only RUN_DIR.
BIN_DIR=${BIN_DIR:-$(cat "$RUN_DIR/bin-dir" 2>/dev/null || echo /nonexistent)}
SANDBOX_IMAGE=${SANDBOX_IMAGE:-$(cat "$RUN_DIR/sandbox-image" 2>/dev/null)}
HERE=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"
LOG_TAG=nodes
CLUSTER=recon8s-nodes
BRIDGE=recon8s1
API_IP=10.251.0.1
API_SANS=DNS:$CLUSTER
SVC_CIDR=10.0.0.0/24
DNS_IP=10.0.0.10
CLUSTER_CIDR=10.245.0.0/16
ETCD_IP=127.0.0.1 ETCD_PORT=23890 CP_BIND=127.0.0.1
R=$RUN_DIR/run L=$RUN_DIR/logs P=$RUN_DIR/pki
KC="$BIN_DIR/kubectl --kubeconfig=$P/admin.kubeconfig"
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops fs.inotify.max_user_instances fs.inotify.max_user_watches)

node_vars() { # node_vars I: the names and addresses of node I
  I=$1
  [[ $I =~ ^[1-9]$ ]] || die "no node '$I' (nodes are numbered 1 to 9)"
  NAME=recon8s-worker-$I NETNS=recon8s-w$I VETH=r8s-w$I IP=10.251.0.$((10 + I)) POD_CIDR=10.245.$I.0/24
  ND=$RUN_DIR/w$I CTRD="ctr -a $RUN_DIR/w$I/containerd/containerd.sock -n k8s.io"
}
node_count() { cat "$RUN_DIR/nodes" 2>/dev/null || echo 0; }
init_pid() { # the host pid of node I's PID-namespace init, when it runs
  local unshare
  unshare=$(cat "$R/w$1.pid" 2>/dev/null) || return 1
  alive "$unshare" || return 1
  pgrep -P "$unshare" | head -1
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (it runs kubelets, containerd and makes network namespaces)"
  local n=${1:?up needs the number of nodes}
  shift
  [[ $n =~ ^[1-9]$ ]] || die "the number of nodes must be 1 to 9, not '$n'"
  for b in kubelet kube-scheduler kube-proxy coredns etcd kube-apiserver kube-controller-manager kubectl; do
    [ -x "$BIN_DIR/$b" ] || die "missing $BIN_DIR/$b"
  done
  for b in containerd runc ctr iptables conntrack nsenter unshare; do command -v "$b" >/dev/null || die "missing $b"; done
  [ -x /usr/lib/cni/bridge ] || die "missing /usr/lib/cni/bridge (Debian package containernetworking-plugins)"
  [ $# -ge 1 ] || die "up needs the sandbox image archive"
  ip netns list | grep -q '^recon8s-w' && die "network namespaces recon8s-w* exist already: run nodes.sh down first"
  mkdir -p "$R" "$L"
  echo "$n" >"$RUN_DIR/nodes"
  echo "$BIN_DIR" >"$RUN_DIR/bin-dir"
  echo "${SANDBOX_IMAGE:?SANDBOX_IMAGE is required}" >"$RUN_DIR/sandbox-image"
  printf '%s\n' "$@" >"$RUN_DIR/images"

  record_sysctls "${SYSCTLS[@]}"
  [ -f "$RUN_DIR/host-dirs.created" ] || for d in /var/lib/cni /opt/cni; do
    [ -e "$d" ] || echo "$d"
  done >"$RUN_DIR/host-dirs.created"
  mkdir -p /var/lib/cni
  # Not namespaced: every kubelet and containerd takes inotify instances from the same budget.
  sysctl -qw fs.inotify.max_user_instances=8192 fs.inotify.max_user_watches=1048576
  modprobe br_netfilter 2>/dev/null || true

  ip link add "$BRIDGE" type bridge 2>/dev/null || die "could not make the bridge $BRIDGE (is a rig already up?)"
  ip addr add "$API_IP/24" dev "$BRIDGE" && ip link set "$BRIDGE" up || die "could not give $BRIDGE its address"
  local i nodes=()
  for i in $(seq "$n"); do
    node_vars "$i"
    nodes+=("$NAME=$IP")
    ip netns add "$NETNS" || die "could not add the network namespace $NETNS"
    ip link add "$VETH" type veth peer name eth0 netns "$NETNS" || die "could not make the veth pair $VETH"
    ip link set "$VETH" master "$BRIDGE" up
    ip -n "$NETNS" addr add "$IP/24" dev eth0
    ip -n "$NETNS" link set lo up
    ip -n "$NETNS" link set eth0 up
    ip -n "$NETNS" route add default via "$API_IP"
    ip route add "$POD_CIDR" via "$IP" dev "$BRIDGE"
  done
  # Every node routes every other node's pod range to that node, directly over the bridge.
  local j
  for i in $(seq "$n"); do
    for j in $(seq "$n"); do
      [ "$i" = "$j" ] && continue
      ip -n "recon8s-w$i" route add "10.245.$j.0/24" via "10.251.0.$((10 + j))" dev eth0
    done
  done
  # The host (the tests, an in-process controller: a client outside the cluster) reaches Services through
  # worker 1's kube-proxy, as an outside client would through one node; kube-proxy masquerades what does
  # not come from a pod (clusterCIDR), so replies return the same way. Pod addresses are routed directly.
  ip route add "$SVC_CIDR" via 10.251.0.11 dev "$BRIDGE" || die "could not route $SVC_CIDR to worker 1"
  cgroup_parents $(for i in $(seq "$n"); do echo "recon8s-w$i"; done)
  pki "${nodes[@]}"

  APISERVER_FLAGS=(--default-not-ready-toleration-seconds=30 --default-unreachable-toleration-seconds=30)
  start_control_plane --node-monitor-period=2s --node-monitor-grace-period=16s
  for i in $(seq "$n"); do containerd_disk "$i"; done
  for i in $(seq "$n"); do power_on "$i"; done
  for i in $(seq "$n"); do
    node_vars "$i"
    wait_for 300 "$NAME Ready" sh -c "$KC get node $NAME -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  done
  label_zones "$n"

  {
    echo "$STORAGE_CLASS"
    for i in $(seq "$n"); do
      node_vars "$i"
      volume_pool "$NAME" "$NAME-pv" "$ND/volumes" "${PV_POOL:-12}"
    done
  } | $KC apply -f - >/dev/null || die "could not create the StorageClass and volumes"
  start volume-recycler bash "$0" recycle-volumes
  start_dns
  wait_for 30 "default ServiceAccount" $KC get serviceaccount default -n default
  log "up: $n nodes; KUBECONFIG=$P/admin.kubeconfig"
}

# A zone per node, so that topology spread over zones can be tried (NodeRestriction lets a kubelet set
# only its own labels of the kubelet's allowed set; the admin sets these).
label_zones() {
  local i
  for i in $(seq "$1"); do
    $KC label node "recon8s-worker-$i" "topology.kubernetes.io/zone=zone-$i" --overwrite >/dev/null || die "could not label node $i"
  done
}

# containerd_disk I: node I's containerd directory (its root: content store and unpacked snapshots) is a
# tmpfs of the host's. Removing three unpacked mysql images from disk took `down` over 7 minutes; a
# tmpfs goes in one umount. It is mounted on the host before the node's first boot, so a power off keeps
# it (the node's images survive, as a disk's would) and `down` unmounts it with everything under RUN_DIR.
# Its pages are RAM (~1.5 GiB a node with mysql and operator); `size` caps it. The volumes stay on disk.
containerd_disk() {
  node_vars "$1"
  mkdir -p "$ND/containerd"
  mountpoint -q "$ND/containerd" && return 0
  mount -t tmpfs -o size=4g,mode=0700 "recon8s-w$I-containerd" "$ND/containerd" ||
    die "could not mount a tmpfs on $ND/containerd"
}

# power_on I: node I boots. Its namespaces are made by unshare, whose child is the node's init
# (`node-init`, PID 1 of the node); its network namespace outlives it, kept by `ip netns`.
power_on() {
  node_vars "$1"
  if init_pid "$I" >/dev/null; then
    log "$NAME is already on"
    return 0
  fi
  mkdir -p "$ND/containerd" "$ND/kubelet" "$ND/pod-logs" "$ND/volumes" "$ND/cni"
  heal_network "$I"
  setsid nsenter --net="/run/netns/$NETNS" unshare --mount --uts --ipc --pid --fork --mount-proc --propagation private \
    bash "$0" node-init "$I" >"$L/$NAME-init.log" 2>&1 </dev/null &
  echo $! >"$R/w$I.pid"
}

# node_init I: PID 1 of node I. Makes its private /run and /var/lib/cni, starts containerd (importing the
# images on a first boot), kubelet and kube-proxy, then reaps orphans (shims are reparented here) until
# it is killed. PID 1 of a namespace gets no signal it has no handler for, SIGKILL from outside included
# only: this is what a power off kills.
node_init() {
  node_vars "$1"
  L=$ND/logs R=/run/recon8s
  mount --make-rshared / || die "could not make / shared in $NAME"
  mount -t tmpfs -o mode=0755 tmpfs /run && mount -t tmpfs -o mode=0755 tmpfs /var/lib/cni || die "could not mount $NAME's /run"
  mkdir -p "$L" "$R"
  hostname "$NAME"
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 || die "could not set $NAME's forwarding sysctls"
  # A boot starts with empty tables (the network namespace, which holds them, outlives a power off).
  local t
  for t in filter nat mangle raw; do iptables -w -t "$t" -F && iptables -w -t "$t" -X; done
  conntrack -F >/dev/null 2>&1
  # A pod may reach pods, nodes and the control plane, nothing past the machine (nothing is masqueraded).
  iptables -w -N CNI-RECON8S-LOCAL &&
    iptables -w -A CNI-RECON8S-LOCAL -s "$CLUSTER_CIDR" -d "$CLUSTER_CIDR" -j RETURN &&
    iptables -w -A CNI-RECON8S-LOCAL -s "$CLUSTER_CIDR" -d "$API_IP/24" -j RETURN &&
    iptables -w -A CNI-RECON8S-LOCAL -s "$CLUSTER_CIDR" -j DROP &&
    iptables -w -I FORWARD 1 -j CNI-RECON8S-LOCAL || die "could not confine $NAME's pod traffic to the machine"

  mkdir -p "$ND/cni/net.d"
  containerd_config "$ND/containerd" /run/containerd-state "$ND/cni/net.d"
  cni_config "$ND/cni/net.d/10-recon8s.conflist" cni0 "$POD_CIDR" /run/cni-ipam
  start containerd containerd --config "$ND/containerd/config.toml"
  wait_for 30 "$NAME containerd" $CTRD version
  if [ ! -f "$ND/images.imported" ]; then
    local archive
    # One after another: the nodes boot together and import side by side.
    while read -r archive; do
      $CTRD images import "$archive" >>"$L/import.log" 2>&1 || die "could not import $archive into $NAME: $(tail -3 "$L/import.log")"
    done <"$RUN_DIR/images"
    touch "$ND/images.imported"
    log "$NAME images imported"
  fi
  kubelet_config "$ND/kubelet-config.yaml" "$NAME" "$IP" "recon8s-w$I" "$ND/containerd/containerd.sock" "$ND/pod-logs"
  kube_proxy_config "$ND/kube-proxy-config.yaml" "$NAME" "$IP" "$CLUSTER_CIDR"
  start_kubelet_here
  start kube-proxy "$BIN_DIR/kube-proxy" --config="$ND/kube-proxy-config.yaml"
  trap '' TERM INT HUP
  while :; do
    wait
    sleep 1 &
    wait $!
  done
}
start_kubelet_here() {
  start kubelet "$BIN_DIR/kubelet" --config="$ND/kubelet-config.yaml" --kubeconfig="$P/kubelet-$NAME.kubeconfig" \
    --root-dir="$ND/kubelet" --hostname-override="$NAME" --node-ip="$IP" --v=1
}

power_off() {
  node_vars "$1"
  ip link set "$VETH" down 2>/dev/null
  local init
  init=$(init_pid "$I") || {
    log "$NAME is already off"
    return 0
  }
  kill -KILL "$init"
  for _ in $(seq 100); do alive "$init" || break; sleep 0.1; done
  # Its processes are gone when the namespace's init has been reaped.
  stop w"$I"
  log "$NAME powered off"
}
cut_network() {
  node_vars "$1"
  ip link set "$VETH" down || die "could not take $VETH down"
}
heal_network() {
  node_vars "$1"
  ip link set "$VETH" up || die "could not bring $VETH up"
}
kubelet_pids() { pgrep -f -- "--config=$ND/kubelet-config.yaml"; }
stop_kubelet() {
  node_vars "$1"
  local pid
  for pid in $(kubelet_pids); do kill -KILL "$pid"; done
}
start_kubelet() {
  node_vars "$1"
  local init
  init=$(init_pid "$I") || die "$NAME is off"
  kubelet_pids >/dev/null && return 0
  # Into the node's namespaces; it stays in them when nsenter exits (and goes at the node's power off).
  nsenter -t "$init" -m -u -i -n -p -- bash "$0" node-kubelet "$I" || die "could not start $NAME's kubelet"
}
node_kubelet() { # inside node I's namespaces
  node_vars "$1"
  L=$ND/logs R=/run/recon8s
  start_kubelet_here
}

# in_pod_network I POD_IP CMD...: runs CMD (a program of the host) in the network namespace of the pod
# at POD_IP on node I: what the tests use to send traffic from a pod whose image has no client in it.
in_pod_network() {
  node_vars "$1"
  local pod_ip=$2 init
  shift 2
  [[ $pod_ip =~ ^[0-9.]+$ ]] || die "not a pod address: '$pod_ip'"
  init=$(init_pid "$I") || die "$NAME is off"
  # shellcheck disable=SC2016 # expanded by the inner shell, in the node's mount namespace
  nsenter -t "$init" -m -- bash -c 'for f in /run/containerd-state/io.containerd.grpc.v1.cri/netns/*; do
      if nsenter --net="$f" ip -o -4 addr show dev eth0 2>/dev/null | grep -qF " inet $0/"; then exec nsenter --net="$f" -- "$@"; fi
    done; echo "no pod at $0 on this node" >&2; exit 3' "$pod_ip" "$@"
}

volume_dir() { # volume_dir PV: the directory of a pool volume recon8s-worker-I-pv-J
  [[ $1 =~ ^recon8s-worker-([1-9])-pv-([0-9]+)$ ]] && echo "$RUN_DIR/w${BASH_REMATCH[1]}/volumes/pv-${BASH_REMATCH[2]}"
}
volume_busy() { # a volume is busy while its node has it mounted, or while its node is off
  local i init
  [[ $1 =~ ^recon8s-worker-([1-9])-pv- ]] || return 1
  i=${BASH_REMATCH[1]}
  init=$(init_pid "$i") || return 0
  grep -qF "/kubernetes.io~local-volume/$1 " "/proc/$init/mountinfo"
}

down() {
  [ -d "$RUN_DIR" ] || return 0
  local i n
  n=$(node_count)
  stop volume-recycler
  stop coredns
  for i in $(seq "$n"); do power_off "$i" 2>/dev/null; done
  for n in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop $n; done
  # Whatever still names this run on its command line (a start-kubelet's nsenter, a daemon whose pid file
  # a crash never wrote, a node whose pid file is gone).
  local pid
  for pid in $(pgrep -f "$RUN_DIR/" 2>/dev/null); do [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null; done
  sleep 0.2
  # The host ends of the veth pairs go first: a dead node's namespace can outlive its name (its orphaned
  # sockets hold it until they time out), and its veth pair with it.
  for i in $(ip -o link show 2>/dev/null | grep -o 'r8s-w[1-9]'); do ip link del "$i" 2>/dev/null; done
  for i in $(ip netns list 2>/dev/null | grep -o '^recon8s-w[1-9]'); do ip netns del "$i"; done
  ip link del "$BRIDGE" 2>/dev/null
  for m in $(findmnt -rn -o TARGET | grep "^$RUN_DIR/" | sort -r); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  restore_sysctls
  remove_cgroups recon8s-w{1..9}
  if [ -f "$RUN_DIR/host-dirs.created" ]; then while read -r d; do [ -n "$d" ] && rm -rf "$d"; done <"$RUN_DIR/host-dirs.created"; fi
  rm -rf "$RUN_DIR"
  local left
  left=$(pgrep -f "$RUN_DIR/" 2>/dev/null | grep -vx $$ | tr '\n' ' ')
  [ -z "$left" ] || echo "nodes: processes still running after down: $left" >&2
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  power-off) power_off "${2:-}" ;;
  power-on) power_on "${2:-}" ;;
  cut) cut_network "${2:-}" ;;
  heal) heal_network "${2:-}" ;;
  stop-kubelet) stop_kubelet "${2:-}" ;;
  start-kubelet) start_kubelet "${2:-}" ;;
  node-init) node_init "${2:-}" ;;
  node-kubelet) node_kubelet "${2:-}" ;;
  in-pod-network) shift; in_pod_network "$@" ;;
  recycle-volumes) recycle_volumes ;;
  *) echo "usage: nodes.sh up N ARCHIVE... | down | power-off|power-on|cut|heal|stop-kubelet|start-kubelet I" >&2; exit 2 ;;
esac
