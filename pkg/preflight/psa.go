package preflight

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod Security Admission (PSA) labels on a namespace (k8s.io/pod-security-admission/api).
const (
	PSAEnforceLabel = "pod-security.kubernetes.io/enforce"
	PSAWarnLabel    = "pod-security.kubernetes.io/warn"
	PSAAuditLabel   = "pod-security.kubernetes.io/audit"
	// CheckPodSecurity is the check's name.
	CheckPodSecurity = "pod-security"
)

// checkPodSecurity tells whether the namespace admits an RDMA rank. Every RDMA rank adds the
// IPC_LOCK capability (to pin memory for RDMA), and IPC_LOCK is outside the baseline standard's
// allowed capabilities (AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD,
// NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT; restricted allows only
// NET_BIND_SERVICE): a namespace enforcing baseline or restricted rejects every rank.
//
// The namespace's labels say why; a server-side dry-run create of a pod with the ranks'
// securityContext says whether, because the cluster may set a default level for unlabelled
// namespaces (AdmissionConfiguration) or exempt some namespaces, which no label shows.
func checkPodSecurity(ctx context.Context, o Options) []Check {
	if !o.usesFabric() {
		return nil // no IPC_LOCK: a socket fabric, or a one-pod job (it holds no RDMA device)
	}
	ns := o.Namespace
	fix := fmt.Sprintf("kubectl label --overwrite namespace %s %s=privileged (IPC_LOCK, which RDMA ranks need to pin memory, is allowed only by the privileged standard), or run in a namespace labelled so", ns, PSAEnforceLabel)
	var ev []string
	enforce := ""
	nsObj, err := o.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		for _, k := range []string{PSAEnforceLabel, PSAWarnLabel, PSAAuditLabel} {
			if v, ok := nsObj.Labels[k]; ok {
				ev = append(ev, fmt.Sprintf("namespace %s: %s=%s", ns, k, v))
			}
		}
		enforce = nsObj.Labels[PSAEnforceLabel]
	case apierrors.IsForbidden(err):
		ev = append(ev, "cannot read namespace "+ns+" (its labels): relying on a dry-run")
	default:
		ev = append(ev, "reading namespace "+ns+": "+err.Error())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "ain-psa-check-", Namespace: ns, Labels: map[string]string{labelManaged: "ain"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "rank", Image: o.ProbeImage, Command: []string{"true"},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}},
			}},
		},
	}
	_, derr := o.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	rejected := derr != nil && apierrors.IsForbidden(derr) && strings.Contains(derr.Error(), "PodSecurity")
	switch {
	case rejected:
		ev = append(ev, "dry-run create of a pod adding IPC_LOCK: "+derr.Error())
		msg := "Pod Security Admission rejects every RDMA rank here: they add the IPC_LOCK capability"
		if enforce != "" {
			msg = fmt.Sprintf("namespace %s enforces the %q Pod Security standard, which does not allow IPC_LOCK: every RDMA rank would be rejected", ns, enforce)
		} else {
			msg += " (no enforce label on the namespace: the cluster's default level applies)"
		}
		return []Check{{Name: CheckPodSecurity, Target: ns, Status: Fail, Message: msg, Evidence: limit(ev), Fix: fix}}
	case derr != nil && (enforce == "baseline" || enforce == "restricted"):
		// The dry-run failed for another reason (RBAC, a webhook): the label decides.
		ev = append(ev, "dry-run create: "+derr.Error())
		return []Check{{Name: CheckPodSecurity, Target: ns, Status: Fail,
			Message:  fmt.Sprintf("namespace %s enforces the %q Pod Security standard, which does not allow IPC_LOCK: every RDMA rank would be rejected", ns, enforce),
			Evidence: limit(ev), Fix: fix}}
	case derr != nil:
		ev = append(ev, "dry-run create: "+derr.Error())
		return []Check{{Name: CheckPodSecurity, Target: ns, Status: Warn,
			Message: "could not check whether Pod Security Admission admits RDMA ranks (IPC_LOCK)", Evidence: limit(ev),
			Fix: "kubectl get namespace " + ns + " --show-labels: " + PSAEnforceLabel + " must be privileged (or absent with a privileged cluster default)"}}
	}
	msg := "RDMA ranks (IPC_LOCK) are admitted in namespace " + ns
	if enforce != "" {
		msg += " (" + PSAEnforceLabel + "=" + enforce + ")"
	}
	out := []Check{{Name: CheckPodSecurity, Target: ns, Status: Pass, Message: msg, Evidence: ev}}
	for _, k := range []string{PSAWarnLabel, PSAAuditLabel} {
		if v := labelOf(nsObj, k); v == "baseline" || v == "restricted" {
			out = append(out, Check{Name: CheckPodSecurity, Target: ns + " " + k[strings.LastIndex(k, "/")+1:], Status: Warn,
				Message: fmt.Sprintf("%s=%s: every rank is admitted but reported as violating it (IPC_LOCK)", k, v),
				Fix:     fmt.Sprintf("kubectl label --overwrite namespace %s %s=privileged, if the reports are unwanted", ns, k)})
		}
	}
	return out
}

func labelOf(ns *corev1.Namespace, k string) string {
	if ns == nil {
		return ""
	}
	return ns.Labels[k]
}
