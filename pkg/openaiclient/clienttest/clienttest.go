// Package clienttest holds what tests of openaiclient's users share: a simulated vLLM to talk
// to and a client for it.
package clienttest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// Start serves a simulated vLLM on 127.0.0.1 for the test's duration.
func Start(t *testing.T, opts vllmsim.Options) (*vllmsim.Server, string) {
	t.Helper()
	s := vllmsim.NewServer(opts)
	ts := httptest.NewServer(s) // httptest listens on 127.0.0.1
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// NewClient is openaiclient.New, failing the test on an error.
func NewClient(t *testing.T, opts openaiclient.Options) *openaiclient.Client {
	t.Helper()
	c, err := openaiclient.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bounded fails the test when f has not returned after a generous guard: what it tests would
// otherwise wait for ever (the bounds under test are a hundred times shorter).
func Bounded(t *testing.T, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting after 30 s: the request is not bounded")
		return nil
	}
}
