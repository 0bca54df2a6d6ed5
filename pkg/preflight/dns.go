package preflight

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/probe"
)

// DNSProbeMarker is in the DNS probe's command (the sandbox recognises the probe by it).
const DNSProbeMarker = "ain-dns-probe"

// dnsProbeCommand resolves every $AIN_DNS_<i> and prints "ain-dns: NAME ok|FAIL".
//
// Each name (svc.ns.svc) is made fully qualified with the cluster domain and a trailing dot
// before nslookup sees it: busybox's nslookup does not walk the search path of resolv.conf the
// way libc does (docker-library/busybox#48), so a search-path name can fail where every rank's
// resolver succeeds. The domain is read from the pod's own resolv.conf (the kubelet writes
// "search NS.svc.DOMAIN svc.DOMAIN DOMAIN"), cluster.local when absent. AIN_RESOLV_CONF moves the
// file for tests; pods never set it.
const dnsProbeCommand = `# ` + DNSProbeMarker + `
rc=0
dom=cluster.local
for d in $(sed -n 's/^search[[:space:]]//p' "${AIN_RESOLV_CONF:-/etc/resolv.conf}"); do
  case "$d" in svc.?*) dom="${d#svc.}"; break;; esac
done
for n in $(env | sed -n 's/^AIN_DNS_[0-9]*=//p'); do
  if nslookup "$n.$dom." >/dev/null 2>&1; then echo "ain-dns: $n ok"; else echo "ain-dns: $n FAIL ($n.$dom. does not resolve)"; rc=1; fi
done
exit $rc`

const labelJobName = "training.kubeflow.org/job-name"

// runningJobs returns o.Job, or the running ain torch jobs in the namespace (kubeflow.org/v1
// PyTorchJobs and TrainJobs: their ranks find the rendezvous master by DNS), at most three.
func runningJobs(ctx context.Context, o Options) []string {
	if o.Job != "" {
		return []string{o.Job}
	}
	var out []string
	for _, gvr := range []schema.GroupVersionResource{jobs.PyTorchJobGVR, jobs.TrainJobGVR} {
		l, err := o.Dynamic.Resource(gvr).Namespace(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelManaged + "=ain"})
		if err != nil {
			continue
		}
		for i := range l.Items {
			if jobs.StateOf(&l.Items[i]).Phase == jobs.PhaseRunning {
				out = append(out, l.Items[i].GetName())
			}
		}
	}
	sort.Strings(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

// jobServices returns the headless Services of job j: the training-operator labels its own with
// the job name; JobSet (a TrainJob's) names one after the JobSet, unlabelled (jobset v0.12.0,
// pkg/controllers/jobset_controller.go: name = the JobSet's subdomain, the JobSet name by default).
func jobServices(ctx context.Context, o Options, j string) []corev1.Service {
	var out []corev1.Service
	if svcs, err := o.Kube.CoreV1().Services(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelJobName + "=" + j}); err == nil {
		out = append(out, svcs.Items...)
	}
	if len(out) == 0 {
		if s, err := o.Kube.CoreV1().Services(o.Namespace).Get(ctx, j, metav1.GetOptions{}); err == nil && s.Spec.Selector[jobs.JobSetNameLabel] == j {
			out = append(out, *s)
		}
	}
	return out
}

// checkDNS resolves, from a pod, the headless Service names of the running job(s).
func checkDNS(ctx context.Context, o Options) []Check {
	running := runningJobs(ctx, o)
	if len(running) == 0 {
		return nil
	}
	var names []string
	owner := map[string]string{}
	for _, j := range running {
		for _, s := range jobServices(ctx, o, j) {
			n := s.Name + "." + s.Namespace + ".svc"
			names = append(names, n)
			owner[n] = j
		}
	}
	if len(names) == 0 {
		return []Check{{Name: CheckDNS, Target: strings.Join(running, ","), Status: Warn,
			Message: "the running job has no Service to resolve", Fix: "is the job's controller creating its headless Service? kubectl get svc -l " + labelJobName + "=" + running[0] + " (a TrainJob's: kubectl get svc " + running[0] + ")"}}
	}
	sort.Strings(names)
	o.Progress(fmt.Sprintf("resolving %d Service name(s) from a probe pod", len(names)))
	var env []corev1.EnvVar
	for i, n := range names {
		env = append(env, corev1.EnvVar{Name: "AIN_DNS_" + strconv.Itoa(i), Value: n})
	}
	run := probe.NewRun()
	pod := probe.Pod(o.ProbeOptions(), run, probe.Spec{Kind: probeDNS, Name: "ain-dnsprobe-" + run, Script: dnsProbeCommand, Env: env})
	outs := probe.Run(ctx, o.ProbeOptions(), run, []*corev1.Pod{pod})
	if ctx.Err() != nil {
		return nil
	}
	out := outs[0]
	target := strings.Join(running, ",")
	fix := "check CoreDNS (kubectl -n kube-system get pods -l k8s-app=kube-dns) and that the job's pods are Ready: a headless Service publishes only Ready pods"
	if out.Log == nil {
		return []Check{{Name: CheckDNS, Target: target, Status: Fail, Message: "the DNS probe did not run to the end", Evidence: []string{out.NotRun()}, Fix: fix}}
	}
	var okN int
	var bad, ev []string
	sc := bufio.NewScanner(bytes.NewReader(out.Log))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		rest, found := strings.CutPrefix(l, "ain-dns: ")
		if !found {
			continue
		}
		ev = append(ev, l)
		if strings.HasSuffix(rest, " ok") {
			okN++
		} else {
			bad = append(bad, l)
		}
	}
	switch {
	case len(bad) > 0:
		return []Check{{Name: CheckDNS, Target: target, Status: Fail, Message: fmt.Sprintf("%d of %d Service name(s) of the running job do not resolve inside the cluster", len(bad), len(names)), Evidence: limit(bad), Fix: fix}}
	case okN < len(names):
		return []Check{{Name: CheckDNS, Target: target, Status: Warn, Message: fmt.Sprintf("the DNS probe answered for %d of %d name(s)", okN, len(names)), Evidence: limit(ev), Fix: fix}}
	}
	return []Check{{Name: CheckDNS, Target: target, Status: Pass, Message: fmt.Sprintf("%d headless Service name(s) of the running job resolve inside the cluster", len(names)), Evidence: limit(ev)}}
}
