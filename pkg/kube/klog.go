package kube

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// QuietClientLogs keeps client-go's own log lines (klog: `reflector.go:664] "Warning: watch
// ended with error"` during an API server restart) off the terminal: ain says what happened in
// its own words and its watches resume by themselves. verbose 3 or more lets them through, for
// debugging.
func QuietClientLogs(verbose int) {
	if verbose >= 3 {
		klog.ClearLogger()
		return
	}
	klog.SetLogger(logr.Discard())
}
