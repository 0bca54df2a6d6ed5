package preflight

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDNSProbeScriptFQDN runs the DNS probe's exact command with sh. nslookup is replaced by a
// stand-in that, like busybox's (docker-library/busybox#48), resolves only fully qualified names:
// the probe must ask for NAME.<cluster domain>. with the domain read from resolv.conf.
func TestDNSProbeScriptFQDN(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Resolves the two names of the job in domain corp.internal, and nothing else.
	fake := "#!/bin/sh\necho \"$1\" >> " + filepath.Join(dir, "asked") + "\ncase \"$1\" in\n" +
		"  qlora-master-0.team-a.svc.corp.internal.|qlora-worker-0.team-a.svc.corp.internal.) exit 0;;\nesac\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "nslookup"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("search team-a.svc.corp.internal svc.corp.internal corp.internal\nnameserver 10.96.0.10\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(names ...string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", dnsProbeCommand)
		cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "AIN_RESOLV_CONF=" + resolv}
		for i, n := range names {
			cmd.Env = append(cmd.Env, "AIN_DNS_"+string(rune('0'+i))+"="+n)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("qlora-master-0.team-a.svc", "qlora-worker-0.team-a.svc")
	if err != nil || !strings.Contains(out, "ain-dns: qlora-master-0.team-a.svc ok") || !strings.Contains(out, "ain-dns: qlora-worker-0.team-a.svc ok") {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = run("qlora-worker-1.team-a.svc")
	if err == nil || !strings.Contains(out, "ain-dns: qlora-worker-1.team-a.svc FAIL (qlora-worker-1.team-a.svc.corp.internal. does not resolve)") {
		t.Fatalf("%v\n%s", err, out)
	}
	asked, _ := os.ReadFile(filepath.Join(dir, "asked"))
	for _, l := range strings.Split(strings.TrimSpace(string(asked)), "\n") {
		if !strings.HasSuffix(l, ".corp.internal.") {
			t.Errorf("nslookup asked for %q: not fully qualified", l)
		}
	}
	// No search line: cluster.local.
	if err := os.WriteFile(resolv, []byte("nameserver 10.96.0.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = run("a.b.svc")
	if !strings.Contains(out, "a.b.svc.cluster.local. does not resolve") {
		t.Errorf("%s", out)
	}
}
