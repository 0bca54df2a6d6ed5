package counters

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// Counter classes.
const (
	ClassTraffic    = "traffic"    // bytes and packets
	ClassCongestion = "congestion" // ECN/CNP and PFC pause: expected under load on a lossless fabric
	ClassLoss       = "loss"       // retransmission and drops: a lossless RoCE fabric should show none
	ClassError      = "error"      // link, physical and completion errors
)

// Info says what a counter is.
type Info struct {
	Class   string
	Meaning string
}

// Known counters: the IB port counters (sysfs-class-infiniband), the mlx5 hw_counters and the
// mlx5 ethtool counters, described after NVIDIA's "Understanding mlx5 Linux Counters and Status
// Parameters" and the kernel ABI document.
var known = map[string]Info{
	"port_xmit_data":                {ClassTraffic, "data sent, in 4-byte words (x4 = bytes)"},
	"port_rcv_data":                 {ClassTraffic, "data received, in 4-byte words (x4 = bytes)"},
	"port_xmit_packets":             {ClassTraffic, "packets sent"},
	"port_rcv_packets":              {ClassTraffic, "packets received"},
	"unicast_xmit_packets":          {ClassTraffic, "unicast packets sent"},
	"unicast_rcv_packets":           {ClassTraffic, "unicast packets received"},
	"multicast_xmit_packets":        {ClassTraffic, "multicast packets sent"},
	"multicast_rcv_packets":         {ClassTraffic, "multicast packets received"},
	"rx_write_requests":             {ClassTraffic, "RDMA WRITE requests received (this node was the target)"},
	"rx_read_requests":              {ClassTraffic, "RDMA READ requests received"},
	"rx_atomic_requests":            {ClassTraffic, "atomic requests received"},
	"rx_bytes":                      {ClassTraffic, "bytes received by the netdev (ethtool; RDMA traffic bypasses it on most drivers)"},
	"tx_bytes":                      {ClassTraffic, "bytes sent by the netdev (ethtool; RDMA traffic bypasses it on most drivers)"},
	"rx_packets":                    {ClassTraffic, "packets received by the netdev"},
	"tx_packets":                    {ClassTraffic, "packets sent by the netdev"},
	"rx_vport_rdma_unicast_bytes":   {ClassTraffic, "RDMA unicast bytes received by the NIC's vport (bytes, not words)"},
	"tx_vport_rdma_unicast_bytes":   {ClassTraffic, "RDMA unicast bytes sent by the NIC's vport (bytes, not words)"},
	"rx_vport_rdma_unicast_packets": {ClassTraffic, "RDMA unicast packets received by the vport"},
	"tx_vport_rdma_unicast_packets": {ClassTraffic, "RDMA unicast packets sent by the vport"},

	"np_ecn_marked_roce_packets": {ClassCongestion, "RoCE packets that arrived with ECN CE marked: a switch queue on the way here passed its ECN threshold"},
	"np_cnp_sent":                {ClassCongestion, "CNPs this NIC sent as receiver (notification point) in answer to ECN marks"},
	"rp_cnp_handled":             {ClassCongestion, "CNPs this NIC received as sender (reaction point) and acted on: DCQCN lowered its rate"},
	"rp_cnp_ignored":             {ClassCongestion, "CNPs received and ignored (congestion control off for that priority or QP)"},
	"port_xmit_wait":             {ClassCongestion, "ticks the port had data to send but no credits or arbitration: back-pressure"},
	"roce_slow_restart":          {ClassCongestion, "times a QP entered slow restart after repeated retransmissions"},
	"roce_slow_restart_cnps":     {ClassCongestion, "CNPs counted during slow restart"},
	"roce_slow_restart_trans":    {ClassCongestion, "transitions to slow restart"},

	"out_of_sequence":       {ClassLoss, "packets that arrived out of sequence (a packet before them was lost): the receiver asked for a resend"},
	"packet_seq_err":        {ClassLoss, "NAK-sequence-error packets received: the peer saw a gap in what this node sent"},
	"local_ack_timeout_err": {ClassLoss, "ACK timeouts on the sender: a packet or its ACK was lost, the QP retransmitted"},
	"implied_nak_seq_err":   {ClassLoss, "implied NAK sequence errors (READ/atomic responses out of order): retransmission"},
	"duplicate_request":     {ClassLoss, "duplicate requests received: the sender retransmitted something that had arrived"},
	"roce_adp_retrans":      {ClassLoss, "adaptive retransmissions of RoCE traffic"},
	"roce_adp_retrans_to":   {ClassLoss, "adaptive retransmission timeouts"},
	"rnr_nak_retry_err":     {ClassLoss, "receiver-not-ready NAKs received (the peer had no receive posted): retries"},
	"out_of_buffer":         {ClassLoss, "packets dropped for lack of a receive WQE"},
	"rx_out_of_buffer":      {ClassLoss, "packets dropped for lack of a receive buffer (ethtool)"},
	"rx_discards_phy":       {ClassLoss, "packets the NIC dropped on receive for lack of buffer: on a lossless priority PFC should have prevented it"},
	"tx_discards_phy":       {ClassLoss, "packets dropped on transmit"},
	"port_xmit_discards":    {ClassLoss, "outbound packets discarded (port down or congestion)"},
	"rx_icrc_encapsulated":  {ClassLoss, "RoCE packets received with an ICRC error"},

	"link_downed":                     {ClassError, "times the link went down (error recovery failed)"},
	"link_error_recovery":             {ClassError, "link error recoveries (the link retrained)"},
	"symbol_error":                    {ClassError, "physical symbol errors: cable, optic or connector"},
	"port_rcv_errors":                 {ClassError, "received packets with errors"},
	"port_rcv_remote_physical_errors": {ClassError, "packets received marked bad by an upstream hop (EBP)"},
	"port_rcv_switch_relay_errors":    {ClassError, "packets that could not be forwarded"},
	"local_link_integrity_errors":     {ClassError, "times the local physical error threshold was exceeded"},
	"excessive_buffer_overrun_errors": {ClassError, "consecutive flow-control buffer overruns"},
	"VL15_dropped":                    {ClassError, "subnet management packets dropped (VL15)"},
	"port_xmit_constraint_errors":     {ClassError, "packets not sent because of partition or rate constraints"},
	"port_rcv_constraint_errors":      {ClassError, "packets dropped because of partition constraints"},
	"req_cqe_error":                   {ClassError, "requester completions with an error"},
	"resp_cqe_error":                  {ClassError, "responder completions with an error"},
	"req_cqe_flush_error":             {ClassError, "requester completions flushed (QP went to error)"},
	"resp_cqe_flush_error":            {ClassError, "responder completions flushed"},
	"req_remote_access_errors":        {ClassError, "remote access errors seen by the requester (bad rkey or permissions)"},
	"req_remote_invalid_request":      {ClassError, "remote invalid request errors"},
	"resp_local_length_error":         {ClassError, "responder local length errors (receive buffer too small)"},
	"resp_remote_access_errors":       {ClassError, "responder remote access errors"},
	"rx_crc_errors_phy":               {ClassError, "frames received with a bad FCS: cable or optic"},
	"rx_symbol_err_phy":               {ClassError, "physical symbol errors (ethtool)"},
}

var (
	pauseRe    = lazyre.New(`^(rx|tx)_prio(\d)_pause$`)
	pauseDurRe = lazyre.New(`^(rx|tx)_prio(\d)_pause_duration$`)
	prioBytes  = lazyre.New(`^(rx|tx)_prio(\d)_(bytes|packets)$`)
)

// Describe says what a counter is; ok is false for counters ain has no description for.
func Describe(name string) (Info, bool) {
	if i, ok := known[name]; ok {
		return i, true
	}
	if m := pauseRe().FindStringSubmatch(name); m != nil {
		if m[1] == "rx" {
			return Info{ClassCongestion, "PFC pause frames received on priority " + m[2] + ": the switch asked this NIC to stop sending that priority"}, true
		}
		return Info{ClassCongestion, "PFC pause frames sent on priority " + m[2] + ": this NIC's receive buffer filled and it asked the switch to stop"}, true
	}
	if m := pauseDurRe().FindStringSubmatch(name); m != nil {
		return Info{ClassCongestion, "time (us) priority " + m[2] + " was paused (" + m[1] + ")"}, true
	}
	if m := prioBytes().FindStringSubmatch(name); m != nil {
		return Info{ClassTraffic, m[3] + " on priority " + m[2] + " (" + m[1] + ")"}, true
	}
	return Info{}, false
}

// Delta is the change of one counter on one port.
type Delta struct {
	Counter string `json:"counter"`
	Before  uint64 `json:"before"`
	After   uint64 `json:"after"`
	// Delta is after - before; null when the counter went backwards (reset, driver reload).
	Delta   *uint64 `json:"delta"`
	Class   string  `json:"class,omitempty"`
	Meaning string  `json:"meaning,omitempty"`
}

// Finding is one conclusion from the deltas.
type Finding struct {
	Severity string   `json:"severity"` // problem, warning or info
	Code     string   `json:"code"`
	Ports    []string `json:"ports,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
	// Next are the ain commands the fix suggests running.
	Next []next.Command `json:"next,omitempty"`
}

// Traffic is what crossed one RDMA port between the snapshots.
type Traffic struct {
	XmitBytes uint64 `json:"xmitBytes"`
	RcvBytes  uint64 `json:"rcvBytes"`
	// Unknown: port_xmit_data or port_rcv_data went backwards (reset, driver reload, or the
	// snapshots given in the wrong order), so the bytes are not known; they read 0.
	Unknown bool `json:"unknown,omitempty"`
}

// Report is `ain doctor counters` with two snapshots.
type Report struct {
	Ports   map[string]map[string]uint64 `json:"ports"` // the (second) snapshot
	Formats []string                     `json:"formats"`
	// Deltas: per port, every counter that changed (or went backwards), with its meaning.
	Deltas map[string][]Delta `json:"deltas,omitempty"`
	// Bytes: per RDMA port, 4 x the port_xmit_data / port_rcv_data deltas.
	Bytes    map[string]Traffic `json:"bytes"`
	Findings []Finding          `json:"findings"`
	OK       bool               `json:"ok"`
}

// Options tune the comparison.
type Options struct {
	// ExpectBytes: bytes the workload had to send from this node over RDMA between the snapshots
	// (0: no expectation). Less on every RDMA port together is a problem: the traffic went
	// elsewhere (sockets, another NIC).
	ExpectBytes uint64
}

// Compare computes the deltas from before to after and the findings.
func Compare(before, after *Snapshot, o Options) *Report {
	r := &Report{Ports: after.Ports, Formats: after.Formats, Deltas: map[string][]Delta{}, Bytes: map[string]Traffic{}, Findings: []Finding{}, OK: true}
	add := func(sev, code string, ports []string, fix, format string, args ...any) {
		r.Findings = append(r.Findings, Finding{Severity: sev, Code: code, Ports: ports, Message: fmt.Sprintf(format, args...), Fix: fix})
		if sev == "problem" {
			r.OK = false
		}
	}
	var onlyOne []string
	for _, p := range before.PortNames() {
		if _, ok := after.Ports[p]; !ok {
			onlyOne = append(onlyOne, p+" (before only)")
		}
	}
	for _, p := range after.PortNames() {
		if _, ok := before.Ports[p]; !ok {
			onlyOne = append(onlyOne, p+" (after only)")
		}
	}
	if len(onlyOne) > 0 {
		add("warning", "port-in-one-snapshot", onlyOne, "take both snapshots with the same command on the same node",
			"ports present in only one snapshot: %s", strings.Join(onlyOne, ", "))
	}
	// sums[counter] = total delta over ports, and the ports that moved, per counter.
	sums := map[string]uint64{}
	moved := map[string][]string{}
	var backwards []string
	for _, p := range after.PortNames() {
		b, ok := before.Ports[p]
		if !ok {
			continue
		}
		a := after.Ports[p]
		names := make([]string, 0, len(a))
		for n := range a {
			if _, ok := b[n]; ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			bv, av := b[n], a[n]
			if av == bv {
				continue
			}
			d := Delta{Counter: n, Before: bv, After: av}
			if info, ok := Describe(n); ok {
				d.Class, d.Meaning = info.Class, info.Meaning
			}
			if av < bv {
				backwards = append(backwards, p+" "+n)
			} else {
				v := av - bv
				d.Delta = &v
				sums[n] += v
				moved[n] = append(moved[n], p)
			}
			r.Deltas[p] = append(r.Deltas[p], d)
		}
		if _, ok := a["port_xmit_data"]; ok {
			t := Traffic{Unknown: a["port_xmit_data"] < b["port_xmit_data"] || a["port_rcv_data"] < b["port_rcv_data"]}
			if !t.Unknown {
				t.XmitBytes = 4 * (a["port_xmit_data"] - b["port_xmit_data"])
				t.RcvBytes = 4 * (a["port_rcv_data"] - b["port_rcv_data"])
			}
			r.Bytes[p] = t
		}
	}
	if len(backwards) > 0 {
		add("warning", "counter-went-backwards", backwards, "take the snapshots again without a driver reload or counter reset in between",
			"counters went backwards (reset or driver reload between the snapshots, or the snapshots given in the wrong order): %s; their deltas are unknown", strings.Join(backwards, ", "))
		// Unknown deltas are no verdict: "no loss" cannot be said of a counter that was reset.
		r.OK = false
	}
	findingsFromSums(r, sums, moved, o, add)
	return r
}

type addFunc func(sev, code string, ports []string, fix, format string, args ...any)

func findingsFromSums(r *Report, sums map[string]uint64, moved map[string][]string, o Options, add addFunc) {
	var total uint64
	var carrying, unknown []string
	for _, p := range slices.Sorted(maps.Keys(r.Bytes)) {
		t := r.Bytes[p]
		total += t.XmitBytes
		switch {
		case t.Unknown:
			unknown = append(unknown, p)
		case t.XmitBytes > 0 || t.RcvBytes > 0:
			carrying = append(carrying, fmt.Sprintf("%s sent %s, received %s", p, HumanBytes(t.XmitBytes), HumanBytes(t.RcvBytes)))
		}
	}
	switch {
	case len(carrying) > 0:
		add("info", "rdma-traffic", nil, "", "RDMA traffic: %s", strings.Join(carrying, "; "))
	case len(r.Bytes) > 0 && len(unknown) == 0:
		add("info", "rdma-idle", nil, "", "no RDMA port moved any data between the snapshots")
	}
	if o.ExpectBytes > 0 {
		if total < o.ExpectBytes && len(unknown) > 0 {
			// The ports whose data counters went backwards may have carried the rest: no verdict.
			add("warning", "rdma-bytes-unknown", unknown, "take the snapshots again, before then after the workload, without a driver reload in between",
				"the RDMA ports with known deltas sent %s, less than the %s expected, but the data counters of %s went backwards: what they sent is unknown",
				HumanBytes(total), HumanBytes(o.ExpectBytes), strings.Join(unknown, ", "))
		} else if total < o.ExpectBytes {
			// Where did it go? A netdev whose byte counter moved by that much carried it (sockets).
			var netdevs []string
			for _, p := range slices.Sorted(maps.Keys(r.Deltas)) {
				for _, d := range r.Deltas[p] {
					if d.Counter == "tx_bytes" && d.Delta != nil && *d.Delta >= o.ExpectBytes/2 {
						netdevs = append(netdevs, fmt.Sprintf("%s sent %s", p, HumanBytes(*d.Delta)))
					}
				}
			}
			if len(netdevs) > 0 {
				add("warning", "netdev-carried-it", nil, "", "the netdev byte counters moved instead (TCP, not RDMA): %s", strings.Join(netdevs, "; "))
			}
			add("problem", "rdma-bytes-short", nil,
				"check the NCCL log for the transport and NCCL_IB_HCA: the collective did not run over these HCAs",
				"the RDMA ports sent %s in all, less than the %s the workload had to send from this node: the traffic did not cross these HCAs (socket fallback or another NIC)",
				HumanBytes(total), HumanBytes(o.ExpectBytes))
			r.Findings[len(r.Findings)-1].Next = []next.Command{"doctor nccl-log"}
		} else {
			add("info", "rdma-bytes-ok", nil, "", "the RDMA ports sent %s, at least the %s expected", HumanBytes(total), HumanBytes(o.ExpectBytes))
		}
	}
	names := slices.Sorted(maps.Keys(sums))
	var loss, errs, pauses []string
	for _, n := range names {
		info, _ := Describe(n)
		switch info.Class {
		case ClassLoss:
			loss = append(loss, fmt.Sprintf("%s +%d on %s", n, sums[n], strings.Join(moved[n], ",")))
		case ClassError:
			errs = append(errs, fmt.Sprintf("%s +%d on %s", n, sums[n], strings.Join(moved[n], ",")))
		}
		if pauseRe().MatchString(n) {
			pauses = append(pauses, fmt.Sprintf("%s +%d on %s", n, sums[n], strings.Join(moved[n], ",")))
		}
	}
	if len(loss) > 0 {
		add("problem", "packet-loss", nil,
			"on RoCE: enable PFC on the RoCE priority end to end (NIC: mlnx_qos --pfc; switch), make the NIC trust DSCP and mark RoCE traffic on that priority; on IB: check cables and switch ports",
			"packets were lost and retransmitted (%s): a lossless fabric shows none; each loss stalls the QP (go-back-N)", strings.Join(loss, "; "))
	}
	if len(errs) > 0 {
		sev := "problem"
		add(sev, "errors", nil, "link_downed/symbol errors: reseat or replace the cable or optic; completion errors: read the application's log (IB completion error)",
			"error counters moved: %s", strings.Join(errs, "; "))
	}
	ecn, cnpSent, cnpHandled := sums["np_ecn_marked_roce_packets"], sums["np_cnp_sent"], sums["rp_cnp_handled"]
	switch {
	case ecn > 0 && cnpSent == 0:
		add("warning", "ecn-without-cnp", moved["np_ecn_marked_roce_packets"], "enable the notification point for the RoCE priority (mlx5: /sys/class/net/<if>/ecn/roce_np/enable/<prio>)",
			"%d ECN-marked RoCE packets arrived but no CNP was sent: DCQCN's notification point is off, senders never slow down", ecn)
	case ecn > 0:
		add("info", "ecn-cnp", nil, "", "congestion was signalled: %d ECN-marked packets arrived, %d CNPs sent back; ECN/CNP is working", ecn, cnpSent)
	}
	if cnpHandled > 0 {
		add("info", "dcqcn-reacting", moved["rp_cnp_handled"], "", "%d CNPs handled as sender: DCQCN lowered this node's rate when the path was congested", cnpHandled)
	}
	if len(pauses) > 0 {
		add("info", "pfc-pause", nil, "", "PFC pause frames: %s (rx: the switch paused this NIC; tx: this NIC paused the switch): PFC is active, no drop was needed on these priorities", strings.Join(pauses, "; "))
	}
}

// HumanBytes prints a byte count in binary units (1.5 GiB).
func HumanBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.2f %s", v, units[i])
}

// Analyze is the report of one snapshot (Single) or of the deltas between two (Compare).
func Analyze(snaps []*Snapshot, o Options) *Report {
	if len(snaps) == 1 {
		return Single(snaps[0])
	}
	return Compare(snaps[0], snaps[1], o)
}

// Single describes one snapshot: the bytes each RDMA port carried since its counters were last
// reset, and the error and loss counters that are not zero (since then, so warnings only).
func Single(s *Snapshot) *Report {
	r := &Report{Ports: s.Ports, Formats: s.Formats, Bytes: map[string]Traffic{}, Findings: []Finding{}, OK: true}
	var nonzero []string
	for _, p := range s.PortNames() {
		c := s.Ports[p]
		if _, ok := c["port_xmit_data"]; ok {
			r.Bytes[p] = Traffic{XmitBytes: 4 * c["port_xmit_data"], RcvBytes: 4 * c["port_rcv_data"]}
		}
		for _, n := range slices.Sorted(maps.Keys(c)) {
			if info, ok := Describe(n); ok && c[n] > 0 && (info.Class == ClassLoss || info.Class == ClassError) {
				nonzero = append(nonzero, fmt.Sprintf("%s %s=%d", p, n, c[n]))
			}
		}
	}
	r.Findings = append(r.Findings, Finding{Severity: "info", Code: "single-snapshot",
		Message: "one snapshot: values count since the counters were last reset (boot or driver load); give a second snapshot taken after the workload for deltas"})
	if len(nonzero) > 0 {
		r.Findings = append(r.Findings, Finding{Severity: "warning", Code: "nonzero-since-reset",
			Message: "loss or error counters are not zero (since the last reset, not necessarily now): " + strings.Join(nonzero, ", ")})
	}
	return r
}
