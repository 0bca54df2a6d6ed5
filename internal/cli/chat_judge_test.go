package cli

import (
	"testing"
	"time"
)

// TestJudgeOptions: the judge's client never inherits --insecure or --connect-to, which are
// about the endpoint under test; --ca-file and the timeouts carry over.
func TestJudgeOptions(t *testing.T) {
	o := &endpointOptions{Insecure: true, ConnectTo: "203.0.113.10:443", CAFile: "/ca.pem", TTFBTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	j := judgeOptions(o, "https://judge.example.com/v1", "k")
	if j.Insecure || j.ConnectTo != "" || j.CAFile != "/ca.pem" || j.FirstByteTimeout != time.Minute || j.IdleTimeout != 2*time.Minute || j.APIKey != "k" || j.Endpoint != "https://judge.example.com/v1" {
		t.Errorf("judge options %+v", j)
	}
}
