// Package userdir finds ain's per-user folders by the XDG Base Directory rules: the cache, the
// configuration and the state folder, each under "ain". The environment comes from the caller
// (getenv), never from the process directly, so a command given its own environment (the CLI's
// App.Getenv, every test) never reaches the real home folder by accident.
package userdir

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrNoHome: neither the XDG variable nor HOME is set.
var ErrNoHome = errors.New("neither $HOME nor the XDG base directory variable is set")

// Cache is $XDG_CACHE_HOME/ain/sub, else $HOME/.cache/ain/sub.
func Cache(getenv func(string) string, sub string) (string, error) {
	return dir(getenv, "XDG_CACHE_HOME", ".cache", sub)
}

// Config is $XDG_CONFIG_HOME/ain/sub, else $HOME/.config/ain/sub.
func Config(getenv func(string) string, sub string) (string, error) {
	return dir(getenv, "XDG_CONFIG_HOME", ".config", sub)
}

// State is $XDG_STATE_HOME/ain/sub, else $HOME/.local/state/ain/sub.
func State(getenv func(string) string, sub string) (string, error) {
	return dir(getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"), sub)
}

func dir(getenv func(string) string, xdgVar, homeRel, sub string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	// The specification: a relative path in an XDG variable is invalid and is ignored.
	if d := getenv(xdgVar); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ain", sub), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, homeRel, "ain", sub), nil
	}
	return "", ErrNoHome
}
