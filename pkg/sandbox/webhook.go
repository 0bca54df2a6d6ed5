package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// The training-operator v1.8.1 reads its webhook serving certificate from this folder, fixed
// in its code (pkg/cert). Every sandbox on the machine therefore shares one certificate: the
// first creates it (with the CA key beside it, under webhookAinDir()), later ones reuse it, and
// the last one down removes it. A folder made by anything else is left alone and the sandbox
// reports that it cannot run the operator.
const (
	webhookDNS    = "training-operator.kubeflow.svc"
	webhookCAName = "training-operator-ca"
)

// webhookBaseDir is a variable only so that tests can point it elsewhere.
var webhookBaseDir = "/tmp/k8s-webhook-server"

func webhookCertDir() string { return filepath.Join(webhookBaseDir, "serving-certs") }
func webhookAinDir() string  { return filepath.Join(webhookBaseDir, "ain-sandbox") }

// webhookCerts is the material of the training-operator's Secret.
type webhookCerts struct {
	CACert, CAKey, TLSCert, TLSKey []byte
}

// lockWebhookDir serialises sandboxes of this machine while they claim or release the folder.
func lockWebhookDir() (func(), error) {
	// 0o666: this lock is machine-wide, not under one sandbox's state folder.
	return lockFile(filepath.Join(filepath.Dir(webhookBaseDir), "ain-sandbox-webhook.lock"), 0o666)
}

func userID(stateDir string) string {
	h := sha256.Sum256([]byte(stateDir))
	return hex.EncodeToString(h[:8])
}

// claimWebhookCerts returns the shared webhook certificate, creating it when no sandbox has,
// and records stateDir as a user. A non-nil reason says why the webhook cannot be served.
func claimWebhookCerts(stateDir string) (*webhookCerts, string) {
	unlock, err := lockWebhookDir()
	if err != nil {
		return nil, "cannot lock the webhook cert folder: " + err.Error()
	}
	defer unlock()
	_, errCerts := os.Stat(webhookCertDir())
	_, errAin := os.Stat(filepath.Join(webhookAinDir(), "ca.key"))
	switch {
	case errCerts == nil && errAin != nil && !errors.Is(errAin, os.ErrNotExist):
		return nil, fmt.Sprintf("%s belongs to another user's sandbox (%v)", webhookBaseDir, errAin)
	case errCerts == nil && errAin != nil:
		return nil, fmt.Sprintf("%s is used by another program (not an ain sandbox); the training-operator reads its webhook certificate from this fixed path", webhookCertDir())
	case errCerts != nil:
		if err := createWebhookCerts(); err != nil {
			os.RemoveAll(webhookAinDir())
			return nil, "cannot create the webhook certificate: " + err.Error()
		}
	}
	wc := &webhookCerts{}
	for _, f := range []struct {
		dst  *[]byte
		path string
	}{
		{&wc.CACert, filepath.Join(webhookCertDir(), "ca.crt")},
		{&wc.CAKey, filepath.Join(webhookAinDir(), "ca.key")},
		{&wc.TLSCert, filepath.Join(webhookCertDir(), "tls.crt")},
		{&wc.TLSKey, filepath.Join(webhookCertDir(), "tls.key")},
	} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Sprintf("the shared webhook certificate is unreadable: %v", err)
		}
		*f.dst = data
	}
	users := filepath.Join(webhookAinDir(), "users")
	if err := os.MkdirAll(users, 0o700); err != nil {
		return nil, err.Error()
	}
	if err := os.WriteFile(filepath.Join(users, userID(stateDir)), []byte(stateDir+"\n"), 0o600); err != nil {
		return nil, err.Error()
	}
	return wc, ""
}

func createWebhookCerts() error {
	if err := os.MkdirAll(webhookCertDir(), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(webhookAinDir(), 0o700); err != nil {
		return err
	}
	ca, err := newCA(webhookCAName)
	if err != nil {
		return err
	}
	srv, err := newServing(ca, webhookDNS, []string{webhookDNS}, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{filepath.Join(webhookCertDir(), "ca.crt"), ca.Cert},
		{filepath.Join(webhookCertDir(), "tls.crt"), srv.Cert},
		{filepath.Join(webhookCertDir(), "tls.key"), srv.Key},
		// Written last: its presence marks the folder as the sandbox's.
		{filepath.Join(webhookAinDir(), "ca.key"), ca.Key},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// releaseWebhookCerts drops stateDir from the users and removes the folder when no sandbox
// whose state folder still exists with a live operator uses it.
func releaseWebhookCerts(stateDir string) {
	unlock, err := lockWebhookDir()
	if err != nil {
		return
	}
	defer unlock()
	users := filepath.Join(webhookAinDir(), "users")
	os.Remove(filepath.Join(users, userID(stateDir)))
	entries, err := os.ReadDir(users)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(users, e.Name()))
		if err != nil {
			continue
		}
		other := strings.TrimSpace(string(data))
		if st, err := LoadState(other); err == nil {
			if p := st.Proc("training-operator"); p != nil && alive(*p) {
				return // still in use
			}
		}
		os.Remove(filepath.Join(users, e.Name()))
	}
	if _, err := os.Stat(filepath.Join(webhookAinDir(), "ca.key")); err == nil {
		os.RemoveAll(webhookBaseDir)
	}
}
