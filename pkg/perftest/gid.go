package perftest

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// On RoCE, perftest's -x names the GID table entry the QPs use: it must be the RoCE v2 GID of
// the pod's own RDMA interface. On a port shared by pods (the Network Operator's RDMA shared
// device plugin with macvlan, the common setup) the port's one GID table holds the host's and
// every pod's addresses, each pod's at a different index: no index fixed before the pods run
// fits both pods of a pair (the NVIDIA forum thread "Configure CX-7 400GE not to change GID
// index" is about exactly this). So each pod chooses its own index at start, from its own
// address, with gidScript: the rule is ibport.Port.RoCEv2GIDOf's (the RoCE v2 GID whose address
// is the IPv4-mapped address of one of the pod's interfaces), run in the pod over its /sys and
// /proc. gid_exec_test.go runs the script over fake trees and checks it agrees with that rule.

// GIDLinePrefix starts the line the in-pod GID choice prints: "ain-gid: index=N device=D
// port=P address=A netdev=IF ..." when it chose, "ain-gid: FAIL: why" when it could not.
const GIDLinePrefix = "ain-gid:"

// gidExit is the script's exit status when no GID fits (perftest's own failures exit 1).
const gidExit = 3

// gidScriptTemplate reads, with only POSIX sh builtins (sh, read, case, printf: the perftest
// image is an Ubuntu-based CUDA image without iproute2, and --image may be anything with sh):
//
//   - the pod's IPv4 addresses: the "/32 host LOCAL" entries of /proc/net/fib_trie (the kernel's
//     local routing table, in the pod's network namespace), 127/8 left out;
//   - the interface of each: the one whose connected route (gateway 0, /proc/net/route, whose
//     Destination and Mask are hex in host byte order: little-endian on x86-64 and arm64) holds it;
//   - the chosen device's port's GID table (kernel ABI sysfs-class-infiniband:
//     ports/<p>/gids/<i>, gid_attrs/types/<i> "RoCE v2" or "IB/RoCE v1", gid_attrs/ndevs/<i>
//     the netdev's name), and the pod's interfaces (/sys/class/net, the pod's namespace's).
//
// It picks the lowest index whose type is RoCE v2, whose netdev is an interface of the pod, and
// whose GID is ::ffff:<an IPv4 address of the pod>: the pod's own entry (another pod's carries
// that pod's address, the host's a host netdev's). The interface of each address only words the
// failures (an interface without IPv4); it does not decide, as two interfaces may share a subnet. @DEV@ and @PORT@ are the device and port ("" and "": the first
// port, in sysfs order, with such a GID; its device and port then go to perftest too).
//
// The infiniband path is written with a quote inside ("/sys/class/"infiniband) on purpose: the
// sandbox tells its IB port probe pods by the plain path in their script, and must not take a
// perftest pod for one.
const gidScriptTemplate = `ain_r=${AIN_SYSFS_ROOT:-}; ain_wd='@DEV@'; ain_wp='@PORT@'
ain_fail() { echo "ain-gid: FAIL: $*"; exit @EXIT@; }
ain_ipof() { ain_h=${1##*:ffff:}; ain_x=${ain_h%%:*}; ain_y=${ain_h##*:}; printf '%d.%d.%d.%d' $((0x${ain_x%??})) $((0x${ain_x#??})) $((0x${ain_y%??})) $((0x${ain_y#??})); }
ain_gidof() { ain_o=$IFS; IFS=.; set -- $1; IFS=$ain_o; printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"; }
ain_ifof() {
  ain_o=$IFS; IFS=.; set -- $1; IFS=$ain_o; ain_n=$(( $1 | ($2 << 8) | ($3 << 16) | ($4 << 24) ))
  [ -r "$ain_r/proc/net/route" ] || { echo '*'; return; }
  while read -r ain_if ain_dst ain_gw ain_f1 ain_f2 ain_f3 ain_f4 ain_m ain_rest; do
    case "$ain_dst$ain_gw$ain_m" in *[!0-9A-Fa-f]*|'') continue ;; esac
    [ "$ain_gw" = 00000000 ] && [ "$ain_m" != 00000000 ] || continue
    if [ $(( ain_n & 0x$ain_m )) -eq $(( 0x$ain_dst )) ]; then echo "$ain_if"; return; fi
  done < "$ain_r/proc/net/route"
}
ain_addrs=''; ain_l=''
if [ -r "$ain_r/proc/net/fib_trie" ]; then
  while read -r ain_a ain_b ain_c; do
    case "$ain_a" in
    '|--') ain_l=$ain_b ;;
    /32) [ "$ain_b $ain_c" = 'host LOCAL' ] || continue
      case "$ain_l" in 127.*|*[!0-9.]*|'') continue ;; esac
      case " $ain_addrs " in *" $ain_l "*) ;; *) ain_addrs="$ain_addrs $ain_l" ;; esac ;;
    esac
  done < "$ain_r/proc/net/fib_trie"
fi
ain_pairs=''
for ain_a in $ain_addrs; do ain_pairs="$ain_pairs $(ain_ifof "$ain_a")=$ain_a"; done
ain_gid=''; ain_ports=''; ain_nets=''; ain_want=''; ain_v2=''
for ain_dd in "$ain_r"/sys/class/"infiniband"/*; do
  [ -d "$ain_dd" ] || continue
  ain_d=${ain_dd##*/}
  [ -z "$ain_wd" ] || [ "$ain_d" = "$ain_wd" ] || continue
  for ain_pd in "$ain_dd"/ports/*; do
    ain_p=${ain_pd##*/}
    [ -d "$ain_pd" ] && { [ -z "$ain_wp" ] || [ "$ain_p" = "$ain_wp" ]; } || continue
    ain_ports="$ain_ports $ain_d:$ain_p"
    for ain_g in "$ain_pd"/gids/*; do
      ain_i=${ain_g##*/}; ain_v=''; ain_t=''; ain_nd=''
      { read -r ain_v < "$ain_g"; read -r ain_t < "$ain_pd/gid_attrs/types/$ain_i"; read -r ain_nd < "$ain_pd/gid_attrs/ndevs/$ain_i"; } 2>/dev/null
      ain_mine=''
      if [ -n "$ain_nd" ] && [ -e "$ain_r/sys/class/net/$ain_nd" ]; then
        ain_mine=1
        case " $ain_nets " in *" $ain_nd "*) ;; *) ain_nets="$ain_nets $ain_nd" ;; esac
      fi
      [ "$ain_t" = 'RoCE v2' ] || continue
      case "$ain_v" in 0000:0000:0000:0000:0000:ffff:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]) ;; *) continue ;; esac
      ain_v2="$ain_v2 $ain_i:$(ain_ipof "$ain_v")@${ain_nd:-?}"
      [ -n "$ain_mine" ] || [ -z "$ain_nd" ] || continue
      for ain_a in $ain_addrs; do
        [ "$ain_v" = "$(ain_gidof "$ain_a")" ] || continue
        if [ -z "$ain_gid" ] || [ "$ain_i" -lt "$ain_gid" ]; then ain_gid=$ain_i; ain_dev=$ain_d; ain_port=$ain_p; ain_addr=$ain_a; ain_net=${ain_nd:-?}; fi
      done
    done
    [ -z "$ain_gid" ] || break
  done
  [ -z "$ain_gid" ] || break
done
ain_where='(any device)'; [ -z "$ain_wd" ] || ain_where="device $ain_wd port $ain_wp"
[ -n "$ain_ports" ] || ain_fail "no RDMA port $ain_where visible in this pod (does it hold the RDMA resource?)"
if [ -z "$ain_gid" ]; then
  for ain_pr in $ain_pairs; do
    case " $ain_nets * " in *" ${ain_pr%%=*} "*) ain_want="$ain_want ${ain_pr#*=}" ;; esac
  done
  ain_ifs=''; for ain_n in "$ain_r"/sys/class/net/*; do [ -e "$ain_n" ] && ain_ifs="$ain_ifs ${ain_n##*/}"; done
  [ -n "$ain_nets" ] || ain_fail "no GID of$ain_ports is on an interface of this pod (its interfaces:${ain_ifs:- none}; RoCE v2 IPv4 GIDs index:address@netdev:${ain_v2:- none}): is the RDMA network (Multus) attached to the pod?"
  [ -n "$ain_want" ] || ain_fail "the pod's interface$ain_nets on$ain_ports has no IPv4 address (IPv4 addresses of this pod:${ain_addrs:- none}): perftest -x needs the RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d); give the interface an IPv4 address, or --gid-index to name a GID"
  ain_fail "no RoCE v2 GID of the pod's address$ain_want (interface$ain_nets) on$ain_ports (RoCE v2 IPv4 GIDs index:address@netdev:${ain_v2:- none}); give --gid-index to name a GID"
fi
echo "ain-gid: index=$ain_gid device=$ain_dev port=$ain_port address=$ain_addr netdev=$ain_net (the RoCE v2 GID of this pod's address)"`

// gidScript is the fragment that sets $ain_gid (and $ain_dev, $ain_port) for perftest's -x, or
// exits with gidExit after a FAIL line. dev "" lets it take the first port with the pod's GID;
// port 0 with a device means port 1 (perftest's own default -i).
func gidScript(dev string, port int) string {
	p := ""
	if dev != "" {
		p = strconv.Itoa(max(port, 1))
	}
	return strings.NewReplacer("@DEV@", dev, "@PORT@", p, "@EXIT@", strconv.Itoa(gidExit)).Replace(gidScriptTemplate)
}

// GIDChoice is what the in-pod choice printed: the index perftest's -x got, and why.
type GIDChoice struct {
	Index   int    `json:"index"`
	Device  string `json:"device"`
	Port    int    `json:"port"`
	Address string `json:"address"` // the pod's IPv4 address the GID carries
	Netdev  string `json:"netdev"`  // its interface in the pod
}

// FindGIDChoice reads a pod's log for the in-pod GID choice: the choice, or the FAIL line's
// reason (fail), or neither when the log has no such line (a fixed -x, InfiniBand).
func FindGIDChoice(log []byte) (choice *GIDChoice, fail string) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(l, GIDLinePrefix)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if why, ok := strings.CutPrefix(rest, "FAIL:"); ok {
			return nil, strings.TrimSpace(why)
		}
		c := &GIDChoice{Index: -1}
		for _, f := range strings.Fields(rest) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			switch k {
			case "index":
				if n, err := strconv.Atoi(v); err == nil && n >= 0 {
					c.Index = n
				}
			case "device":
				c.Device = v
			case "port":
				c.Port, _ = strconv.Atoi(v)
			case "address":
				c.Address = v
			case "netdev":
				c.Netdev = v
			}
		}
		if c.Index < 0 {
			return nil, "unreadable GID choice line: " + l
		}
		return c, ""
	}
	return nil, ""
}

// GIDChoiceLine is the line the in-pod choice prints for c (the sandbox prints it for its
// simulated pods; FindGIDChoice reads either).
func GIDChoiceLine(c GIDChoice) string {
	return GIDLinePrefix + " index=" + strconv.Itoa(c.Index) + " device=" + c.Device + " port=" + strconv.Itoa(c.Port) +
		" address=" + c.Address + " netdev=" + c.Netdev + " (the RoCE v2 GID of this pod's address)"
}
