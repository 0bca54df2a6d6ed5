// Package iperf reads iperf3's JSON report (iperf3 -J): what the receiver measured (the TCP
// baseline of a link), what the sender sent with its retransmits, and the CPU both ends used.
// The report may come after other lines (a shell loop's messages, `kubectl logs --prefix`): every
// top-level JSON object in the input is read and the last complete one counts; a report with
// "error" (iperf3 could not connect, the server was busy) says so.
//
// Field names are iperf3's (iperf_api.c, cJSON): end.sum_sent {bytes, bits_per_second,
// retransmits}, end.sum_received {bytes, bits_per_second}, end.cpu_utilization_percent
// {host_total, remote_total}, start.test_start {protocol, num_streams, duration},
// start.connected[] {local_host, remote_host}, start.version, error.
package iperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxInput bounds what Parse reads.
const maxInput = 64 << 20

// Report is one iperf3 client run.
type Report struct {
	Version    string `json:"version,omitempty"`
	Protocol   string `json:"protocol,omitempty"` // TCP, UDP, SCTP
	Streams    int    `json:"streams"`            // -P
	Duration   int    `json:"duration"`           // -t, seconds
	LocalHost  string `json:"localHost,omitempty"`
	RemoteHost string `json:"remoteHost,omitempty"`
	// SentBps and ReceivedBps are bits per second as iperf3 reports them (10^9 = 1 Gb/s); the
	// receiver's is the throughput (what crossed the link).
	SentBytes     uint64   `json:"sentBytes"`
	SentBps       float64  `json:"sentBitsPerSecond"`
	ReceivedBytes uint64   `json:"receivedBytes"`
	ReceivedBps   float64  `json:"receivedBitsPerSecond"`
	Retransmits   *int64   `json:"retransmits,omitempty"` // TCP only
	CPUHost       *float64 `json:"cpuHostPercent,omitempty"`
	CPURemote     *float64 `json:"cpuRemotePercent,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// Gbps is the receiver's throughput in Gb/s.
func (r *Report) Gbps() float64 { return r.ReceivedBps / 1e9 }

type raw struct {
	Start struct {
		Connected []struct {
			LocalHost  string `json:"local_host"`
			RemoteHost string `json:"remote_host"`
		} `json:"connected"`
		Version   string `json:"version"`
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			Duration   int    `json:"duration"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		SumSent *struct {
			Bytes       uint64  `json:"bytes"`
			BPS         float64 `json:"bits_per_second"`
			Retransmits *int64  `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived *struct {
			Bytes uint64  `json:"bytes"`
			BPS   float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		// UDP reports one "sum" instead of sum_sent/sum_received.
		Sum *struct {
			Bytes uint64  `json:"bytes"`
			BPS   float64 `json:"bits_per_second"`
		} `json:"sum"`
		CPU *struct {
			HostTotal   *float64 `json:"host_total"`
			RemoteTotal *float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// ErrNoReport: the input holds no iperf3 JSON report.
var ErrNoReport = errors.New("no iperf3 JSON report (run the client with -J)")

// Parse returns the last iperf3 report in r: the last one with results, else the last error.
func Parse(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("input larger than %d MiB", maxInput>>20)
	}
	var last, lastErr *Report
	line := 1
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '{')
		if i < 0 {
			break
		}
		line += bytes.Count(data[off:off+i], []byte{'\n'})
		start := off + i
		if start > 0 && data[start-1] != '\n' && strings.TrimSpace(lineBefore(data, start)) != "" {
			off = start + 1 // a brace inside some other line: not a report
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(data[start:]))
		var v raw
		if err := dec.Decode(&v); err != nil {
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("line %d: iperf3 report field %s: %v", line, te.Field, err)
			}
			if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
				off = start + 1
				continue
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		n := int(dec.InputOffset())
		line += bytes.Count(data[start:start+n], []byte{'\n'})
		off = start + n
		rep := convert(&v)
		switch {
		case rep == nil:
		case rep.Error != "" && rep.ReceivedBps == 0 && rep.SentBps == 0:
			lastErr = rep
		default:
			last = rep
		}
	}
	if last != nil {
		return last, nil
	}
	if lastErr != nil {
		return lastErr, nil
	}
	return nil, ErrNoReport
}

// lineBefore is the text between the previous newline and i.
func lineBefore(data []byte, i int) string {
	j := bytes.LastIndexByte(data[:i], '\n')
	return string(data[j+1 : i])
}

// convert keeps what a report needs; nil when v is some other JSON object.
func convert(v *raw) *Report {
	r := &Report{Version: v.Start.Version, Protocol: v.Start.TestStart.Protocol, Streams: v.Start.TestStart.NumStreams,
		Duration: v.Start.TestStart.Duration, Error: v.Error}
	if len(v.Start.Connected) > 0 {
		r.LocalHost, r.RemoteHost = v.Start.Connected[0].LocalHost, v.Start.Connected[0].RemoteHost
	}
	e := v.End
	if e.SumSent != nil {
		r.SentBytes, r.SentBps, r.Retransmits = e.SumSent.Bytes, e.SumSent.BPS, e.SumSent.Retransmits
	}
	if e.SumReceived != nil {
		r.ReceivedBytes, r.ReceivedBps = e.SumReceived.Bytes, e.SumReceived.BPS
	} else if e.Sum != nil {
		r.ReceivedBytes, r.ReceivedBps = e.Sum.Bytes, e.Sum.BPS
	}
	if e.CPU != nil {
		r.CPUHost, r.CPURemote = e.CPU.HostTotal, e.CPU.RemoteTotal
	}
	if r.Version == "" && r.Error == "" && e.SumSent == nil && e.SumReceived == nil && e.Sum == nil {
		return nil
	}
	return r
}

// DefaultPort is iperf3's server port.
const DefaultPort = 5201

// ServerScript serves one client (-1) and exits.
func ServerScript() string { return "iperf3 -s -1 -p " + strconv.Itoa(DefaultPort) }

// ClientScript runs streams parallel TCP streams for secs seconds against server with a JSON
// report (-J). The server pod runs before the client starts, but its process may not listen yet:
// a refused try is repeated (its JSON error report stays in the log; Parse takes the last result).
func ClientScript(server string, streams, secs int) string {
	cmd := fmt.Sprintf("iperf3 -c %s -p %d -P %d -t %d -J", server, DefaultPort, max(streams, 1), max(secs, 1))
	return "i=0; while :; do " + cmd + " && exit 0; i=$((i+1)); " +
		"if [ $i -ge 30 ]; then echo \"ain: iperf3 could not complete against " + server + " after $i tries\"; exit 1; fi; sleep 2; done"
}
