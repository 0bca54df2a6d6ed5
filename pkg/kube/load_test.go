package kube

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadMissingKubeconfigEnv: a $KUBECONFIG whose files do not exist is a usage error naming
// them, not clientcmd's "no configuration has been provided, try setting KUBERNETES_MASTER".
func TestLoadMissingKubeconfigEnv(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	env := map[string]string{"KUBECONFIG": missing, "HOME": t.TempDir()}
	_, err := Load(Options{Getenv: func(k string) string { return env[k] }})
	var ce *CallError
	if !errors.As(err, &ce) || ce.Reason != ReasonBadKubeconfig {
		t.Fatalf("err %v (%T), want ReasonBadKubeconfig", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, missing) || strings.Contains(msg, "KUBERNETES_MASTER") {
		t.Errorf("error %q should name %s and not blame KUBERNETES_MASTER", msg, missing)
	}
}
