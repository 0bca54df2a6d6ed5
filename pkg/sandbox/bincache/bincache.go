// Package bincache locates the sandbox's binary cache (etcd, kube-apiserver, ... built from
// source). It is its own leaf package so that pkg/testenv, which pkg/kube's tests use and
// which therefore cannot import pkg/sandbox (pkg/sandbox imports pkg/kube), resolves the folder
// by the same rule as sandbox.CacheDir instead of a copy of it.
package bincache

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ain-hpc/ain/pkg/userdir"
)

// Dir is the root of the binary cache: $AIN_SANDBOX_CACHE, else $XDG_CACHE_HOME/ain/sandbox-bin,
// else $HOME/.cache/ain/sandbox-bin (the process's home when getenv has no HOME). getenv nil
// means os.Getenv.
func Dir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("AIN_SANDBOX_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	if d, err := userdir.Cache(getenv, "sandbox-bin"); err == nil {
		return d, nil
	}
	// A getenv that carries no HOME (a command's injected environment) still means this
	// user's cache.
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the sandbox cache: %w (set AIN_SANDBOX_CACHE)", err)
	}
	return userdir.Cache(func(k string) string {
		if k == "HOME" {
			return h
		}
		return getenv(k)
	}, "sandbox-bin")
}
