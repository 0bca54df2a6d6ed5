// Package preflight_scale_test measures `ain preflight` against a sandbox of 200 simulated nodes:
// wall time and the API requests it makes (counted in the API server's audit log by a unique
// user agent), and checks that the number of list calls does not grow with the node count.
package preflight_scale_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

const nodes = 200

func TestMain(m *testing.M) { sandboxtest.Main(m, sandbox.Config{Nodes: nodes}) }

// counts are one run's audited requests.
type counts struct {
	total  int
	byVerb map[string]int // "list nodes", "create pods", ...
}

func (c counts) lists() int {
	n := 0
	for k, v := range c.byVerb {
		if strings.HasPrefix(k, "list ") {
			n += v
		}
	}
	return n
}

func (c counts) String() string {
	var keys []string
	for k := range c.byVerb {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.byVerb[k]))
	}
	return fmt.Sprintf("%d requests (%s)", c.total, strings.Join(parts, ", "))
}

// audited counts the audit events (one per request, by auditID) whose userAgent is ua.
func audited(t *testing.T, sb *sandboxtest.Sandbox, ua string) counts {
	t.Helper()
	f, err := os.Open(filepath.Join(sandbox.Layout{Dir: sb.Dir}.Logs(), "audit.log"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	c := counts{byVerb: map[string]int{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(ua)) {
			continue
		}
		var ev struct {
			AuditID   string `json:"auditID"`
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			RequestURI string `json:"requestURI"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.UserAgent != ua || seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		what := ev.RequestURI
		if ev.ObjectRef != nil {
			what = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				what += "/" + ev.ObjectRef.Subresource
			}
		}
		c.total++
		c.byVerb[ev.Verb+" "+what]++
	}
	return c
}

func run(t *testing.T, sb *sandboxtest.Sandbox, ua string, args ...string) (*preflight.Result, time.Duration) {
	t.Helper()
	d := t.TempDir()
	env := map[string]string{"HOME": d, "XDG_CACHE_HOME": d, "AIN_USER_AGENT": ua}
	var out, errb bytes.Buffer
	a := &cli.App{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: func(k string) string { return env[k] }}
	t0 := time.Now()
	code := a.Run(context.Background(), append([]string{"ain", "--kubeconfig", sb.Kubeconfig, "-n", "default", "preflight", "-o", "json", "--probe-timeout", "5m"}, args...))
	wall := time.Since(t0)
	if code != 0 {
		// Still measured: a stuck probe pod is a FAIL of its node, not of the measurement.
		t.Errorf("%s: exit %d\n%s", ua, code, errb.String())
	}
	var r preflight.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	return &r, wall
}

func TestPreflight200Nodes(t *testing.T) {
	sb := sandboxtest.Get(t)
	stamp := time.Now().UnixNano()
	// 10 nodes of the 200 (selected by label), then all 200.
	var few []string
	for i := 1; i <= 10; i++ {
		few = append(few, fmt.Sprintf("gpu-node-%d", i))
	}
	uaFew := fmt.Sprintf("ain-preflight-10-%d", stamp)
	rFew, wallFew := run(t, sb, uaFew, "allreduce", "--nodes", "kubernetes.io/hostname in ("+strings.Join(few, ",")+")")
	uaAll := fmt.Sprintf("ain-preflight-200-%d", stamp)
	rAll, wallAll := run(t, sb, uaAll, "allreduce")
	if rFew.Probed != 10 || rAll.Probed != nodes {
		t.Errorf("probed %d and %d nodes", rFew.Probed, rAll.Probed)
	}
	for _, r := range []*preflight.Result{rFew, rAll} {
		for _, c := range r.Checks {
			if c.Status != preflight.Pass {
				t.Errorf("not PASS: %+v", c)
			}
		}
	}
	cFew, cAll := audited(t, sb, uaFew), audited(t, sb, uaAll)
	report := fmt.Sprintf("ain preflight, 10 of %d nodes: wall %s, %s\nain preflight, %d nodes: wall %s, %s\n",
		nodes, wallFew.Round(10*time.Millisecond), cFew, nodes, wallAll.Round(10*time.Millisecond), cAll)
	fmt.Fprint(os.Stderr, report)
	t.Log(report)
	if cAll.total == 0 {
		t.Fatal("no audited request carries the user agent: is AIN_USER_AGENT honoured?")
	}
	if cFew.lists() != cAll.lists() {
		t.Errorf("list calls grow with the node count: %d for 10 nodes, %d for %d", cFew.lists(), cAll.lists(), nodes)
	}
	if cAll.byVerb["list nodes"] != 1 {
		t.Errorf("%d node list calls for %d nodes", cAll.byVerb["list nodes"], nodes)
	}
}
