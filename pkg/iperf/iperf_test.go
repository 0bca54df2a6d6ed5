package iperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func TestParseSamples(t *testing.T) {
	for _, c := range []struct {
		file      string
		gbps      float64
		streams   int
		retr      int64
		errSubstr string
	}{
		{"tcp-8streams.json", 38.6, 8, 1873, ""},
		{"refused-then-ok.txt", 22.9, 4, 412, ""},
		{"error-only.txt", 0, 0, -1, "Connection refused"},
	} {
		f, err := os.Open(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if g := r.Gbps(); g < c.gbps-0.01 || g > c.gbps+0.01 || r.Streams != c.streams || !strings.Contains(r.Error, c.errSubstr) {
			t.Errorf("%s: %.3f Gb/s, %d streams, error %q", c.file, g, r.Streams, r.Error)
		}
		if c.retr >= 0 && (r.Retransmits == nil || *r.Retransmits != c.retr) {
			t.Errorf("%s: retransmits %v", c.file, r.Retransmits)
		}
		got, _ := json.MarshalIndent(r, "", "  ")
		golden.File(t, filepath.Join("testdata", "golden", strings.TrimSuffix(strings.TrimSuffix(c.file, ".json"), ".txt")+".json"), append(got, '\n'))
	}
}

func TestParseOddInput(t *testing.T) {
	for _, c := range []struct {
		in   string
		gbps float64
		err  error
	}{
		{"", 0, ErrNoReport},
		{"Connecting to host 10.0.0.1, port 5201\n[  5] local ... connected\n", 0, ErrNoReport},
		{`{"kind":"something else"}`, 0, ErrNoReport},
		{"ain: waiting {for the server}\n{\"start\":{\"version\":\"iperf 3.16\"},\"end\":{\"sum_received\":{\"bytes\":125,\"bits_per_second\":1e9}}}\n", 1, nil},
		{"{\"start\":{\"version\":\"iperf 3.16\"},\"end\":{\"sum_received\":{\"bytes\":1", 0, ErrNoReport}, // cut off
		{"{\"start\":{\"version\":\"iperf 3.16\",\"test_start\":{\"protocol\":\"UDP\"}},\"end\":{\"sum\":{\"bytes\":125,\"bits_per_second\":2e9}}}", 2, nil},
	} {
		r, err := Parse(strings.NewReader(c.in))
		if !errors.Is(err, c.err) || err == nil && r.Gbps() != c.gbps {
			t.Errorf("%q: %+v %v", c.in, r, err)
		}
	}
	// A field of the wrong type names it.
	_, err := Parse(strings.NewReader("{\"start\":{\"version\":3}}"))
	if err == nil || !strings.Contains(err.Error(), "start.version") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("wrong type: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"tcp-8streams.json", "refused-then-ok.txt", "error-only.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("x {\n{\"end\":{}}{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(bytes.NewReader(data))
		if err == nil && r == nil {
			t.Fatal("nil report without an error")
		}
	})
}
