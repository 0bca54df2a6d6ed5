package hang

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func inputs(t *testing.T, pattern string) []Input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files for %s", pattern)
	}
	var ins []Input
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Name: filepath.ToSlash(strings.TrimPrefix(f, "testdata"+string(filepath.Separator))), Data: b})
	}
	return ins
}

// TestVerdicts: one case per status and format (sources in testdata/README.md).
func TestVerdicts(t *testing.T) {
	tests := []struct {
		pattern, format, status string
		nranks                  int
		missing, stuck, ahead   []int
		collective              string // substring; "" for none
	}{
		{"ras/ras-doc-healthy.txt", FormatRASText, StatusOK, 32, nil, nil, nil, ""},
		{"ras/ras-doc-mismatch-counts.txt", FormatRASText, StatusMismatch, 32, nil, []int{0, 2, 3, 4, 5, 7}, nil, "collective operation 6650 of communicator #0-0 (27a079b828ff1a75)"},
		{"ras/ras-doc-incomplete.txt", FormatRASText, StatusIncomplete, 32, []int{21}, nil, nil, ""},
		{"ras/ras-doc-dead.txt", FormatRASText, StatusDead, 0, []int{21}, nil, nil, ""},
		{"ras/ras-doc-finalize-status.txt", FormatRASText, StatusMismatch, 32, nil, nil, nil, ""},
		{"ras/ras-doc-json-missing.json", FormatRASJSON, StatusIncomplete, 2, []int{1}, nil, nil, ""},
		{"ras/ras-2.28.9-json-missing-comma.json", FormatRASJSON, StatusIncomplete, 2, []int{1}, nil, nil, ""},
		{"ras/ras-2.26-allreduce-straggler-written.txt", FormatRASText, StatusMismatch, 8, nil, []int{7}, nil, "AllReduce operation 64"},
		{"ras/ras-2.28-json-straggler-written.json", FormatRASJSON, StatusMismatch, 4, nil, []int{2}, []int{0, 1, 3}, "AllReduce operation 64"},
		{"fr/tutorial-crash/*", FormatFlightRecorder, StatusMismatch, 2, nil, []int{1}, []int{0}, "nccl:all_reduce #5 in process group 0:default_pg"},
		{"fr/straggler-json/*", FormatFlightRecorder, StatusMismatch, 8, nil, []int{5}, []int{0, 1, 2, 3, 4, 6, 7}, "nccl:all_reduce #142 in process group 0:default_pg"},
		{"fr/in-collective-missing/*", FormatFlightRecorder, StatusIncomplete, 4, []int{3}, nil, []int{0, 1, 2}, "nccl:all_gather #57"},
	}
	for _, tc := range tests {
		name := strings.NewReplacer("/*", "", "/", "-", ".txt", "", ".json", "").Replace(tc.pattern)
		t.Run(name, func(t *testing.T) {
			r, err := Analyze(inputs(t, tc.pattern))
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tc.format || r.Status != tc.status || r.NRanks != tc.nranks {
				t.Errorf("format %s status %s nranks %d, want %s %s %d", r.Format, r.Status, r.NRanks, tc.format, tc.status, tc.nranks)
			}
			for _, c := range []struct {
				what      string
				got, want []int
			}{{"missing", r.MissingRanks, tc.missing}, {"stuck", r.StuckRanks, tc.stuck}, {"ahead", r.AheadRanks, tc.ahead}} {
				if c.want == nil {
					c.want = []int{}
				}
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s ranks %v, want %v", c.what, c.got, c.want)
				}
			}
			if (tc.collective == "") != (r.Collective == "") || !strings.Contains(r.Collective, tc.collective) {
				t.Errorf("collective %q, want %q", r.Collective, tc.collective)
			}
			if r.OK() != (r.Fix == "") {
				t.Errorf("fix %q with status %s", r.Fix, r.Status)
			}
			if !r.OK() && len(r.Evidence) == 0 {
				t.Errorf("no evidence for %s", r.Status)
			}
			golden.JSON(t, name, r)
		})
	}
}

// TestFRDifference: the tutorial's extra all_reduce (rank 0's #3 on a [4, 5] tensor) is named.
func TestFRDifference(t *testing.T) {
	r, err := Analyze(inputs(t, "fr/tutorial-crash/*"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range r.Evidence {
		found = found || strings.Contains(e.Text, "collective #3 of process group 0 differs: rank 0 ran nccl:all_reduce [[4, 5]], rank 1 ran nccl:all_reduce [[3, 4]]")
	}
	if !found {
		t.Errorf("evidence %+v lacks the #3 difference", r.Evidence)
	}
}

// TestRepeatedQueries: RAS says a spread that stays across queries is a hang and one that moves is
// a busy job; the verdict says which.
func TestRepeatedQueries(t *testing.T) {
	in := inputs(t, "ras/ras-2.26-allreduce-straggler-written.txt")[0]
	same, err := Analyze([]Input{{Name: "q1", Data: in.Data}, {Name: "q2", Data: in.Data}})
	if err != nil {
		t.Fatal(err)
	}
	if last := same.Evidence[len(same.Evidence)-1].Text; !strings.Contains(last, "not moving") {
		t.Errorf("same counts: %q", last)
	}
	moved := bytes.ReplaceAll(in.Data, []byte("operation 64"), []byte("operation 71"))
	busy, err := Analyze([]Input{{Name: "q1", Data: in.Data}, {Name: "q2", Data: moved}})
	if err != nil {
		t.Fatal(err)
	}
	if last := busy.Evidence[len(busy.Evidence)-1].Text; !strings.Contains(last, "counts moved") || !strings.Contains(busy.Fix, "nothing is stuck") {
		t.Errorf("moved counts: %q / %q", last, busy.Fix)
	}
}

// TestBadInputs: each bad input is an error that names the file and says what to give instead.
func TestBadInputs(t *testing.T) {
	ras := inputs(t, "ras/ras-doc-healthy.txt")[0]
	fr := inputs(t, "fr/tutorial-crash/trace_0")[0]
	for name, tc := range map[string]struct {
		ins  []Input
		want string
	}{
		"not a hang input":  {[]Input{{Name: "train.log", Data: []byte("epoch 1 loss 2.3\n")}}, "train.log is neither ncclras output"},
		"empty":             {[]Input{{Name: "ras.txt", Data: []byte(" \n")}}, "ras.txt is empty"},
		"mixed":             {[]Input{ras, fr}, "not both"},
		"broken pickle":     {[]Input{{Name: "trace_3", Data: fr.Data[:200]}}, "trace_3: not a readable Flight Recorder dump"},
		"no rank in name":   {[]Input{{Name: "dump.bin", Data: fr.Data}}, "cannot tell which rank"},
		"same rank twice":   {[]Input{fr, {Name: "copy/trace_0", Data: fr.Data}}, "both rank 0"},
		"json not a dump":   {[]Input{{Name: "x_1.json", Data: []byte(`{"entries": 3`)}}, "x_1.json: not a readable"},
		"json list entries": {[]Input{{Name: "x_1.json", Data: []byte(`[{"entries": []}]`)}}, "neither"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Analyze(tc.ins)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUnpickle covers the opcodes of protocols 0-5 that build data, against Python's own output
// for {"a": [1, -2, 300, 70000, 2**40, -2**70], "b": ("x", None, True, 1.5), "c": {1: "é"}}.
func TestUnpickle(t *testing.T) {
	// Generated by: python3 -c 'import pickle;print(pickle.dumps(v, protocol=P))'
	cases := map[string][]byte{
		"p0": []byte("(dp0\nVa\np1\n(lp2\nI1\naI-2\naI300\naI70000\naL1099511627776L\naL-1180591620717411303424L\nasVb\np3\n(Vx\np4\nNI01\nF1.5\ntp5\nsVc\np6\n(dp7\nI1\nV\xe9\np8\nss."),
		"p2": []byte("\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xc0eX\x01\x00\x00\x00bq\x03(X\x01\x00\x00\x00xq\x04N\x88G?\xf8\x00\x00\x00\x00\x00\x00tq\x05X\x01\x00\x00\x00cq\x06}q\x07K\x01X\x02\x00\x00\x00\xc3\xa9q\x08su."),
		"p5": []byte("\x80\x05\x95S\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xc0e\x8c\x01b\x94(\x8c\x01x\x94N\x88G?\xf8\x00\x00\x00\x00\x00\x00t\x94\x8c\x01c\x94}\x94K\x01\x8c\x02\xc3\xa9\x94su."),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := unpickle(b)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			want := `{"a":[1,-2,300,70000,1099511627776,"-1180591620717411303424"],"b":["x",null,true,1.5],"c":{"1":"é"}}`
			if string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	// A list referenced twice, memoized before its items were appended (as Python's pickler
	// writes [a, a]), reads whole both times.
	if v, err := unpickle([]byte("\x80\x02]q\x00(]q\x01(K\x01K\x02K\x03eh\x01e.")); err != nil {
		t.Fatal(err)
	} else if got, _ := json.Marshal(v); string(got) != "[[1,2,3],[1,2,3]]" {
		t.Errorf("shared list: %s", got)
	}
	// A list that contains itself (pickle allows it) terminates.
	if _, err := unpickle([]byte("\x80\x02]q\x00h\x00a.")); err != nil {
		t.Fatal(err)
	}
	// Broken input is an error that says what and where, never a panic or a partial value.
	for in, want := range map[string]string{
		"\x80\x02X\x05\x00\x00\x00ab": "truncated input at byte 7",
		"\x80\x02s.":                  "stack underflow at byte 3",
		"\x80\x02K\x01e.":             "no mark at byte 5",
		"\x80\x02h\x07.":              "memo 7 not set at byte 4",
		"\x80\x02\xff":                "unsupported opcode 0xff at byte 3",
		"\x80\x02}":                   "truncated input at byte 3",
	} {
		if v, err := unpickle([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, %v; want error %q", in, v, err, want)
		}
	}
	// Classes are not instantiated: they decode to an opaque string.
	v, err := unpickle([]byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."))
	if err != nil || !strings.HasPrefix(v.(string), "<object <global os.system>") {
		t.Errorf("global: %v %v", v, err)
	}
}

// TestAddMissingCommas: the 2.28.9 repair leaves valid JSON (and the inside of strings) as it is.
func TestAddMissingCommas(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	files = slices.DeleteFunc(files, func(f string) bool { return strings.Contains(f, "missing-comma") })
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := addMissingCommas(b); !bytes.Equal(got, b) {
			t.Errorf("%s: changed a valid document", f)
		}
	}
	in := "{\"a\": 1\n \"b\": \"x\\\"\n\\\"y\"\n \"c\": [true]\n \"d\": null}"
	want := "{\"a\": 1,\n \"b\": \"x\\\"\n\\\"y\",\n \"c\": [true],\n \"d\": null}"
	if got := string(addMissingCommas([]byte(in))); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestFRNamedGroup: pg_status is keyed by pg_id, pg_config and the entries by the group's name;
// for a named group (Megatron's) the two differ and must land on the same group.
func TestFRNamedGroup(t *testing.T) {
	dump := func(rank, enq int) Input {
		b, _ := json.Marshal(map[string]any{
			"version":   "2.5",
			"pg_config": map[string]any{"tp-group": map[string]any{"name": "tp-group", "desc": "tp", "ranks": "[0, 1]"}},
			"pg_status": map[string]any{"1": map[string]any{"last_enqueued_collective": enq, "last_started_collective": enq, "last_completed_collective": 5}},
			"entries": []any{map[string]any{"pg_id": 1, "process_group": []any{"tp-group", "tp"}, "collective_seq_id": 3,
				"profiling_name": "nccl:all_reduce", "state": "completed", "is_p2p": false}},
		})
		return Input{Name: "nccl_trace_rank_" + strconv.Itoa(rank) + ".json", Data: b}
	}
	r, err := Analyze([]Input{dump(0, 6), dump(1, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusMismatch || !strings.Contains(r.Collective, "#6 in process group tp-group:tp") || !slices.Equal(r.StuckRanks, []int{1}) {
		t.Errorf("status %s collective %q stuck %v", r.Status, r.Collective, r.StuckRanks)
	}
	for _, e := range r.Evidence {
		if strings.Contains(e.Text, "process group 1") {
			t.Errorf("pg_status read as a group of its own: %s", e.Text)
		}
	}
}
